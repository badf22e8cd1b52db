"""The torch.compile baseline is one static graph per shape. A reference whose control flow
follows its inputs' values (moe_swiglu's loop over experts, causal_attention's over sequences,
each bounded by `.tolist()`) would compile again for every input set; its compile line is given
up at the first recompile, for the grade and the grades after, instead of spending the grade's
baseline budget in the compiler. Dynamo's guards decide a recompile, not the backend, so these
tests compile with its eager backend (inductor takes tens of seconds a graph on a CPU)."""

import functools
from types import SimpleNamespace

import pytest
import torch
from engine_support import prepared_reference

from runners import performance
from runners.plan import plan_shapes, shape_file
from runners.problem import load_problem
from runners.schema import ShapeResult, TimingStats
from runners.timing import Settings


@pytest.fixture
def eager_backend(monkeypatch):
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    yield
    torch._dynamo.reset()


def compile_baseline(tmp_path, slug: str) -> dict:
    """The reference process's compile baseline of `slug`'s first smoke shape on the CPU."""
    oracle, plan, in_dir = prepared_reference(load_problem(slug), tmp_path)
    settings = Settings(warmup=1, warmup_s=0.0, min_samples=3, max_samples=3, cap_s=1.0)
    return oracle.baseline(
        {
            "shape": plan.message(),
            "device": "cpu",
            "compile": True,
            "settings": settings.__dict__,
            "inputs": str(in_dir / shape_file("inputs", plan.id)),
        }
    )


@pytest.mark.parametrize("slug", ["moe_swiglu", "causal_attention"])
def test_a_reference_compiled_again_for_each_input_set_gives_its_compile_line_up(
    tmp_path, eager_backend, slug
):
    reply = compile_baseline(tmp_path, slug)
    assert reply["event_ms"] == []
    assert reply["given_up"] == "torch.compile recompiles the reference for each input set"


def test_a_reference_of_one_graph_per_shape_is_timed_compiled(tmp_path, eager_backend):
    reply = compile_baseline(tmp_path, "rmsnorm")
    assert "given_up" not in reply
    assert len(reply["event_ms"]) == 3


def test_a_kind_given_up_is_not_timed_on_any_other_shape_and_is_cached_so():
    """The first shape's reply gives compile up; the other shapes are not asked, and every
    shape carries the kind as given up (the platform caches it: later grades skip it too)."""
    plans = plan_shapes(load_problem("rmsnorm"), "cpu")[0]
    assert len(plans) == 2
    made = performance.Performance.__new__(performance.Performance)
    made.device, made.timed = "cuda", plans
    made.problem = load_problem("rmsnorm")
    made.shapes = {plan.id: ShapeResult(plan.set, plan.index, plan.params) for plan in plans}
    asked = []

    def ask(message, timeout_s):
        asked.append((message["shape"]["id"], message["compile"]))
        if message["compile"]:
            return {"event_ms": [], "given_up": "torch.compile recompiles the reference"}
        return {"event_ms": [0.01, 0.01, 0.01]}

    made.grading = SimpleNamespace(
        cached={}, has_library=False, ask_reference=ask, inputs_file=lambda plan: "unused"
    )
    made._reference_settings = Settings
    notes = made._baselines()

    first, second = plans
    assert asked == [(first.id, False), (second.id, False), (first.id, True)]
    assert notes == [
        f"{first.label} compile: torch.compile recompiles the reference; not timed again",
        f"{second.label} compile: not timed (torch.compile recompiles the reference on "
        f"{first.label})",
    ]
    for shape in made.shapes.values():
        assert shape.baseline_timed_out == ["compile"] and shape.baseline_compile is None
        assert isinstance(shape.baseline_eager, TimingStats)
