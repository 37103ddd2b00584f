"""The cyclic garbage collector off while a `manage.py` process starts (issue 17).

Django's start (settings, apps, models, the app's signal receivers) allocates ~115,000 objects
that live as long as the process; with Python's thresholds the collector ran ~155 times among
them, traversing more of them each time: 30-40 ms of CPU, 6 % of a 200-trace `manage.py audit
--inline`. manage.py turns it off first thing (`off_for_start`); `AuditorConfig.ready`, where
start is over, freezes what start made (the ~1,600 objects of cyclic garbage among them, ~300
KB, included: a full collection to free them costs more than the collections saved) out of the
collector's view and turns it back on (`start_done`). Celery workers and the web server start
as before.
"""

from __future__ import annotations

import gc

_off_for_start = False


def off_for_start() -> None:
    global _off_for_start
    if gc.isenabled():
        gc.disable()
        _off_for_start = True


def start_done() -> None:
    global _off_for_start
    if _off_for_start:
        _off_for_start = False
        gc.freeze()
        gc.enable()
