"""The REST list of a trace's events, under the trace page's blindness: an annotator gets 403
for a trace whose timeline the trace page keeps from them (`auditor.runs.blindness`). It lives
here, not in traces.api, because traces knows nothing of audits and annotation."""

from __future__ import annotations

from rest_framework.exceptions import PermissionDenied

from auditor.trace_page.blind import held_item, hides_timeline
from traces import api as traces_api
from traces import selectors as trace_selectors


class EventList(traces_api.EventList):
    def get_queryset(self):  # type: ignore[no-untyped-def]
        trace = trace_selectors.trace_get(user=self.request.user, trace_id=self.kwargs["pk"])
        if hides_timeline(held_item(user=self.request.user, trace=trace)):
            raise PermissionDenied(
                "This trace's events are hidden while one of its pairs waits for your verdict."
            )
        return trace_selectors.event_list(trace=trace)
