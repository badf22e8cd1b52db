import hashlib
import sys
import uuid
from pathlib import Path

import pytest
from django.core.files.base import ContentFile

from submissions.models import HardwareTarget, Run, Solution
from submissions.models.runs import solution_ast_hash
from tests.factories import make_hardware, make_run

FAKE_ENGINE = Path(__file__).with_name("fake_engine.py")


class FakeEngine:
    def __init__(self, log: Path) -> None:
        self.log = log

    def lines(self, kind: str) -> list[int]:
        if not self.log.exists():
            return []
        return [
            int(line.split()[1])
            for line in self.log.read_text().splitlines()
            if line.startswith(kind)
        ]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def fake_engine(settings, tmp_path, monkeypatch) -> FakeEngine:
    settings.ARENA_ENGINE_COMMAND = [sys.executable, str(FAKE_ENGINE)]
    log = tmp_path / "fake-engine.log"
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(log))
    return FakeEngine(log)


def make_solution(text: str) -> Solution:
    digest = hashlib.sha256(text.encode()).hexdigest()
    solution = Solution(sha256=digest, size=len(text), ast_hash=solution_ast_hash(text))
    solution.file.save("solution.py", ContentFile(text.encode()), save=False)
    solution.save()
    return solution


def make_cpu_hardware(queue: str = "cpu") -> HardwareTarget:
    return make_hardware(
        f"cpu-{uuid.uuid4().hex[:6]}",
        name="CPU (smoke)",
        queue_name=queue,
        gpu_model="fake-gpu",
        device=HardwareTarget.Device.CPU,
        is_ranked=False,
    )


def make_graded_run(text: str = "# fake: verdict=ok\n", *, hardware=None, **fields) -> Run:
    hardware = hardware or make_cpu_hardware()
    return make_run(
        solution=make_solution(text + f"# {uuid.uuid4()}\n"), hardware=hardware, **fields
    )
