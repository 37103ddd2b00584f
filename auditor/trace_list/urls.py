"""Route of the traces list (namespace "auditor", see auditor/urls.py)."""

from django.urls import path

from auditor.trace_list import views

urlpatterns = [
    path("projects/<int:pk>/traces/", views.trace_list, name="trace-list"),
]
