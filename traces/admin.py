from django.contrib import admin

from traces.models import Membership, Project, ProjectToken, Trace, Upload


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    inlines = [MembershipInline]
    list_display = ["name", "created_at"]


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "project",
        "filename",
        "status",
        "traces_accepted",
        "error_count",
        "created_at",
    ]
    list_filter = ["status", "source"]
    readonly_fields = [f.name for f in Upload._meta.fields]


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["external_id", "project", "model", "benchmark", "category", "outcome_success"]
    list_filter = ["benchmark", "category"]
    readonly_fields = [f.name for f in Trace._meta.fields]


@admin.register(ProjectToken)
class ProjectTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "hint", "created_at", "revoked_at"]
    readonly_fields = ["digest", "hint", "created_at"]
