"""The static gate: AST rules over a candidate solution, run before any GPU time.

Names are resolved through imports, assignments, attribute access and constant getattr, so an
aliased forbidden op is caught where a text search would not be. The runtime checks stay
authoritative; this gate catches the cheap and the obvious and names the rule and the line.

A hit either refuses the solution or flags it. REWARD_HACKS.md: refuse only what no runtime
check can make safe. Idioms of careful kernel code that a runtime check covers (build variables,
writes into the build folder, CUDA graphs, side streams) are flagged and graded; each flag's
message names the check (FLAG_RULES), each refusal's reason says why (WHY). Harmless calls pass
silently: torch.cuda.synchronize, torch.cuda.current_stream, load_inline, reading the
environment, threading.Lock.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

FORBIDDEN_VERDICT = "forbidden"
SYNTAX_VERDICT = "syntax_error"


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# A resolved dotted name is hit by a rule when it equals an entry or lies under it; an entry
# ending in "*" matches any name starting with the text before it.
MODULE_RULES: dict[str, tuple[str, ...]] = {
    "introspection": _words(
        "gc inspect traceback sys.modules sys._getframe sys._current_frames sys.settrace"
        " sys.setprofile sys.gettrace builtins.globals builtins.locals builtins.vars"
        " types.FrameType"
    ),
    "dynamic_code": _words(
        "builtins.exec builtins.eval builtins.compile builtins.__import__ importlib runpy code"
        " codeop imp pkgutil zipimport types.CodeType types.FunctionType"
        # Where imports are found: the candidate can write files, so a path added here would
        # import Python the gate never read.
        " sys.path sys.meta_path sys.path_hooks sys.path_importer_cache site.addsitedir"
        " site.addpackage site.main"
    ),
    "encoded_payload": _words(
        "base64 binascii codecs marshal pickle _pickle zlib bz2 lzma gzip zipfile tarfile shelve"
        " dill cloudpickle torch.load builtins.bytes.fromhex builtins.bytearray.fromhex"
    ),
    # Starting a thread; locks and thread-local storage start none.
    "threads": _words(
        "threading.Thread threading.Timer threading._start_new_thread _thread.start_new_thread"
        " _thread.start_new concurrent asyncio sched multiprocessing.dummy"
        " multiprocessing.pool.ThreadPool"
    ),
    "processes": _words(
        "subprocess multiprocessing torch.multiprocessing pty posix pexpect os.system os.popen"
        " os.fork os.forkpty os.kill os.killpg os.exec* os.spawn* os.posix_spawn*"
    ),
    "network": _words(
        "socket ssl urllib urllib3 requests http httpx aiohttp ftplib smtplib telnetlib xmlrpc"
        " websocket websockets paramiko torch.hub torch.distributed"
    ),
    "file_write": _words(
        "shutil.copy* shutil.move shutil.rmtree shutil.make_archive shutil.unpack_archive"
        " shutil.chown tempfile torch.save numpy.save numpy.savez numpy.savetxt"
        " numpy.savez_compressed os.remove os.unlink os.rename os.renames os.replace os.rmdir"
        " os.removedirs os.mkdir os.makedirs os.truncate os.chmod os.chown os.link os.symlink"
        " os.mkfifo os.utime"
    ),
    # The candidate's replies to the engine leave through a pipe this process holds.
    "reply_channel": _words(
        "os.write os.writev os.pwrite os.pwritev os.open os.fdopen os.dup os.dup2 os.sendfile"
        " os.ftruncate io.FileIO"
    ),
    "backend_mutation": _words(
        "torch.set_float32_matmul_precision torch.set_default_dtype torch.set_default_device"
        " torch.set_default_tensor_type torch.use_deterministic_algorithms"
        " torch.set_flush_denormal torch.cuda.set_per_process_memory_fraction"
        " torch.cuda.set_sync_debug_mode torch.backends.*.enable_* torch.backends.*.flags"
        " torch.backends.*.preferred_*"
    ),
    # Streams of the solution's own; entering one (torch.cuda.stream(s), s.cuda_stream) too.
    "side_stream": _words(
        "torch.cuda.Stream torch.cuda.streams torch.Stream torch.cuda.set_stream torch.set_stream"
        " torch.cuda.ExternalStream torch.cuda.StreamContext"
    ),
    "cuda_graph": _words(
        "torch.cuda.CUDAGraph torch.cuda.graph torch.cuda.graphs torch.cuda.make_graphed_callables"
        " triton.testing.do_bench_cudagraph"
    ),
    "native_access": _words("ctypes _ctypes cffi mmap cuda torch.cuda.cudart"),
    "signal": _words("signal faulthandler"),
    "exit": _words("sys.exit os._exit os.abort builtins.exit builtins.quit atexit"),
    # The harness itself (runners.launches counts the solution's kernel launches) and the
    # profiler that names the kernels a call ran.
    "patching": _words(
        "unittest.mock mock runners torch.profiler torch.autograd.profiler"
        " torch.autograd._profiler_enabled torch._C._autograd"
    ),
    "tensor_subclass": _words(
        "torch.Tensor._make_subclass torch.Tensor._make_wrapper_subclass"
        " torch.utils._python_dispatch torch.overrides"
    ),
}

# Attributes that reach frames, globals or class internals whatever object they hang on.
INTROSPECTION_ATTRIBUTES = frozenset(
    _words(
        "__dict__ __globals__ __code__ __closure__ __builtins__ __subclasses__ __bases__ __base__"
        " __mro__ __getattribute__ __reduce__ __reduce_ex__ __loader__ __import__ f_back f_locals"
        " f_globals f_code f_builtins f_trace tb_frame gi_frame cr_frame ag_frame"
    )
)
PATCHING_ATTRIBUTES = frozenset({"__setattr__", "__delattr__"})
FILE_WRITE_METHODS = frozenset(
    _words("write_text write_bytes touch unlink rmdir symlink_to hardlink_to tofile")
)
TENSOR_BASES = frozenset({"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"})
SUBCLASS_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})
OPEN_FUNCTIONS = frozenset({"builtins.open", "io.open", "?.open"})
# Keywords of list.sort, which no torch op takes: `rows.sort(key=...)` is not Tensor.sort.
LIST_SORT_KEYWORDS = frozenset({"key", "reverse"})

# Rules over CUDA/C++ source strings handed to load_inline.
NATIVE_SOURCE_MARKERS = ("__global__", "#include", "torch::")
NATIVE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (rule, re.compile(pattern))
    for rule, pattern in (
        (
            "side_stream",
            r"\bcu(da)?StreamCreate\w*|\bgetStreamFrom(Pool|External)\b|\bsetCurrentCUDAStream\b"
            r"|\bCUDAStreamGuard\b|\bcudaStreamPerThread\b",
        ),
        ("cuda_graph", r"\bcudaStreamBeginCapture\b|\bcudaGraph(Launch|Instantiate)\w*"),
        ("l2_persistence", r"accessPolicyWindow|PersistingL2|\bcudaStreamSetAttribute\b"),
        ("threads", r"\bstd::(thread|async|jthread)\b|\bpthread_create\b"),
        ("processes", r"\b(fork|system|popen|execv\w*|execl\w*|kill)\s*\("),
        ("file_write", r"\bfopen\s*\(|\bofstream\b|\bfwrite\s*\("),
        ("reply_channel", r"\bfdopen\s*\(|(?<![\w.>])(::)?\b(write|pwrite|writev|dup2?)\s*\("),
        ("patching", r"\b(dlsym|dlopen|cudaEventElapsedTime|mprotect|ptrace)\b|/proc/self"),
        ("environment", r"\b(setenv|putenv|unsetenv)\s*\(\s*(\"(?P<name>[A-Za-z_]\w*))?"),
        ("signal", r"\bsignal\s*\(|\bsigaction\b"),
        ("network", r"\bsocket\s*\("),
        (
            "dynamic_code",
            r"\bPyRun_\w+|\bPy_CompileString\w*|\bPyImport_\w+|\bpy::(exec|eval)\b"
            r"|\bmodule_?::import\b",
        ),
    )
)

# Rules that flag and grade, with the runtime check that makes the idiom safe
# (REWARD_HACKS.md: refuse only what no runtime check can make safe).
FLAG_RULES: dict[str, str] = {
    "build_environment": "graded: it changes only this process's environment, which starts from"
    " the sandbox's allow-list; names that change what the grader measures are refused",
    "file_write": "graded: the sandboxed process can write only in its own private working folder",
    "cuda_graph": "graded: every timed call gets fresh, varied inputs and the last timed calls'"
    " outputs are re-checked against the reference, so a replay on stale inputs fails",
    "side_stream": "graded: its calls are timed from an idle device without the hold, so the"
    " work of its streams falls in the timed window, and the device-wide synchronize after each"
    " call exposes work still running (span check)",
}

# Why each refusing rule refuses, in words for the solution's author (the report's reason).
WHY: dict[str, str] = {
    "forbidden_op": "the problem asks for this operation to be written, not called",
    "introspection": "frames, gc, globals and class internals reach the grader's objects in"
    " this process",
    "dynamic_code": "code built or loaded at run time is code this gate never read",
    "encoded_payload": "encoded or pickled payloads hide code from this gate",
    "obfuscation": "computed names hide from this gate what is called",
    "threads": "a thread can keep launching GPU work after forward returns, past the timing's"
    " synchronize, and no runtime check counts threads yet; start none (locks are fine)",
    "processes": "another process runs GPU work in its own CUDA context, which the timing's"
    " device-wide synchronize does not wait for; build with torch.utils.cpp_extension.load_inline"
    " or load, which run nvcc and ninja themselves",
    "network": "the sandbox has no network; a solution carries what it needs",
    "reply_channel": "the engine's replies leave this process through a file descriptor, which"
    " raw descriptors, /proc and /dev/fd reach and could forge; ordinary file writes are fine",
    "backend_mutation": "a process-wide precision or algorithm switch changes every op, not the"
    " solution's kernels; choose precision per op",
    "environment": "variables that choose the device, the loader, the profiler or the precision"
    " change what the grader measures; build settings (TORCH_CUDA_ARCH_LIST, MAX_JOBS,"
    " CUDA_HOME, PATH, ...) set with a constant name are allowed",
    "native_access": "raw native bindings bypass torch and can reach the timer; build native"
    " code with torch.utils.cpp_extension",
    "l2_persistence": "a persisting L2 window keeps data cached across the flush that every"
    " timed call starts with",
    "signal": "signal and fault handlers interrupt the engine's own code in this process",
    "exit": "the process and its exit belong to the engine",
    "patching": "the engine's timing, launch count and replies run in this process: assigning"
    " to another module's attributes or importing the harness or the profiler could change them",
    "tensor_subclass": "outputs must be plain tensors computed by the call, not objects that"
    " compute later",
}

# Modules whose attributes a solution may not assign (patching): the ones the engine's timing,
# launch count and replies run through in the candidate process, torch's and the standard
# library's core among them. Other modules' attributes are the solution's business: a
# compatibility shim (`datetime.UTC = datetime.timezone.utc`) or the shape names of a module it
# imported itself reach nothing of the engine's.
ENGINE_MODULES = frozenset(
    _words(
        "torch triton numpy runners builtins sys os time math statistics json zipfile pickle io"
        " struct errno stat re pathlib importlib collections dataclasses functools operator"
        " typing types itertools contextlib copy weakref abc threading signal gc inspect"
        " traceback ctypes warnings logging atexit subprocess socket select"
    )
)

# Modules that other modules re-export as attributes (`shutil.os`, `queue.threading`,
# `triton.testing.torch`): a name reached through one is read from that module, so that
# `shutil.os.system` is `os.system` to every rule.
REEXPORTED_MODULES = frozenset(
    _words(
        "os sys subprocess threading _thread multiprocessing gc inspect importlib ctypes socket"
        " time builtins torch triton numpy runpy pickle marshal"
    )
)

# Environment variables a solution may not set, each with why: they choose the device, the
# loader, the profiler or the precision rather than how the solution builds. Every other name
# (TORCH_CUDA_ARCH_LIST, TORCH_EXTENSIONS_DIR, MAX_JOBS, CUDA_HOME, CC, NVCC_*, PATH,
# PYTORCH_CUDA_ALLOC_CONF, ...) only affects the candidate's own process and what it starts.
PROTECTED_VARIABLES: tuple[tuple[str, str], ...] = (
    ("CUDA_VISIBLE_DEVICES", "it chooses the GPUs this process sees"),
    ("CUDA_DEVICE_ORDER", "it chooses which GPU this process runs on"),
    ("CUDA_LAUNCH_BLOCKING", "it makes every launch synchronous, the timing's own included"),
    ("CUDA_INJECTION64_PATH", "it loads a library into the CUDA driver that sees every call"),
    ("NVTX_INJECTION64_PATH", "it loads a library into this process at the first NVTX call"),
    ("KINETO_*", "it configures the profiler that the launch check reads"),
    ("LD_*", "it chooses the shared libraries processes load; link with extra_ldflags instead"),
    ("NVIDIA_TF32_OVERRIDE", "it is a process-wide precision switch"),
    ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "it is a process-wide precision switch"),
)
ENVIRON_NAMES = frozenset({"os.environ", "os.environb"})
ENVIRON_READS = frozenset(
    _words("get copy items keys values __contains__ __getitem__ __iter__ __len__")
)
ENVIRON_WRITES = frozenset(_words("setdefault pop __setitem__ __delitem__"))
STREAM_CONTEXTS = frozenset({"torch.cuda.stream", "torch.stream"})
CURRENT_STREAMS = frozenset({"torch.cuda.current_stream", "torch.cuda.default_stream"})
# /proc/self/fd and /dev/fd reach the reply pipe; /proc also other processes' files.
DESCRIPTOR_PATHS = re.compile(r"^/proc/?$|/proc/|/dev/fd")

# What a kernel-to-kernel category asks of a solution: a kernel in the track's language, so that a
# library wrapper cannot stand in for the starter it was given.
TRITON_JIT = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"})
NATIVE_BUILDERS = frozenset(
    {"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"}
)

_BUILTIN_NAMES = frozenset(dir(builtins))
_MODE = re.compile(r"[rwxabt+]{1,4}")
_UNKNOWN = "?"


@dataclass(frozen=True)
class Hit:
    rule: str
    line: int
    message: str

    @property
    def severity(self) -> str:
        """'flag' (recorded, graded) or 'refuse' (the verdict is forbidden)."""
        return "flag" if self.rule in FLAG_RULES else "refuse"

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "line": self.line, "message": self.message}


def _hit(rule: str, line: int, what: str) -> Hit:
    """A hit whose message, for a flag, also names the runtime check that makes it safe."""
    return Hit(rule, line, f"{what}; {FLAG_RULES[rule]}" if rule in FLAG_RULES else what)


@dataclass(frozen=True)
class StaticReport:
    verdict: str | None
    reason: str
    hits: list[Hit] = field(default_factory=list)  # the refusing ones
    flags: list[Hit] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict is None


def check_source(
    source: str | bytes,
    *,
    forbidden: Sequence[str],
    max_bytes: int = 1 << 20,
    category: str | None = None,
) -> StaticReport:
    """Check one solution file; the report's verdict is None when no rule is hit.

    `category` is the problem's: triton-to-triton and cuda-to-cuda solutions must also be written
    in their track's language (the category hit comes after every other, so the reason names a
    forbidden op first).
    """
    try:
        data = source if isinstance(source, bytes) else source.encode("utf-8")
        text = data.decode("utf-8")
    except UnicodeError:
        return _rejected([Hit("encoding", 0, "the solution is not valid UTF-8")])
    if len(data) > max_bytes:
        return _rejected([Hit("size", 0, f"the solution is {len(data)} bytes; max {max_bytes}")])
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 0
        message = getattr(exc, "msg", None) or str(exc)
        hit = Hit("syntax", line, message)
        return StaticReport(SYNTAX_VERDICT, f"line {line}: {message}", [hit])
    checker = _Checker(tree, tuple(forbidden))
    found = checker.run() + checker.category_hits(category)
    hits = [hit for hit in found if hit.severity == "refuse"]
    flags = [hit for hit in found if hit.severity == "flag"]
    return _rejected(hits, flags) if hits else StaticReport(None, "", [], flags)


def native_source_hits(text: str, *, first_line: int = 1) -> list[Hit]:
    """The refusing hits of NATIVE_RULES over CUDA/C++ text: a string constant handed to
    load_inline (its lines counted from `first_line`), or a native source file beside the
    solution (runners.solution_files), which holds no marker to look for."""
    return [hit for hit in _native_hits(text, first_line) if hit.severity == "refuse"]


def native_source_flags(text: str, *, first_line: int = 1) -> list[Hit]:
    """The flags of NATIVE_RULES over the same text (graded, recorded)."""
    return [hit for hit in _native_hits(text, first_line) if hit.severity == "flag"]


def check_native_file(text: str) -> StaticReport:
    """NATIVE_RULES over a native source file beside the solution (runners.solution_files),
    reported as check_source reports solution.py; lines counted in that file."""
    hits, flags = native_source_hits(text), native_source_flags(text)
    return _rejected(hits, flags) if hits else StaticReport(None, "", [], flags)


def _native_hits(text: str, first_line: int) -> list[Hit]:
    hits = []
    for rule, pattern in NATIVE_RULES:
        for match in pattern.finditer(text):
            line = first_line + text.count("\n", 0, match.start())
            what = f"native source uses {match.group(0).strip()}"
            if rule == "environment":
                rule, what = _variable_rule(match.group("name"))
                what = f"native source {what}"
            hits.append(_hit(rule, line, what))
    return hits


def _variable_rule(name: str | None) -> tuple[str, str]:
    """(rule, message) for changing the environment variable `name` (None: a computed name)."""
    if name is None:
        return "environment", "changes an environment variable whose name is computed"
    for pattern, why in PROTECTED_VARIABLES:
        if fnmatch.fnmatchcase(name, pattern):
            return "environment", f"changes {name}: {why}"
    return "build_environment", f"changes {name}"


def _rejected(hits: list[Hit], flags: Sequence[Hit] = ()) -> StaticReport:
    first = hits[0]
    why = f" ({WHY[first.rule]})" if first.rule in WHY else ""
    more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
    reason = f"line {first.line}: {first.message} [{first.rule}]{why}{more}"
    return StaticReport(FORBIDDEN_VERDICT, reason, hits, list(flags))


def _matches(name: str, entry: str) -> bool:
    if "*" in entry:
        return re.fullmatch(re.escape(entry).replace(r"\*", r"\w*") + r"(\..*)?", name) is not None
    return name == entry or name.startswith(entry + ".")


def module_rule(name: str) -> str | None:
    """The integrity rule a fully resolved dotted name falls under, if any."""
    for rule, entries in MODULE_RULES.items():
        if any(_matches(name, entry) for entry in entries):
            return rule
    return None


def _op_name(name: str) -> str:
    parts = name.split(".")
    if parts[:2] == ["torch", "ops"] and len(parts) > 3:
        return parts[3].lstrip("_")
    return parts[-1].lstrip("_")


def forbidden_op(name: str, forbidden: Sequence[str]) -> str | None:
    """The forbidden entry a resolved name reaches: directly, as a Tensor method, or as the same
    op under another torch namespace (torch.special.softmax, torch.ops.aten._softmax)."""
    for entry in forbidden:
        if entry.startswith("Tensor."):
            if name == _UNKNOWN + entry[len("Tensor") :] or _matches(name, "torch." + entry):
                return entry
        elif _matches(name, entry):
            return entry
    if name.startswith("torch."):
        op = _op_name(name)
        return next((entry for entry in forbidden if _op_name(entry) == op), None)
    return None


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _constant_text(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        return node.value if isinstance(node.value, str) else node.value.decode(errors="replace")
    return None


class _Checker:
    def __init__(self, tree: ast.Module, forbidden: tuple[str, ...]):
        self.tree = tree
        self.forbidden = forbidden
        self.aliases: dict[str, str] = {}
        self.bound: set[str] = set()
        self.hits: dict[tuple[str, int, str], Hit] = {}
        # `torch.nn` inside `torch.nn.functional`: only the outermost name of a chain is checked.
        self.inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        self.parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}

    def run(self) -> list[Hit]:
        self._collect_bindings()
        for node in ast.walk(self.tree):
            self._check_node(node)
        return sorted(self.hits.values(), key=lambda hit: (hit.line, hit.rule, hit.message))

    def category_hits(self, category: str | None) -> list[Hit]:
        if category == "triton-to-triton":
            message = self._triton_kernel_missing()
        elif category == "cuda-to-cuda":
            message = self._native_build_missing()
        else:
            return []
        return [Hit("category", self._model_line(), message)] if message else []

    def _triton_kernel_missing(self) -> str | None:
        rule = "a triton-to-triton solution must define and launch a Triton kernel"
        kernels = [
            node.name
            for node in ast.walk(self.tree)
            if isinstance(node, ast.FunctionDef) and any(map(self._is_jit, node.decorator_list))
        ]
        if not kernels:
            return f"{rule}; it defines no @triton.jit function"
        launched = {
            node.func.value.id
            for node in ast.walk(self.tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
        }
        if launched & set(kernels):
            return None
        return f"{rule}; it never launches {', '.join(kernels)} as kernel[grid](...)"

    def _is_jit(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.resolve(target) in TRITON_JIT

    def _native_build_missing(self) -> str | None:
        calls = (self.resolve(n.func) for n in ast.walk(self.tree) if isinstance(n, ast.Call))
        if any(name in NATIVE_BUILDERS for name in calls):
            return None
        return (
            "a cuda-to-cuda solution must build its CUDA kernel with "
            "torch.utils.cpp_extension.load_inline (or load); it calls neither"
        )

    def _model_line(self) -> int:
        classes = (n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef))
        return next((n.lineno for n in classes if n.name == "ModelNew"), 1)

    def hit(self, rule: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 0)
        self.hits.setdefault((rule, line, message), _hit(rule, line, message))

    def _collect_bindings(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self.bound.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.bound.add(node.name)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
        # Twice, so an alias of an alias resolves whatever the order of the assignments.
        for _ in range(2):
            for node in ast.walk(self.tree):
                self._record_alias(node)

    def _record_alias(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                self.aliases[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            resolved = self.resolve(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and resolved and not resolved.startswith("?"):
                    self.aliases[target.id] = resolved

    def resolve(self, node: ast.AST) -> str | None:
        """A dotted name for a module-level object, '?.attr' for an attribute of an unknown
        object, or None."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in _BUILTIN_NAMES and node.id not in self.bound:
                return f"builtins.{node.id}"
            return None
        if isinstance(node, ast.Attribute):
            return self._join(self.resolve(node.value), node.attr, node.value)
        if isinstance(node, ast.Call) and self._is_constant_getattr(node):
            name = node.args[1].value
            return self._join(self.resolve(node.args[0]), name, node.args[0])
        return None

    def _join(self, base: str | None, attr: str, base_node: ast.AST) -> str:
        if base is None or base.startswith("?"):
            if isinstance(base_node, ast.Name) and base_node.id in ("self", "cls"):
                return f"?self.{attr}"
            return f"{_UNKNOWN}.{attr}"
        if attr in REEXPORTED_MODULES and base.split(".")[0] != attr:
            return attr
        return f"{base}.{attr}"

    def _is_constant_getattr(self, node: ast.Call) -> bool:
        return (
            self.resolve(node.func) == "builtins.getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        )

    def _check_node(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            self._check_import(node)
        elif isinstance(node, ast.Name | ast.Attribute):
            self._check_reference(node)
        if isinstance(node, ast.Call):
            self._check_call(node)
        elif isinstance(node, ast.ClassDef):
            self._check_class(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name in SUBCLASS_HOOKS:
                self.hit("tensor_subclass", node, f"defines {node.name}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self._check_native_source(node)
            if DESCRIPTOR_PATHS.search(node.value):
                self.hit("reply_channel", node, "names a path under /proc or /dev/fd")

    def _check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom):
            names = [f"{node.module}.{alias.name}" for alias in node.names if not node.level]
        else:
            names = [alias.name for alias in node.names]
        for name in names:
            self._check_name(name, node, "imports")

    def _check_reference(self, node: ast.Name | ast.Attribute) -> None:
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__"):
            self.hit("introspection", node, f"uses {node.id}")
            return
        if isinstance(node, ast.Attribute) and node.attr in INTROSPECTION_ATTRIBUTES:
            self.hit("introspection", node, f"reads attribute {node.attr}")
        if isinstance(node, ast.Attribute) and node.attr in PATCHING_ATTRIBUTES:
            self.hit("patching", node, f"uses {node.attr}")
        name = self.resolve(node)
        if name is None:
            return
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            self._check_store(node)
        if name in ENVIRON_NAMES:
            self._check_environ(node, name)
        if isinstance(node, ast.Attribute) and node.attr == "cuda_stream":
            self._check_stream_entry(node.value, node, "hands native code the handle of")
        if id(node) not in self.inner and not self._is_list_sort(node, name):
            self._check_name(name, node, "uses")

    def _is_list_sort(self, node: ast.AST, name: str) -> bool:
        """`rows.sort(key=...)` on an object of unknown type: list.sort, not Tensor.sort."""
        call = self.parents.get(id(node))
        return (
            name.startswith(_UNKNOWN + ".")
            and isinstance(call, ast.Call)
            and call.func is node
            and any(k.arg in LIST_SORT_KEYWORDS for k in call.keywords)
        )

    def _check_name(self, name: str, node: ast.AST, verb: str) -> None:
        if name.startswith("?self."):
            return
        op = forbidden_op(name, self.forbidden)
        if op is not None:
            self.hit("forbidden_op", node, f"{verb} {name.lstrip('?.')}, forbidden as {op}")
        rule = None if name.startswith("?") else module_rule(name)
        if rule is not None:
            self.hit(rule, node, f"{verb} {name}")

    def _check_store(self, node: ast.Attribute) -> None:
        base = self.resolve(node.value)
        if base is None or base.startswith("?"):
            return
        target = f"{base}.{node.attr}"
        if base.split(".")[0] not in ENGINE_MODULES:
            return
        rule = "backend_mutation" if _matches(target, "torch.backends") else "patching"
        self.hit(rule, node, f"assigns to {target}")

    def _check_call(self, node: ast.Call) -> None:
        func = self.resolve(node.func) or ""
        if self._is_constant_getattr(node):
            self._check_name(self.resolve(node) or "", node, "uses")
        if func in ("builtins.getattr", "builtins.setattr", "builtins.delattr"):
            self._check_dynamic_attribute(node, func.split(".")[1])
        computed = any(not isinstance(arg, ast.Constant) for arg in node.args)
        if func in ("operator.attrgetter", "operator.methodcaller") and computed:
            self.hit("obfuscation", node, f"{func} with a computed name")
        if func in OPEN_FUNCTIONS:
            self._check_open(node, func)
        if func in STREAM_CONTEXTS:
            stream = node.args[0] if node.args else _keyword(node, "stream")
            self._check_stream_entry(stream, node, "runs work on")
        elif func in ("os.putenv", "os.unsetenv"):
            self._check_variable(node.args[0] if node.args else None, node)
        method = func.rsplit(".", 1)[-1]
        if func.startswith("?") and method in FILE_WRITE_METHODS:
            self.hit("file_write", node, f"calls .{method}()")

    def _check_dynamic_attribute(self, node: ast.Call, kind: str) -> None:
        if len(node.args) < 2:
            return
        if not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            self.hit("obfuscation", node, f"{kind} with a computed attribute name")
        base = self.resolve(node.args[0])
        engine_module = base and not base.startswith("?") and base.split(".")[0] in ENGINE_MODULES
        if kind != "getattr" and engine_module:
            self.hit("patching", node, f"{kind} on {base}")

    def _check_environ(self, node: ast.AST, name: str) -> None:
        """Reads of os.environ pass; writes name their variable (PROTECTED_VARIABLES refused,
        others flagged); any other use is one whose writes the gate could not follow."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Subscript) and parent.value is node:
            if not isinstance(parent.ctx, ast.Load):
                self._check_variable(parent.slice, parent)
        elif isinstance(parent, ast.Attribute) and parent.value is node:
            self._check_environ_method(parent, name)
        elif not self._reads_environ(node, parent):
            self.hit("environment", node, f"hands {name} on where its writes cannot be followed")

    def _reads_environ(self, node: ast.AST, parent: ast.AST | None) -> bool:
        """`X in os.environ`, `dict(os.environ)`, `{**os.environ}`, `env = os.environ` (an alias
        whose own uses are checked)."""
        if isinstance(parent, ast.Compare):
            return node in parent.comparators and isinstance(parent.ops[0], ast.In | ast.NotIn)
        if isinstance(parent, ast.Call):
            return self.resolve(parent.func) == "builtins.dict" and node in parent.args
        if isinstance(parent, ast.Dict):
            return any(
                key is None and value is node
                for key, value in zip(parent.keys, parent.values, strict=True)
            )
        return isinstance(parent, ast.Assign) and all(
            isinstance(t, ast.Name) for t in parent.targets
        )

    def _check_environ_method(self, attribute: ast.Attribute, name: str) -> None:
        call = self.parents.get(id(attribute))
        method = attribute.attr
        if method in ENVIRON_READS:
            return
        if not (isinstance(call, ast.Call) and call.func is attribute):
            self.hit("environment", attribute, f"uses {name}.{method} without calling it")
        elif method in ENVIRON_WRITES:
            self._check_variable(call.args[0] if call.args else None, call)
        elif method == "update":
            self._check_environ_update(call)
        else:
            self.hit("environment", call, f"calls {name}.{method}(), which the gate cannot follow")

    def _check_environ_update(self, call: ast.Call) -> None:
        for keyword in call.keywords:
            if keyword.arg is None:
                self._check_variable(None, call)
            else:
                self._check_variable(ast.Constant(keyword.arg), call)
        for arg in call.args:
            if isinstance(arg, ast.Dict):
                for key in arg.keys:
                    self._check_variable(key, call)
            else:
                self._check_variable(None, call)

    def _check_variable(self, key: ast.AST | None, node: ast.AST) -> None:
        """Changing one environment variable: a constant name is a build setting unless
        PROTECTED_VARIABLES lists it; a computed one cannot be told apart."""
        rule, message = _variable_rule(_constant_text(key))
        self.hit(rule, node, message)

    def _check_stream_entry(self, stream: ast.AST | None, node: ast.AST, verb: str) -> None:
        """Work on a stream other than the current one: flagged, so that the performance gate
        times the solution from an idle device, where that work cannot start before the
        window opens (runners.performance.IDLE_START_FLAGS)."""
        if stream is None or (isinstance(stream, ast.Constant) and stream.value is None):
            return
        if isinstance(stream, ast.Call) and self.resolve(stream.func) in CURRENT_STREAMS:
            return
        self.hit("side_stream", node, f"{verb} stream {ast.unparse(stream)}")

    def _check_open(self, node: ast.Call, func: str) -> None:
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, int):
            self.hit("reply_channel", node, f"opens file descriptor {first.value}")
        mode = node.args[1] if len(node.args) > 1 else None
        mode = next((k.value for k in node.keywords if k.arg == "mode"), mode)
        if func == "?.open":  # pathlib's Path.open(mode); other .open(...) calls pass
            first = node.args[0] if node.args else mode
            if not (isinstance(first, ast.Constant) and _MODE.fullmatch(str(first.value))):
                return
            mode = first
        if mode is None:
            return
        if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
            self.hit("file_write", node, "opens a file with a computed mode")
        elif set(mode.value) & set("wax+"):
            self.hit("file_write", node, f"opens a file for writing (mode {mode.value!r})")

    def _check_class(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self.resolve(base) in TENSOR_BASES:
                self.hit("tensor_subclass", node, f"class {node.name} subclasses torch.Tensor")

    def _check_native_source(self, node: ast.Constant) -> None:
        text = node.value
        if not any(marker in text for marker in NATIVE_SOURCE_MARKERS):
            return
        for hit in _native_hits(text, node.lineno):
            self.hits.setdefault((hit.rule, hit.line, hit.message), hit)
