from django.urls import path

from traces import api

app_name = "api"

# A trace's events (`api/traces/<pk>/events/`) are routed by auditor.trace_page, which keeps
# them from an annotator the way the trace page does.
urlpatterns = [
    path("uploads/", api.UploadListCreate.as_view(), name="upload-list"),
    path("uploads/<int:pk>/", api.UploadDetail.as_view(), name="upload-detail"),
    path("uploads/<int:pk>/reprocess/", api.UploadReprocess.as_view(), name="upload-reprocess"),
    path("traces/", api.TraceList.as_view(), name="trace-list"),
    path("traces/<int:pk>/", api.TraceDetail.as_view(), name="trace-detail"),
]
