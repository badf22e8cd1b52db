"""What runs are about: language models, harnesses, hardware targets and problems."""

from django.db import models

from transcripts.parsers import format_choices


class LanguageModel(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    display_name = models.CharField(max_length=200)
    provider = models.CharField(max_length=100, blank=True)
    release_date = models.DateField(null=True, blank=True)
    url = models.URLField(blank=True)

    class Meta:
        ordering = ["display_name"]

    def __str__(self) -> str:
        return self.display_name


class Harness(models.Model):
    AUTO_FORMAT = "auto"
    # transcripts.parsers.FORMATS is the one list of formats; a run's files are always detected
    # from content, and this names what the harness writes.
    FORMAT_CHOICES = [(AUTO_FORMAT, "Detect from content"), *format_choices()]

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True)
    transcript_format = models.CharField(max_length=32, choices=FORMAT_CHOICES, default=AUTO_FORMAT)

    class Meta:
        ordering = ["name", "version"]
        verbose_name_plural = "harnesses"

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()


class HardwareTarget(models.Model):
    class Device(models.TextChoices):
        CUDA = "cuda", "CUDA GPU"
        CPU = "cpu", "CPU"

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    queue_name = models.CharField(max_length=100, help_text="Celery queue, e.g. gpu.h100-sxm")
    gpu_model = models.CharField(
        max_length=100, blank=True, help_text="Key in the engine's hardware table (peak figures)"
    )
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.CUDA)
    is_ranked = models.BooleanField(default=False)
    # Roofs for charts, copied from the engine's hardware table by sync_problems.
    bandwidth_gbps = models.FloatField(null=True, blank=True)
    peak_tflops = models.JSONField(default=dict, blank=True, help_text="Dense peak per dtype")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(device="cpu", is_ranked=True),
                name="hardware_cpu_never_ranked",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def measures_speed(self) -> bool:
        """Whether its timings mean anything against a roofline: a GPU's do; the CPU target's
        smoke timing (the Triton interpreter) checks only that timing runs."""
        return self.device != self.Device.CPU


class Problem(models.Model):
    """A mirror of the engine's problem deck, written only by ``manage.py sync_problems``."""

    class Category(models.TextChoices):
        PYTORCH_TO_KERNEL = "pytorch-to-kernel", "PyTorch to kernel"
        TRITON_TO_TRITON = "triton-to-triton", "Triton to Triton"
        CUDA_TO_CUDA = "cuda-to-cuda", "CUDA to CUDA"

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    category = models.CharField(max_length=32, choices=Category.choices)
    regime = models.CharField(max_length=32, blank=True)
    version = models.CharField(max_length=64, help_text="Content hash of the problem folder")
    visible_count = models.PositiveIntegerField(default=0)
    hidden_count = models.PositiveIntegerField(default=0)
    peak_dtype = models.CharField(max_length=16, blank=True)
    statement = models.TextField(blank=True, help_text="PROMPT.md, exactly as agents see it")
    visible_shapes = models.JSONField(default=list, blank=True)
    is_active = models.BooleanField(default=True)
    synced_at = models.DateTimeField()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def regime_label(self) -> str:
        """How the problem's peak fraction is measured (runners.problem.REGIMES), in words."""
        return REGIME_LABELS.get(self.regime, self.regime)


REGIME_LABELS = {
    "compute": "compute-bound",
    "memory": "memory-bound",
    "roofline": "compute- or memory-bound by shape (roofline)",
    "speedup": "scored by speedup",
}


class ModelPrice(models.Model):
    """A language model's list price from a date on; the latest one in force prices a run."""

    language_model = models.ForeignKey(
        LanguageModel, on_delete=models.CASCADE, related_name="prices"
    )
    effective_from = models.DateField()
    input_usd_per_mtok = models.FloatField()
    cached_input_usd_per_mtok = models.FloatField(null=True, blank=True)
    output_usd_per_mtok = models.FloatField()
    source = models.URLField(blank=True)

    class Meta:
        ordering = ["language_model", "-effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["language_model", "effective_from"], name="model_price_unique_date"
            ),
            models.CheckConstraint(
                condition=models.Q(input_usd_per_mtok__gte=0, output_usd_per_mtok__gte=0),
                name="model_price_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.language_model} from {self.effective_from}"
