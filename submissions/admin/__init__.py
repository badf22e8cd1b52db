from django.contrib import admin, messages
from django.db import models
from django.utils.html import format_html, format_html_join

from submissions.admin import campaigns, review  # noqa: F401  (campaigns registers itself)
from submissions.models import (
    Annotation,
    ApiToken,
    BaselineTiming,
    Evaluation,
    HardwareTarget,
    Harness,
    LanguageModel,
    ModelPrice,
    Problem,
    Run,
    ShapeResult,
    Solution,
    TranscriptFile,
)
from submissions.models.evaluations import SHAPE_MEASURES
from submissions.services import evaluations, lineage, queue, registry, runs, tokens
from submissions.services.evaluations import no_worker_message
from submissions.templatetags.arena_format import score as score_text


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by the platform itself: staff look, nobody edits."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class RegistryAdmin(admin.ModelAdmin):
    """Registry entries maintainers edit here (models and their prices, harnesses, hardware
    targets), written by ``services.registry.save_entries``, which refreshes the boards."""

    def save_model(self, request, obj, form, change):
        registry.save_entries(saved=[obj])

    def delete_model(self, request, obj):
        registry.save_entries(deleted=[obj])

    def delete_queryset(self, request, queryset):
        registry.save_entries(deleted=list(queryset))

    def save_formset(self, request, form, formset, change):
        saved = formset.save(commit=False)  # writes nothing: what to save and what to delete
        registry.save_entries(saved=saved, deleted=formset.deleted_objects)


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ModelPriceInline(admin.TabularInline):
    """Dated list prices: a run without a cost from its CLI is priced by the one in force."""

    model = ModelPrice
    extra = 1
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(LanguageModel)
class LanguageModelAdmin(RegistryAdmin):
    list_display = ["slug", "display_name", "provider", "release_date"]
    list_filter = ["provider"]
    search_fields = ["slug", "display_name", "provider"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    inlines = [ModelPriceInline]


@admin.register(Harness)
class HarnessAdmin(RegistryAdmin):
    list_display = ["slug", "name", "version", "transcript_format"]
    list_filter = ["transcript_format"]
    search_fields = ["slug", "name", "version"]


@admin.register(HardwareTarget)
class HardwareTargetAdmin(RegistryAdmin):
    list_display = ["slug", "name", "queue_name", "gpu_model", "device", "is_ranked"]
    list_filter = ["device", "is_ranked"]
    search_fields = ["slug", "name", "gpu_model"]


@admin.register(Problem)
class ProblemAdmin(ReadOnlyAdmin):
    list_display = [
        "slug",
        "title",
        "category",
        "regime",
        "visible_count",
        "hidden_count",
        "is_active",
        "synced_at",
    ]
    list_filter = ["category", "regime", "is_active"]
    search_fields = ["slug", "title"]


class TranscriptFileInline(ReadOnlyInline):
    model = TranscriptFile
    fields = ["name", "size", "sha256"]
    show_change_link = False


class EvaluationInline(ReadOnlyInline):
    model = Evaluation
    fields = ["hardware", "status", "verdict", "score", "hidden_score", "trigger", "finished_at"]
    ordering = ["-created_at"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "uuid",
        "problem",
        "language_model",
        "harness",
        "effort",
        "hardware",
        "status",
        "verdict",
        "score",
        "published",
        "transcript_status",
        "submitter",
        "created_at",
    ]
    list_select_related = [
        "problem",
        "language_model",
        "harness",
        "hardware",
        "submitter",
        "headline_evaluation",
    ]
    search_fields = ["uuid", "problem__slug", "language_model__slug", "submitter__username"]
    date_hierarchy = "created_at"
    # everything the platform wrote; staff change only ``published`` (through the actions too)
    readonly_fields = [
        field.name
        for field in Run._meta.concrete_fields
        if field.name not in ("id", "published", "normalized_transcript")
    ]
    exclude = ["normalized_transcript"]  # uploads are never served as media
    inlines = [review.AnnotationInline, TranscriptFileInline, EvaluationInline]
    actions = ["publish", "unpublish", review.invalidate, review.restore]
    list_filter = ["status", "published", "transcript_status", "hardware", "harness", "problem"]

    @admin.display(description="verdict", ordering="headline_evaluation__verdict")
    def verdict(self, run):
        evaluation = run.headline_evaluation
        return evaluation.get_verdict_display() if evaluation and evaluation.verdict else "—"

    @admin.display(description="score", ordering="headline_evaluation__score")
    def score(self, run):
        evaluation = run.headline_evaluation
        return score_text(evaluation.score) if evaluation and evaluation.score is not None else "—"

    def save_model(self, request, obj, form, change):
        # ``published`` is the one field staff change here: through the service, which also
        # refreshes the board the run counts on (every other field is read-only)
        if change and "published" in form.changed_data:
            runs.set_published(runs=Run.objects.filter(pk=obj.pk), published=obj.published)

    def save_formset(self, request, form, formset, change):
        if formset.model is Annotation:
            review.save_annotations(request, formset)
        else:  # read-only inlines: nothing to write, only what the change message reads
            formset.save(commit=False)

    def delete_model(self, request, obj):
        runs.delete_runs(runs=Run.objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        runs.delete_runs(runs=queryset)

    def has_add_permission(self, request):
        return False  # runs arrive through the API

    def get_actions(self, request):
        # one "Re-evaluate on <hardware>" action per target, via services.evaluations
        actions = super().get_actions(request)
        if self.has_change_permission(request):
            for hardware in HardwareTarget.objects.all():
                name = f"reevaluate_on_{hardware.slug}"
                actions[name] = (_reevaluate_on(hardware), name, f"Re-evaluate on {hardware.name}")
                name = f"grade_lineage_on_{hardware.slug}"
                title = f"Grade the lineage on {hardware.name} (counts nowhere)"
                actions[name] = (_grade_lineage_on(hardware), name, title)
        return actions

    @admin.action(description="Publish the selected runs")
    def publish(self, request, queryset):
        count = runs.set_published(runs=queryset, published=True)
        self.message_user(request, f"Published {count} runs.", messages.SUCCESS)

    @admin.action(description="Unpublish the selected runs")
    def unpublish(self, request, queryset):
        count = runs.set_published(runs=queryset, published=False)
        self.message_user(request, f"Unpublished {count} runs.", messages.SUCCESS)


def _reevaluate_on(hardware: HardwareTarget):
    def action(modeladmin, request, queryset):
        if queue.unserved([hardware]):
            modeladmin.message_user(request, no_worker_message(hardware), messages.ERROR)
            return
        created = evaluations.reevaluate(runs=queryset, hardware=hardware, user=request.user)
        message = f"Queued {len(created)} evaluations on {hardware.name}."
        modeladmin.message_user(request, message, messages.SUCCESS)

    return action


def _grade_lineage_on(hardware: HardwareTarget):
    def action(modeladmin, request, queryset):
        if queue.unserved([hardware]):
            modeladmin.message_user(request, no_worker_message(hardware), messages.ERROR)
            return
        created = [
            evaluation
            for run in queryset
            for evaluation in lineage.grade_lineage(run=run, hardware=hardware, user=request.user)
        ]
        message = f"Queued {len(created)} lineage versions on {hardware.name}."
        modeladmin.message_user(request, message, messages.SUCCESS)

    return action


class ShapeResultInline(ReadOnlyInline):
    model = ShapeResult
    show_change_link = False
    fields = ["set", "index", "params", *SHAPE_MEASURES]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "run",
        "hardware",
        "status",
        "verdict",
        "score",
        "hidden_score",
        "trigger",
        "attempts",
        "worker_host",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "verdict", "starter_quadrant", "trigger", "hardware"]
    list_select_related = ["run", "hardware"]
    search_fields = ["run__uuid", "worker_host", "reason"]
    date_hierarchy = "created_at"
    inlines = [ShapeResultInline]


@admin.register(Solution)
class SolutionAdmin(ReadOnlyAdmin):
    list_display = ["sha256", "size", "created_at"]
    search_fields = ["sha256"]
    fields = ["sha256", "size", "created_at", "source", "sidecar_sources"]
    readonly_fields = fields

    @admin.display(description="Source")
    def source(self, solution: Solution) -> str:
        return format_html("<pre>{}</pre>", solution.code)

    @admin.display(description="Files beside solution.py")
    def sidecar_sources(self, solution: Solution) -> str:
        return format_html_join(
            "", "<h4>{}</h4><pre>{}</pre>", ((s.name, s.code) for s in solution.sidecar_files)
        )


@admin.register(BaselineTiming)
class BaselineTimingAdmin(ReadOnlyAdmin):
    list_display = ["problem_version", "shape_key", "gpu_model", "torch_version", "created_at"]
    list_filter = ["gpu_model", "torch_version"]
    search_fields = ["shape_key", "problem_version"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    list_select_related = ["user"]
    search_fields = ["prefix", "user__username", "name"]
    readonly_fields = ["user", "prefix", "digest", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False  # issued with `manage.py create_api_token`, which shows the token once

    def save_model(self, request, obj, form, change):
        # the fields not read-only: the label and the expiry
        tokens.edit_token(token=obj, name=obj.name, expires_at=obj.expires_at)

    def delete_model(self, request, obj):
        tokens.delete_tokens(tokens=[obj])

    def delete_queryset(self, request, queryset):
        tokens.delete_tokens(tokens=queryset)

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        for token in queryset.filter(revoked_at__isnull=True):
            tokens.revoke_token(token=token)
        self.message_user(request, "Revoked.", messages.SUCCESS)
