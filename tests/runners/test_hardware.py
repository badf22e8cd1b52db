import pytest

from runners.hardware import (
    CPU,
    ROWS,
    TABLE,
    by_slug,
    detect,
    for_device,
    peak_fraction,
    speed_of_light_s,
)

NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H200": "h200",
    "NVIDIA A100-SXM4-80GB": "a100",
    "NVIDIA L4": "l4",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
    "NVIDIA B200": "b200",
}


@pytest.mark.parametrize(("name", "slug"), NAMES.items())
def test_device_names_pick_their_table_row(name, slug):
    assert detect(name).slug == slug


def test_unknown_and_similar_names_pick_nothing():
    assert detect("NVIDIA L40S") is None
    assert detect("cpu") is None


def test_every_row_names_a_source_and_dense_peaks():
    for hw in TABLE:
        assert hw.sources and all(hw.sources.values())
        assert hw.bandwidth_gbps > 0 and hw.l2_bytes > 0
        assert hw.peak_tflops["bf16"] > hw.peak_tflops["fp32"]


def test_memory_bound_speed_of_light_is_bytes_over_bandwidth():
    h100 = by_slug("h100-sxm")
    seconds = speed_of_light_s(h100, flops=1.0, nbytes=3.35e9, dtype="fp32")
    assert seconds == pytest.approx(1e-3)


def test_peak_fraction_uses_the_regime():
    h100 = by_slug("h100-sxm")
    memory = peak_fraction(
        h100, regime="memory", flops=0, nbytes=3.35e9, dtype="bf16", seconds=2e-3
    )
    compute = peak_fraction(
        h100, regime="compute", flops=989.4e12, nbytes=0, dtype="bf16", seconds=2.0
    )
    assert memory == pytest.approx(0.5)
    assert compute == pytest.approx(0.5)


def test_the_cpu_row_is_declared_not_measured_and_listed_after_the_gpus():
    assert ROWS[:-1] == TABLE and ROWS[-1] is CPU and by_slug("cpu") is CPU
    assert CPU.device == "cpu" and not CPU.measured
    assert CPU.sources["all"].startswith("declared, not measured")
    assert CPU.bandwidth_gbps > 0 and CPU.l2_bytes > 0
    assert all(not hw.measured and hw.device == "cuda" for hw in TABLE)


def test_the_cpu_row_covers_every_peak_dtype_a_cpu_capable_problem_names():
    from runners.problem import list_problems

    for problem in list_problems():
        if problem.cpu_capable:
            assert CPU.peak_for(problem.peak_dtype), problem.slug


def test_the_cpu_device_gets_the_declared_row_and_cuda_its_gpu():
    assert for_device("cpu", "") is CPU
    assert for_device("cuda", "NVIDIA H100 80GB HBM3") is by_slug("h100-sxm")
    assert for_device("cuda", "NVIDIA L40S") is None


def test_cpu_peak_fraction_is_bytes_over_the_declared_bandwidth():
    fraction = peak_fraction(
        CPU, regime="memory", flops=0, nbytes=25.6e9, dtype="fp32", seconds=4.0
    )
    assert fraction == pytest.approx(0.25)
