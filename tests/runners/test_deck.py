"""The hard deck: its format, its inputs and formulas, its negative controls on CPU, and the engine
support it needs (held-out score over same-regime shapes, roofline regime, library timings).

Honest solutions pass on CPU through test_evaluate_cpu (every problem with a Triton honest.py).
"""

import importlib.util
import json
import re

import pytest
import torch
from engine_support import HERE, run_bounded, solution_rules

from runners import hardware, scoring
from runners.evaluate import evaluate
from runners.oracle import apply_distribution
from runners.pack import problem_info, write_pack
from runners.problem import HIDDEN_CASES, list_problems, load_problem
from runners.schema import EvaluationResult, ShapeResult, TimingStats, Verdict

HARD = (
    "add_rmsnorm",
    "causal_attention",
    "fp8_gemm",
    "gated_delta_rule",
    "moe_swiglu",
    "paged_attention",
    "topk",
    "w4a16_gemm",
)
# The kernel-to-kernel problems (their own checks: test_kernel_tracks.py).
STARTED = (
    "attention_triton",
    "block_reduce_cuda",
    "layernorm_triton",
    "swiglu_gemm_triton",
    "transpose_cuda",
)
FAILS_VISIBLE = ("all_zero", "lower_precision")
CONTROLS = [(slug, name, Verdict.INCORRECT) for slug in HARD for name in FAILS_VISIBLE]
CONTROLS += [(slug, "hardcoded", Verdict.INCORRECT_HIDDEN) for slug in HARD]
CONTROLS += [
    ("moe_swiglu", "balanced", Verdict.INCORRECT),
    ("paged_attention", "contiguous", Verdict.INCORRECT),
]


def reference(slug: str, **params):
    """A fresh copy of the problem's reference module with the given shape parameters set."""
    path = load_problem(slug).path / "reference.py"
    spec = importlib.util.spec_from_file_location(f"reference_{slug}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, value in params.items():
        setattr(module, name, value)
    return module


def inputs_for(module, seed: int) -> list:
    torch.manual_seed(seed)
    return list(module.get_inputs())


def smallest_hidden(problem) -> dict[str, int]:
    return min(problem.hidden, key=problem.bytes)


def test_the_deck_holds_the_warm_ups_the_hard_and_the_kernel_to_kernel_problems():
    assert {p.slug for p in list_problems()} == {"rmsnorm", "softmax", "row_sum", *HARD, *STARTED}


def test_every_prompt_states_one_rule_on_what_is_refused_and_what_is_graded():
    """Streams, graphs, build variables and own-folder writes are flagged and graded
    (static_check.FLAG_RULES); every prompt says so in the same words."""
    prompts = [(p.path / "PROMPT.md").read_text(encoding="utf-8") for p in list_problems()]
    (rules,) = {solution_rules(prompt) for prompt in prompts}
    refused, graded = rules.split("; ")
    assert "threads, subprocesses" in refused and "streams" not in refused
    assert "CUDA graphs, your own CUDA streams" in graded and "TORCH_CUDA_ARCH_LIST" in graded
    assert "files written in your own folder are fine" in graded


@pytest.mark.parametrize("slug", HARD)
def test_hard_problem_meets_the_format(slug):
    problem = load_problem(slug)
    assert problem.category == "pytorch-to-kernel"
    assert 3 <= len(problem.visible) <= 5
    assert len(problem.hidden) >= 6 and set(problem.hidden_cases) == set(HIDDEN_CASES)
    off_alignment = [v for s in problem.visible for v in s.values() if v >= 256 and v % 128]
    assert off_alignment, "at least one visible size that is not a multiple of 128"
    assert problem.cpu_capable and problem.forbidden
    assert "import triton" in (HERE / "solutions" / slug / "honest.py").read_text()
    for shape in problem.visible + problem.smoke + problem.hidden:
        assert problem.flops(shape) > 0 and problem.bytes(shape) > 0


@pytest.mark.parametrize("slug", HARD + STARTED)
def test_seeds_change_the_inputs_but_not_their_shapes(slug):
    problem = load_problem(slug)
    for shape in [*problem.smoke, smallest_hidden(problem)]:
        module = reference(slug, **shape)
        first, second = inputs_for(module, 1), inputs_for(module, 2)
        # The timing loop refills one set of buffers with every seed's values.
        assert [(a.shape, a.dtype) for a in first] == [(b.shape, b.dtype) for b in second]
        assert any(not torch.equal(a, b) for a, b in zip(first, second, strict=True))


@pytest.mark.parametrize(
    ("slug", "position", "shape"),
    [
        ("moe_swiglu", 1, {"tokens": 64, "hidden": 32, "inter": 16, "experts": 16, "topk": 4}),
        (
            "paged_attention",
            3,
            {"batch": 8, "heads": 4, "kv_heads": 2, "head_dim": 16, "seq_len": 40, "page": 4},
        ),
        ("causal_attention", 3, {"batch": 6, "seq": 30, "heads": 2, "head_dim": 16}),
    ],
)
def test_routing_pages_and_lengths_are_drawn_per_seed(slug, position, shape):
    module = reference(slug, **shape)
    drawn = [inputs_for(module, seed)[position] for seed in (1, 2, 3)]
    assert not torch.equal(drawn[0], drawn[1]) or not torch.equal(drawn[1], drawn[2])


def test_moe_routing_is_ragged_with_experts_over_eight_empty():
    shape = {"tokens": 256, "hidden": 16, "inter": 8, "experts": 64, "topk": 8}
    module = reference("moe_swiglu", **shape)
    for seed in range(5):
        offsets = inputs_for(module, seed)[1].long()
        counts = offsets.diff()
        assert offsets[0] == 0 and offsets[-1] == 256 * 8
        assert int((counts == 0).sum()) == 64 // 8  # what the bytes formula assumes
        assert counts.max() > 3 * counts.float().mean()  # unbalanced, not round-robin


def test_moe_flops_count_every_routed_row_times_gate_and_up():
    problem = load_problem("moe_swiglu")
    shape = problem.visible[0]
    rows = shape["tokens"] * shape["topk"]
    assert problem.flops(shape) == 2 * rows * shape["hidden"] * 2 * shape["inter"]


def test_paged_bytes_count_exactly_the_cached_tokens():
    problem = load_problem("paged_attention")
    for shape in problem.smoke + problem.hidden[:2]:
        module = reference("paged_attention", **shape)
        q, k_cache, _, table, lengths = inputs_for(module, 7)
        batch, page = shape["batch"], shape["page"]
        assert int(lengths.sum()) == batch * shape["seq_len"]
        assert int(lengths.min()) >= 1 and int(lengths.max()) <= 2 * shape["seq_len"] - 1
        used = [table[b, : -(-int(lengths[b]) // page)] for b in range(batch)]
        pages = torch.cat(used)
        assert pages.unique().numel() == pages.numel()  # no page shared between sequences
        kv_bytes = 2 * int(lengths.sum()) * k_cache.shape[2] * k_cache.shape[3] * 2
        rest = 2 * 2 * q.numel() + 4 * table.numel() + 4 * batch
        assert problem.bytes(shape) == kv_bytes + rest


def test_causal_flops_count_the_causal_pairs_exactly():
    problem = load_problem("causal_attention")
    for shape in problem.visible + problem.smoke + problem.hidden:
        module = reference("causal_attention", **shape)
        torch.manual_seed(0)
        lengths = module.sequence_lengths().double()
        pairs = float((lengths * (lengths + 1)).sum())
        assert problem.flops(shape) == 2 * shape["heads"] * shape["head_dim"] * pairs


def sequential_delta_rule(q, k, v, a, b):
    """The gated delta rule step by step in fp64."""
    q = torch.nn.functional.normalize(q.double(), dim=-1) * q.shape[-1] ** -0.5
    k = torch.nn.functional.normalize(k.double(), dim=-1)
    alpha, beta = torch.sigmoid(a.double()), torch.sigmoid(b.double())
    batch, steps, heads, dk = q.shape
    state = torch.zeros(batch, heads, dk, v.shape[-1], dtype=torch.float64)
    out = torch.empty(batch, steps, heads, v.shape[-1], dtype=torch.float64)
    for t in range(steps):
        decayed = alpha[:, t, :, None, None] * state
        recalled = (decayed * k[:, t, :, :, None]).sum(2)
        written = beta[:, t, :, None] * (v[:, t].double() - recalled)
        state = decayed + k[:, t, :, :, None] * written[:, :, None, :]
        out[:, t] = (state * q[:, t, :, :, None]).sum(2)
    return out, state


@pytest.mark.parametrize("distribution", ["normal", "offset", "uniform"])
def test_chunked_delta_rule_reference_matches_an_fp64_recurrence(distribution):
    problem = load_problem("gated_delta_rule")
    tolerance = problem.outputs
    shape = {"batch": 2, "seq": 150, "heads": 2, "dk": 16, "dv": 8}  # three chunks, one partial
    module = reference("gated_delta_rule", **shape)
    args = apply_distribution(inputs_for(module, 3), distribution)
    out, state = module.Model()(*args)
    want_out, want_state = sequential_delta_rule(*args)
    out_err = (out.double() - want_out).abs()
    assert bool((out_err <= 0.5 * tolerance["out0"]["rtol"] * want_out.abs() + 1e-3).all())
    state_err = (state.double() - want_state).abs().max() / want_state.abs().max()
    assert state_err < 1e-5  # against 5e-3 allowed: the margin is the candidate's


@pytest.mark.parametrize(("slug", "control", "verdict"), CONTROLS)
def test_negative_control_fails_where_it_should(slug, control, verdict):
    solution = HERE / "solutions" / slug / f"{control}.py"
    result = run_bounded(evaluate, slug, solution, device="cpu")
    assert result.verdict == verdict, result.reason
    assert result.score == 0.0


def held_out_values(problem) -> set[int]:
    shown = {v for shape in problem.visible + problem.smoke for v in shape.values()}
    hidden = {v for shape in problem.hidden for v in shape.values()}
    return {v for v in hidden - shown if v >= 100} | set(problem.hidden_seeds)


@pytest.mark.parametrize("slug", HARD + STARTED)
def test_pack_and_listing_reveal_nothing_held_out(tmp_path, slug):
    problem = load_problem(slug)
    write_pack(problem, tmp_path / "pack")
    text = "\n".join(p.read_text() for p in (tmp_path / "pack").iterdir())
    text += json.dumps(problem_info(problem).to_dict())
    assert not [v for v in held_out_values(problem) if re.search(rf"\b{v}\b", text)]
    assert not (tmp_path / "pack" / "hidden.yaml").exists()


@pytest.mark.parametrize(
    ("floor_s", "in_regime"),
    [(20e-6, True), (2.5e-6, True), (2.4e-6, False), (1e-3, True), (1e-9, False)],
)
def test_held_out_shapes_score_only_in_the_visible_regime(floor_s, in_regime):
    visible = [20e-6, 80e-6]  # a held-out shape counts from 1/8 of the smallest visible floor
    assert scoring.in_visible_regime(floor_s, visible) is in_regime
    assert scoring.in_visible_regime(floor_s, []) is False


def test_roofline_regime_scores_against_the_slower_bound():
    h100 = hardware.by_slug("h100-sxm")
    work = dict(flops=2e12, nbytes=1e9, dtype="bf16")
    floor = hardware.speed_of_light_s(h100, **work)
    assert floor == pytest.approx(2e12 / 989.4e12)
    assert hardware.peak_fraction(h100, regime="roofline", seconds=2 * floor, **work) == 0.5
    memory_bound = dict(flops=1e9, nbytes=3.35e9, dtype="bf16")
    assert hardware.peak_fraction(
        h100, regime="roofline", seconds=2e-3, **memory_bound
    ) == pytest.approx(0.5)


def timing(median_us: float) -> TimingStats:
    return TimingStats(median_us, median_us, 0.0, median_us, median_us, median_us, 50)


def test_library_timing_and_the_scored_flag_survive_the_result_round_trip():
    shape = ShapeResult(set="hidden", index=0, params={"m": 3}, time=timing(10.0))
    shape.baseline_eager, shape.baseline_library = timing(40.0), timing(5.0)
    scoring.score_shape(shape, hardware=None, regime="compute", dtype="bf16", flops=1e6, nbytes=1e3)
    assert (shape.speedup_eager, shape.speedup_library) == (4.0, 0.5)
    shape.scored = False
    result = EvaluationResult(problem="p", problem_version="v", device="cuda", verdict="ok")
    result.shapes = [shape]
    data = result.to_dict()
    again = EvaluationResult.from_dict(data)
    assert again.shapes[0].baseline_library == timing(5.0) and again.shapes[0].scored is False
    assert again.to_dict() == data
