from django import forms
from django.contrib import admin

from traces.models import Membership, Project, ProjectToken, Trace, Upload


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


class ProjectForm(forms.ModelForm):
    """Code execution switched on where the project may not have it is a form error, not a
    server error (`Project.save` refuses it whatever the path)."""

    class Meta:
        model = Project
        fields = ["name", "execute_code_candidates"]

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        was_on = (
            bool(self.instance.pk)
            and Project.objects.filter(pk=self.instance.pk, execute_code_candidates=True).exists()
        )
        refusal = self.instance.execution_refusal
        if data.get("execute_code_candidates") and not was_on and refusal:
            self.add_error("execute_code_candidates", refusal)
        return data


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    inlines = [MembershipInline]
    list_display = ["name", "created_at", "created_by"]
    readonly_fields = ["created_by"]

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


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
