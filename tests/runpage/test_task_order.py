"""The tasks × models matrix lists tasks in natural order of their ids: BFCL numbers its tasks
`multi_turn_base_0` … `multi_turn_base_199` without leading zeros, and a plain string sort
would put `_10` and `_100` before `_2`."""

from __future__ import annotations

from auditor.runs.task_matrix import task_order


def test_numbers_in_task_ids_sort_as_numbers():
    ids = [
        "bfcl-v4:multi_turn_miss_func_1",
        "bfcl-v4:multi_turn_base_100",
        "bfcl-v4:multi_turn_base_10",
        "bfcl-v4:multi_turn_base_2",
        "bfcl-v4:multi_turn_base_0",
        "repair:MBPP/24",
        "repair:HumanEval/3",
    ]
    assert sorted(ids, key=task_order) == [
        "bfcl-v4:multi_turn_base_0",
        "bfcl-v4:multi_turn_base_2",
        "bfcl-v4:multi_turn_base_10",
        "bfcl-v4:multi_turn_base_100",
        "bfcl-v4:multi_turn_miss_func_1",
        "repair:HumanEval/3",
        "repair:MBPP/24",
    ]


def test_ids_without_numbers_or_with_other_digits_still_order():
    # only ASCII digit runs count as numbers; text and numbers never compare with each other
    ids = ["b", "x²", "7", "a1b", "a01b", "a"]
    ordered = sorted(ids, key=lambda k: (task_order(k), k))
    assert ordered == ["a", "a01b", "a1b", "b", "x²", "7"]
