"""The trace page: the event timeline and, per audit run, the policies' decisions."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from traces import selectors as trace_selectors


@login_required
def trace_detail(request: HttpRequest, pk: int) -> HttpResponse:
    trace = trace_selectors.trace_get(user=request.user, trace_id=pk)
    events = []
    for ev in trace_selectors.event_list(trace=trace):
        events.append({"event": ev, "pretty": json.dumps(ev.payload, indent=2, ensure_ascii=False)})
    return render(
        request, "auditor/trace.html", {"trace": trace, "project": trace.project, "events": events}
    )
