"""The garbage collector's and the interpreter lock's settings of auditing processes
(auditor.limits.tune_gc, tune_switch_interval)."""

from __future__ import annotations

import gc
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from auditor.limits import tune_gc, tune_switch_interval


@pytest.fixture
def gc_restored():  # type: ignore[no-untyped-def]
    before, interval = gc.get_threshold(), sys.getswitchinterval()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)
    sys.setswitchinterval(interval)


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
    from auditor.tasks import _prepare_process

    settings.TA_WORKER_MEMORY_MB = 0  # no rlimit on the test process
    settings.TA_GC_THRESHOLDS = ["1234", "5", "6"]
    settings.TA_SWITCH_INTERVAL_MS = 2.5
    _prepare_process()
    assert gc.get_threshold() == (1234, 5, 6)
    assert sys.getswitchinterval() == pytest.approx(0.0025)


def test_switch_interval_zero_keeps_pythons_own(settings, gc_restored):
    settings.TA_SWITCH_INTERVAL_MS = 0
    sys.setswitchinterval(0.005)
    tune_switch_interval()
    assert sys.getswitchinterval() == pytest.approx(0.005)


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
