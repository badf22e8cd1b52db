import json
import re
from pathlib import Path

from viewer_cases import PAYLOAD, hostile_context, hostile_session

from transcripts.figures import run_figures
from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers import parse_files, session_files_for
from transcripts.render import render_html

SAMPLES = Path(__file__).parent / "samples"
EDITS = SAMPLES / "claude-jsonl-edits-3fe1b6bc.jsonl"
STREAM = SAMPLES / "claude-stream-json-task-subagent.jsonl"
ROLLOUT = SAMPLES / "codex-rollout-handwritten.jsonl"
FOLDER_MAIN = (
    SAMPLES / "claude-subagents-folder-handwritten" / "7c2e9a40-1d3b-4f5e-8a6c-2b4d6f8a0c1e.jsonl"
)
DATA_OPEN = '<script type="application/json" id="run-data">'


def data_block(html: str) -> str:
    start = html.index(DATA_OPEN) + len(DATA_OPEN)
    return html[start : html.index("</script>", start)]


def page_sessions(html: str) -> list[dict]:
    return json.loads(data_block(html))["sessions"]


def page_events(html: str) -> list[dict]:
    return [event for session in page_sessions(html) for event in session["ev"]]


def model_events(session: Session) -> list[Event]:
    return [event for _depth, sub in session.walk() for event in sub.events]


def test_every_tool_call_of_the_claude_sample_is_in_the_page():
    session = parse_files([EDITS])
    events = page_events(render_html(session, context={}))
    calls = [e["ci"] for e in events if e["k"] == Kind.TOOL_CALL]
    expected = [e.call_id for e in session.events if e.kind == Kind.TOOL_CALL]
    assert len(calls) == 76
    assert calls == expected


def test_every_diff_of_the_claude_sample_is_embedded_whole():
    session = parse_files([EDITS])
    diffs = [e["df"] for e in page_events(render_html(session, context={})) if "df" in e]
    assert len(diffs) >= 18
    assert diffs == [e.diff for e in session.events if e.diff]
    assert any(d.startswith("--- ") and "\n@@ -299,14 +299,47 @@" in d for d in diffs)


def test_every_event_keeps_its_text_arguments_and_kind():
    session = parse_files([EDITS])
    pairs = zip(page_events(render_html(session, context={})), model_events(session), strict=True)
    for shown, event in pairs:
        assert shown["k"] == event.kind
        assert shown.get("x", "") == event.text
        assert shown.get("a") == event.arguments


def test_totals_show_the_deduplicated_token_counts_of_the_sample():
    html = render_html(parse_files([EDITS]), context={})
    totals = html[html.index('id="totals"') : html.index("</section>", html.index('id="totals"'))]
    for figure in ("15,377", "34,781", "1,707,033", "5,157,884", ">76<", ">67<"):
        assert figure in totals


def test_subagent_session_nests_under_its_task_call_with_its_own_totals():
    sessions = page_sessions(render_html(parse_files([STREAM]), context={}))
    child = sessions[1]
    parent_event = sessions[0]["ev"][child["p"][1]]
    assert parent_event["ci"] == "toolu_01EMBD2Ez8pt8LWj5ovow1mU"
    assert parent_event["ch"] == [1]
    assert child["dp"] == 1
    assert child["tot"]["tool_calls"] == 35
    assert sessions[0]["tot"]["tool_calls"] == 36


def test_embedded_json_cannot_close_the_script_block_or_break_javascript():
    html = render_html(hostile_session(), context=hostile_context())
    block = data_block(html)
    assert "<" not in block and ">" not in block
    assert "\u2028" not in block and "\u2029" not in block
    assert "\\u2028" in block
    assert json.loads(block)["sessions"][0]["ev"][0]["x"] == PAYLOAD


def test_server_rendered_parts_escape_every_hostile_string():
    html = render_html(hostile_session(), context=hostile_context())
    outside = html.replace(data_block(html), "")
    assert "window.__xss" in outside  # the escaped payloads are shown
    assert "<script>window" not in outside
    assert "<img" not in outside and "<svg" not in outside and "<iframe" not in outside
    assert not re.search(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", outside)


def test_csp_hashes_match_the_inline_script_and_style():
    from transcripts.render import sha256_source

    html = render_html(parse_files([STREAM]), context={"solution": "x = 1\n"})
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    script = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(script) == 1
    assert f"script-src '{sha256_source(script[0])}';" in policy
    assert f"style-src '{sha256_source(style)}';" in policy
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert html.index("Content-Security-Policy") < html.index("<title>")


def totals_section(html: str) -> str:
    start = html.index('id="totals"')
    return html[start : html.index("</section>", start)]


def verbatim_rows(html: str) -> dict[str, str]:
    table = totals_section(html).split('<table class="cli-figures">')[1].split("</table>")[0]
    return dict(re.findall(r"<tr><th><code>([^<]*)</code></th><td>([^<]*)</td></tr>", table))


def normalized_rows(html: str) -> dict[str, list[str]]:
    table = totals_section(html).split('<table class="tokens">')[1].split("</table>")[0]
    rows = re.findall(r"<tr><th>([^<]*)</th>((?:<td>[^<]*</td>)+)</tr>", table)
    return {label.strip(): re.findall(r"<td>([^<]*)</td>", cells) for label, cells in rows}


def test_codex_rollout_page_shows_the_clis_input_and_total_and_the_normalized_ones():
    """Issue 13: the page showed input minus cached (1,126,300) in the CLI's own row and a total
    of 6,066,713 (reasoning added twice); the CLI says 6,055,836 and 6,064,954."""
    html = render_html(parse_files([ROLLOUT]), context={})
    cli = verbatim_rows(html)
    prefix = "last token_count: info.total_token_usage."
    assert cli[prefix + "input_tokens"] == "6,055,836"
    assert cli[prefix + "cached_input_tokens"] == "4,929,536"
    assert cli[prefix + "total_tokens"] == "6,064,954"
    rows = normalized_rows(html)
    assert rows["input: every prompt token"][0] == "6,055,836"
    assert rows["of which uncached"][0] == "1,126,300"
    assert rows["total = input + output"] == ["6,064,954"] * 3
    assert "6,066,713" not in html


def test_codex_exec_page_shows_the_turns_input_as_the_cli_wrote_it():
    html = render_html(parse_files([SAMPLES / "codex-exec-json-file-change.jsonl"]), context={})
    assert verbatim_rows(html)["turn.completed usage (turn 1).input_tokens"] == "6,008"
    assert normalized_rows(html)["input: every prompt token"][0] == "6,008"


def test_stream_json_page_shows_result_usage_and_model_usage_and_the_exact_cost():
    html = render_html(parse_files([STREAM]), context={})
    cli = verbatim_rows(html)
    assert cli["result.usage.output_tokens"] == "161"
    assert cli["result.modelUsage.claude-haiku-4-5-20251001.outputTokens"] == "4,795"
    assert cli["result.total_cost_usd"] == "0.0999967"
    assert "$0.0999967" in totals_section(html) and "$0.1000" not in html
    leaderboard = normalized_rows(html)["output: every generated token"][0]
    assert leaderboard == f"{run_figures(parse_files([STREAM])).output_tokens:,}" == "4,795"


def test_a_cli_without_totals_of_its_own_says_so_beside_the_summed_figures():
    section = totals_section(render_html(parse_files([EDITS]), context={}))
    assert "cli-figures muted" in section and "per-call usage, summed" in section
    assert (
        normalized_rows(render_html(parse_files([EDITS]), context={}))["input: every prompt token"][
            0
        ]
        == f"{15377 + 1707033 + 5157884:,}"
    )


def test_subagent_entries_carry_the_task_results_own_figures():
    sessions = page_sessions(render_html(parse_files(session_files_for(FOLDER_MAIN)), context={}))
    agent = sessions[1]
    assert agent["cf"]["Task result: toolUseResult.totalTokens"] == 57744
    assert agent["tot"]["duration_ms"] == 349797
    assert "cf" not in sessions[0]


def test_prose_is_embedded_as_written_for_the_page_to_format():
    events = [Event(kind=Kind.ASSISTANT, id=str(n), text=f"*prose {n}*") for n in range(3)]
    session = Session(id="s", harness="h", format="f", events=events)
    shown = page_events(render_html(session, context={}))
    assert [e["x"] for e in shown] == ["*prose 0*", "*prose 1*", "*prose 2*"]
    assert all("h" not in e for e in shown)  # no server-side HTML left to trust


def test_held_out_shape_parameters_never_reach_the_page():
    html = render_html(hostile_session(), context=hostile_context())
    assert "987654321" not in html
    assert "held-out case 2" in html  # index 1, counted from 1
    assert '<table class="gates">' in html and '<table class="shapes">' in html


def test_solution_is_highlighted_by_pygments_and_escaped():
    html = render_html(hostile_session(), context=hostile_context())
    solution = html[html.index('id="solution"') :]
    solution = solution[: solution.index("</section>")]
    assert 'class="hl"' in solution
    assert "&lt;script&gt;" in solution and "<script>" not in solution


def test_event_anchors_are_unique_and_made_of_safe_characters():
    events = page_events(render_html(hostile_session(), context=hostile_context()))
    anchors = [event["id"] for event in events]
    assert len(set(anchors)) == len(anchors)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", anchor) for anchor in anchors)


def test_encrypted_and_empty_reasoning_are_flagged_for_the_viewer():
    events = page_events(render_html(hostile_session(), context=hostile_context()))
    encrypted = [e for e in events if e["k"] == Kind.REASONING and e.get("enc")]
    assert encrypted and all("x" not in e for e in encrypted)


def test_lone_surrogates_anywhere_still_give_a_page_that_encodes_as_utf8():
    half_emoji = "cut \ud83d here"
    event = Event(kind=Kind.TOOL_RESULT, id="r", text=half_emoji)
    session = Session(id="s", harness="h", format="f", title=half_emoji, events=[event])
    html = render_html(session, context={"solution": half_emoji})
    html.encode("utf-8")
    assert page_events(html)[0]["x"] == half_emoji


def test_the_policy_offered_to_servers_is_the_one_in_the_page():
    from transcripts.render import content_security_policy

    html = render_html(parse_files([STREAM]), context={})
    assert f'content="{content_security_policy()}"' in html


def test_a_large_payload_is_embedded_gzipped_and_reads_back_whole(monkeypatch):
    from transcripts import render

    session = parse_files([EDITS])
    plain = render_html(session, context={})
    monkeypatch.setattr(render, "PACK_ABOVE_CHARS", 1000)
    monkeypatch.setattr(render, "HEAD_CHARS", 2000)  # the first events, drawn before unpacking
    packed = render_html(session, context={})
    assert DATA_OPEN not in packed and 'id="run-data-gz"' in packed
    assert packed.index('id="run-data-head"') < packed.index('id="run-data-gz"')
    assert len(packed) < len(plain) / 2
    assert render.embedded_payload(packed) == render.embedded_payload(plain)
    assert render.embedded_payload(plain) == json.loads(data_block(plain))


def test_a_back_link_is_drawn_only_for_web_addresses():
    session = Session(id="s", harness="h", format="f", events=[])
    assert 'href="/runs/1/"' in render_html(session, context={"back_url": "/runs/1/"})
    html = render_html(session, context={"back_url": "javascript:alert(1)"})
    assert "javascript:alert" not in html and "Back to the run" not in html


def test_the_site_links_head_the_page_and_only_web_addresses_are_drawn():
    session = Session(id="s", harness="h", format="f", events=[])
    links = [["Kernel Arena", "https://arena.example/"], ["Runs", "javascript:alert(1)"]]
    html = render_html(session, context={"site_links": links})
    nav = re.search(r'<nav class="site" aria-label="Site">(.*?)</nav>', html).group(1)
    assert nav == '<a href="https://arena.example/">Kernel Arena</a>'
    assert '<nav class="site"' not in render_html(session, context={})


def test_a_file_whose_output_tokens_cannot_cover_what_was_written_says_so():
    def session(output: int) -> Session:
        call = Event(kind=Kind.ASSISTANT, id="a1", text="x" * 18_236, api_call_id="m1")
        call.usage = Usage(input=10, output=output)
        return Session(id="s", harness="claude-code", format="claude-jsonl", events=[call])

    under = render_html(session(228), context={})
    assert "The file reports 228 output tokens for 18,236 characters" in under
    assert "under-reported" not in render_html(session(4_600), context={})  # ~4 characters each


def test_the_duration_says_whether_the_cli_recorded_it_or_the_timestamps_span_it():
    timed = Event(kind=Kind.ASSISTANT, id="a1", text="hi", timestamp="2026-01-01T00:00:00Z")
    session = Session(id="s", harness="claude-code", format="claude-jsonl", events=[timed])
    session.started_at, session.ended_at = "2026-01-01T00:00:00Z", "2026-01-01T00:09:08Z"
    assert "(first to last timestamp)" in render_html(session, context={})
    session.duration_ms = 529_891  # Claude Code's turn_duration records, summed
    html = render_html(session, context={})
    assert "(the CLI&#x27;s own)" in html and "first to last timestamp" not in html
