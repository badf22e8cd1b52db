"""Which kernels a solution defines, and the checks that one of them ran (hack 24)."""

from runners import launches
from runners.launches import (
    DefinedKernels,
    count_direct_launches,
    count_graph_replays,
    defined_kernels,
    launch_problems,
    names_a_defined_kernel,
    profile_problems,
)

SOURCE = '''
import triton
import triton.language as tl
from triton import jit

@triton.jit
def plain_kernel(x): pass

@triton.autotune(configs=[], key=[])
@triton.jit
def tuned_kernel(x): pass

@jit
def imported_kernel(x): pass

def helper(x): pass

CUDA = r"""
__global__ void row_kernel(const float* x) {}
template <int N> __global__ __launch_bounds__(256) void tiled_kernel(float* y) {}
"""
'''


def test_defined_kernels_reads_triton_functions_and_cuda_globals():
    defined = defined_kernels(SOURCE)
    assert defined.triton == {"plain_kernel", "tuned_kernel", "imported_kernel"}
    assert defined.cuda == {"row_kernel", "tiled_kernel"}
    assert defined_kernels("def broken(:") == DefinedKernels(frozenset(), frozenset())


def test_kernel_attributes_and_specifiers_may_follow_the_return_type():
    # `void __launch_bounds__(256) k(` is the CUDA guide's own form.
    forms = {
        "__global__ void __launch_bounds__(256) bounded(float* x) {}": "bounded",
        "__global__ void\n__launch_bounds__(256, 2)\nMyKernel(float* x) {}": "MyKernel",
        "__global__ void __maxnreg__(32) capped(int n) {}": "capped",
        "__global__ static void local_kernel(float* x) {}": "local_kernel",
        "__global__ __forceinline__ void inlined(float* x) {}": "inlined",
        "__global__ void __launch_bounds__(MAX(256, N)) nested(float* x) {}": "nested",
        "template <int B> __global__ void __launch_bounds__(B * (2)) scaled(float* x) {}": "scaled",
    }
    for cuda, name in forms.items():
        assert defined_kernels(f"CUDA = {cuda!r}").cuda == {name}, cuda


def test_a_crafted_run_of_specifiers_is_read_in_one_pass():
    # The source is read in the parent before the build: with backtracking, 256 KB of
    # `inline ` after `__global__` took minutes. Each string must simply come back.
    for pad in ("inline ", "void ", "__launch_bounds__(1) ", "__launch_bounds__("):
        cuda = "__global__ " + pad * (256 * 1024 // len(pad))
        assert defined_kernels(f"CUDA = {cuda!r}").cuda == set()
    long_name = "a::" * 100_000 + "k!"
    assert not names_a_defined_kernel(long_name, frozenset({"a", "k"}))


def test_profiler_names_match_plain_demangled_and_mangled_forms_only():
    names = frozenset({"row_kernel"})
    assert names_a_defined_kernel("row_kernel", names)
    assert names_a_defined_kernel("row_kernel(float const*, float*, long, long)", names)
    assert names_a_defined_kernel("void row_kernel<256>(float*)", names)
    assert names_a_defined_kernel("_Z10row_kernelPKf", names)
    assert not names_a_defined_kernel("void at::native::big_row_kernel_impl<float>()", names)
    assert not names_a_defined_kernel("row_kernel2", names)
    assert names_a_defined_kernel("(anonymous namespace)::row_kernel(float*)", names)
    assert names_a_defined_kernel("void mine::row_kernel<float>(float*)", names)


def test_a_kernel_named_like_pytorchs_gets_no_credit_for_pytorchs():
    # Names the profiler gave on an H100 (torch 2.11) for kernel_misnamed_cuda's PyTorch fallback
    # and, in a failing pybind call's error message, a copy and a concatenation (its parameters
    # cut here). A solution whose unused kernels bear the same last names must not pass.
    names = frozenset(
        {
            "vectorized_elementwise_kernel",
            "elementwise_kernel",
            "CatArrayBatchedCopy_alignedK_contig",
            "Memcpy",
        }
    )
    library = [
        "void at::native::elementwise_kernel<128, 2, "
        "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
        "at::native::BinaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, "
        "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
        "at::native::BinaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
        "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
        "std::array<char*, 2ul> >(int, at::native::AbsFunctor<float>, std::array<char*, "
        "2ul>)",
        "void at::native::vectorized_elementwise_kernel<4, "
        "at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
        "const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, "
        "2ul> >(int, "
        "at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
        "const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, "
        "2ul>)",
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy_alignedK_contig<at::native::"
        "(anonymous namespace)::OpaqueType<4u>, unsigned int, 1, 128, 1, 16>(",
        "Memcpy DtoH (Device -> Pageable)",
        "Memset (Device)",
    ]
    for name in library:
        assert not names_a_defined_kernel(name, names | {"Memset"}), name
    (problem,) = profile_problems([library], DefinedKernels(frozenset(), names))
    assert "ran none of the solution's kernels" in problem


def test_an_honest_kernel_in_a_library_namespace_is_told_why_it_does_not_count():
    defined = DefinedKernels(frozenset(), frozenset({"flash_fwd_kernel"}))
    (problem,) = profile_problems([["void flash::flash_fwd_kernel<128>(Params)"]], defined)
    assert (
        "it ran void flash::flash_fwd_kernel<128>(Params), within a namespace of PyTorch" in problem
    )
    assert profile_problems([["void mine::flash_fwd_kernel<128>(Params)"]], defined) == []


def test_every_timed_call_must_launch_a_triton_kernel():
    triton_only = DefinedKernels(frozenset({"k"}), frozenset())
    reply = {"event_ms": [1.0, 1.0, 1.0], "own_launches": [1, 2, 1]}
    assert launch_problems(reply, triton_only) == []
    (problem,) = launch_problems(reply | {"own_launches": [1, 0, 1]}, triton_only)
    assert problem.startswith("1 of 3 timed calls launched none of the solution's Triton kernels")
    assert launch_problems(reply | {"own_launches": [1]}, triton_only)  # forged or truncated
    assert launch_problems({"event_ms": [1.0]}, triton_only)
    # CUDA kernels are checked by the profiler; no kernels at all is the static gate's business.
    both = DefinedKernels(frozenset({"k"}), frozenset({"c"}))
    assert launch_problems(reply | {"own_launches": [0, 0, 0]}, both) == []
    assert launch_problems(reply, DefinedKernels(frozenset(), frozenset())) == []


def test_each_profiled_call_must_run_one_of_the_solutions_kernels():
    defined = DefinedKernels(frozenset({"tanh_kernel"}), frozenset())
    calls = [["tanh_kernel"], ["void at::fill<float>", "tanh_kernel"]]
    assert profile_problems(calls, defined) == []
    (problem,) = profile_problems([["tanh_kernel"], ["void at::exp_kernel<float>"]], defined)
    assert "ran none of the solution's kernels (it ran void at::exp_kernel<float>)" in problem
    assert profile_problems("forged", defined) == ["the profiled calls' kernel names are missing"]
    assert profile_problems([], DefinedKernels(frozenset(), frozenset())) == []


class RecordingGraph:
    """Stands in for torch.cuda.CUDAGraph, which a CPU build cannot construct: the launches
    between capture_begin and capture_end are the ones a CUDA capture would record."""

    replays = 0

    def capture_begin(self, *args, **kwargs):
        pass

    def capture_end(self):
        pass

    def replay(self):
        RecordingGraph.replays += 1


def test_a_graph_replay_counts_the_launches_its_capture_recorded(monkeypatch):
    monkeypatch.setattr(launches, "_count", [10])
    count_graph_replays(RecordingGraph)
    count_graph_replays(RecordingGraph)  # installed once, however often asked
    graph, empty = RecordingGraph(), RecordingGraph()
    graph.capture_begin(pool=None)
    launches._count[0] += 2  # two of the solution's kernels launched under capture
    graph.capture_end()
    empty.capture_begin()
    empty.capture_end()
    before = launches._count[0]
    graph.replay()
    graph.replay()
    empty.replay()
    assert launches._count[0] - before == 4
    assert RecordingGraph.replays == 3


class Source:
    """Stands in for Triton's ASTSource: `fn` is the JIT function, whose `fn` is the Python one."""

    def __init__(self, module: str):
        def kernel():
            pass

        kernel.__module__ = module
        self.fn = type("JITFunction", (), {"fn": kernel})()


class CompiledStandIn:
    """Stands in for triton.compiler.CompiledKernel, which needs a GPU to load: `run` is a
    property that returns the kernel's launcher, as in the Triton the engine runs."""

    def __init__(self, module: str):
        self.src = Source(module)
        self.launched = 0

    @property
    def run(self):
        def launcher(*args):
            self.launched += 1

        return launcher


class JitStandIn:
    """The JIT's launch entry: it launches through the compiled kernel's `run`."""

    def __init__(self, compiled: CompiledStandIn):
        self.compiled = compiled
        self.fn = compiled.src.fn.fn

    def run(self, *args, grid, warmup, **kwargs):
        if not warmup:
            self.compiled.run(*grid, *args)


def test_direct_launches_of_the_solutions_compiled_kernels_count_once(monkeypatch):
    monkeypatch.setattr(launches, "_count", [0])
    monkeypatch.setattr(CompiledStandIn, "run", CompiledStandIn.__dict__["run"])
    count_direct_launches(CompiledStandIn)
    count_direct_launches(CompiledStandIn)  # installed once, however often asked
    own, library = CompiledStandIn("solution"), CompiledStandIn("torch._inductor")
    own.run(1, 1, 1, "stream", "function", "metadata", None, None, None, "x")
    library.run(1, 1, 1)
    assert launches._count[0] == 1 and own.launched == 1 and library.launched == 1
    jit_run = launches._counted(JitStandIn.run)  # the JIT's entry, as install wraps it
    jit_run(JitStandIn(own), "x", grid=(1, 1, 1), warmup=False)
    jit_run(JitStandIn(own), "x", grid=(1, 1, 1), warmup=True)
    assert launches._count[0] == 2 and own.launched == 2  # the JIT's launch counted once
    assert launches._in_jit[0] == 0
