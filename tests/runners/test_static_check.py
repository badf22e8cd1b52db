from pathlib import Path

import pytest

from runners.problem import list_problems, load_problem
from runners.static_check import check_source, native_source_flags, native_source_hits

SOLUTIONS = Path(__file__).resolve().parent / "solutions"
SOFTMAX = load_problem("softmax").forbidden


def rules(source: str, forbidden=SOFTMAX) -> set[str]:
    return {hit.rule for hit in check_source(source, forbidden=forbidden).hits}


def honest_files() -> list[tuple[str, Path]]:
    """Honest and overfitted deck solutions (overfitting is no static matter), starters and their
    copies: all written in their problem's category's language."""
    names = ("honest.py", "hardcoded.py", "starter_copy.py")
    files = []
    for problem in list_problems():
        candidates = [SOLUTIONS / problem.slug / name for name in names]
        files += [(problem.slug, path) for path in [*candidates, problem.starter_path] if path]
    return [(slug, path) for slug, path in files if path.is_file()]


@pytest.mark.parametrize(("slug", "path"), honest_files(), ids=lambda v: str(v)[-30:])
def test_honest_solutions_and_starters_pass(slug, path):
    problem = load_problem(slug)
    report = check_source(path.read_text(), forbidden=problem.forbidden, category=problem.category)
    assert report.ok, report.reason
    assert (report.verdict, report.hits) == (None, [])


@pytest.mark.parametrize("slug", ["rmsnorm", "softmax", "row_sum"])
def test_references_break_no_integrity_rule(slug):
    assert check_source(
        load_problem(slug).path.joinpath("reference.py").read_text(), forbidden=()
    ).ok


@pytest.mark.parametrize("slug", ["softmax", "row_sum"])
def test_wrapping_the_reference_is_forbidden(slug):
    problem = load_problem(slug)
    report = check_source((problem.path / "reference.py").read_text(), forbidden=problem.forbidden)
    assert report.verdict == "forbidden"
    assert {hit.rule for hit in report.hits} == {"forbidden_op"}


HONEST_IDIOMS = """
import functools
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline


@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr + offsets, tl.exp(x - tl.max(x, axis=0)) / tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def softmax(self, x):
        return x

    def forward(self, x):
        out = torch.empty_like(x)
        kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        stream = torch.cuda.current_stream()
        with open("notes.txt") as handle:
            handle.read()
        self.softmax(out)
        return out * math.sqrt(2.0) + torch.zeros(1, device=x.device).expand_as(out)
"""


def test_common_kernel_idioms_are_not_flagged():
    report = check_source(HONEST_IDIOMS, forbidden=SOFTMAX)
    assert report.ok, report.reason


INTEGRITY_CHEATS = {
    "patching": [
        "import torch\ntorch.cuda.Event.elapsed_time = lambda self, end: 0.001",
        "import time\ntime.perf_counter = lambda: 0.0",
        "from torch.cuda import Event\nEvent.elapsed_time = lambda *a: 0.0",
        "import triton.testing\ntriton.testing.do_bench = lambda fn: 0.001",
        "import torch\nsetattr(torch.cuda, 'synchronize', lambda: None)",
        "import torch\nobject.__setattr__(torch, 'allclose', lambda *a, **k: True)",
        "from unittest import mock",
        "X = '''#include <dlfcn.h>\nvoid* f = dlsym(RTLD_NEXT, \"cudaEventElapsedTime\");'''",
    ],
    "introspection": [
        "import sys\ncaller = sys._getframe(1)",
        "import gc\nobjs = gc.get_objects()",
        "import inspect\nframe = inspect.currentframe()",
        "import sys\nsys.modules['torch'] = None",
        "def f(frame):\n    return frame.f_back.f_locals",
        "g = globals()",
        "b = __builtins__",
        "import torch\nd = torch.__dict__",
        "def f(fn):\n    return fn.__globals__",
    ],
    "dynamic_code": [
        "exec('x = 1')",
        "y = eval('1 + 1')",
        "code = compile('1', 'f', 'eval')",
        "m = __import__('os')",
        "import importlib\nm = importlib.import_module('os')",
        "import builtins\nbuiltins.exec('1')",
    ],
    "encoded_payload": [
        "import base64\nsrc = base64.b64decode('eD0x')",
        "import codecs\nsrc = codecs.decode('k=1', 'rot13')",
        "import marshal",
        "import pickle\nobj = pickle.loads(b'')",
        "import zlib\nsrc = zlib.decompress(b'')",
        "payload = bytes.fromhex('00')",
    ],
    "threads": [
        "import threading\nthreading.Thread(target=print).start()",
        "from threading import Timer",
        "import _thread\n_thread.start_new_thread(print, ())",
        "from concurrent.futures import ThreadPoolExecutor",
        "import asyncio",
        "X = '''#include <thread>\nstd::thread t(work);'''",
    ],
    "processes": [
        "import subprocess\nsubprocess.run(['nvidia-smi'])",
        "import os\nos.system('ls')",
        "import os\npid = os.fork()",
        "import multiprocessing",
        "import os\nos.execv('/bin/sh', ['sh'])",
        "import os\nos.kill(1, 9)",
        "X = '''__global__ void k() {}\nint r = system(\"ls\");'''",
    ],
    "network": [
        "import socket\ns = socket.socket()",
        "import urllib.request\nurllib.request.urlopen('http://x')",
        "import requests",
        "from http import client",
        "import torch\nm = torch.hub.load('a', 'b')",
    ],
    "reply_channel": [
        "import os\nos.write(3, b'{}')",
        "import os\nfd = os.open('out', os.O_WRONLY)",
        "import os\nf = os.fdopen(3, 'w')",
        "f = open(3, 'w')",
        "f = open('/proc/self/fd/3', 'w')",
        "import os\nf = open(f'/proc/{os.getpid()}/fd/3', 'w')",
        "f = open('/dev/fd/3', 'w')",
        "X = '''#include <unistd.h>\nint n = write(3, buf, 4);'''",
    ],
    "backend_mutation": [
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True",
        "import torch\ntorch.backends.cudnn.benchmark = True",
        "import torch\ntorch.set_float32_matmul_precision('medium')",
        "import torch\ntorch.backends.cuda.enable_flash_sdp(False)",
    ],
    "l2_persistence": [
        "X = '''#include <cuda_runtime.h>\nattr.accessPolicyWindow.num_bytes = n;'''",
    ],
    "native_access": [
        "import ctypes\nlib = ctypes.CDLL('libcuda.so')",
        "from cffi import FFI",
        "import torch\nrt = torch.cuda.cudart()",
    ],
    "environment": [
        "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'",
        "import os\nos.environ.setdefault('LD_PRELOAD', 'timer.so')",
        "import os\nos.putenv('CUDA_LAUNCH_BLOCKING', '1')",
        "import os\nos.environ.update(KINETO_USE_DAEMON='1')",
        "import os\nos.environ.update({'NVIDIA_TF32_OVERRIDE': '1'})",
        "import os\nos.environ.update(SETTINGS)",
        "import os\nname = 'CUDA_' + 'VISIBLE_DEVICES'\nos.environ[name] = '1'",
        "from os import environ\nenviron['LD_LIBRARY_PATH'] = '/tmp'",
        "import os\nenv = os.environ\nenv['CUDA_INJECTION64_PATH'] = 'spy.so'",
        "import os\ndef pick(env):\n    env['CUDA_VISIBLE_DEVICES'] = '1'\npick(os.environ)",
        "X = '''#include <cstdlib>\nsetenv(\"CUDA_VISIBLE_DEVICES\", \"1\", 1);'''",
        "X = '''#include <cstdlib>\nsetenv(name, \"1\", 1);'''",
    ],
    "signal": [
        "import signal\nsignal.signal(signal.SIGALRM, print)",
        "import faulthandler",
    ],
    "exit": [
        "import sys\nsys.exit(0)",
        "import os\nos._exit(0)",
        "import atexit\natexit.register(print)",
    ],
    "obfuscation": [
        "import torch\nf = getattr(torch, 'soft' + 'max')",
        "import torch\nname = 'x'\nf = getattr(torch.nn.functional, name)",
        "import operator\nf = operator.methodcaller(''.join(['soft', 'max']), -1)",
    ],
    "tensor_subclass": [
        "import torch\nclass Lazy(torch.Tensor):\n    pass",
        "class Proxy:\n    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
        "        return func(*args)",
        "import torch\nt = torch.Tensor._make_subclass(object, x)",
    ],
}


@pytest.mark.parametrize(
    ("rule", "source"),
    [(rule, source) for rule, sources in INTEGRITY_CHEATS.items() for source in sources],
)
def test_integrity_cheat_is_caught_by_its_rule(rule, source):
    report = check_source(source, forbidden=())
    assert report.verdict == "forbidden"
    assert rule in {hit.rule for hit in report.hits}, report.hits


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ny = torch.softmax(x, -1)",
        "import torch.nn.functional as F\ny = F.softmax(x, dim=-1)",
        "from torch.nn import functional as F\ny = F.softmax(x, dim=-1)",
        "import torch.nn.functional\ny = torch.nn.functional.softmax(x, -1)",
        "from torch import softmax as s\ny = s(x, -1)",
        "from torch.nn.functional import softmax",
        "y = x.softmax(-1)",
        "y = self.weight.softmax(-1)",
        "y = x.float().softmax(dim=-1)",
        "import torch\ny = torch.Tensor.softmax(x, -1)",
        "import torch\ny = getattr(torch, 'softmax')(x, -1)",
        "y = getattr(x, 'softmax')(-1)",
        "import torch\nf = torch.nn.functional\ny = f.softmax(x, -1)",
        "import torch\nfn = torch.nn.functional.softmax\ny = fn(x, -1)",
        "import torch\ny = torch.ops.aten._softmax.default(x, -1, False)",
        "import torch\ny = torch._softmax(x, -1, False)",
        "import torch\ny = torch.special.softmax(x, -1)",
        "import torch.nn as nn\nlayer = nn.Softmax(dim=-1)",
        "import torch\ny = torch.log_softmax(x, -1).exp()",
    ],
)
def test_forbidden_op_is_resolved_through_aliases_and_attributes(source):
    assert "forbidden_op" in rules(source)


def test_forbidden_hit_names_the_line_and_the_entry():
    report = check_source("import torch\n\n\ny = torch.softmax(x, -1)\n", forbidden=SOFTMAX)
    (hit,) = report.hits
    assert (hit.rule, hit.line) == ("forbidden_op", 4)
    assert "torch.softmax" in hit.message
    assert report.reason.startswith("line 4:")
    assert hit.to_dict() == {"rule": "forbidden_op", "line": 4, "message": hit.message}


def test_triton_reductions_are_not_tensor_methods():
    source = "import triton.language as tl\ns = tl.sum(x, axis=0)\nm = tl.max(x, axis=0)"
    assert rules(source, load_problem("row_sum").forbidden) == set()


def test_own_method_named_like_a_forbidden_op_is_allowed():
    assert rules("class M:\n    def f(self, x):\n        return self.softmax(x)") == set()


def test_row_sum_forbids_sum_equivalents():
    forbidden = load_problem("row_sum").forbidden
    for source in ["y = x.sum(-1)", "import torch\ny = torch.mean(x, 1) * n", "y = x.matmul(v)"]:
        assert rules(source, forbidden) == {"forbidden_op"}, source


def test_syntax_error_reports_its_line():
    report = check_source("import torch\ndef forward(self:\n", forbidden=())
    assert report.verdict == "syntax_error"
    assert report.hits[0].rule == "syntax" and report.hits[0].line == 2


def test_null_bytes_are_a_syntax_error():
    assert check_source("x = 1\0", forbidden=()).verdict == "syntax_error"


def test_oversized_source_is_rejected_before_parsing():
    report = check_source("x = 1\n" * 100, forbidden=(), max_bytes=64)
    assert report.verdict == "forbidden"
    assert [hit.rule for hit in report.hits] == ["size"]


def test_non_utf8_source_is_rejected():
    report = check_source(b"x = '\xff'\n", forbidden=())
    assert [hit.rule for hit in report.hits] == ["encoding"]
    assert check_source("x = '\udcff'", forbidden=()).hits[0].rule == "encoding"


def test_every_hit_is_reported_in_line_order():
    source = "import subprocess\nfrom threading import Thread\nexec('1')\n"
    report = check_source(source, forbidden=())
    assert [(h.rule, h.line) for h in report.hits] == [
        ("processes", 1),
        ("threads", 2),
        ("dynamic_code", 3),
    ]
    assert report.reason.endswith("(and 2 more)")


def test_image_like_open_calls_are_not_file_writes():
    assert rules("img = Image.open('a.png')\ndata = archive.open('w.txt')", forbidden=()) == set()


TRITON_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)
"""
LAUNCH = "\n\nclass ModelNew:\n    def forward(self, x):\n        kernel[(1,)](x, 1, BLOCK=16)\n"


def category_report(source: str, category: str):
    return check_source(source, forbidden=SOFTMAX, category=category)


@pytest.mark.parametrize(
    "source",
    [
        TRITON_KERNEL + LAUNCH,
        TRITON_KERNEL.replace("@triton.jit", "@triton.autotune(configs=[], key=['n'])\n@triton.jit")
        + LAUNCH,
        TRITON_KERNEL.replace("import triton\n", "from triton import jit\n").replace(
            "@triton.jit", "@jit(do_not_specialize=['n'])"
        )
        + LAUNCH,
    ],
    ids=["jit", "autotuned", "imported-jit"],
)
def test_a_launched_triton_kernel_meets_the_triton_category(source):
    assert category_report(source, "triton-to-triton").ok


def test_a_triton_solution_without_a_kernel_fails_its_category():
    source = "import torch\n\n\nclass ModelNew:\n    def forward(self, x):\n        return x * 2\n"
    report = category_report(source, "triton-to-triton")
    assert report.verdict == "forbidden"
    (hit,) = report.hits
    assert (hit.rule, hit.line) == ("category", 4)
    assert "a triton-to-triton solution must define and launch a Triton kernel" in report.reason
    assert "no @triton.jit function" in report.reason


def test_a_triton_kernel_that_is_never_launched_fails_its_category():
    report = category_report(TRITON_KERNEL + "\n\nclass ModelNew:\n    pass\n", "triton-to-triton")
    assert [hit.rule for hit in report.hits] == ["category"]
    assert "never launches kernel as kernel[grid](...)" in report.reason


def test_a_cuda_solution_must_build_with_cpp_extension():
    alias = "from torch.utils import cpp_extension\n\nmodule = cpp_extension.load('m', [])\n"
    inline = "from torch.utils.cpp_extension import load_inline as build\n\nm = build('m', '')\n"
    assert category_report(alias, "cuda-to-cuda").ok
    assert category_report(inline, "cuda-to-cuda").ok
    report = category_report(TRITON_KERNEL + LAUNCH, "cuda-to-cuda")
    assert [hit.rule for hit in report.hits] == ["category"]
    assert "a cuda-to-cuda solution must build its CUDA kernel with" in report.reason


def test_pytorch_to_kernel_asks_for_no_language():
    source = "import torch\n\n\nclass ModelNew:\n    def forward(self, x):\n        return x * 2\n"
    assert category_report(source, "pytorch-to-kernel").ok
    assert category_report(source, None).ok


def test_a_forbidden_op_is_named_before_the_category():
    source = "import torch\n\n\nclass ModelNew:\n    def forward(self, x):\n"
    source += "        return torch.softmax(x, -1)\n"
    report = category_report(source, "triton-to-triton")
    assert [hit.rule for hit in report.hits] == ["forbidden_op", "category"]
    assert "torch.softmax" in report.reason and report.reason.endswith("(and 1 more)")


FORKED_AND_JOINED = """
import torch


class ModelNew:
    def forward(self, x):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = x * 2
        torch.cuda.current_stream().wait_stream(side)
        return y
"""

# Idioms of careful kernel code that a runtime check makes safe: graded, with a flag.
FLAGGED_IDIOMS = {
    "build_environment": [
        "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0a'",
        "import os\nos.environ.setdefault('MAX_JOBS', '4')",
        "import os\nos.environ.update({'CC': 'gcc', 'CXX': 'g++'}, NVCC_APPEND_FLAGS='-O3')",
        "import os\nos.putenv('TORCH_EXTENSIONS_DIR', 'build')",
        "import os\nos.environ['PATH'] = '/usr/local/cuda/bin:' + os.environ.get('PATH', '')",
        "from os import environ\nenviron['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'",
        "X = '''#include <cstdlib>\nsetenv(\"TRITON_CACHE_DIR\", \"cache\", 1);'''",
    ],
    "file_write": [
        "open('build/kernel.cu', 'w').write(SOURCE)",
        "f = open('log', mode='a')",
        "import os\nos.makedirs('build', exist_ok=True)",
        "import shutil\nshutil.rmtree('build', ignore_errors=True)",
        "from pathlib import Path\nPath('build/k.cu').write_text(SOURCE)",
        "import torch\ntorch.save({}, 'tuned.pt')",
        "X = '''#include <cstdio>\nFILE* f = fopen(\"tuned.txt\", \"w\");'''",
    ],
    "cuda_graph": [
        "import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    y = f(x)",
        "import torch\nf = torch.cuda.make_graphed_callables(f, (x,))",
        "X = '''#include <cuda_runtime.h>\ncudaGraphLaunch(exec, stream);'''",
    ],
    "side_stream": [
        FORKED_AND_JOINED,
        "import torch\ns = torch.cuda.Stream()",
        "import torch\nwith torch.cuda.stream(s):\n    pass",
        "import torch\nlaunch(x, stream=s.cuda_stream)",
        "import torch\ntorch.cuda.set_stream(s)",
        "from torch.cuda import ExternalStream",
        "X = '''#include <cuda_runtime.h>\ncudaStreamCreateWithFlags(&s, 1);'''",
        "X = '''#include <ATen/cuda/CUDAContext.h>\nauto s = at::cuda::getStreamFromPool();'''",
    ],
}


@pytest.mark.parametrize(
    ("rule", "source"),
    [(rule, source) for rule, sources in FLAGGED_IDIOMS.items() for source in sources],
)
def test_an_idiom_a_runtime_check_makes_safe_is_flagged_not_refused(rule, source):
    report = check_source(source, forbidden=())
    assert report.ok, report.reason
    assert rule in {flag.rule for flag in report.flags}, report.flags
    assert all(flag.severity == "flag" and "; graded: " in flag.message for flag in report.flags)


@pytest.mark.parametrize(
    "name",
    [
        "TORCH_CUDA_ARCH_LIST",
        "TORCH_EXTENSIONS_DIR",
        "MAX_JOBS",
        "CUDA_HOME",
        "TRITON_CACHE_DIR",
        "CC",
        "CXX",
        "NVCC_APPEND_FLAGS",
        "NVCC_PREPEND_FLAGS",
        "PYTORCH_NVCC",
        "PATH",
    ],
)
def test_build_variables_pass(name):
    report = check_source(f"import os\nos.environ[{name!r}] = 'x'", forbidden=())
    assert report.ok and [flag.rule for flag in report.flags] == ["build_environment"]
    assert f"changes {name};" in report.flags[0].message


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("CUDA_VISIBLE_DEVICES", "chooses the GPUs this process sees"),
        ("CUDA_DEVICE_ORDER", "chooses which GPU"),
        ("CUDA_LAUNCH_BLOCKING", "the timing's own included"),
        ("CUDA_INJECTION64_PATH", "into the CUDA driver"),
        ("NVTX_INJECTION64_PATH", "first NVTX call"),
        ("KINETO_CONFIG", "the profiler that the launch check reads"),
        ("LD_PRELOAD", "shared libraries"),
        ("LD_LIBRARY_PATH", "link with extra_ldflags instead"),
        ("NVIDIA_TF32_OVERRIDE", "precision switch"),
        ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "precision switch"),
    ],
)
def test_variables_that_change_what_the_grader_measures_are_refused_with_why(name, why):
    report = check_source(f"import os\nos.environ.setdefault({name!r}, '1')", forbidden=())
    assert report.verdict == "forbidden"
    assert [hit.rule for hit in report.hits] == ["environment"]
    assert f"changes {name}: " in report.reason and why in report.reason


def test_reading_the_environment_and_taking_locks_pass_silently():
    source = """
import os
import threading

from os import environ

LOCK = threading.Lock()
ARCH = os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")
HOME = os.getenv("HOME")
if "CUDA_HOME" in os.environ and "X" not in environ:
    SEEN = dict(os.environ) | {**os.environ}
NAMES = sorted(os.environ.keys())
X = '''#include <cstdlib>
const char* v = getenv("MAX_JOBS");'''
"""
    report = check_source(source, forbidden=())
    assert (report.verdict, report.hits, report.flags) == (None, [], [])


def test_every_stream_of_its_own_is_flagged_for_an_idle_start():
    # runners.performance times a solution flagged side_stream from an idle device, without the
    # hold, where work on its streams cannot start before the timed window opens (the rule's
    # name is what runners.performance.IDLE_START_FLAGS looks for).
    report = check_source(FORKED_AND_JOINED, forbidden=())
    assert [(flag.rule, flag.line) for flag in report.flags] == [
        ("side_stream", 7),
        ("side_stream", 9),
    ]
    assert "stream side" in report.flags[1].message
    assert "idle device without the hold" in report.flags[1].message


def test_the_current_stream_passes_silently():
    source = "import torch\nlaunch(x, torch.cuda.current_stream().cuda_stream)\n"
    source += "with torch.cuda.stream(torch.cuda.current_stream()):\n    pass\n"
    report = check_source(source, forbidden=())
    assert (report.verdict, report.hits, report.flags) == (None, [], [])


def test_a_refusal_says_why_and_a_flag_names_its_runtime_check():
    source = "import torch\nimport subprocess\ng = torch.cuda.CUDAGraph()\n"
    report = check_source(source, forbidden=())
    assert report.reason.startswith("line 2: imports subprocess [processes] (another process")
    assert "load_inline" in report.reason
    (flag,) = report.flags
    assert (flag.rule, flag.line, flag.severity) == ("cuda_graph", 3, "flag")
    assert "re-checked against the reference" in flag.message
    assert [hit.severity for hit in report.hits] == ["refuse"]


def test_list_sort_with_a_key_is_not_tensor_sort():
    forbidden = load_problem("topk").forbidden
    assert rules("rows.sort(key=len)\nnames.sort(reverse=True)", forbidden) == set()
    assert rules("y = x.sort(dim=-1)", forbidden) == {"forbidden_op"}


def test_native_source_beside_the_solution_splits_hits_from_flags():
    text = '#include <cstdio>\nFILE* f = fopen("t", "w");\nsetenv("LD_PRELOAD", p, 1);\n'
    assert [(h.rule, h.line) for h in native_source_hits(text)] == [("environment", 3)]
    assert [(h.rule, h.line) for h in native_source_flags(text)] == [("file_write", 2)]


@pytest.mark.parametrize(
    "source",
    [
        # a compatibility shim seen in a published fp8 kernel
        "import datetime\nif not hasattr(datetime, 'UTC'):\n"
        "    datetime.UTC = datetime.timezone.utc",
        # shape names set on a module the solution imported itself, as the peer's check.py does
        "import reference\nreference.M = 4096",
        "import einops\nsetattr(einops, 'CACHE', {})",
    ],
)
def test_assigning_attributes_of_modules_the_engine_does_not_run_through_passes(source):
    report = check_source(source, forbidden=SOFTMAX)
    assert report.ok, report.reason


@pytest.mark.parametrize(
    "source",
    [
        "import numpy\nnumpy.median = lambda values: 0.0",
        "import json\njson.dumps = lambda value: '{}'",
        "import os.path\nos.path.exists = lambda path: True",
    ],
)
def test_assigning_attributes_of_modules_the_engine_runs_through_is_patching(source):
    assert "patching" in rules(source)


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("import shutil\nshutil.os.system('nvcc --version')", "processes"),
        ("import shutil\nshutil.os.write(5, b'{}')", "reply_channel"),
        ("import shutil\nframe = shutil.sys._getframe(1)", "introspection"),
        ("import queue\nqueue.threading.Thread(target=print).start()", "threads"),
        ("import functorch\nfunctorch.torch.cuda.synchronize = lambda: None", "patching"),
        ("import triton.testing\nv = triton.testing.torch.softmax", "forbidden_op"),
    ],
)
def test_a_module_reached_through_another_modules_attribute_meets_its_own_rules(source, rule):
    assert rule in rules(source)


def test_a_stream_reached_through_a_reexported_torch_is_flagged():
    report = check_source("import functorch\ns = functorch.torch.cuda.Stream()", forbidden=())
    assert "side_stream" in {flag.rule for flag in report.flags}


@pytest.mark.parametrize(
    "source",
    [
        "import sys\nsys.path.insert(0, '/tmp/mine')\nimport helper",
        "import sys\nsys.meta_path.append(object())",
        "import site\nsite.addsitedir('/tmp/mine')",
        "SRC = '''#include <Python.h>\\nvoid f() { PyRun_SimpleString(\"print(1)\"); }'''\n"
        "from torch.utils.cpp_extension import load_inline",
        "SRC = '''#include <torch/extension.h>\\nvoid f() { py::exec(\"x = 1\"); }'''\n"
        "from torch.utils.cpp_extension import load_inline",
    ],
)
def test_adding_where_imports_come_from_or_running_python_from_native_code_is_refused(source):
    """The candidate may write files into its folder: a path added to the import system, or
    Python run from native code, would run code the gate never read."""
    assert "dynamic_code" in rules(source)


def test_reading_the_site_packages_path_passes():
    assert check_source("import site\nroot = site.getsitepackages()[0]", forbidden=()).ok
