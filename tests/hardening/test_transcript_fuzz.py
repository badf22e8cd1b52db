"""Hypothesis over every transcript parser: real records of each format, mutated (values of
other types, keys dropped, lines cut, duplicated, reordered or replaced by bytes), either parse
or raise TranscriptError, the documented parse error; never another exception, never a hang."""

import json
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from transcripts.parsers import FORMATS, TranscriptError, detect_format, parse_files
from transcripts.parsers.gemini import DOCUMENT_FORMAT

HERE = Path(__file__).resolve().parent.parent / "transcripts"
RECORDS_PER_FILE = 40
HANG_S = 30
FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=30)
    | st.sampled_from(["user", "assistant", "tool_use", "tool_result", "text", "result"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)


def samples_by_format() -> dict[str, Path]:
    files = sorted(p for p in HERE.rglob("*.json*") if p.is_file() and "meta" not in p.name)
    found: dict[str, Path] = {}
    for path in files:
        name = detect_format(path)
        if name and name not in found:
            found[name] = path
    return found


SAMPLES = samples_by_format()


def test_every_parser_has_a_real_sample_to_mutate():
    assert set(SAMPLES) == {entry.name for entry in FORMATS}


@st.composite
def mutated(draw, value, depth: int = 0):
    if depth > 8 or not isinstance(value, dict | list) or not value:
        return draw(JSON) if draw(st.integers(0, 3)) == 0 else value
    keys = sorted(value) if isinstance(value, dict) else list(range(len(value)))
    key = draw(st.sampled_from(keys))
    copy = dict(value) if isinstance(value, dict) else list(value)
    action = draw(st.sampled_from(["descend", "descend", "replace", "drop"]))
    if action == "drop":
        del copy[key]
    elif action == "replace":
        copy[key] = draw(JSON)
    else:
        copy[key] = draw(mutated(value[key], depth + 1))
    return copy


@st.composite
def mutated_lines(draw, path: Path) -> bytes:
    lines = path.read_text().splitlines()[:RECORDS_PER_FILE]
    lines = draw(st.permutations(lines)) if draw(st.integers(0, 4)) == 0 else lines
    out = []
    for line in lines:
        roll = draw(st.integers(0, 9))
        if roll < 4:
            out.append(json.dumps(draw(mutated(json.loads(line)))).encode())
        elif roll == 4:
            out.append(line.encode()[: draw(st.integers(0, len(line)))])
        elif roll == 5:
            out.append(draw(st.binary(max_size=40)))
        elif roll == 6:
            out += [line.encode()] * 2
        elif roll != 7:  # 7 drops the line
            out.append(line.encode())
    return b"\n".join(out) + b"\n"


@st.composite
def mutated_document(draw, path: Path) -> bytes:
    document = json.loads(path.read_text())
    for _ in range(draw(st.integers(1, 6))):
        document = draw(mutated(document))
    text = json.dumps(document, indent=2).encode()
    return text[: draw(st.integers(0, len(text)))] if draw(st.integers(0, 5)) == 0 else text


@contextmanager
def hang_guard():
    def hung(signum, frame):
        raise AssertionError(f"a parser ran longer than {HANG_S}s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def parses_or_refuses(content: bytes, folder: Path, name: str) -> None:
    path = folder / name
    path.write_bytes(content)
    with hang_guard():
        try:
            session = parse_files([path])
        except TranscriptError as error:
            assert str(error)
            event("refused")
            return
    event("parsed")
    assert all(part is not None for _, part in session.walk())


@pytest.mark.parametrize("format_name", sorted(SAMPLES))
def test_mutated_records_parse_or_raise_the_parse_error(format_name, tmp_path_factory):
    sample = SAMPLES[format_name]
    folder = tmp_path_factory.mktemp(format_name)
    strategy = mutated_document if format_name == DOCUMENT_FORMAT else mutated_lines

    @FUZZ
    @given(content=strategy(sample))
    def check(content):
        parses_or_refuses(content, folder, sample.name)

    check()
