"""A deck of problems and boards-data's synthetic history: real rows, as the demo has them."""

import pytest

from bench.synthetic_history import write_history
from submissions.models import HardwareTarget, Run
from submissions.services.registry import seed_registry
from tests.factories import make_problem

SOFTMAX_SHAPES = [{"rows": 8192, "cols": 1000}, {"rows": 32768, "cols": 4096}]
RMSNORM_SHAPES = [{"tokens": 8192, "hidden": 4096}, {"tokens": 2048, "hidden": 8192}]
STATEMENT = """# Row softmax

Write a faster `softmax(x, dim=-1)`.

| rows | cols |
|---:|---:|
| 8192 | 1000 |

<script>alert("statement")</script> <img src="https://example.com/x.png">
"""
ROOFS = {
    "h100-sxm": {"bandwidth_gbps": 3350.0, "peak_tflops": {"fp32": 67.0, "bf16": 989.4}},
    "h200": {"bandwidth_gbps": 4800.0, "peak_tflops": {"fp32": 67.0, "bf16": 989.4}},
    "cpu": {"bandwidth_gbps": 25.6, "peak_tflops": {"fp32": 0.1, "bf16": 0.1}},
}


@pytest.fixture
def deck(db):
    seed_registry()
    for slug, roofs in ROOFS.items():
        HardwareTarget.objects.filter(slug=slug).update(**roofs)
    return [
        make_problem(
            "softmax",
            title="Row softmax",
            peak_dtype="fp32",
            visible_count=2,
            visible_shapes=SOFTMAX_SHAPES,
            statement=STATEMENT,
        ),
        make_problem(
            "rmsnorm",
            title="RMSNorm",
            category="triton-to-triton",
            peak_dtype="bf16",
            visible_count=2,
            visible_shapes=RMSNORM_SHAPES,
        ),
    ]


@pytest.fixture
def history(deck):
    """The synthetic history with one run per configuration, problem and target."""
    return write_history(runs_per_cell=1, seed=5)


def synthetic_run(*, regraded: bool = False) -> Run:
    """The oldest synthetic run on the H100 (one graded more than once when ``regraded``)."""
    runs = Run.objects.filter(hardware__slug="h100-sxm").order_by("created_at")
    if regraded:
        runs = [run for run in runs if run.evaluations.count() > 1]
    return runs[0]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT
