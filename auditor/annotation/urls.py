"""Annotation URLs, included from auditor/urls.py. Their own namespace, "annotate": two
includes may not share one (Django check urls.W005)."""

from django.urls import path

from auditor.annotation import inbox
from auditor.annotation import views as views_annotate

app_name = "annotate"

urlpatterns = [
    path("annotate/", inbox.inbox, name="inbox"),
    path("annotate/next/", inbox.inbox_next, name="inbox-next"),
    path("audits/<int:pk>/queues/", views_annotate.queue_list, name="queue-list"),
    path("audits/<int:pk>/queues/add/", views_annotate.queue_add_traces, name="add-traces"),
    path("queues/<int:pk>/", views_annotate.queue_detail, name="queue"),
    path("queues/<int:pk>/settings/", views_annotate.queue_settings, name="settings"),
    path("queues/<int:pk>/annotate/", views_annotate.annotate, name="next"),
    path("queues/<int:pk>/undo/", views_annotate.annotate_undo, name="undo"),
    path(
        "queues/<int:pk>/items/<int:item_pk>/adjudicate/",
        views_annotate.adjudicate,
        name="adjudicate",
    ),
]
