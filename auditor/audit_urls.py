from django.urls import path

from auditor import views

app_name = "auditor"

urlpatterns = [
    path("projects/<int:pk>/", views.project_dashboard, name="project"),
    path("projects/<int:pk>/audits/new/", views.run_new, name="run-new"),
    path("audits/<int:pk>/", views.run_detail, name="run"),
    path("audits/<int:pk>/retry/", views.run_retry, name="run-retry"),
]
