"""The cyclic garbage collector off while a `manage.py` process starts.

Django's start (settings, apps, models, the app's signal receivers) allocates a hundred thousand
objects that live as long as the process; with Python's thresholds the collector runs again and
again among them, traversing more of them each time, a noticeable share of a short `manage.py
audit --inline`. manage.py turns it off first thing (`off_for_start`); `AuditorConfig.ready`,
where start is over, freezes what start made (the little cyclic garbage among it included: a
full collection to free it costs more than the collections saved) out of the collector's view
and turns it back on (`start_done`). Celery workers and the web server start with the collector
on throughout.
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
