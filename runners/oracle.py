"""Entry point of the reference process: inputs, expected outputs, the baseline timings and the
re-check of the candidate's timed calls.

It runs the problem's trusted reference.py in a process of its own, never in the candidate's and
never in the parent. Expected outputs go to a directory the candidate cannot read; the candidate's
files it reads as runners.tensor_file files, checked before anything in them is read.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

from runners import construction, protocol, tensor_file, timing
from runners.compare import (
    Comparison,
    compare_call,
    release_device_memory,
    save_without_checksums,
)
from runners.plan import shape_file
from runners.problem import BUILT_IN_DISTRIBUTIONS, Case, Problem, ProblemError, load_problem

# The input sets of shapes whose baselines were timed stay on the device, up to this many bytes:
# each shape is timed once per kind (eager, starter, library, compile), and softmax's largest
# shape took about a second to read each time. The parent closes the candidate's process before
# any baseline is timed, so the device is the reference's.
BASELINE_INPUT_BYTES = 8 << 30


def apply_distribution(args: list[Any], name: str) -> list[Any]:
    """Reshape the floating inputs' values; integer and non-tensor inputs stay as they are."""
    if name not in BUILT_IN_DISTRIBUTIONS:
        raise ValueError(f"unknown input distribution {name!r}")
    return [_distribute(a, name) if _is_float(a) else a for a in args]


def grade_inputs(
    reference: Any,
    seed: int,
    distribution: str,
    device: str,
    cases: Mapping[str, Case] | None = None,
) -> list[Any]:
    """One input set of a grade: the reference module's `get_inputs()` (or the case's generator)
    under `seed`, on `device`, with `distribution` applied: a built-in one by name, a case of
    the problem's `cases` (runners.problem.Problem.cases) by its scale. The reference's shape
    parameters are set by the caller."""
    case = (cases or {}).get(distribution)
    torch.manual_seed(seed)
    with torch.device(device):  # generate on the device: CPU randn of 1 GiB takes seconds
        args = _draw(reference, distribution, case)
        if case is None or distribution in BUILT_IN_DISTRIBUTIONS:
            args = apply_distribution(args, distribution)
        else:
            args = _scale(args, distribution, case.scale)
    return [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]


def _draw(reference: Any, distribution: str, case: Case | None) -> list[Any]:
    if case is None or case.generator is None:
        return list(reference.get_inputs())
    drawn = _generator(reference, distribution, case)()
    if not isinstance(drawn, list | tuple):
        raise ProblemError(
            f"problem.yaml: cases.{distribution}.generator: {case.generator}() returned "
            f"{type(drawn).__name__}, not the list of inputs"
        )
    return list(drawn)


def _generator(reference: Any, distribution: str, case: Case) -> Callable[[], Any]:
    generator = getattr(reference, case.generator, None)
    if not callable(generator):
        raise ProblemError(
            f"problem.yaml: cases.{distribution}.generator: reference.py has no function "
            f"{case.generator}"
        )
    return generator


def _scale(args: list[Any], distribution: str, scale: Mapping[int, float]) -> list[Any]:
    """The case's factors on the floating inputs it names, widened and rounded back once."""
    args = list(args)
    for position, factor in scale.items():
        value = args[position] if position < len(args) else None
        if not _is_float(value):
            what = "missing" if position >= len(args) else f"{type(value).__name__}"
            what += f" ({value.dtype})" if isinstance(value, torch.Tensor) else ""
            raise ProblemError(
                f"problem.yaml: cases.{distribution}.scale: input {position} is {what}, "
                "not a floating tensor"
            )
        wide = torch.float64 if value.dtype == torch.float64 else torch.float32
        args[position] = (value.to(wide) * factor).to(value.dtype)
    return args


def _is_float(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _distribute(tensor: torch.Tensor, name: str) -> torch.Tensor:
    wide = tensor.float()
    if name == "large":
        wide = wide * 64.0
    elif name == "offset":
        wide = wide + 4.0
    elif name == "small":
        wide = wide * 1e-3
    elif name == "uniform":
        wide = torch.rand_like(wide) * 2.0 - 1.0
    return wide.to(tensor.dtype)


def perturb_parameters(model: torch.nn.Module, buffers: Sequence[str] = ()) -> None:
    """Move parameters, and the named floating buffers (problem.yaml `perturb_buffers`), off
    their constant initial values (ones, zeros) so that they matter."""
    named = _perturbed_buffers(model, buffers)
    with torch.no_grad():
        for tensor in [*model.parameters(), *named]:
            if tensor.is_floating_point():
                _perturb(tensor)


def _perturb(tensor: torch.Tensor) -> None:
    """tensor += N(0, 1) * 0.25 * mean|tensor| (at least 0.1), the noise drawn in fp32; worked in
    place, so that at most two fp32 copies of the tensor live at once (written as one
    expression, a 1.5 GiB bf16 MoE weight took 12 GiB of temporaries and the H100 ran out), with
    the values of that expression bit for bit (the scale draws no random numbers)."""
    # .float() of an fp32 tensor is the tensor itself: abs() then, never abs_() on the weight
    wide = tensor.abs() if tensor.dtype == torch.float32 else tensor.float().abs_()
    scale = wide.mean().clamp_min(0.1)
    del wide
    step = torch.randn_like(tensor, dtype=torch.float32).mul_(0.25).mul_(scale)
    if tensor.element_size() == 1:  # fp8 takes part in no arithmetic: widen, move, cast back
        tensor.copy_(step.add_(tensor.float()).to(tensor.dtype))
    else:
        tensor.add_(step.to(tensor.dtype))


def _perturbed_buffers(model: torch.nn.Module, names: Sequence[str]) -> list[torch.Tensor]:
    """The named buffers; each must exist, be floating and be in the state_dict (the candidate
    gets the perturbed values only through it)."""
    buffers, state = dict(model.named_buffers()), model.state_dict()
    for name in names:
        why = None
        if name not in buffers:
            why = f"Model has no such buffer (its buffers: {', '.join(buffers) or 'none'})"
        elif not buffers[name].is_floating_point():
            why = f"it is {buffers[name].dtype}, not floating"
        elif name not in state:
            why = "it is not persistent: the state_dict, which the solution loads, lacks it"
        if why:
            raise ProblemError(f"problem.yaml: perturb_buffers names {name!r}: {why}")
    return [buffers[name] for name in names]


def as_output_list(out: Any) -> list[Any]:
    items = list(out) if isinstance(out, tuple | list) else [out]
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in items]


def _one_graph(model: torch.nn.Module, bases: Sequence[Sequence[Any]]) -> None:
    """Trace `model` on every input set with dynamo's eager backend, a static graph each time:
    raises RecompileError (under `error_on_recompile`) where an input set needs another."""
    torch._dynamo.reset()
    traced = torch.compile(model, dynamic=False, backend="eager")
    with torch.no_grad():
        for args in bases:
            traced(*timing.fresh_copy(args))


class Oracle:
    def __init__(self):
        self.reference = None
        self.problem_dir: Path | None = None
        self.problem: Problem | None = None  # its cases and perturbed buffers, once prepared
        self.starter = None
        self._baseline_inputs: dict[str, tuple[list, int]] = {}  # path: (input sets, bytes)

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        """Inputs and expected outputs of every shape; the reply says whether the reference has
        a Library line to time (the parent needs no cached timing for a line that is not)."""
        started = time.perf_counter()
        self.problem_dir = Path(request["problem_dir"])
        self.problem = load_problem(self.problem_dir, require_hidden=False)
        self.reference = _import_reference(self.problem_dir / "reference.py")
        for name, case in self.problem.cases.items():
            if case.generator:  # found missing now, whichever input sets the plan draws
                _generator(self.reference, name, case)
        # Each shape's files are written while the next shape is computed (softmax's largest
        # writes 6 GiB); one shape waits to be written at a time.
        with ThreadPoolExecutor(1) as writer:
            writing: list = []
            for shape in request["shapes"]:
                files = self._prepare_shape(shape, request)
                for done in writing:
                    done.result()
                writing = [writer.submit(tensor_file.save, value, path) for value, path in files]
            for done in writing:
                done.result()
        release_device_memory(request["device"])
        library = hasattr(self.reference, "Library")
        return {"seconds": time.perf_counter() - started, "library": library}

    def _prepare_shape(self, shape: dict[str, Any], request: dict[str, Any]) -> list:
        """Compute a shape's inputs and expected outputs (its init and state saved here);
        returns the (value, path) pairs left to write."""
        device, in_dir, ref_dir = (
            request["device"],
            Path(request["in_dir"]),
            Path(request["ref_dir"]),
        )
        model, init = self._reference_model(shape, device)
        init = [a.cpu() if isinstance(a, torch.Tensor) else a for a in init]
        torch.save(init, in_dir / shape_file("init", shape["id"]))
        torch.save(
            {k: v.cpu() for k, v in model.state_dict().items()},
            in_dir / shape_file("state", shape["id"]),
        )
        input_sets, expected = [], []
        for seed, distribution in zip(shape["seeds"], shape["dists"], strict=True):
            args = grade_inputs(self.reference, seed, distribution, device, self.problem.cases)
            _check_alike(args, input_sets[0] if input_sets else args, distribution)
            with torch.no_grad():
                expected.append(as_output_list(model(*timing.fresh_copy(args))))
            _check_outputs(self.problem, expected[-1], args)
            input_sets.append(args)
        return [
            (input_sets, in_dir / shape_file("inputs", shape["id"])),
            (expected, ref_dir / shape_file("expected", shape["id"])),
        ]

    def _reference_model(self, shape: dict[str, Any], device: str):
        """The reference model at this shape's parameters, built from its first seed."""
        for name, value in shape["params"].items():
            setattr(self.reference, name, value)
        torch.manual_seed(shape["seeds"][0])
        with torch.device(device):
            init = list(self.reference.get_init_inputs())
            model = self.reference.Model(*init)
            perturb_parameters(model, self.problem.perturb_buffers if self.problem else ())
        return model.to(device).eval(), init

    def baseline(self, request: dict[str, Any]) -> dict[str, Any]:
        model, init = self._reference_model(request["shape"], request["device"])
        if request.get("starter"):
            model = self._starter_model(model, init, request["device"])
        if request.get("library"):
            if not hasattr(self.reference, "Library"):
                return {"event_ms": [], "seconds": 0.0}  # no library line for this problem
            model = self._library_model(model, request["shape"], request["device"])
        bases = self._baseline_bases(request["inputs"], request["device"])
        settings = timing.Settings.from_dict(request["settings"])
        started = time.perf_counter()
        # One graph per shape: a reference whose control flow follows its inputs' values (a loop
        # over ragged sequences or experts bounded by `.tolist()`) would be compiled again for
        # every input set, each time longer than the whole grade (moe_swiglu's first grade spent
        # its 420 s of baselines so), and timed in its compiler rather than in its kernels.
        # Dynamo's guards decide a recompile, whatever the backend: its eager backend finds one
        # in the time of a call per input set, where inductor took 28 s for moe_swiglu's first.
        try:
            with torch._dynamo.config.patch(error_on_recompile=request["compile"]):
                if request["compile"]:
                    _one_graph(model, bases)
                    torch._dynamo.reset()  # a static graph per shape, not one that went dynamic
                    model = torch.compile(model, dynamic=False)
                samples = timing.measure(
                    lambda args: model(*args),
                    bases,
                    device=request["device"],
                    settings=settings,
                )
        except torch._dynamo.exc.RecompileError:
            given_up = "torch.compile recompiles the reference for each input set"
            return {"event_ms": [], "given_up": given_up, "seconds": time.perf_counter() - started}
        return {**samples.to_reply(), "seconds": time.perf_counter() - started}

    def _baseline_bases(self, path: str, device: str) -> list:
        """A shape's input sets, read once for all its baselines while they fit in
        `BASELINE_INPUT_BYTES` beside those already kept (the baselines go kind by kind over
        the shapes, so letting the oldest go would make every later read miss). The timing
        loop copies them into its own slots, never changing them."""
        if path in self._baseline_inputs:
            return self._baseline_inputs[path][0]
        bases = tensor_file.load(path, device)
        size = sum(a.nbytes for args in bases for a in args if isinstance(a, torch.Tensor))
        held = sum(n for _, n in self._baseline_inputs.values())
        if held + size <= BASELINE_INPUT_BYTES:
            self._baseline_inputs[path] = (bases, size)
        return bases

    def recheck(self, request: dict[str, Any]) -> dict[str, Any]:
        """The candidate's kept timed calls (its file `kept`) against the reference's outputs for
        their inputs, rebuilt from base and call number with the round's seed
        (runners.timing.vary), compared on the device with the tolerances of the call's base
        (`tolerances`, one list per base); replies with the comparison. An unreadable or
        malformed file is the candidate's failure, in the comparison."""
        started = time.perf_counter()
        try:
            comparison = self._compare_kept(request)
        finally:
            # The candidate's outputs are gone with _compare_kept's frame.
            release_device_memory(request["device"])
        return {"comparison": comparison.to_dict(), "seconds": time.perf_counter() - started}

    def _compare_kept(self, request: dict[str, Any]) -> Comparison:
        device, seed = request["device"], request["seed"]
        comparison = Comparison()
        count = len(request["shape"]["seeds"])
        kept = _kept_calls(Path(request["kept"]), device, count, request["max_bytes"], comparison)
        if not kept:
            return comparison
        model, _ = self._reference_model(request["shape"], device)
        # Only the kept calls' bases are read.
        bases = tensor_file.load(request["inputs"], device, select={base for base, _, _ in kept})
        with torch.no_grad():
            while kept:  # each call's outputs are released once compared
                base, call, outputs = kept.pop(0)
                args = timing.vary([_on(a, device) for a in bases[base]], seed, call)
                expected = as_output_list(model(*args))
                compare_call(comparison, expected, outputs, request["tolerances"][base], args)
        return comparison

    def starter_check(self, request: dict[str, Any]) -> dict[str, Any]:
        """`_starter_check` for each of the request's shapes: a result each."""
        started = time.perf_counter()
        results = []
        for shape in request["shapes"]:
            reply = self._starter_check({**shape, "device": request["device"]})
            results.append(
                {key: reply[key] for key in ("correct", "starter_error") if key in reply}
            )
        return {"results": results, "seconds": time.perf_counter() - started}

    def _starter_check(self, request: dict[str, Any]) -> dict[str, Any]:
        """Whether starter.py is right on every input set of a shape: its outputs compared here,
        on the device, with the expected outputs (`expected`, which the candidate cannot read)
        as a candidate's are (`tolerances`, one list per input set), an input set at a time. An
        exception in the starter's forward is its failure on this shape, replied as
        `starter_error`; the device running out of memory, or a comparison the problem's rules
        do not fit, is the engine's (raised: the verdict the platform caches is not taken)."""
        started = time.perf_counter()
        device = request["device"]
        model, init = self._reference_model(request["shape"], device)
        starter = self._starter_model(model, init, device)
        comparison = Comparison()
        try:
            for index, rules in enumerate(request["tolerances"]):
                args = tensor_file.load(request["inputs"], device, select=[index])[index]
                want = tensor_file.load(request["expected"], device, select=[index])[index]
                try:
                    with torch.no_grad():
                        outputs = as_output_list(starter(*timing.fresh_copy(args)))
                except torch.OutOfMemoryError:
                    raise
                except Exception as exc:  # the starter failing on a shape is a finding
                    return {"starter_error": f"{type(exc).__name__}: {exc}"[:300], "seconds": 0.0}
                compare_call(comparison, want, outputs, rules, args)
                del args, want, outputs
        finally:
            release_device_memory(device)
        return {"correct": comparison.correct, "seconds": time.perf_counter() - started}

    def _starter_model(self, model: torch.nn.Module, init: list[Any], device: str):
        """starter.py's ModelNew built as the candidate process builds a solution (on the CPU
        from the same init inputs, then the reference's parameters loaded strictly)."""
        if self.starter is None:
            self.starter = _import_module(self.problem_dir / "starter.py", "starter")
        init = [a.cpu() if isinstance(a, torch.Tensor) else a for a in init]
        starter = construction.build(self.starter.ModelNew, init, device)
        starter.load_state_dict(model.state_dict(), strict=True)
        return starter.to(device).eval()

    def _library_model(self, model: torch.nn.Module, shape: dict[str, Any], device: str):
        """reference.Library built like Model, holding the same (perturbed) parameters."""
        torch.manual_seed(shape["seeds"][0])
        with torch.device(device):
            library = self.reference.Library(*self.reference.get_init_inputs())
        library.load_state_dict(model.state_dict(), strict=True)
        return library.to(device).eval()


def _check_alike(args: list[Any], first: list[Any], distribution: str) -> None:
    """Every input set of a shape has the first one's tensor shapes and dtypes: the timing loop
    refills one set of buffers with each set's values."""

    def layout(values: list[Any]) -> list[Any]:
        return [(a.shape, a.dtype) if isinstance(a, torch.Tensor) else type(a) for a in values]

    if layout(args) != layout(first):
        raise ProblemError(
            f"problem.yaml: distribution {distribution!r} draws inputs {layout(args)}, the "
            f"shape's first input set {layout(first)}: every input set must have the same "
            "tensor shapes and dtypes"
        )


def _check_outputs(problem: Problem, outputs: list[Any], args: list[Any]) -> None:
    """The reference returns the outputs problem.yaml names; those compared up to ties are
    integer tensors indexing a tensor input."""
    names = sorted(problem.outputs)
    if len(outputs) != len(names):
        raise ProblemError(
            f"problem.yaml: outputs names {len(names)} output(s), the reference returns "
            f"{len(outputs)}"
        )
    for name, ties in problem.ties.items():
        output = outputs[names.index(name)]
        if not isinstance(output, torch.Tensor) or output.is_floating_point():
            raise ProblemError(
                f"problem.yaml: outputs.{name} is compared up to ties, but the reference's "
                f"{name} is not an integer tensor"
            )
        if ties.input >= len(args) or not isinstance(args[ties.input], torch.Tensor):
            raise ProblemError(
                f"problem.yaml: outputs.{name}.ties.input is {ties.input}, not the position of "
                f"a tensor among the reference's {len(args)} inputs"
            )


def _kept_calls(
    path: Path, device: str, base_count: int, max_bytes: int, comparison: Comparison
) -> list[tuple[int, int, Any]]:
    """(base, call, outputs) of each kept timed call in the candidate's file; none, the failure
    recorded in `comparison`, where the file is unreadable, holds over `max_bytes` of tensors or
    the list is malformed."""
    try:
        # Only the first KEPT_CALLS items are read: a forged long list would keep the
        # reference busy.
        kept_only = range(timing.KEPT_CALLS)
        saved = tensor_file.load(
            path, device, untrusted=True, select=kept_only, max_bytes=max_bytes
        )
        kept = []
        if len(saved) <= timing.KEPT_CALLS and all(map(_kept_call, saved)):
            kept = [(base, call, outputs) for base, call, outputs in saved]
    except Exception as exc:  # anything unreadable is the candidate's failure
        comparison.fail(f"timed outputs could not be read ({type(exc).__name__})")
        return []
    if not kept or not all(0 <= base < base_count for base, _, _ in kept):
        comparison.fail("the timed calls kept for checking are missing or malformed")
        return []
    return kept


def _kept_call(item: Any) -> bool:
    """Whether `item` is a (base, call, outputs) triple of integers and a list: checked before it
    is unpacked (unpacking a forged tensor of a billion elements makes a billion tensors)."""
    if not isinstance(item, tuple | list) or len(item) != 3:
        return False
    base, call, outputs = item
    return type(base) is int and type(call) is int and isinstance(outputs, list)


def _on(value: Any, device: str) -> Any:
    """A private copy of a tensor on `device` (vary scales it in place); other values as is."""
    return value.to(device, copy=True) if isinstance(value, torch.Tensor) else value


def _import_reference(path: Path):
    return _import_module(path, "reference")


def _import_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    reply_fd = protocol.reply_fd_from_argv(sys.argv)
    save_without_checksums()
    oracle = Oracle()
    handlers = {
        "prepare": oracle.prepare,
        "baseline": oracle.baseline,
        "recheck": oracle.recheck,
        "starter_check": oracle.starter_check,
    }
    protocol.serve(handlers, reply_fd)
