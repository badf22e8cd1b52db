"""Hand-built sessions for the viewer tests: hostile text in every field, subagents two deep."""

from __future__ import annotations

from transcripts.model import Event, Kind, Session, Usage

XSS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    "</script><script>window.__xss=1</script>",
    "<!--<script>window.__xss=1</script>-->",
    "[click](javascript:window.__xss=1)",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    '<svg onload="window.__xss=1"></svg>',
    "\"><img src=x onerror=alert(1)>'><script>alert(1)</script>",
    "\u2028\u2029</SCRIPT ><script>window.__xss=1</script>",
    '<a href="javascript:alert(1)">x</a>',
    '<iframe src="javascript:alert(1)"></iframe>',
    '<details open ontoggle="window.__xss=1">',
    '<style>body{background:url("http://example.invalid/x")}</style>',
    '<link rel="stylesheet" href="http://example.invalid/x.css">',
]
PAYLOAD = " ".join(XSS)
DEEP_MARKER = "deep-marker-text"
DEEP_EVENT_ID = "deep-1"
LONG_OUTPUT_ID = "long-output"
LONG_OUTPUT = "\n".join(f"output line {n}" for n in range(500))


def hostile_session() -> Session:
    inner = _subagent("inner", [Event(kind=Kind.ASSISTANT, id=DEEP_EVENT_ID, text=DEEP_MARKER)])
    middle = _subagent("middle", [*_hostile_events("m"), _task_call("m-task", inner)])
    return Session(
        id="s-" + PAYLOAD,
        harness=PAYLOAD,
        format=PAYLOAD,
        models=["claude-" + PAYLOAD],
        cli_version=PAYLOAD,
        cwd=PAYLOAD,
        title=PAYLOAD,
        record_counts={PAYLOAD: 1},
        cost_usd=0.5,
        events=[
            *_hostile_events("r"),
            _task_call("r-task", middle),
            Event(kind=Kind.TOOL_RESULT, id=LONG_OUTPUT_ID, text=LONG_OUTPUT),
        ],
        warnings=[PAYLOAD],
    )


def hostile_context() -> dict:
    return {
        "title": PAYLOAD,
        "problem": PAYLOAD,
        "model": PAYLOAD,
        "harness": PAYLOAD,
        "verdict": PAYLOAD,
        "score": 0.5,
        "solution": f"# {PAYLOAD}\nx = '{PAYLOAD}'\n",
        "evaluation": {
            "verdict": PAYLOAD,
            "reason": PAYLOAD,
            "gates": [
                {"name": PAYLOAD, "status": "fail", "reason": PAYLOAD, "details": {"m": PAYLOAD}}
            ],
            "shapes": [
                {"set": "visible", "index": 0, "params": {"n": PAYLOAD}, "error": PAYLOAD},
                {"set": "hidden", "index": 1, "params": {"secret_n": 987654321}},
            ],
        },
    }


def _hostile_events(prefix: str) -> list[Event]:
    usage = Usage(input=10, output=20, cache_read=30, cache_write=40)
    return [
        Event(kind=Kind.USER, id=f"{prefix}-user", text=PAYLOAD, timestamp=PAYLOAD),
        Event(kind=Kind.ASSISTANT, id=f"{prefix}-a", text=PAYLOAD, model=PAYLOAD, usage=usage),
        Event(kind=Kind.REASONING, id=f"{prefix}-think", text=PAYLOAD),
        Event(kind=Kind.REASONING, id=f"{prefix}-enc", encrypted=True),
        Event(
            kind=Kind.TOOL_CALL,
            id=f'{prefix}-call"><script>window.__xss=1</script>',
            tool_name=PAYLOAD,
            call_id=f"{prefix}-c1{PAYLOAD}",
            arguments={PAYLOAD: PAYLOAD, "command": PAYLOAD},
            file_path=PAYLOAD + ".py",
            diff=f"--- a/{PAYLOAD}\n+++ b/{PAYLOAD}\n@@ -1 +1 @@\n-{PAYLOAD}\n+{PAYLOAD}\n",
        ),
        Event(
            kind=Kind.TOOL_RESULT, id=f"{prefix}-res", call_id=f"{prefix}-c1{PAYLOAD}", text=PAYLOAD
        ),
        Event(kind=Kind.SYSTEM, id=f"{prefix}-sys", subtype=PAYLOAD, text=PAYLOAD),
        Event(kind=Kind.RAW, id=f"{prefix}-raw", raw={"type": PAYLOAD, PAYLOAD: [PAYLOAD]}),
    ]


def _task_call(event_id: str, child: Session) -> Event:
    return Event(
        kind=Kind.TOOL_CALL,
        id=event_id,
        tool_name="Task",
        call_id=event_id + "-call",
        arguments={"description": child.description, "prompt": "go"},
        children=[child],
    )


def _subagent(name: str, events: list[Event]) -> Session:
    return Session(
        id=f"agent-{name}",
        harness="claude-code",
        format="claude-jsonl",
        agent_id=f"{name}-{PAYLOAD}",
        agent_type=f"{name}-type {PAYLOAD}",
        description=f"{name} agent {PAYLOAD}",
        events=events,
    )
