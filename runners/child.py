"""Entry point of the sandboxed candidate process.

It imports the timing module (capturing the clocks) and torch before the solution, builds the
model, runs the inputs it is given and saves what came out; it never sees reference outputs or
shape parameters. The parent decides every verdict from the saved outputs.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from runners import construction, launches, protocol, tensor_file, timing
from runners.compare import save_without_checksums

_type = type
_Tensor = torch.Tensor
_equal = torch.equal
_save = tensor_file.save  # outputs
_unlink = os.unlink
_load = torch.load  # init and state
_synchronize = torch.cuda.synchronize
_perf_counter = timing._perf_counter  # captured before the solution is imported
_getsize = os.path.getsize
# The models' states a `load` request reads ahead at most, in bytes of their files: MoE's
# expert weights run to 0.8 GB a shape (3.3 GB for its eight timed shapes), and reading one took
# 0.3-0.8 s between two timings. Held in host memory, an eighth of the process's data limit.
PRELOAD_STATE_BYTES = 4 * 2**30


class Candidate:
    def __init__(self, solution: Path, device: str):
        self.solution = solution
        self.device = device
        self.module = None
        self.model = None
        self.model_key: tuple[str, str] | None = None
        self.inputs: dict[str, Any] = {}
        self.states: dict[str, Any] = {}  # read ahead by `load`, each taken by its model
        # Installed before the solution is imported, so its Triton kernels are counted.
        self.launches = launches.install()
        # Where the current request's time went, for the progress log's detail (its word only).
        self.phases: dict[str, float] = {}
        # Busy between two timings of compute-bound shapes (timing.BusyDevice).
        self.busy = timing.BusyDevice()

    def accounted(self, handler, *, busy_through: bool = False):
        """`handler` with its reply saying where its time went (model, inputs, calls, save).
        Any request but a timing (`busy_through`) ends the busy GEMM first."""

        def handle(request: dict[str, Any]) -> dict[str, Any]:
            self.phases = {}
            if not busy_through:
                self.busy.stop()
            reply = handler(request)
            return {**reply, "phases": {k: round(v, 2) for k, v in self.phases.items()}}

        return handle

    @contextlib.contextmanager
    def _phase(self, name: str):
        started = _perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + _perf_counter() - started

    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        if self.module is None:
            with self._phase("import"):
                self.module = _import_solution(self.solution)
        self._model_for(request["init"], request["state"])
        return {"seconds": time.perf_counter() - started, **_integrity()}

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        model = self._model_for(request["init"], request["state"])
        input_sets = self._inputs(request["inputs"])
        outputs, type_errors, mutated = [], [], []
        # Outputs are copied as they come: a module may return one buffer it keeps and
        # overwrites on every call, and each call is compared with its own expected outputs.
        storages: list[set[int]] = []  # per call, where its outputs live
        with torch.no_grad(), self._phase("calls"):
            for index, args in enumerate(input_sets):
                pristine = timing.fresh_copy(args)
                out = self._call(model, args)
                plain = _plain_outputs(out, index, type_errors)
                storages.append(timing.output_storages(plain))
                outputs.append([None if o is None else o.clone() for o in plain])
                if not all(_same(a, p) for a, p in zip(args, pristine, strict=True)):
                    mutated.append(index)
        with self._phase("save"):
            _save(outputs, request["out"])
        aliased = sum(map(len, storages)) > len(set().union(*storages))
        reply = {"type_errors": type_errors, "mutated": mutated, "aliased": aliased}
        return reply | _integrity()

    def time(self, request: dict[str, Any]) -> dict[str, Any]:
        model = self._model_for(request["init"], request["state"])
        bases = self._inputs(request["inputs"])
        settings = timing.Settings.from_dict(request["settings"])
        busy_error = self.busy.stop()  # the device was kept busy up to here, or says why not
        # No synchronize inside the window: the clock synchronizes the device after the end
        # event and compares the two, which exposes work left running on other streams.
        with self._phase("measure"):
            samples = timing.measure(
                lambda args: model(*args),
                bases,
                device=self.device,
                settings=settings,
                launches=self.launches,
            )
        type_errors: list[str] = []
        kept = [
            (base, call, _plain_outputs(out, base, type_errors)) for base, call, out in samples.kept
        ]
        if request.get("busy_after"):  # another shape follows in this process
            self.busy.start(settings.busy_gap_s, self.device)
        # A new file, written before any more of the solution's code runs: the parent moves it
        # out of this folder on the reply, and a file the solution opened earlier under this
        # name stays the solution's own.
        with self._phase("save"):
            with contextlib.suppress(FileNotFoundError):
                _unlink(request["out"])
            _save(kept, request["out"])
        reply = {**samples.to_reply(), "type_errors": type_errors, **_integrity()}
        return reply | ({"busy_error": busy_error} if busy_error else {})

    def profile(self, request: dict[str, Any]) -> dict[str, Any]:
        """The kernels each of a few more calls ran, on inputs varied like the timed calls'.
        The parent asks after all timing: the profiler slows every launch after it."""
        model = self._model_for(request["init"], request["state"])
        bases = self._inputs(request["inputs"])
        seed = timing.Settings.from_dict(request["settings"]).vary_seed or 0
        names = []
        try:
            with torch.no_grad():
                for index in range(int(request["calls"])):
                    args = timing.fresh_copy(bases[index % len(bases)])
                    timing.vary(args, seed, -1 - index)
                    names.append(launches.profiled_kernels(lambda a=args: model(*a)))
        except RuntimeError as exc:  # the profiler could not start: say so, the parent notes it
            return {"kernels_error": f"{type(exc).__name__}: {exc}"[:300], **_integrity()}
        return {"kernels": names, **_integrity()}

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        """Read the inputs of the shapes the next requests will time, and their models'
        states while they fit in PRELOAD_STATE_BYTES, ahead of them. No model is built here:
        a solution builds each right before its shape runs, as in every other request. The
        round's first shape follows a busy device too (timing.BusyDevice): the GEMM starts
        before the reads, which may end just as that shape's timing is asked for."""
        self.busy.start(float(request.get("busy_gap_s") or 0.0), self.device)
        for path in request["inputs"]:
            self._inputs(path)
        held = 0
        built = self.model_key[1] if self.model_key else None  # its model has its state
        with self._phase("states"):
            for path in request.get("states", []):
                if path == built:
                    continue
                held += _getsize(path)
                if held > PRELOAD_STATE_BYTES:
                    break
                self.states[path] = _load(path, weights_only=True)
        return _integrity()

    def _inputs(self, path: str) -> list[list[Any]]:
        """Loaded once: timing reuses the correctness inputs (checked unmodified by then)."""
        if path not in self.inputs:
            with self._phase("inputs"):
                self.inputs[path] = tensor_file.load(path, self.device)
        return self.inputs[path]

    def _call(self, model, args: list[Any]):
        out = model(*args)
        if self.device == "cuda":
            _synchronize()
        return out

    def _model_for(self, init_path: str, state_path: str):
        if self.model_key == (init_path, state_path):
            self.states.pop(state_path, None)
        else:
            self.model = None
            with self._phase("construct"):
                init = _load(init_path, weights_only=True)
                model_class = getattr(self.module, "ModelNew", None) or self.module.Model
                model = construction.build(model_class, init, self.device)
            with self._phase("load state"):
                state = self.states.pop(state_path, None)
                if state is None:
                    state = _load(state_path, weights_only=True)
                model.load_state_dict(state, strict=True)
                del state
            with self._phase("to device"):
                self.model = model.to(self.device).eval()
            self.model_key = (init_path, state_path)
        return self.model


class _SourceOnly(importlib.machinery.SourceFileLoader):
    """Imports solution.py from its source, never from bytecode in __pycache__: the folder is
    the candidate's, and bytecode written there (by an earlier process of the grade, with the
    source's size and time in its header) would run code the static gate never read."""

    def get_code(self, fullname: str) -> Any:
        return compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)


def _import_solution(path: Path):
    loader = _SourceOnly("solution", str(path))
    spec = importlib.util.spec_from_file_location("solution", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["solution"] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "ModelNew") and not hasattr(module, "Model"):
        raise AttributeError("the solution defines neither ModelNew nor Model")
    return module


def _plain_outputs(out: Any, index: int, type_errors: list[str]) -> list[Any]:
    """Outputs as a list, with anything but a plain torch.Tensor replaced by None and named."""
    items = list(out) if isinstance(out, tuple | list) else [out]
    plain = []
    for position, item in enumerate(items):
        if _type(item) is not _Tensor:
            type_errors.append(f"call {index} output {position} is {_type(item).__qualname__}")
            plain.append(None)
        elif problem := tensor_file.cannot_save(item):
            type_errors.append(f"call {index} output {position} is {problem}")
            plain.append(None)
        else:
            plain.append(item.detach())
    return plain


def _same(after: Any, before: Any) -> bool:
    if isinstance(before, _Tensor):
        return _type(after) is _Tensor and after.shape == before.shape and _equal(after, before)
    return True


def _integrity() -> dict[str, Any]:
    return {"timers_replaced": timing.timers_intact()}


def main() -> None:
    argv = sys.argv
    reply_fd = protocol.reply_fd_from_argv(argv)
    save_without_checksums()
    solution, device = Path(argv[argv.index("--solution") + 1]), argv[argv.index("--device") + 1]
    candidate = Candidate(solution, device)
    handlers = {
        "build": candidate.accounted(candidate.build),
        "run": candidate.accounted(candidate.run),
        "time": candidate.accounted(candidate.time, busy_through=True),
        "profile": candidate.accounted(candidate.profile),
        "load": candidate.accounted(candidate.load),
    }
    protocol.serve(handlers, reply_fd)
    candidate.busy.stop()  # no GEMM left running while the interpreter exits
