"""One KernelBench-Hard problem folder converted into what our problem folder says."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.kernelbench import SIZE_FLOOR, SMOKE_BATCH, is_batch, shrink
from runners.kernelbench_hard import peer, running
from runners.kernelbench_hard.known import STRUCTURAL, Known
from runners.kernelbench_hard.peer import PeerEval, Unconvertible
from runners.kernelbench_hard.published import slug_for
from runners.kernelbench_hard.running import Run
from runners.problem import MIN_SEEDS, REQUIRED_CASES

SEEDS = (42, 123, 456, 789, 1011, 2027, 3041, 4093)
HIDDEN_SEEDS = (7919, 104729, 1299709, 15485863, 179424673, 2038074743, 1000003, 9999991)


@dataclass
class Imported:
    """One peer problem converted; `notes` is what was not carried, or not as it was."""

    name: str
    slug: str
    title: str
    regime: str
    peak_dtype: str
    flops: str | None
    bytes: str | None
    outputs: dict[str, dict[str, Any]]
    forbidden: list[str]
    distributions: list[str]
    cases: dict[str, dict[str, Any]]
    perturb_buffers: list[str]
    visible: list[dict[str, int]]
    smoke: list[dict[str, int]]
    hidden: list[tuple[str, dict[str, int]]]
    no_hidden: str | None
    names: dict[str, str]  # shapes.py key -> our parameter name
    reference: str
    prompt: str
    notes: list[str] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        """Enough seeds that every distribution is drawn (seed i draws distribution i)."""
        return list(SEEDS[: max(MIN_SEEDS, len(self.distributions))])

    @property
    def hidden_seeds(self) -> list[int]:
        return list(HIDDEN_SEEDS[: len(self.seeds)])


def convert(folder: Path, evaluation: PeerEval, known: Known | None) -> Imported:
    spec = peer.read_spec(folder / "problem.yaml")
    shapes = peer.read_shapes(folder / "shapes.py")
    reference = peer.read_text(folder / "reference.py")
    prompt = peer.read_text(folder / "PROMPT.txt")
    names = peer.shim_names(folder / "check.py", shapes[0], reference)
    name, notes = folder.name, []
    structural = known.structural if known else None
    function = STRUCTURAL.get(structural)
    module = running.reference_module(
        running.with_generator(reference, structural, function) if function else reference
    )
    smoke_shapes = known.smoke if known and known.smoke else [_generic_smoke(shapes)]
    smoke, run = running.run_smoke(module, [peer.renamed(s, names) for s in smoke_shapes], notes)
    visible = [peer.renamed(s, names) for s in shapes]
    outputs = _outputs(run, spec, evaluation, notes)
    distributions, cases = _stress_cases(name, run, spec, evaluation, outputs, notes)
    if function:
        reference = _structural(
            module, run, smoke[0], (structural, function), reference, cases, notes
        )
        distributions += [structural] if structural in cases else []
    hidden, no_hidden = _held_out(name, names, module, known, notes)
    regime, flops, nbytes = _work(spec, names, visible + smoke + [s for _, s in hidden], notes)
    _property_note(name, evaluation, structural if structural in cases else None, notes)
    peer.seed_notes(reference, notes)
    if len(distributions) > len(SEEDS):
        raise Unconvertible(f"{len(distributions)} distributions, more than {len(SEEDS)} seeds")
    return Imported(
        name=name,
        slug=slug_for(name),
        title=f"{spec.get('display_name') or name} (KernelBench-Hard)",
        regime=regime,
        peak_dtype=peer.peak_dtype(spec.get("peak_tflops_key"), notes),
        flops=flops,
        bytes=nbytes,
        outputs=outputs,
        forbidden=peer.carried_forbidden(spec.get("forbidden") or [], notes),
        distributions=distributions,
        cases=cases,
        perturb_buffers=_perturbed_buffers(name, run, evaluation, notes),
        visible=visible,
        smoke=smoke,
        hidden=hidden,
        no_hidden=no_hidden,
        names=names,
        reference=reference,
        prompt=prompt,
        notes=notes,
    )


def _generic_smoke(shapes: list[dict[str, int]]) -> dict[str, int]:
    """For a problem the known file lacks: its smallest shape with the batch at 3 and sizes
    halved to 16-31 (runners.kernelbench's rule), to be tried on the CPU."""

    def small(key: str, value: int) -> int:
        if is_batch(key):
            return min(value, SMOKE_BATCH)
        return shrink(value, []) if value >= SIZE_FLOOR else value

    smallest = min(shapes, key=lambda shape: math.prod(shape.values()))
    return {key: small(key, value) for key, value in smallest.items()}


def _structural(
    module: Any,
    run: Run,
    shape: dict[str, int],
    structural: tuple[str, Any],
    reference: str,
    cases: dict[str, dict],
    notes: list[str],
) -> str:
    """Add the structural case where its generator fits the reference at the smoke shape;
    reference.py as written: with the generator appended only then."""
    case, function = structural
    problem = running.generator_problem(module, run, shape, case)
    if problem:
        notes.append(f"structural case {case}: not carried, at the smoke shape: {problem}")
        return reference
    cases[case] = {"generator": running.generator_name(case)}
    return running.with_generator(reference, case, function)


def _outputs(run: Run, spec: dict, evaluation: PeerEval, notes: list[str]) -> dict[str, dict]:
    """Each output's tolerance by its dtype, as their checker looks it up; an integer output
    that indexes an input (top-k's indices) is compared up to ties instead."""
    if not run.outputs or not all(hasattr(o, "dtype") for o in run.outputs):
        raise Unconvertible("the reference returns something other than tensors")
    override = peer.tolerance_override(spec)
    ties = running.index_outputs(run.inputs, run.outputs)
    outputs = {}
    for index, name in enumerate(running.output_names(len(run.outputs))):
        dtype = run.outputs[index].dtype
        outputs[name] = (
            {"ties": ties[index]} if index in ties else evaluation.tolerance(dtype, override)
        )
    spellings = set().union(*(_spellings(o.dtype) for o in run.outputs))
    dtypes = ", ".join(sorted({str(o.dtype).split(".")[-1] for o in run.outputs}))
    for key, value in (override or {}).items():
        if str(key) not in spellings:
            notes.append(
                f"tolerance {key}: {value} applies to no output (the outputs are {dtypes}; "
                "their checker looks tolerances up by the output's dtype)"
            )
    return outputs


def _spellings(dtype: Any) -> set[str]:
    """How their tolerance tables may key a dtype: torch.bfloat16 or bfloat16."""
    return {str(dtype), str(dtype).split(".")[-1]}


def _stress_cases(
    name: str, run: Run, spec: dict, evaluation: PeerEval, outputs: dict, notes: list[str]
) -> tuple[list[str], dict[str, dict]]:
    """Their numeric stress cases that scale inputs, as our cases; the others reported."""
    distributions, cases = ["normal"], {}
    for case in evaluation.stress_cases(name):
        if case.state_scales:
            scales = ", ".join(f"{k} x{v:g}" for k, v in case.state_scales.items())
            notes.append(
                f"stress case {case.name} (scales weights: {scales}): not carried, our cases "
                "scale inputs only"
            )
            continue
        if not case.input_scales or not all(_scalable(run.inputs, i) for i in case.input_scales):
            notes.append(f"stress case {case.name}: not carried, it scales no floating input")
            continue
        entry: dict[str, Any] = {"scale": {int(i): float(f) for i, f in case.input_scales.items()}}
        tolerance = _case_tolerance(run, outputs, spec, evaluation, case, notes)
        if tolerance:
            entry["tolerance"] = tolerance
        cases[case.name] = entry
        distributions.append(case.name)
    return distributions, cases


def _scalable(inputs: list[Any], position: Any) -> bool:
    if not isinstance(position, int) or not 0 <= position < len(inputs):
        return False
    return getattr(inputs[position], "is_floating_point", lambda: False)()


def _case_tolerance(
    run: Run, outputs: dict, spec: dict, evaluation: PeerEval, case: Any, notes: list[str]
) -> dict:
    """The case's tolerance per output where it differs from the output's own, as their lookup
    resolves it: the case's table merged over problem.yaml's, then by the output's dtype."""
    override = peer.tolerance_override(spec)
    merged = evaluation.case_override(override, case)
    found = {}
    for (name, base), tensor in zip(outputs.items(), run.outputs, strict=True):
        if "ties" in base:
            continue
        tolerance = evaluation.tolerance(tensor.dtype, merged)
        own = evaluation.tolerance(tensor.dtype, case.tolerance)
        if _spellings(tensor.dtype) & set(map(str, case.tolerance or {})) and own != tolerance:
            notes.append(
                f"stress case {case.name}: its tolerance ({_tolerance_text(own)}) is shadowed in "
                f"their lookup by problem.yaml's {tensor.dtype!s} entry; carried as their checker "
                f"applies it ({_tolerance_text(tolerance)})"
            )
        if tolerance != base:
            found[name] = tolerance
    return found


def _tolerance_text(tolerance: dict[str, float]) -> str:
    return f"atol {tolerance['atol']:g}, rtol {tolerance['rtol']:g}"


def _perturbed_buffers(name: str, run: Run, evaluation: PeerEval, notes: list[str]) -> list[str]:
    """The floating buffers their weight-scaling cases scale, drawn anew per seed instead, as
    parameters are. Only those: the engine's noise has a floor of 0.1, which would swamp a small
    buffer such as a per-channel scale and move outputs away from the magnitudes their
    tolerances were set for."""
    targets = {t for case in evaluation.stress_cases(name) for t in case.state_scales}
    state = run.model.state_dict()
    floating = [n for n, b in run.model.named_buffers() if n in state and b.is_floating_point()]
    perturbed = [n for n in floating if n in targets]
    if perturbed:
        others = [n for n in floating if n not in perturbed]
        notes.append(
            f"buffer(s) {', '.join(perturbed)} perturbed per seed (perturb_buffers), as "
            "parameters are, in place of the weight-scaling case"
            + (f"; {', '.join(others)} left as drawn" if others else "")
        )
    return perturbed


def _held_out(
    name: str, names: dict[str, str], module: Any, known: Known | None, notes: list[str]
) -> tuple[list[tuple[str, dict[str, int]]], str | None]:
    """The known file's held-out shapes that the reference accepts on the meta device, or why
    there are none."""
    if not known or not known.held_out:
        return _none(
            f"no held-out shapes are known for {name} (runners/problems/kernelbench_hard.yaml)",
            notes,
        )
    if any(set(shape) != set(names) for _, shape in known.held_out):
        return _none("the known held-out shapes' parameters differ from shapes.py's", notes)
    hidden = []
    for case, shape in known.held_out:
        ours = peer.renamed(shape, names)
        problem = running.meta_problem(module, ours)
        if problem:
            notes.append(f"held-out {case} shape {running.shape_text(ours)} dropped: {problem}")
        else:
            hidden.append((case, ours))
    absent = sorted(set(REQUIRED_CASES) - {case for case, _ in hidden})
    if absent:
        return _none(f"the reference refuses every held-out {', '.join(absent)} shape", notes)
    return hidden, None


def _none(reason: str, notes: list[str]) -> tuple[list, str]:
    notes.append(f"no held-out shapes: {reason}")
    return [], reason


def _work(
    spec: dict, names: dict[str, str], shapes: list[dict[str, int]], notes: list[str]
) -> tuple[str, str | None, str | None]:
    """regime, flops and bytes: their formulas over our parameter names; where one cannot be
    evaluated, the problem is scored by speedup over eager (no roofline)."""
    formulas = {}
    for key in ("flops_formula", "bytes_formula"):
        try:
            formulas[key] = peer.renamed_expr(spec.get(key), names, shapes)
        except Unconvertible as exc:
            notes.append(f"{key}: {exc}")
            formulas[key] = None
    regime = spec.get("regime")
    if regime not in ("compute", "memory") or None in formulas.values():
        notes.append(f"regime {regime!r}: scored by speedup over eager instead (no roofline)")
        regime = "speedup"
    return regime, formulas["flops_formula"], formulas["bytes_formula"]


def _property_note(name: str, evaluation: PeerEval, ours: str | None, notes: list[str]) -> None:
    if f'"{name}"' in evaluation.property_text:
        stand_in = f"; our structural case {ours} stands in" if ours else ""
        notes.append(
            f"property-stress cases (property_stress.py, Hypothesis): not carried{stand_in}"
        )
