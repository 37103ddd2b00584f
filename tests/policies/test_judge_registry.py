"""Judge backends by name: built-ins, aliases, registration, lazily imported backends."""

from __future__ import annotations

from typing import Any

import pytest

from policies import judge_registry
from policies.heuristic_judge import HeuristicJudge
from policies.judge_registry import judge_names, make_judge, register_judge
from policies.judges import HumanJudge, PairRequest, RecordedJudge, Verdict


class Fixed:
    name = "fixed"

    def __init__(self, prefer: str = "A") -> None:
        self.prefer = prefer

    def judge(self, request: PairRequest) -> Verdict:
        return Verdict(self.prefer, False, False, 2.0, 2.0, 1.0, self.name)


def test_built_in_backends_and_instances() -> None:
    assert isinstance(make_judge(None), HeuristicJudge)
    assert isinstance(make_judge("heuristic"), HeuristicJudge)
    assert isinstance(make_judge("recorded"), RecordedJudge)
    assert isinstance(make_judge("human", verdicts={}), HumanJudge)
    j = Fixed()
    assert make_judge(j) is j
    assert {"heuristic", "recorded", "human", "openai"} <= set(judge_names())


def test_unknown_backend_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown judge backend 'oracle'; choose from .*heuristic"):
        make_judge("oracle")


def test_registered_backend_and_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_registry, "_FACTORIES", dict(judge_registry._FACTORIES))
    monkeypatch.setattr(judge_registry, "_ALIASES", dict(judge_registry._ALIASES))
    register_judge("fixed", Fixed, aliases=("always_a",))
    j: Any = make_judge("always_a", prefer="B")
    assert isinstance(j, Fixed) and j.prefer == "B"
    assert "always_a" in judge_names()


def test_model_backends_are_imported_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_registry, "_FACTORIES", dict(judge_registry._FACTORIES))
    llm: Any = make_judge("llm", base_url="http://127.0.0.1:9/v1", model="m", offline=True)
    old: Any = make_judge("openai", base_url="http://127.0.0.1:9/v1", model="m", offline=True)
    assert type(llm).__name__ == type(old).__name__ == "LLMJudge"  # openai: the old name
    assert llm.name == "llm"
    monkeypatch.setitem(judge_registry.BACKEND_MODULES, "fixed2", f"{__name__}:Fixed")
    assert isinstance(make_judge("fixed2"), Fixed)


def test_old_import_location_still_builds_judges() -> None:
    from policies.judges import make_judge as old

    assert isinstance(old("recorded"), RecordedJudge)
