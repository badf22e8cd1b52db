import json

from runners.schema import (
    GATE_NAMES,
    SCHEMA_VERSION,
    EvaluationResult,
    GateResult,
    ProblemInfo,
    ShapeResult,
    TimingStats,
    Verdict,
    baseline_key,
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
