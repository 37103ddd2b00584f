from django.urls import path

from auditor import views, views_list, views_runs
from auditor.trace_page import views as views_trace

app_name = "auditor"

urlpatterns = [
    path("projects/<int:pk>/", views_runs.project_dashboard, name="project"),
    path("projects/<int:pk>/audits/new/", views.run_new, name="run-new"),
    path("audits/compare/", views_runs.run_compare, name="run-compare"),
    path("audits/<int:pk>/", views_runs.run_detail, name="run"),
    path("audits/<int:pk>/retry/", views.run_retry, name="run-retry"),
    # traces list (views_list) and trace page (views_trace)
    path("projects/<int:pk>/traces/", views_list.trace_list, name="trace-list"),
    path("traces/<int:pk>/", views_trace.trace_detail, name="trace"),
    path("traces/<int:pk>/events/", views_trace.trace_events, name="trace-events"),
    path("traces/<int:pk>/events/<int:seq>/", views_trace.trace_event, name="trace-event"),
]
