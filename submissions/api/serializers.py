from django.core.exceptions import ObjectDoesNotExist
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from runners.contract import MAX_SIDECARS, SIDECAR_SUFFIXES
from submissions import selectors
from submissions.models import (
    Annotation,
    Evaluation,
    HardwareTarget,
    Harness,
    LanguageModel,
    Problem,
    Run,
    ShapeResult,
    TranscriptFile,
)
from submissions.models.evaluations import SHAPE_MEASURES
from submissions.models.runs import RUN_FIGURES
from submissions.uploads import is_storable_text

# An effort names a board row: a short word, never markup or free text.
EFFORT_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


class RegistrySlugField(serializers.SlugRelatedField):
    """A slug of a registry entry; an unknown one is refused with the list of valid slugs."""

    default_error_messages = {
        "unknown": "Unknown {kind} {value!r}. Valid: {valid}.",
        "invalid": "Send the slug as text.",
    }

    def __init__(self, *, kind: str, **kwargs) -> None:
        self.kind = kind
        super().__init__(slug_field="slug", **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        queryset = self.get_queryset()
        try:
            if not is_storable_text(data):  # PostgreSQL would raise, not miss
                raise ObjectDoesNotExist
            return queryset.get(slug=data)
        except ObjectDoesNotExist:
            valid = ", ".join(queryset.values_list("slug", flat=True)) or "none registered yet"
            self.fail("unknown", kind=self.kind, value=data[:100], valid=valid)


class RunUploadSerializer(serializers.Serializer):
    """Either loose files (solution, transcript...) or one ``bundle`` archive of the run folder."""

    problem = RegistrySlugField(kind="problem", queryset=Problem.objects.filter(is_active=True))
    model = RegistrySlugField(kind="model", queryset=LanguageModel.objects.all())
    harness = RegistrySlugField(kind="harness", queryset=Harness.objects.all())
    hardware = RegistrySlugField(kind="hardware", queryset=HardwareTarget.objects.all())
    effort = serializers.RegexField(
        EFFORT_PATTERN,
        max_length=50,
        required=False,
        allow_blank=True,
        default="",
        help_text="the agent's reasoning effort as its CLI names it: high, xhigh, max, ...",
        error_messages={
            "invalid": "Effort is a short name such as high or max: lowercase letters, digits, "
            "'.', '_' and '-', starting with a letter or digit."
        },
    )
    solution = serializers.FileField(
        required=False, allow_empty_file=True, help_text="solution.py; may be missing"
    )
    solution_files = serializers.ListField(
        child=serializers.FileField(allow_empty_file=True),
        required=False,
        style={"template": "submissions/api/multiple_file_input.html"},
        help_text=(
            "Native sources solution.py builds from its own folder (repeat the field): "
            f"{', '.join(SIDECAR_SUFFIXES)}, flat names, at most {MAX_SIDECARS}."
        ),
    )
    transcript = serializers.ListField(
        child=serializers.FileField(allow_empty_file=True),
        required=False,
        style={"template": "submissions/api/multiple_file_input.html"},
        help_text="One or more transcript files (repeat the field).",
    )
    transcript_name = serializers.ListField(
        child=serializers.CharField(max_length=255),
        required=False,
        help_text="Relative names, parallel to `transcript` (e.g. subagents/agent-1.jsonl).",
    )
    metadata = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        style={"base_template": "textarea.html"},
        help_text="Agent-reported metadata, a JSON object.",
    )
    bundle = serializers.FileField(
        required=False, help_text="A .zip or .tar.gz of the run folder, instead of loose files."
    )

    def validate(self, attrs):
        loose = attrs.get("solution") or attrs.get("transcript") or attrs.get("solution_files")
        if attrs.get("bundle") and loose:
            raise serializers.ValidationError("Send either a bundle or loose files, not both.")
        if not attrs.get("bundle") and not attrs.get("transcript"):
            raise serializers.ValidationError(
                "No transcript: send one or more `transcript` files or a `bundle`."
            )
        names = attrs.get("transcript_name")
        if names and len(names) != len(attrs.get("transcript", [])):
            raise serializers.ValidationError(
                "`transcript_name` needs one entry per `transcript` file, in the same order."
            )
        return attrs


class RunCreatedSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="uuid")
    url = serializers.SerializerMethodField()
    status_url = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ["id", "url", "status", "status_url"]

    def get_url(self, run: Run) -> str:
        return self.context["request"].build_absolute_uri(run.get_absolute_url())

    def get_status_url(self, run: Run) -> str:
        path = reverse("api:run-detail", kwargs={"uuid": run.uuid})
        return self.context["request"].build_absolute_uri(path)


class PublicShapeSerializer(serializers.ModelSerializer):
    label = serializers.CharField(help_text='"visible k", "smoke k" or "held-out case k"')
    params = serializers.DictField(allow_null=True, help_text="null for held-out shapes")

    class Meta:
        model = ShapeResult
        fields = ["label", "set", "params", *SHAPE_MEASURES]


class PublicGateSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField()
    verdict = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    duration_s = serializers.FloatField()
    details = serializers.DictField()


class EvaluationSerializer(serializers.ModelSerializer):
    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    reason = serializers.SerializerMethodField()
    gates = serializers.SerializerMethodField()
    shapes = serializers.SerializerMethodField()

    class Meta:
        model = Evaluation
        fields = [
            "hardware",
            "status",
            "verdict",
            "reason",
            "score",
            "hidden_score",
            "correct_visible",
            "correct_hidden",
            "starter_quadrant",
            "starter_hidden_correct",
            "conditional_hidden_correct",
            "engine_version",
            "trigger",
            "created_at",
            "started_at",
            "finished_at",
            "gates",
            "shapes",
        ]

    def get_reason(self, evaluation: Evaluation) -> str:
        return selectors.public_reason(evaluation)

    @extend_schema_field(PublicGateSerializer(many=True))
    def get_gates(self, evaluation: Evaluation) -> list:
        return PublicGateSerializer(selectors.public_gates(evaluation), many=True).data

    @extend_schema_field(PublicShapeSerializer(many=True))
    def get_shapes(self, evaluation: Evaluation) -> list:
        return PublicShapeSerializer(selectors.public_shapes(evaluation), many=True).data


class SolutionFileSerializer(serializers.Serializer):
    name = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()


class TranscriptFileSerializer(serializers.ModelSerializer):
    class Meta:
        model = TranscriptFile
        fields = ["name", "sha256", "size"]


class TimingSpreadSerializer(serializers.Serializer):
    """How one shape's median time varied across the run's completed evaluations."""

    hardware = serializers.CharField()
    label = serializers.CharField()
    n = serializers.IntegerField()
    median_us = serializers.FloatField()
    min_us = serializers.FloatField()
    max_us = serializers.FloatField()
    cv_pct = serializers.FloatField()


class AnnotationSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.get_username", read_only=True)

    class Meta:
        model = Annotation
        fields = ["verdict", "comment", "evidence", "author", "created_at"]


class RunSerializer(RunCreatedSerializer):
    problem = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    model = serializers.SlugRelatedField(source="language_model", slug_field="slug", read_only=True)
    harness = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    solution_sha256 = serializers.CharField(source="solution.sha256", allow_null=True)
    solution_files = serializers.SerializerMethodField()
    transcripts = TranscriptFileSerializer(source="transcript_files", many=True)
    latest_evaluation = serializers.SerializerMethodField()
    evaluations = EvaluationSerializer(many=True)
    timing_spread = serializers.SerializerMethodField()
    annotations = AnnotationSerializer(many=True, read_only=True)
    verified_campaign = serializers.SerializerMethodField(
        help_text="The verified campaign that launched the run (its slug), or null for an upload"
    )

    class Meta:
        model = Run
        fields = [
            *RunCreatedSerializer.Meta.fields,
            "problem",
            "problem_version",
            "model",
            "harness",
            "hardware",
            "effort",
            "created_at",
            "published",
            "solution_sha256",
            "solution_files",
            "transcripts",
            "transcript_status",
            "metadata",
            *RUN_FIGURES,
            "figure_sources",
            "cli_version",
            "prompt_hash",
            "budget_s",
            "verified_campaign",
            "source_url",
            "source_result",
            "latest_evaluation",
            "evaluations",
            "timing_spread",
            "flags",
            "invalidated_at",
            "invalidation_reason",
            "annotations",
        ]

    def get_verified_campaign(self, run: Run) -> str | None:
        campaign = run.verified_campaign
        return campaign.slug if campaign else None

    @extend_schema_field(SolutionFileSerializer(many=True))
    def get_solution_files(self, run: Run) -> list:
        """The native sources beside solution.py (its own size and hash are the run's)."""
        sidecars = run.solution.sidecar_files if run.solution else []
        return SolutionFileSerializer(sidecars, many=True).data

    @extend_schema_field(EvaluationSerializer(allow_null=True))
    def get_latest_evaluation(self, run: Run) -> dict | None:
        evaluation = selectors.latest_evaluation(run)
        return EvaluationSerializer(evaluation).data if evaluation else None

    @extend_schema_field(TimingSpreadSerializer(many=True))
    def get_timing_spread(self, run: Run) -> list:
        return TimingSpreadSerializer(selectors.timing_spread(run), many=True).data


class HeadlineSerializer(serializers.ModelSerializer):
    """The evaluation a run is ranked by, without its gates and shapes."""

    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Evaluation
        fields = [
            "hardware",
            "status",
            "verdict",
            "score",
            "hidden_score",
            "correct_visible",
            "correct_hidden",
            "finished_at",
        ]


class RunListSerializer(RunCreatedSerializer):
    problem = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    model = serializers.SlugRelatedField(source="language_model", slug_field="slug", read_only=True)
    harness = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    headline = HeadlineSerializer(source="headline_evaluation", allow_null=True)

    class Meta:
        model = Run
        fields = [
            *RunCreatedSerializer.Meta.fields,
            "problem",
            "model",
            "harness",
            "hardware",
            "effort",
            "created_at",
            *RUN_FIGURES,
            "figure_sources",
            "flags",
            "invalidated_at",
            "headline",
        ]


class ProblemSerializer(serializers.ModelSerializer):
    class Meta:
        model = Problem
        fields = [
            "slug",
            "title",
            "category",
            "regime",
            "version",
            "visible_count",
            "hidden_count",
            "is_active",
            "synced_at",
        ]


class LanguageModelSerializer(serializers.ModelSerializer):
    class Meta:
        model = LanguageModel
        fields = ["slug", "display_name", "provider", "release_date", "url"]


class HarnessSerializer(serializers.ModelSerializer):
    class Meta:
        model = Harness
        fields = ["slug", "name", "version", "transcript_format"]


class HardwareTargetSerializer(serializers.ModelSerializer):
    class Meta:
        model = HardwareTarget
        fields = ["slug", "name", "gpu_model", "device", "is_ranked", "queue_name"]
