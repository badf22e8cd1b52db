import json
import math

import pytest

from runners.schema import (
    GATE_NAMES,
    SCHEMA_VERSION,
    BaselineKey,
    EvaluationResult,
    GateResult,
    ProblemInfo,
    ShapeResult,
    StarterComparison,
    TimingStats,
    Verdict,
    baseline_key,
    parse_baseline_key,
)

ARCHITECTURE_VERDICTS = [
    "ok",
    "missing_solution",
    "syntax_error",
    "forbidden",
    "build_error",
    "runtime_error",
    "incorrect",
    "incorrect_hidden",
    "timeout",
    "resource_limit",
    "crashed",
    "timing_rejected",
    "infra_error",
]


def make_result() -> EvaluationResult:
    stats = TimingStats(10.0, 10.5, 0.4, 9.8, 9.9, 11.0, 40)
    shape = ShapeResult(
        set="visible",
        index=0,
        params={"rows": 4},
        correct=True,
        time=stats,
        baseline_eager=stats,
        worst_index=[1, 2],
    )
    gate = GateResult(name="static", status="pass", details={"hits": []})
    return EvaluationResult(
        problem="softmax",
        problem_version="abc",
        device="cuda",
        verdict=Verdict.OK,
        score=0.5,
        gates=[gate],
        shapes=[shape],
    )


def test_result_survives_a_json_round_trip():
    result = make_result()
    again = EvaluationResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert isinstance(again.shapes[0].time, TimingStats)
    assert again.gate("static").details == {"hits": []}


def test_a_kernel_to_kernel_result_round_trips_its_starter_fields():
    result = make_result()
    stats = result.shapes[0].time
    held_out = ShapeResult(set="hidden", index=0, params={"rows": 9}, correct=False)
    held_out.baseline_starter, held_out.speedup_starter = stats, 1.0
    held_out.starter_correct = True
    result.shapes.append(held_out)
    result.starter = StarterComparison(
        starter_hidden_correct=True, quadrant="regression", conditional_hidden_correct=0.5
    )
    again = EvaluationResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert isinstance(again.starter, StarterComparison)
    assert isinstance(again.shapes[1].baseline_starter, TimingStats)
    assert again.shapes[1].starter_correct is True


def test_a_result_without_a_starter_reads_back_with_none():
    data = make_result().to_dict()
    del data["starter"]  # an engine from before kernel-to-kernel problems
    assert EvaluationResult.from_dict(data).starter is None


def test_reader_ignores_fields_from_a_newer_engine():
    data = make_result().to_dict()
    data["future_field"] = 1
    data["shapes"][0]["future_shape_field"] = 2
    assert EvaluationResult.from_dict(data).shapes[0].params == {"rows": 4}


def test_result_carries_the_top_level_fields_of_the_contract():
    data = make_result().to_dict()
    for key in (
        "schema_version",
        "engine_version",
        "problem",
        "problem_version",
        "device",
        "verdict",
        "reason",
        "score",
        "hidden_score",
        "correct_visible",
        "correct_hidden",
        "timings_comparable",
        "gates",
        "shapes",
        "environment",
        "isolation",
    ):
        assert key in data
    assert data["schema_version"] == SCHEMA_VERSION


def test_verdicts_match_the_architecture_taxonomy():
    assert sorted(Verdict.ALL) == sorted(ARCHITECTURE_VERDICTS)


def test_gates_are_listed_in_protocol_order():
    assert GATE_NAMES == (
        "static",
        "build",
        "correct_visible",
        "correct_hidden",
        "performance",
        "score",
    )


def test_baseline_key_sorts_shape_parameters():
    key = baseline_key("v1", {"rows": 2, "cols": 3}, "h100-sxm", "2.11.0", 2)
    assert key == "v1:cols=3,rows=2:h100-sxm:2.11.0:t2"


def test_problem_info_round_trips():
    info = ProblemInfo("softmax", "Softmax", "triton-to-triton", "memory", "v", 4, 6)
    assert ProblemInfo.from_dict(info.to_dict()) == info


def test_problem_info_round_trips_its_statement_and_visible_shapes():
    info = ProblemInfo(
        "softmax",
        "Softmax",
        "triton-to-triton",
        "memory",
        "v",
        1,
        6,
        statement="# Make it fast\n",
        visible_shapes=[{"rows": 8, "cols": 3}],
    )
    again = ProblemInfo.from_dict(json.loads(json.dumps(info.to_dict())))
    assert again == info
    assert again.visible_shapes == [{"rows": 8, "cols": 3}]


def wildly_wrong_result() -> EvaluationResult:
    result = make_result()
    result.score = math.nan
    result.shapes[0].max_abs_err = math.inf
    result.shapes[0].max_rel_err = -math.inf
    result.gates[0].details["spread"] = [1.0, math.nan]
    return result


def test_non_finite_numbers_are_written_as_null_with_their_paths():
    data = wildly_wrong_result().to_dict()
    json.dumps(data, allow_nan=False)  # raises on any NaN or infinity left
    assert data["score"] is None
    assert data["shapes"][0]["max_abs_err"] is None and data["shapes"][0]["max_rel_err"] is None
    assert data["gates"][0]["details"]["spread"] == [1.0, None]
    assert data["non_finite"] == [
        "score",
        "gates[0].details.spread[1]",
        "shapes[0].max_abs_err",
        "shapes[0].max_rel_err",
    ]


def test_a_result_read_back_keeps_its_non_finite_flags_and_writes_the_same_dict():
    data = wildly_wrong_result().to_dict()
    again = EvaluationResult.from_dict(json.loads(json.dumps(data, allow_nan=False)))
    assert again.score is None and again.shapes[0].max_rel_err is None
    assert again.non_finite == data["non_finite"]
    assert again.to_dict() == data


def test_a_finite_result_has_no_non_finite_flag():
    result = make_result()
    assert result.to_dict()["non_finite"] == []
    assert EvaluationResult.from_dict(result.to_dict()) == result


def test_baseline_key_parses_back_into_its_parts():
    key = baseline_key("v1", {"rows": 2, "cols": 3}, "h100-sxm", "2.11.0+cu128", 2)
    parsed = parse_baseline_key(key)
    assert parsed == BaselineKey("v1", "cols=3,rows=2", "h100-sxm", "2.11.0+cu128", 2)
    assert parsed.key == key and str(parsed) == key


@pytest.mark.parametrize(
    ("gpu", "params"),
    [("NVIDIA: X", {"rows": 2}), ("cpu", {}), ("a:b:c", {"n": 1, "m": 7})],
)
def test_baseline_key_round_trips_a_gpu_name_with_colons_and_an_empty_shape(gpu, params):
    key = baseline_key("abc123", params, gpu, "2.13.0", 12)
    parsed = parse_baseline_key(key)
    assert (parsed.gpu, parsed.torch_version, parsed.protocol) == (gpu, "2.13.0", 12)
    assert parsed.key == key


@pytest.mark.parametrize(
    "key",
    [
        "v1:batch=8,dim=1024:h100-sxm:2.11.0",  # the 0.1 engine's key: no timing protocol
        "v1:batch=8,dim=1024:h100-sxm:2.11.0:2",
        "v1:batch=8,dim=1024:h100-sxm:2.11.0:tx",
        "v1:batch=8,dim=1024:h100-sxm:2.11.0:t12345",
        ":rows=2:h100-sxm:2.11.0:t2",  # no problem version
        "v1:rows=2::2.11.0:t2",  # no GPU
        "v1:rows=2:h100-sxm::t2",  # no torch version
        "",
    ],
)
def test_keys_of_another_format_parse_to_none(key):
    assert parse_baseline_key(key) is None


def test_a_parsed_key_is_frozen():
    parsed = parse_baseline_key("v1:rows=2:cpu:2.13.0:t2")
    with pytest.raises(AttributeError):
        parsed.gpu = "h100-sxm"
