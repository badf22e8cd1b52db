"""Remove provider credentials from transcripts before they are stored or published.

Agents print environment variables, read ``.env`` files and echo ``curl -H "Authorization: ..."``
commands; any key that reaches a public transcript page is leaked. Known key shapes are replaced
wherever they appear; ``NAME_API_KEY=value``-style assignments lose a value that looks like a
credential (``looks_secret``), not a reference to one in code or a placeholder.

Transcripts run to hundreds of megabytes, so each rule only runs where its literal start was
found, and every literal is found in one pass over the lower-cased text (an Aho-Corasick
automaton, pyahocorasick): one big case-insensitive regex took 20 s on 50 MB, and a substring
search per literal (36 of them) 2.2 s of the 2.9 s redaction of a 200 MB session
(docs/benchmarks.md, "Transcripts").
"""

from __future__ import annotations

import re
from typing import Any

import ahocorasick

from transcripts.model import Session

# kind, literals (one starts every match), pattern (its ``value`` group or all of it is replaced)
_SHAPES = [
    (
        "private-key",
        "-----BEGIN",
        r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*KEY-----",
    ),
    ("anthropic-key", "sk-ant-", r"\bsk-ant-[A-Za-z0-9]{2,10}-[A-Za-z0-9_-]{20,}"),
    ("openai-key", "sk-", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"),
    ("api-key", "sk-", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("github-token", "ghp_ gho_ ghu_ ghs_ ghr_", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("github-token", "github_pat_", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    ("aws-key-id", "AKIA ASIA", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("google-key", "AIza", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("huggingface-token", "hf_", r"\bhf_[A-Za-z0-9]{30,}"),
    ("slack-token", "xox", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("stripe-key", "_live_ _test_", r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{20,}"),
    ("gitlab-token", "glpat-", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("npm-token", "npm_", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi-token", "pypi-", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ("xai-key", "xai-", r"\bxai-[A-Za-z0-9]{40,}"),
    ("groq-key", "gsk_", r"\bgsk_[A-Za-z0-9]{40,}"),
    ("url-password", "://", r"://[^/\s:@]{1,200}:(?P<value>[^/\s@]{3,200})@"),
]
_COMPILED_SHAPES = [(kind, re.compile(rx)) for kind, _, rx in _SHAPES]

# Credentials introduced by a name, matched where a plain search found one of these words.
_SECRET_WORDS = "api[_-]?key|token|secret(?:[_-]?key)?|password|passwd|access[_-]?key"  # noqa: S105
_NAMED_VALUE = re.compile(
    rf"(?i:{_SECRET_WORDS})\b[\"']?\s*[:=]\s*[\"']?"
    r"(?P<value>[^\s\"'`<>,;&()\[\]{}$\\]{8,}+)(?![(\[])"
)
_BEARER = re.compile(
    r"(?i:bearer|token|secret)\s+(?P<value>(?=[A-Za-z._~+/-]*\d)[A-Za-z0-9._~+/-]{16,}=*)"
)
# A value that is code, not a credential: a dotted name without digits (env.GEMINI_API_KEY,
# process.env.CODEMIE_API_KEY, config.apiKey); and what a key or token must look like (a digit,
# or 20 characters of mixed case), unlike a placeholder such as 'proxy-handled'. A password may
# be words ('correct-horse-battery'), so only the code rule applies to it.
_CODE_REFERENCE = re.compile(r"^(?:[A-Za-z_$][A-Za-z_$]*\.)+[A-Za-z_$][A-Za-z_$]*$")
_PASSWORD_NAME = re.compile(r"(?i)pass(?:word|wd)")
_WORDS = ("token", "secret", "password", "passwd", "api_key", "api-key", "apikey", "access_key")
_WORDS += ("access-key", "accesskey", "bearer")
_NAME_ONLY = re.compile(rf"(?i:^[A-Za-z0-9_.-]*(?:{_SECRET_WORDS})$)")


def _automaton() -> ahocorasick.Automaton:
    """Every literal, lower-cased, to what it starts: the index of a key shape (its pattern,
    case-sensitive, then runs over the whole text) or a secret's name (its value is read where
    it was found)."""
    found: dict[str, list[tuple[str, Any]]] = {}
    for index, (_, literals, _) in enumerate(_SHAPES):
        for literal in literals.split():
            found.setdefault(literal.lower(), []).append(("shape", index))
    for word in _WORDS:
        found.setdefault(word, []).append(("word", word))
    automaton = ahocorasick.Automaton()
    for literal, starts in found.items():
        automaton.add_word(literal, starts)
    automaton.make_automaton()
    return automaton


_TRIGGERS = _automaton()


def _spans(text: str) -> list[tuple[int, int, str]]:
    lower = text.lower()
    if len(lower) != len(text):  # a few characters lower-case to two; positions would drift
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    shapes, spans = set(), []
    for end, starts in _TRIGGERS.iter(lower):
        for kind, item in starts:
            if kind == "shape":
                shapes.add(item)
            else:
                spans += _named_span(text, lower, end + 1 - len(item), item)
    for index in sorted(shapes):
        kind, pattern = _COMPILED_SHAPES[index]
        for match in pattern.finditer(text):
            group = "value" if "value" in pattern.groupindex else 0
            spans.append((match.start(group), match.end(group), kind))
    return spans


def _named_span(text: str, lower: str, start: int, word: str) -> list[tuple[int, int, str]]:
    """The value given under the secret's name `word` found at `start`, if it is one."""
    after = lower[start + len(word) : start + len(word) + 1]
    if (after.isalnum() or after == "_") and word[0] in "tb":
        return []  # "tokens", "token_count": not a name of a secret
    match = _NAMED_VALUE.match(text, start)
    if match and looks_secret(word, match.group("value")):
        return [(match.start("value"), match.end("value"), "secret")]
    if match := _BEARER.match(text, start):
        kind = "secret" if word == "secret" else "bearer-token"
        return [(match.start("value"), match.end("value"), kind)]
    return []


def looks_secret(name: str, value: str) -> bool:
    """Whether ``value``, given under a credential's ``name``, is a credential's value."""
    if value.isdigit() or _CODE_REFERENCE.match(value):
        return False
    if _PASSWORD_NAME.search(name):
        return True
    return any(c.isdigit() for c in value) or (
        len(value) >= 20 and value.lower() != value and value.upper() != value
    )


def redact_text(text: str) -> str:
    """``text`` with every recognizable credential replaced by ``[REDACTED:<kind>]``."""
    if not text:
        return text
    spans = sorted(_spans(text), key=lambda s: (s[0], -s[1]))
    if not spans:
        return text
    parts, done = [], 0
    for start, end, kind in spans:
        if start >= done:  # the first, longest span wins where rules overlap
            parts += [text[done:start], f"[REDACTED:{kind}]"]
            done = end
        elif end > done:
            done = end
    parts.append(text[done:])
    return "".join(parts)


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_redact_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _redact_item(key, item) for key, item in value.items()}
    return value


def _redact_item(key: Any, value: Any) -> Any:
    """A structured ``{"api_key": "..."}`` is secret by its name, whatever the value looks like."""
    named = isinstance(key, str) and _NAME_ONLY.match(key)
    if named and isinstance(value, str) and len(value) >= 8 and looks_secret(key, value):
        return "[REDACTED:secret]"
    return _redact_value(value)


def redact_session(session: Session) -> Session:
    """Redact every text field of the session and its subagents, in place; returns the session."""
    for _, part in session.walk():
        part.title = redact_text(part.title) if part.title else part.title
        part.description = redact_text(part.description) if part.description else part.description
        part.cwd = redact_text(part.cwd) if part.cwd else part.cwd
        part.warnings = [redact_text(w) for w in part.warnings]
        for event in part.events:
            event.text = redact_text(event.text)
            event.diff = redact_text(event.diff) if event.diff else event.diff
            event.file_path = redact_text(event.file_path) if event.file_path else event.file_path
            event.arguments = _redact_value(event.arguments)
            event.raw = _redact_value(event.raw)
    return session
