"""Writes: a run's automatic integrity flags, and whether a grade was made as the protocol says.

Flags point a reviewer at runs worth reading; they change no score. Three sources, each
recomputed when what it reads changes: ``grade`` (the headline evaluation: after each new
headline), ``solution`` (at upload: near-identical code of another submitter's, a prompt other
than the problem's published one) and ``transcript`` (tool calls that reach outside the
workspace: after each parse). An untrusted grade (not sandboxed,
another GPU model) is different: it is never published or ranked.
"""

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field

from django.conf import settings

from runners.contract import EvaluationResult, Verdict
from submissions.models import Evaluation, HardwareTarget, Run
from transcripts.model import Kind, Session
from transcripts.payload import anchor_base

GRADE, SOLUTION, TRANSCRIPT = "grade", "solution", "transcript"
# Paths an agent has no business reading: the grader, the held-out shapes, other problems,
# other processes. Matched in tool calls' arguments and file paths.
OUTSIDE_WORKSPACE = re.compile(
    r"hidden\.ya?ml|hidden_shapes|runners/(?:problems|gates|evaluate|sandbox)|/proc/\d+/|"
    r"/etc/shadow|\.\./\.\./|grader",
    re.IGNORECASE,
)
MAX_EVIDENCE = 20


@dataclass(frozen=True)
class Flag:
    code: str
    message: str
    source: str
    evidence: list = field(default_factory=list)


def grade_provenance(result: EvaluationResult, *, hardware: HardwareTarget) -> list[str]:
    """Why this grade was not made as the protocol requires (empty when it was). A solution the
    static gate refused ran nowhere: its grade needs neither sandbox nor GPU."""
    static = result.gate("static")
    if static is not None and static.status == "fail":
        return []
    problems = []
    if (result.isolation or {}).get("sandboxed") is not True:
        problems.append("the candidate did not run in the sandbox")
    ran_on = (result.environment or {}).get("hardware")
    if hardware.device == HardwareTarget.Device.CUDA and ran_on != hardware.gpu_model:
        problems.append(f"graded on {ran_on or 'an unknown GPU'}, not on {hardware.gpu_model}")
    return problems


def refresh_grade_flags(*, run: Run) -> None:
    evaluation = run.headline_evaluation
    flags = grade_flags(evaluation) if evaluation is not None else []
    _replace(run, GRADE, flags)


def grade_flags(evaluation: Evaluation) -> list[Flag]:
    if evaluation.status != Evaluation.Status.DONE or not evaluation.result:
        return []
    result = EvaluationResult.from_dict(evaluation.result)
    found = [_untrusted(evaluation, result), _faster_than_light(result), _near_roof(result)]
    found += [_large_speedup(result), _disagreement(result), _score_gap(result)]
    found += [_static_flags(result), _timing_spread(result)]
    return [flag for flag in found if flag is not None]


def _flag(code: str, message: str, evidence=()) -> Flag:
    return Flag(code=code, message=message, source=GRADE, evidence=list(evidence))


def _untrusted(evaluation: Evaluation, result: EvaluationResult) -> Flag | None:
    if evaluation.trusted:
        return None
    reasons = "; ".join(grade_provenance(result, hardware=evaluation.hardware))
    return _flag("untrusted_grade", f"Not published or ranked: {reasons}.")


def _faster_than_light(result: EvaluationResult) -> Flag | None:
    if result.verdict == Verdict.TIMING_REJECTED and "speed of light" in result.reason:
        return _flag("faster_than_light", "Timed faster than the hardware's speed of light.")
    return None


def _near_roof(result: EvaluationResult) -> Flag | None:
    limit = settings.ARENA_FLAG_PEAK_FRACTION
    near = [s for s in result.shapes if (s.peak_fraction or 0) >= limit]
    if not near:
        return None
    return _flag("near_roofline", f"{len(near)} shape(s) at {limit:.0%} or more of the roof.")


def _large_speedup(result: EvaluationResult) -> Flag | None:
    factor = settings.ARENA_FLAG_SPEEDUP
    fast = [s for s in result.shapes if max(s.speedup_eager or 0, s.speedup_compile or 0) >= factor]
    if not fast:
        return None
    return _flag("large_speedup", f"{len(fast)} shape(s) {factor:g}x or more over the reference.")


def _disagreement(result: EvaluationResult) -> Flag | None:
    if None in (result.correct_visible, result.correct_hidden):
        return None
    if result.correct_visible == result.correct_hidden:
        return None
    right, wrong = ("held-out", "visible") if result.correct_hidden else ("visible", "held-out")
    return _flag("visible_hidden_disagree", f"Correct on {right} shapes, wrong on {wrong} ones.")


def _score_gap(result: EvaluationResult) -> Flag | None:
    if not result.score or result.hidden_score is None:
        return None
    gap = (result.score - result.hidden_score) / result.score
    if gap < settings.ARENA_FLAG_SCORE_GAP:
        return None
    return _flag("score_gap", f"Held-out score {gap:.0%} below the visible score.")


def _static_flags(result: EvaluationResult) -> Flag | None:
    """Idioms the static gate flagged and graded (side streams, CUDA graphs, build variables,
    file writes): runtime checks cover them, and a reviewer may still want to read the lines."""
    gate = next((g for g in result.gates if g.name == "static"), None)
    flags = (gate.details.get("flags") or []) if gate and gate.status == "pass" else []
    if not flags:
        return None
    rules = ", ".join(sorted({str(f.get("rule")) for f in flags}))
    evidence = []
    for item in map(_flagged_line, flags):
        if item not in evidence:
            evidence.append(item)
    message = f"Graded with idioms the static gate flags: {rules}."
    return _flag("static_flags", message, evidence[:MAX_EVIDENCE])


def _flagged_line(flag: dict) -> dict:
    """A flag's line as line-range evidence; a native source's flag names its file."""
    line = flag.get("line")
    where = {"kind": "lines", "start": line, "end": line}
    return (where | {"file": flag["file"]}) if flag.get("file") else where


def _timing_spread(result: EvaluationResult) -> Flag | None:
    if result.device != HardwareTarget.Device.CUDA:
        return None  # CPU timings are noisy by nature and never ranked
    limit = settings.ARENA_FLAG_TIMING_SPREAD
    spread = [
        s
        for s in result.shapes
        if s.time and s.time.p10_us > 0 and s.time.p90_us / s.time.p10_us >= limit
    ]
    if not spread:
        return None
    return _flag(
        "timing_spread",
        f"{len(spread)} shape(s) whose timed calls spread {limit:g}x or more (p90/p10).",
    )


def refresh_solution_flags(*, run: Run) -> None:
    flags = []
    solution = run.solution
    if solution is not None and solution.ast_hash:
        twins = Run.objects.filter(solution__ast_hash=solution.ast_hash, problem=run.problem_id)
        twins = twins.exclude(submitter=run.submitter_id).exclude(pk=run.pk)
        earlier = twins.filter(created_at__lt=run.created_at)
        count = earlier.count()
        if count:
            # only published twins are named: the flag shows to the uploader, and another
            # submitter's unpublished run is theirs alone
            named = list(earlier.published().values_list("uuid", flat=True)[:MAX_EVIDENCE])
            hidden = count - earlier.published().count()
            message = f"Near-identical to {count} earlier run(s) of other submitters" + (
                f", {hidden} of them unpublished and not named." if hidden else "."
            )
            evidence = [{"kind": "run", "run": str(uuid)} for uuid in named]
            flags.append(Flag("similar_solution", message, SOLUTION, evidence))
    differs = _prompt_differs(run)
    _replace(run, SOLUTION, flags + ([differs] if differs else []))


def _prompt_differs(run: Run) -> Flag | None:
    """A run whose reported prompt hash (`arena run` records the sha256 of the PROMPT.md it gave
    the agent) is not the hash of the problem's published statement: a run made with another
    prompt, or on an earlier version of the problem."""
    reported = run.prompt_hash.strip().lower().removeprefix("sha256:")
    statement = run.problem.statement
    if not reported or not statement:
        return None
    published = hashlib.sha256(statement.encode()).hexdigest()
    if reported == published:
        return None
    message = (
        f"Made with another prompt than the problem's published PROMPT.md (reported "
        f"{reported[:12]}, published {published[:12]}), or on an earlier version of it."
    )
    return Flag("prompt_differs", message, SOLUTION)


def refresh_transcript_flags(*, run: Run, session: Session | None) -> None:
    evidence = _reaching_calls(session) if session is not None else []
    flags = []
    if evidence:
        message = f"{len(evidence)} tool call(s) name paths outside the workspace or the grader."
        flags.append(Flag("reads_outside_workspace", message, TRANSCRIPT, evidence))
    _replace(run, TRANSCRIPT, flags)


def _reaching_calls(session: Session) -> list[dict]:
    evidence = []
    for _, part in session.walk():
        for event in part.events:
            if event.kind == Kind.TOOL_CALL and _reaches_outside(event):
                evidence.append({"kind": "event", "event": f"e-{anchor_base(event.id)}"})
            if len(evidence) >= MAX_EVIDENCE:
                return evidence
    return evidence


def _reaches_outside(event) -> bool:
    text = f"{event.file_path or ''} {json.dumps(event.arguments, default=str)}"
    return bool(OUTSIDE_WORKSPACE.search(text))


def _replace(run: Run, source: str, flags: list[Flag]) -> None:
    kept = [flag for flag in run.flags if flag.get("source") != source]
    run.flags = kept + [asdict(flag) for flag in flags]
    Run.objects.filter(pk=run.pk).update(flags=run.flags)
