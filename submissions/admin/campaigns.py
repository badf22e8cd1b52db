"""Verified campaigns in the admin: maintainers define the matrix, budget and target, then
start it; agent workers launch each cell (services.campaigns)."""

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Count, Q

from submissions.models import Campaign, CampaignLaunch
from submissions.services import campaigns, queue


class CampaignLaunchInline(admin.TabularInline):
    model = CampaignLaunch
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "harness",
        "language_model",
        "effort",
        "problem",
        "repeat",
        "status",
        "outcome",
        "attempts",
        "run",
        "detail",
    )

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # launches are the agent workers' to write


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("name", "hardware", "budget_s", "repeats", "created_at", "progress")
    list_select_related = ("hardware",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    filter_horizontal = ("harnesses", "language_models", "problems")
    readonly_fields = ("created_by", "created_at")
    inlines = [CampaignLaunchInline]
    actions = ["start", "retry_failed"]

    def save_model(self, request, obj, form, change):
        matrix = {name: form.cleaned_data[name] for name in campaigns.MATRIX}
        campaigns.save_campaign(campaign=obj, user=request.user, matrix=matrix)

    def save_related(self, request, form, formsets, change):
        # the matrix is saved with the campaign; the launches are read-only: nothing to write,
        # only what the admin's change message reads
        for formset in formsets:
            formset.save(commit=False)

    def delete_model(self, request, obj):
        campaigns.delete_campaigns(campaigns=[obj])

    def delete_queryset(self, request, queryset):
        campaigns.delete_campaigns(campaigns=queryset)

    def get_queryset(self, request):
        counts = {
            status: Count("launches", filter=Q(launches__status=status))
            for status in CampaignLaunch.Status.values
        }
        return super().get_queryset(request).annotate(**counts)

    @admin.display(description="launches")
    def progress(self, campaign: Campaign) -> str:
        counts = ((status, getattr(campaign, status)) for status in CampaignLaunch.Status.values)
        return ", ".join(f"{count} {status}" for status, count in counts if count) or "-"

    @admin.action(description="Start the selected campaigns (queue their launches)")
    def start(self, request, queryset):
        if not self._agents_listening(request):
            return
        for campaign in queryset:
            try:
                count = campaigns.start(campaign)
            except campaigns.CampaignError as error:
                self.message_user(request, str(error), messages.ERROR)
                continue
            self.message_user(request, f"{campaign}: queued {count} launches.", messages.SUCCESS)

    @admin.action(description="Launch again what the infrastructure failed")
    def retry_failed(self, request, queryset):
        if not self._agents_listening(request):
            return
        for campaign in queryset:
            count = campaigns.retry_failed(campaign)
            self.message_user(request, f"{campaign}: queued {count} launches again.")

    def _agents_listening(self, request) -> bool:
        if settings.AGENT_QUEUE in queue.listening_queues():
            return True
        message = (
            f"No agent worker listens on the {settings.AGENT_QUEUE!r} queue: start one with "
            f"`celery -A arena_web worker -Q {settings.AGENT_QUEUE}` (docs/launcher.md)."
        )
        self.message_user(request, message, messages.ERROR)
        return False
