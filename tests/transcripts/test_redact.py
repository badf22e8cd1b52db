from pathlib import Path

import pytest

from transcripts.model import Event, Kind, Session
from transcripts.parsers import parse_files
from transcripts.redact import redact_session, redact_text

SAMPLE = Path(__file__).parent / "samples" / "claude-jsonl-edits-3fe1b6bc.jsonl"

# Fake keys in each provider's shape; none of them is real.
ANTHROPIC = "sk-ant-api03-" + "Zx9" * 30
OPENAI_PROJECT = "sk-proj-" + "Ab1" * 16
OPENAI_LEGACY = "sk-" + "T3BlbkFJ" * 6
GITHUB = "ghp_" + "a1B2" * 9
GITHUB_PAT = "github_pat_11" + "ABCDE01234" * 6
AWS = "AKIA" + "Q7R2" * 4
GOOGLE = "AIza" + ("Sy0_-abcdefg" * 3)[:35]
HUGGING = "hf_" + "Qw12" * 9
SLACK = "xoxb-" + "1234567890-" * 2 + "AbCdEf"
STRIPE = "sk_live_" + "51Hq" * 6
GITLAB = "glpat-" + "x8Yz-" * 4
NPM = "npm_" + "Np0" * 12
PYPI = "pypi-AgEIcHlwaS5vcmc" + "Cj0" * 20
XAI = "xai-" + "Gk7" * 24
GROQ = "gsk_" + "Rq4" * 18


@pytest.mark.parametrize(
    ("secret", "kind"),
    [
        (OPENAI_PROJECT, "openai-key"),
        (OPENAI_LEGACY, "api-key"),
        (ANTHROPIC, "anthropic-key"),
        (GITHUB_PAT, "github-token"),
        (AWS, "aws-key-id"),
        (GOOGLE, "google-key"),
        (HUGGING, "huggingface-token"),
        (SLACK, "slack-token"),
        (STRIPE, "stripe-key"),
        (GITLAB, "gitlab-token"),
        (NPM, "npm-token"),
        (PYPI, "pypi-token"),
        (XAI, "xai-key"),
        (GROQ, "groq-key"),
    ],
)
def test_provider_keys_are_replaced_wherever_they_appear(secret, kind):
    text = f"found {secret} in the log"
    assert redact_text(text) == f"found [REDACTED:{kind}] in the log"


def test_github_tokens_are_removed_even_after_the_word_token():
    assert GITHUB not in redact_text(f"use token {GITHUB}")
    assert redact_text(f"clone with {GITHUB}") == "clone with [REDACTED:github-token]"


def test_bearer_tokens_keep_the_scheme_and_lose_the_credential():
    header = 'curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2ln"'
    assert redact_text(header) == 'curl -H "Authorization: Bearer [REDACTED:bearer-token]"'


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("OPENAI_API_KEY=abc123def456ghi", "OPENAI_API_KEY=[REDACTED:secret]"),
        ("export HF_TOKEN='abcdef0123456789'", "export HF_TOKEN='[REDACTED:secret]'"),
        ('api_key = "s3cr3t-value-99"', 'api_key = "[REDACTED:secret]"'),
        ('{"password": "correct-horse-battery"}', '{"password": "[REDACTED:secret]"}'),
        ("AWS_SECRET_ACCESS_KEY=wJalr/K7MDENG/bPxRfi", "AWS_SECRET_ACCESS_KEY=[REDACTED:secret]"),
    ],
)
def test_secret_assignments_lose_their_value_but_keep_the_name(line, expected):
    assert redact_text(line) == expected


@pytest.mark.parametrize(
    "text",
    [
        '"output_tokens": 34781',
        "max_tokens: 100000000",
        "token_count event",
        'key = os.environ["OPENAI_API_KEY"]',
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        "each token attends to every previous one",
        "sk-learn is not a key",
        # found replaced in real sessions: references to a key in code, and a placeholder
        "const apiKey = env.GEMINI_API_KEY;",
        "apiKey: process.env.CODEMIE_API_KEY,",
        "apiKey: 'proxy-handled'",
    ],
)
def test_ordinary_text_about_tokens_is_left_alone(text):
    assert redact_text(text) == text


def test_a_secret_after_the_word_secret_and_a_space_is_removed():
    aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # 40 characters, the AWS secret key form
    assert redact_text(f"aws secret {aws} in ~/.aws") == "aws secret [REDACTED:secret] in ~/.aws"


def test_structured_keys_keep_placeholders_and_code_but_lose_credentials():
    arguments = {"apiKey": "proxy-handled", "api_key": "env.OPENAI_API_KEY", "token": "ab12cd34ef"}
    call = Event(kind=Kind.TOOL_CALL, id="e1", arguments=arguments)
    session = Session(id="s", harness="claude-code", format="claude-jsonl", events=[call])
    redact_session(session)
    assert call.arguments == {
        "apiKey": "proxy-handled", "api_key": "env.OPENAI_API_KEY", "token": "[REDACTED:secret]"
    }  # fmt: skip


def test_private_keys_and_url_passwords_are_removed():
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----"
    assert redact_text(f"key:\n{pem}\n") == "key:\n[REDACTED:private-key]\n"
    url = "https://dev:hunter22@git.example.com/repo.git"
    assert redact_text(url) == "https://dev:[REDACTED:url-password]@git.example.com/repo.git"


def test_redact_session_covers_text_arguments_diffs_raw_records_and_subagents():
    child = Session(id="child", harness="claude-code", format="claude-jsonl")
    child.events.append(Event(kind=Kind.ASSISTANT, id="c1", text=f"using {ANTHROPIC}"))
    call = Event(kind=Kind.TOOL_CALL, id="e1", arguments={"command": f"echo {OPENAI_PROJECT}"})
    call.diff = f"+HF_TOKEN={HUGGING}\n"
    call.children.append(child)
    session = Session(id="s", harness="claude-code", format="claude-jsonl", title=f"key {GOOGLE}")
    session.events += [
        call,
        Event(kind=Kind.TOOL_RESULT, id="e2", text=f"{AWS}\n"),
        Event(kind=Kind.RAW, id="e3", raw={"env": [f"PAT {GITHUB_PAT}"], "api_key": "plainvalue9"}),
    ]
    stored = str(redact_session(session).to_dict())
    for secret in (ANTHROPIC, OPENAI_PROJECT, HUGGING, GOOGLE, AWS, GITHUB_PAT, "plainvalue9"):
        assert secret not in stored
    assert session.events[2].raw["api_key"] == "[REDACTED:secret]"
    assert call.arguments == {"command": "echo [REDACTED:openai-key]"}


def test_redacting_a_real_transcript_keeps_its_shape_and_counts():
    session = parse_files([SAMPLE])
    before = [(e.kind, e.tool_name, e.call_id) for e in session.events]
    redacted = redact_session(session)
    assert [(e.kind, e.tool_name, e.call_id) for e in redacted.events] == before
    assert redacted.usage().output == 34781
