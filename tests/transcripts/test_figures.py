"""Run figures on real samples (numbers worked out by hand from the raw files; the samples'
README states the Claude and Codex token totals) and on small hand-made sessions."""

import json
from pathlib import Path

import pytest

from transcripts.figures import CLI, EVENTS, RunFigures, run_figures
from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers import parse_files, session_files_for

HERE = Path(__file__).parent
SAMPLES = HERE / "samples"
FIXTURES = HERE / "fixtures"
TOKENS = ("input_tokens", "cached_input_tokens", "output_tokens")


def figures_of(*paths: Path) -> RunFigures:
    return run_figures(parse_files(list(paths)))


def test_claude_session_file_counts_each_api_message_once_with_every_prompt_token():
    figures = figures_of(SAMPLES / "claude-jsonl-edits-3fe1b6bc.jsonl")
    assert figures.input_tokens == 15377 + 1707033 + 5157884
    assert (figures.cached_input_tokens, figures.output_tokens) == (5157884, 34781)
    assert figures.reasoning_tokens is None  # Claude does not split reasoning out
    assert figures.turns == 67  # distinct message.id
    assert figures.wall_time_s == pytest.approx(4912.215)  # 14:21:21.196 to 15:43:13.411
    assert figures.cost_usd is None
    assert figures.sources == dict.fromkeys([*TOKENS, "turns", "wall_time_s"], EVENTS)


def test_claude_stream_json_takes_the_result_line_figures_subagent_included():
    figures = figures_of(SAMPLES / "claude-stream-json-task-subagent.jsonl")
    assert figures.input_tokens == 396 + 191182 + 45206  # modelUsage, not result.usage
    assert (figures.cached_input_tokens, figures.output_tokens) == (191182, 4795)
    assert (figures.turns, figures.wall_time_s, figures.cost_usd) == (2, 170.911, 0.0999967)
    assert figures.reasoning_tokens is None
    assert figures.sources == dict.fromkeys([*TOKENS, "turns", "wall_time_s", "cost_usd"], CLI)


@pytest.mark.parametrize(
    ("name", "prompt", "cached", "output"),
    [
        ("codex-exec-json-command.jsonl", 6087, 5120, 204),
        ("codex-exec-json-file-change.jsonl", 6008, 4096, 51),
    ],
)
def test_codex_exec_input_already_holds_its_cached_tokens(name, prompt, cached, output):
    figures = figures_of(SAMPLES / name)
    assert (figures.input_tokens, figures.cached_input_tokens) == (prompt, cached)
    assert figures.output_tokens == output
    assert figures.turns == 2  # reasoning + tool call, then reasoning + answer
    assert (figures.wall_time_s, figures.cost_usd, figures.reasoning_tokens) == (None, None, None)
    assert figures.sources == dict.fromkeys([*TOKENS, "turns"], EVENTS)


def test_codex_reasoning_is_a_share_of_output_never_added_to_it(tmp_path):
    usage = {
        "input_tokens": 1000,
        "cached_input_tokens": 400,
        "output_tokens": 300,
        "reasoning_output_tokens": 200,
    }
    lines = [
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": usage},
    ]
    path = tmp_path / "exec.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    figures = figures_of(path)
    assert (figures.input_tokens, figures.cached_input_tokens) == (1000, 400)
    assert (figures.output_tokens, figures.reasoning_tokens) == (300, 200)


def test_codex_rollouts_add_each_threads_own_running_total():
    figures = figures_of(*sorted((FIXTURES / "codex").glob("rollout-*.jsonl")))
    assert (figures.input_tokens, figures.cached_input_tokens) == (25500 + 6100, 16500 + 3000)
    assert (figures.output_tokens, figures.reasoning_tokens) == (580 + 52, 240)
    assert figures.turns == 4  # token_count events closing a call of the main thread
    assert figures.wall_time_s == pytest.approx(9.98)  # 10:00:00.050 to 10:00:10.030
    assert figures.sources["input_tokens"] == CLI
    assert figures.sources["turns"] == EVENTS


def test_claude_subagents_count_once_though_progress_records_mirror_them():
    main = FIXTURES / "claude/subagents-folder/5d0c1a2e-7b3f-4c11-9a0e-1f2e3d4c5b6a.jsonl"
    figures = figures_of(*session_files_for(main))
    # six API messages (two main, two per subagent), each 10 + 200 written + 1000 read
    assert (figures.input_tokens, figures.cached_input_tokens) == (6 * 1210, 6 * 1000)
    assert figures.output_tokens == 61 + 14 + 40 + 25 + 12 + 9
    assert figures.turns == 2  # the main thread's two messages
    # the CLI's own turn_duration (20.4 s) stands for the run, not the records' span (16 s)
    assert (figures.wall_time_s, figures.sources["wall_time_s"]) == (20.4, CLI)


def test_cursor_parallel_calls_of_one_model_call_make_one_turn():
    figures = figures_of(FIXTURES / "cursor/stream-json-edit.jsonl")
    assert (figures.input_tokens, figures.cached_input_tokens) == (5400 + 2048, 2048)
    assert figures.turns == 4  # mc-01, mc-02, mc-03 (shell and grep), the closing answer
    assert (figures.wall_time_s, figures.sources["wall_time_s"]) == (5.12, CLI)


def test_opencode_cost_is_the_sum_of_its_steps_own_costs():
    figures = figures_of(FIXTURES / "opencode/run-json.jsonl")
    assert figures.cost_usd == pytest.approx(0.0123 + 0.0045)
    assert figures.sources["cost_usd"] == EVENTS
    assert figures.input_tokens == (4200 + 1024 + 512) + (300 + 4700)
    assert (figures.output_tokens, figures.reasoning_tokens) == (180 + 64 + 40, 64)


def test_kimi_stream_without_usage_has_no_token_figures():
    figures = figures_of(FIXTURES / "kimi/stream-json.jsonl")
    assert all(getattr(figures, name) is None for name in (*TOKENS, "reasoning_tokens"))
    assert figures.sources == {"turns": EVENTS}


def test_a_session_with_nothing_in_it_has_no_figures():
    assert run_figures(session()) == RunFigures()


def call(api_call_id: str | None = None, usage: Usage | None = None, **fields) -> Event:
    return Event(kind=Kind.TOOL_CALL, id="", api_call_id=api_call_id, usage=usage, **fields)


def result() -> Event:
    return Event(kind=Kind.TOOL_RESULT, id="")


def session(*events: Event, format_name: str = "claude-jsonl", **fields) -> Session:
    return Session(id="s", harness="h", format=format_name, events=list(events), **fields)


def spawning(child: Session, **fields) -> Event:
    return call(children=[child], **fields)


def test_a_report_stands_for_subagents_that_report_nothing_themselves():
    child = session(call("c1", Usage(input=5, output=7)))
    parent = session(spawning(child), reported_usage=Usage(input=50, output=70))
    figures = run_figures(parent)
    assert (figures.input_tokens, figures.output_tokens) == (50, 70)
    assert figures.sources["input_tokens"] == CLI


def test_subagents_reporting_their_own_totals_are_added():
    child = session(call("c1", Usage(input=99)), reported_usage=Usage(input=5, cache_read=1))
    parent = session(spawning(child), reported_usage=Usage(input=50))
    assert run_figures(parent).input_tokens == 56


def test_a_run_summed_partly_from_events_says_events():
    child = session(reported_usage=Usage(input=5, cache_write=2))
    parent = session(spawning(child, api_call_id="m1", usage=Usage(input=1, output=3)))
    figures = run_figures(parent)
    assert (figures.input_tokens, figures.output_tokens) == (8, 3)
    assert figures.sources["output_tokens"] == EVENTS
    assert figures.turns == 1  # the subagent's call is not a turn of the run


def test_events_without_usage_or_time_leave_only_turns():
    answer = Event(kind=Kind.ASSISTANT, id="", text="hi")
    figures = run_figures(session(Event(kind=Kind.USER, id=""), answer, answer))
    assert figures == RunFigures(turns=1, sources={"turns": EVENTS})


def test_calls_interleaved_with_results_are_one_turn_unless_ids_name_whole_turns():
    events = [call("a"), result(), call("a"), result(), call("b")]
    assert run_figures(session(*events)).turns == 2
    assert run_figures(session(*events, format_name="codex-exec-json")).turns == 3


def test_cost_from_old_claude_records_is_summed_per_call():
    child = session(cost_usd=0.25)
    figures = run_figures(session(spawning(child), cost_usd=1.0))
    assert (figures.cost_usd, figures.sources["cost_usd"]) == (1.25, EVENTS)


def test_figures_of_the_wrong_type_are_left_out():
    odd = session(
        num_turns=True,
        duration_ms=float("inf"),
        cost_usd=float("nan"),
        started_at="yesterday",
        ended_at="2026-01-01T00:00:00Z",
    )
    assert run_figures(odd) == RunFigures()


def test_one_instant_is_no_wall_time_and_a_zoneless_time_is_utc():
    start, end = "2026-01-01T10:00:00", "2026-01-01T10:00:30.5+00:00"
    assert run_figures(session(started_at=start, ended_at=start)).wall_time_s is None
    assert run_figures(session(started_at=start, ended_at=end)).wall_time_s == 30.5


def test_fractional_turn_counts_become_whole_turns_and_figures_survive_storage():
    parsed = parse_files([FIXTURES / "claude/stream-nested-two-results.jsonl"])
    stored = Session.from_dict(json.loads(json.dumps(parsed.to_dict())))
    assert run_figures(stored) == run_figures(parsed)
    assert run_figures(session(num_turns=2.0)).turns == 2
