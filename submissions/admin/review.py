"""The maintainers' integrity tools: verdicts with evidence, invalidation, the review queue and
retired problem versions. Every action calls services.audit, as the API does."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from submissions import selectors
from submissions.models import Annotation, RetiredProblemVersion, Run, RunForReview
from submissions.services import audit, runs

Verdict = Annotation.Verdict


class AnnotationForm(forms.ModelForm):
    class Meta:
        model = Annotation
        fields = ["verdict", "comment", "evidence"]

    def clean_evidence(self):
        try:
            return audit.clean_evidence(self.cleaned_data.get("evidence"))
        except audit.AuditError as error:
            raise ValidationError(str(error)) from None


class AnnotationInline(admin.TabularInline):
    """New verdicts only: earlier ones are the run's history and stay as they were."""

    model = Annotation
    form = AnnotationForm
    extra = 1
    can_delete = False
    fields = ["verdict", "comment", "evidence", "author", "created_at"]
    readonly_fields = ["author", "created_at"]

    def has_change_permission(self, request, obj=None):
        return False


def save_annotations(request, formset) -> None:
    """New verdicts, written by ``services.audit.annotate`` as the API writes them (earlier
    ones are never changed or deleted here)."""
    created = [
        audit.annotate(
            run=formset.instance,
            author=request.user,
            verdict=form.cleaned_data["verdict"],
            comment=form.cleaned_data.get("comment") or "",
            evidence=form.cleaned_data.get("evidence"),
        )
        for form in formset.forms
        if form.has_changed() and form.instance.pk is None
    ]
    # what the admin's change message reads from a saved formset
    formset.new_objects, formset.changed_objects, formset.deleted_objects = created, [], []


class InvalidateForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea, help_text="Shown on top of the run's page")


@admin.action(description="Invalidate the selected runs (off every board, kept readable)")
def invalidate(modeladmin, request, queryset):
    form = InvalidateForm(request.POST if "reason" in request.POST else None)
    if not form.is_valid():
        context = {**modeladmin.admin_site.each_context(request), "runs": queryset, "form": form}
        return render(request, "admin/submissions/invalidate.html", context)
    count = audit.invalidate(runs=queryset, reason=form.cleaned_data["reason"], user=request.user)
    modeladmin.message_user(request, f"Invalidated {count} runs.", messages.SUCCESS)
    return None


@admin.action(description="Restore the selected runs to the boards")
def restore(modeladmin, request, queryset):
    count = audit.restore(runs=queryset)
    modeladmin.message_user(request, f"Restored {count} runs.", messages.SUCCESS)


@admin.register(RunForReview)
class ReviewQueueAdmin(admin.ModelAdmin):
    list_display = ["created_at", "run_link", "problem", "language_model", "harness", "flag_list"]
    list_display_links = None
    list_per_page = 50
    ordering = ["created_at", "pk"]  # oldest first, as selectors.review_queue
    search_fields = ["uuid", "problem__slug", "language_model__slug"]
    readonly_fields = ["uuid", "problem", "language_model", "harness", "hardware", "flags"]
    fields = readonly_fields

    def get_queryset(self, request):
        return selectors.review_queue()

    def has_view_permission(self, request, obj=None):
        return request.user.is_staff

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Run")
    def run_link(self, run):
        url = reverse("admin:submissions_run_change", args=[run.pk])
        return format_html('<a href="{}">{}</a>', url, str(run.uuid)[:8])

    @admin.display(description="Flags")
    def flag_list(self, run):
        flags = run.flags or [{"code": "held for review", "message": "Graded, not published"}]
        rows = format_html_join(
            "", "<li><b>{}</b>: {}</li>", ((f["code"], f["message"]) for f in flags)
        )
        return format_html("<ul>{}</ul>{}", rows, self._buttons(run))

    def _buttons(self, run):
        return format_html_join(
            " ",
            '<button formaction="{}" formmethod="post" class="button">{}</button>',
            (
                (reverse("admin:submissions_review_verdict", args=[run.pk, v]), label)
                for v, label in Verdict.choices
            ),
        )

    def get_urls(self):
        verdict = self.admin_site.admin_view(self.record_verdict)
        view = path(
            "<int:run_id>/verdict/<str:verdict>/", verdict, name="submissions_review_verdict"
        )
        return [view, *super().get_urls()]

    def record_verdict(self, request, run_id, verdict):
        if request.method != "POST" or not request.user.is_staff:
            raise PermissionDenied
        run = get_object_or_404(Run, pk=run_id)
        audit.annotate(run=run, author=request.user, verdict=verdict)
        self._apply(request, run, verdict)
        self.message_user(request, f"{Verdict(verdict).label}: run {str(run.uuid)[:8]}.")
        return redirect("admin:submissions_runforreview_changelist")

    def _apply(self, request, run, verdict):
        same = Run.objects.filter(pk=run.pk)
        if verdict == Verdict.HACK:
            reason = f"Marked as a hack by {request.user.get_username()} in the review queue."
            audit.invalidate(runs=same, reason=reason, user=request.user)
        elif verdict == Verdict.LEGIT and run.status == Run.Status.EVALUATED:
            runs.set_published(runs=same, published=True)


@admin.register(RetiredProblemVersion)
class RetiredProblemVersionAdmin(admin.ModelAdmin):
    list_display = ["problem", "version", "retired_by", "retired_at"]
    fields = ["problem", "version", "note"]
    search_fields = ["problem__slug", "version"]

    def has_change_permission(self, request, obj=None):
        return obj is None

    def save_model(self, request, obj, form, change):
        try:
            retired = audit.retire_problem_version(
                problem=obj.problem, version=obj.version, note=obj.note, user=request.user
            )
        except audit.AuditError as error:
            raise ValidationError(str(error)) from None
        obj.pk = retired.pk

    def delete_model(self, request, obj):
        audit.reinstate_problem_version(retired=obj)

    def delete_queryset(self, request, queryset):
        for retired in queryset:
            audit.reinstate_problem_version(retired=retired)
