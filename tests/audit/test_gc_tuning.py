"""The garbage collector's settings of auditing processes (auditor.limits.tune_gc)."""

from __future__ import annotations

import gc

import pytest
from django.core.exceptions import ImproperlyConfigured

from auditor.limits import tune_gc


@pytest.fixture
def gc_restored():  # type: ignore[no-untyped-def]
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_start_up_objects_are_frozen_and_young_ones_collected_less_often(settings, gc_restored):
    settings.TA_GC_THRESHOLDS = ["20000", "50", "100"]
    gc.unfreeze()
    tune_gc()
    assert gc.get_threshold() == (20000, 50, 100)
    assert gc.get_freeze_count() > 10_000  # Django and the policies, out of every collection
    # cyclic garbage made afterwards is still collected
    a: list = []
    a.append(a)
    del a
    assert gc.collect() >= 1


def test_the_worker_process_hook_tunes_it(settings, gc_restored):
    from auditor.tasks import _limit_memory

    settings.TA_WORKER_MEMORY_MB = 0  # no rlimit on the test process
    settings.TA_GC_THRESHOLDS = ["1234", "5", "6"]
    _limit_memory()
    assert gc.get_threshold() == (1234, 5, 6)


def test_empty_keeps_pythons_own(settings, gc_restored):
    settings.TA_GC_THRESHOLDS = []
    before = gc.get_threshold()
    tune_gc()
    assert gc.get_threshold() == before


@pytest.mark.parametrize("raw", [["1", "2"], ["a", "b", "c"], ["0", "10", "10"]])
def test_a_bad_setting_says_what_it_expects(settings, raw, gc_restored):
    settings.TA_GC_THRESHOLDS = raw
    with pytest.raises(ImproperlyConfigured, match="three positive integers"):
        tune_gc()
