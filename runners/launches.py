"""Which of the solution's own kernels ran (hack 24: a kernel written but never called).

Two views, because neither sees everything:
- Triton launches are counted in Python, for every call: `install` wraps the launch entry of
  Triton's JIT (and of its CPU interpreter) and a compiled kernel's own launcher before the
  solution is imported, and counts the launches of kernels defined in the solution module; a
  CUDA graph's replay counts the launches its capture recorded.
- On CUDA, the profiler names the kernels a few calls ran, which covers CUDA kernels built with
  load_inline that Python never sees launch.
`defined_kernels` reads the names the solution defines from its source, for the parent to match
the profiler's names against.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

SOLUTION_MODULE = "solution"
# Attributes and specifiers that may stand on either side of a kernel's return type, taken
# whole (possessive: a long run of them in a crafted string cannot make the search backtrack),
# and never read as the return type or the name.
_ATTRIBUTES = "__launch_bounds__|__maxnreg__|__cluster_dims__"  # each takes (arguments)
_KEYWORDS = "static|inline|__forceinline__|__noinline__"
_SPECIFIERS = rf"(?:(?:{_ATTRIBUTES})\s*\((?:[^()]|\([^()]*\))*\)\s*|(?:{_KEYWORDS})\s+)*+"
_WORD = rf"(?!(?:{_ATTRIBUTES}|{_KEYWORDS})\b)\w+"
# A CUDA kernel declared in a source string: `__global__ void name(` (templates allowed), also
# `__global__ void __launch_bounds__(256) name(`, the CUDA guide's own form.
_GLOBAL_KERNEL = re.compile(rf"__global__\s+{_SPECIFIERS}{_WORD}\s+{_SPECIFIERS}({_WORD})\s*[(<]")
_TRITON_DECORATORS = {"jit", "autotune", "heuristics"}
# A profiler kernel name: `[void ][ns::...::]name` followed at once by template arguments,
# parameters or nothing (Triton kernels, `extern "C"` ones). Copies and fills (`Memcpy DtoH
# (...)`, `Memset (Device)`) match none: a space follows their first word.
_PROFILED_NAME = re.compile(
    r"(?:void\s+)?(?P<qualifiers>(?:(?:[A-Za-z_]\w*|\(anonymous namespace\))::)*)"
    r"(?P<name>[A-Za-z_]\w*)(?:[<(]|$)"
)
# Namespaces of PyTorch and of the libraries it runs kernels from.
LIBRARY_NAMESPACES = frozenset(
    {
        "at",
        "c10",
        "caffe2",
        "torch",
        "std",
        "cub",
        "thrust",
        "cutlass",
        "cute",
        "cudnn",
        "cublas",
        "cublasLt",
        "flash",
        "pytorch_flash",
        "fmha",
        "triton",
    }
)

_count = [0]
_in_jit = [0]  # how deep the JIT's launch entry is on this process's stack


@dataclass(frozen=True)
class DefinedKernels:
    triton: frozenset[str]
    cuda: frozenset[str]

    @property
    def names(self) -> frozenset[str]:
        return self.triton | self.cuda


def defined_kernels(source: str, native: Iterable[str] = ()) -> DefinedKernels:
    """Names of Triton kernels (functions decorated with triton.jit, autotune or heuristics)
    and of CUDA `__global__` functions in string constants, and in the `native` source files
    written beside the solution (runners.solution_files). Unparsable source defines none (the
    static gate reports the syntax error)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return DefinedKernels(frozenset(), frozenset())
    triton, cuda = set(), {name for text in native for name in _GLOBAL_KERNEL.findall(text)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(map(_is_triton, node.decorator_list)):
            triton.add(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            cuda.update(_GLOBAL_KERNEL.findall(node.value))
    return DefinedKernels(frozenset(triton), frozenset(cuda))


def _is_triton(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in _TRITON_DECORATORS


def names_a_defined_kernel(kernel_name: str, defined: frozenset[str]) -> bool:
    """Whether a profiler kernel name is one of `defined`: the name itself, its demangled form
    (`name(float const*, ...)`, `void name<...>(...)`, also in a namespace of the solution's:
    `(anonymous namespace)::name(...)`), or, outside any namespace, its Itanium-mangled form
    (`_Z10row_kernelPKf`).

    The kernel's own function name must be the defined one, and never within a namespace of
    PyTorch or of a library it calls: a solution that names an unused kernel
    `vectorized_elementwise_kernel` does not get credit for the `void
    at::native::vectorized_elementwise_kernel<...>` its PyTorch fallback runs."""
    return _credited(kernel_name, defined) == "own"


def _credited(kernel_name: str, defined: frozenset[str]) -> str | None:
    """Whose kernel a profiler name is: the solution's ("own"), the solution's but for a
    library namespace ("library"), or neither (None)."""
    kernel_name = kernel_name.strip()
    match = _PROFILED_NAME.match(kernel_name)
    if match and match["name"] in defined:
        qualifiers = set(match["qualifiers"].split("::"))
        return "library" if qualifiers & LIBRARY_NAMESPACES else "own"
    if any(kernel_name.startswith(f"_Z{len(name)}{name}") for name in defined):
        return "own"
    return None


def install() -> Callable[[], int] | None:
    """Count launches of the solution's Triton kernels from now on; the returned function reads
    the running count. None where Triton is not installed (CUDA-only solutions)."""
    try:
        from triton.runtime import interpreter, jit
    except ImportError:
        return None
    for cls in (jit.JITFunction, interpreter.InterpretedFunction):
        if not getattr(cls.run, "_arena_counted", False):
            cls.run = _counted(cls.run)
    try:
        from triton.compiler import CompiledKernel
    except ImportError:
        CompiledKernel = None
    if CompiledKernel is not None:
        count_direct_launches(CompiledKernel)
    import torch

    count_graph_replays(torch.cuda.CUDAGraph)
    return lambda: _count[0]


def count_graph_replays(graph_class: type) -> None:
    """Count the launches a CUDA graph's replay runs: Python sees a Triton kernel launch once,
    while the graph is captured, and never again when it is replayed. Each graph keeps the
    number of the solution's launches its capture recorded, and every replay adds them."""
    if getattr(graph_class.replay, "_arena_counted", False):
        return
    begin, end, replay = graph_class.capture_begin, graph_class.capture_end, graph_class.replay

    def capture_begin(self, *args, **kwargs):
        begin(self, *args, **kwargs)
        self._arena_capture_from = _count[0]

    def capture_end(self, *args, **kwargs):
        end(self, *args, **kwargs)
        self._arena_launches = _count[0] - getattr(self, "_arena_capture_from", _count[0])

    def counted_replay(self, *args, **kwargs):
        replayed = replay(self, *args, **kwargs)
        _count[0] += getattr(self, "_arena_launches", 0)
        return replayed

    counted_replay._arena_counted = True
    graph_class.capture_begin = capture_begin
    graph_class.capture_end = capture_end
    graph_class.replay = counted_replay


def count_direct_launches(kernel_class: type) -> None:
    """Count launches made through a compiled kernel's own launcher, `kernel.run(grid_x, ...,
    stream, kernel.function, kernel.packed_metadata, ...)`, which skips the JIT's launch entry
    to save its few microseconds of host work per call (kinetic-0715's KDA kernels, published
    correct, read as launching none of its kernels before this). A launch from inside the JIT's
    entry is counted there, once. Where the Triton in use keeps `run` other than as a property
    of the compiled kernel, such launches stay uncounted (the profiler's view still names
    them)."""
    original = kernel_class.__dict__.get("run")
    if not isinstance(original, property) or getattr(original.fget, "_arena_counted", False):
        return

    def run(self):
        launcher = original.fget(self)
        if _in_jit[0]:  # the JIT's entry counts its own launches: nothing to add on its path
            return launcher
        fn = getattr(getattr(self, "src", None), "fn", None)
        if getattr(getattr(fn, "fn", None), "__module__", None) != SOLUTION_MODULE:
            return launcher

        def counted_launch(*args, **kwargs):
            launched = launcher(*args, **kwargs)
            _count[0] += 1
            return launched

        return counted_launch

    run._arena_counted = True
    kernel_class.run = property(run)


def _counted(run: Callable[..., Any]) -> Callable[..., Any]:
    def counted_run(self, *args, grid, warmup, **kwargs):
        _in_jit[0] += 1
        try:
            launched = run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            _in_jit[0] -= 1
        if not warmup and getattr(self.fn, "__module__", None) == SOLUTION_MODULE:
            _count[0] += 1  # after the launch: one that raised did not run
        return launched

    counted_run._arena_counted = True
    return counted_run


def profiled_kernels(call: Callable[[], Any]) -> list[str]:
    """Names of the CUDA kernels one call ran, as the profiler records them."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return sorted({event.name for event in prof.events() if _on_device(event)})


def _on_device(event: Any) -> bool:
    device_type = getattr(event, "device_type", None)
    return getattr(device_type, "name", str(device_type)).upper().endswith("CUDA")


def launch_problems(reply: dict[str, Any], defined: DefinedKernels) -> list[str]:
    """Reasons a timing reply shows calls that ran none of the solution's Triton kernels: when
    those are all it defines, every timed call must launch one. CUDA kernels, which Python
    never sees launch, are matched by name in profiled calls instead (`profile_problems`). A
    solution that defines no kernel is not checked here (the static gate holds kernel-to-kernel
    tracks to their language)."""
    if not defined.triton or defined.cuda:
        return []
    counts, timed = reply.get("own_launches"), reply.get("event_ms") or []
    valid = isinstance(counts, list) and all(type(c) is int for c in counts)
    if not valid or len(counts) != len(timed):
        return ["the launch counts of the timed calls are missing or malformed"]
    idle = sum(1 for c in counts if c < 1)
    if not idle:
        return []
    names = ", ".join(sorted(defined.triton))
    return [
        f"{idle} of {len(counts)} timed calls launched none of the solution's Triton kernels "
        f"({names}): a kernel must run in every call"
    ]


def profile_problems(kernels: Any, defined: DefinedKernels) -> list[str]:
    """Reasons the profiled calls' kernel names show a call that ran none of the solution's."""
    calls = _listed_names(kernels)
    if defined.names and not calls:
        return ["the profiled calls' kernel names are missing"]
    for ran in calls:
        credits = [_credited(name, defined.names) for name in ran]
        if "own" in credits:
            continue
        if "library" in credits:  # an honest author's kernels in `namespace flash`, say
            shown = ran[credits.index("library")][:120]  # the message stays under 400 characters
            reserved = ", ".join(sorted(LIBRARY_NAMESPACES))
            return [
                f"a profiled call ran none of the solution's kernels: it ran {shown}, within a "
                f"namespace of PyTorch or its libraries ({reserved}), where a solution's "
                "kernels do not count"
            ]
        shown = ", ".join(ran[:4]) or "no kernel"
        return [f"a profiled call ran none of the solution's kernels (it ran {shown})"[:300]]
    return []


def _listed_names(value: Any) -> list[list[str]]:
    """The profiled calls' kernel names from the candidate's reply, keeping only strings."""
    if not isinstance(value, list):
        return []
    return [[n for n in call if isinstance(n, str)] for call in value if isinstance(call, list)]
