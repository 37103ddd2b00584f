"""Routes of the trace page (namespace "auditor", see auditor/urls.py)."""

from django.urls import path

from auditor.trace_page import api, views

urlpatterns = [
    path("traces/<int:pk>/", views.trace_detail, name="trace"),
    path("traces/<int:pk>/events/", views.trace_events, name="trace-events"),
    path("traces/<int:pk>/events/<int:seq>/", views.trace_event, name="trace-event"),
    path("api/traces/<int:pk>/events/", api.EventList.as_view(), name="api-trace-events"),
]
