"""Building upload bodies and bundles, and checking that a refused upload left nothing."""

import io
import tarfile
import zipfile
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Run, Solution, TranscriptFile

SOLUTION = b"import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
TRANSCRIPT = b'{"type": "user", "message": {"content": "write a kernel"}}\n'
SUBAGENT = b'{"type": "assistant", "message": {"content": "sub-agent"}}\n'


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def form(registry: dict, **files) -> dict:
    """The text fields of an upload for ``registry``'s entries, plus ``files``."""
    fields = {key: entry.slug for key, entry in registry.items()}
    return fields | files


def loose_files(**overrides) -> dict:
    files = {
        "solution": upload("solution.py", SOLUTION),
        "transcript": [upload("transcript.jsonl", TRANSCRIPT)],
    }
    return files | overrides


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def tar_gz_bytes(members: dict[str, bytes], *, special: list[tarfile.TarInfo] = ()) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        for info in special:
            archive.addfile(info)
    return buffer.getvalue()


RUN_FOLDER = {
    "solution.py": SOLUTION,
    "transcript.jsonl": TRANSCRIPT,
    "subagents/agent-abc.jsonl": SUBAGENT,
    "result.json": b'{"num_turns": 7, "total_cost_usd": 1.25, "duration_ms": 90000}',
}


def stored_files(media_root: Path) -> list[Path]:
    return [p for p in Path(media_root).rglob("*") if p.is_file()]


def assert_nothing_stored(media_root: Path) -> None:
    assert Run.objects.count() == 0
    assert Solution.objects.count() == 0
    assert TranscriptFile.objects.count() == 0
    assert stored_files(media_root) == []
