"""Routes of a project's model endpoints: the owners' page and the API (namespace "auditor")."""

from django.urls import path

from auditor.llm import api, views

urlpatterns = [
    path("projects/<int:pk>/model-endpoints/", views.endpoints_page, name="model-endpoints"),
    path(
        "projects/<int:pk>/model-endpoints/<int:eid>/",
        views.endpoint_page,
        name="model-endpoint",
    ),
    path(
        "projects/<int:pk>/model-endpoints/<int:eid>/delete/",
        views.endpoint_delete,
        name="model-endpoint-delete",
    ),
    path(
        "api/projects/<str:ref>/model-endpoints/",
        api.EndpointList.as_view(),
        name="api-model-endpoints",
    ),
    path("api/model-endpoints/<int:pk>/", api.EndpointDetail.as_view(), name="api-model-endpoint"),
]
