"""Writes to the registry: the problem deck mirrored from the engine, example entries, a model
registered by name, and maintainers' edits from the admin."""

import datetime
import json
import subprocess
import sys
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from runners.contract import ProblemInfo
from submissions.models import HardwareTarget, Harness, LanguageModel, Problem
from submissions.services import queue

ENGINE_TIMEOUT_S = 120


class EngineError(Exception):
    """``python -m runners`` failed or printed something that is not the documented JSON."""


@dataclass
class SyncReport:
    created: list[str]
    updated: list[str]
    deactivated: list[str]


def engine_problems() -> list[ProblemInfo]:
    """The engine's problem deck, read without importing the engine (which imports torch)."""
    return parse_problem_list(_engine_json("problems"))


def engine_hardware() -> list[dict]:
    """The engine's hardware table (peaks and bandwidth per GPU model, and the declared CPU)."""
    try:
        rows = json.loads(_engine_json("hardware"))
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise TypeError("expected a JSON list of objects")
    except (ValueError, TypeError) as error:
        raise EngineError(f"unexpected hardware table from the engine: {error}") from None
    return rows


def parse_problem_list(text: str) -> list[ProblemInfo]:
    try:
        items = json.loads(text)
        if not isinstance(items, list):
            raise TypeError("expected a JSON list")
        return [ProblemInfo.from_dict(item) for item in items]
    except (ValueError, TypeError, AttributeError) as error:
        raise EngineError(f"unexpected problem list from the engine: {error}") from None


def _engine_json(listing: str) -> str:
    command = [sys.executable, "-m", "runners", listing, "--json"]
    try:
        done = subprocess.run(
            command,
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=ENGINE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise EngineError(f"{' '.join(command)} took longer than {ENGINE_TIMEOUT_S}s") from None
    if done.returncode != 0:
        raise EngineError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


@transaction.atomic
def sync_problems(*, infos: list[ProblemInfo]) -> SyncReport:
    """Mirrors the deck: creates and updates problems; deactivates those the deck no longer has."""
    now = timezone.now()
    report = SyncReport(created=[], updated=[], deactivated=[])
    for info in infos:
        _, created = Problem.objects.update_or_create(
            slug=info.slug, defaults=_problem_fields(info, now)
        )
        (report.created if created else report.updated).append(info.slug)
    gone = Problem.objects.filter(is_active=True).exclude(slug__in=[i.slug for i in infos])
    report.deactivated = sorted(gone.values_list("slug", flat=True))
    gone.update(is_active=False, synced_at=now)
    # the deck is every board's columns
    queue.refresh_boards_on_commit(hardware_ids=HardwareTarget.objects.values_list("pk", flat=True))
    return report


def register_problems(*, infos: list[ProblemInfo]) -> None:
    """Creates or updates these problems and leaves the rest of the deck alone: problems whose
    folders this checkout lacks, registered from their facts (services.imports.load_graded)."""
    now = timezone.now()
    for info in infos:
        Problem.objects.update_or_create(slug=info.slug, defaults=_problem_fields(info, now))
    queue.refresh_boards_on_commit(hardware_ids=HardwareTarget.objects.values_list("pk", flat=True))


def _problem_fields(info: ProblemInfo, now: datetime.datetime) -> dict:
    return {
        "title": info.title,
        "category": info.category,
        "regime": info.regime,
        "version": info.version,
        "visible_count": info.visible_count,
        "hidden_count": info.hidden_count,
        "peak_dtype": info.peak_dtype,
        "statement": info.statement,
        "visible_shapes": info.visible_shapes,
        "is_active": True,
        "synced_at": now,
    }


@transaction.atomic
def sync_hardware_roofs(*, rows: list[dict]) -> list[str]:
    """Copies each target's roofs from the engine's table (its ``gpu_model`` row; the CPU row
    for CPU targets); returns the slugs of targets the table does not know."""
    table = {row.get("slug"): row for row in rows}
    unknown = []
    for target in HardwareTarget.objects.all():
        key = "cpu" if target.device == HardwareTarget.Device.CPU else target.gpu_model
        row = table.get(key)
        if row is None:
            unknown.append(target.slug)
            continue
        target.bandwidth_gbps = row.get("bandwidth_gbps")
        target.peak_tflops = row.get("peak_tflops") or {}
        target.save(update_fields=["bandwidth_gbps", "peak_tflops"])
    return unknown


EXAMPLE_MODELS = [
    ("claude-opus-4-5", "Claude Opus 4.5", "Anthropic", "https://www.anthropic.com/claude"),
    ("claude-opus-4-1", "Claude Opus 4.1", "Anthropic", "https://www.anthropic.com/claude"),
    ("claude-sonnet-4-5", "Claude Sonnet 4.5", "Anthropic", "https://www.anthropic.com/claude"),
    ("gpt-5", "GPT-5", "OpenAI", "https://openai.com/gpt-5"),
    ("gpt-5-codex", "GPT-5-Codex", "OpenAI", "https://openai.com/codex"),
    ("gemini-2-5-pro", "Gemini 2.5 Pro", "Google", "https://deepmind.google/models/gemini/"),
    ("kimi-k2", "Kimi K2", "Moonshot AI", "https://moonshotai.github.io/Kimi-K2/"),
]
EXAMPLE_HARNESSES = [  # (slug, name, transcripts.parsers format name)
    ("claude-code", "Claude Code", "claude-jsonl"),
    ("claude-code-print", "Claude Code (-p stream-json)", "claude-stream-json"),
    ("codex-cli", "Codex CLI", "codex-exec-json"),
    ("cursor-agent", "Cursor Agent", "cursor-stream-json"),
    ("gemini-cli", "Gemini CLI", "gemini-stream-json"),
    ("kimi-cli", "Kimi CLI", "kimi-stream-json"),
    ("opencode", "opencode", "opencode-json"),
]
# (slug, name, gpu_model key in runners.hardware, ranked)
EXAMPLE_HARDWARE = [
    ("h100-sxm", "NVIDIA H100 SXM", "h100-sxm", True),
    ("h200", "NVIDIA H200 SXM", "h200", True),
]


@transaction.atomic
def seed_registry() -> dict[str, int]:
    """Registers example models, harnesses and GPU targets; safe to run again."""
    for slug, name, provider, url in EXAMPLE_MODELS:
        LanguageModel.objects.update_or_create(
            slug=slug, defaults={"display_name": name, "provider": provider, "url": url}
        )
    for slug, name, transcript_format in EXAMPLE_HARNESSES:
        Harness.objects.update_or_create(
            slug=slug, defaults={"name": name, "transcript_format": transcript_format}
        )
    for slug, name, gpu_model, ranked in EXAMPLE_HARDWARE:
        HardwareTarget.objects.update_or_create(
            slug=slug,
            defaults={
                "name": name,
                "queue_name": f"gpu.{slug}",
                "gpu_model": gpu_model,
                "device": HardwareTarget.Device.CUDA,
                "is_ranked": ranked,
            },
        )
    ensure_cpu_target()
    return {
        "models": len(EXAMPLE_MODELS),
        "harnesses": len(EXAMPLE_HARNESSES),
        "hardware": len(EXAMPLE_HARDWARE) + 1,
    }


def register_model(*, slug: str, display_name: str, provider: str) -> LanguageModel:
    """The model `slug`, registered with these names where it is new (an existing entry, which a
    maintainer may have edited, is kept as it is)."""
    model, _ = LanguageModel.objects.get_or_create(
        slug=slug, defaults={"display_name": display_name, "provider": provider}
    )
    return model


def save_entries(*, saved=(), deleted=()) -> None:
    """A maintainer's edits of registry entries (models and their prices, harnesses, hardware
    targets), saved and deleted together; every board is refreshed once they are committed,
    since boards show the names and the targets."""
    with transaction.atomic():
        for entry in saved:
            entry.save()
        for entry in deleted:
            entry.delete()
    queue.refresh_boards_on_commit(hardware_ids=HardwareTarget.objects.values_list("pk", flat=True))


def ensure_cpu_target() -> HardwareTarget:
    target, _ = HardwareTarget.objects.get_or_create(
        slug="cpu",
        defaults={
            "name": "CPU (smoke shapes)",
            "queue_name": "cpu",
            "device": HardwareTarget.Device.CPU,
            "is_ranked": False,
        },
    )
    return target
