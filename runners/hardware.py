"""Dense peak throughput and memory bandwidth of the hardware the arena grades on.

Vendor datasheets quote tensor-core figures "with sparsity"; every GPU figure here is the dense
one (half the sparse figure). The CPU row is our own declaration, not a measurement. Stdlib only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hardware:
    slug: str
    name: str
    bandwidth_gbps: float
    peak_tflops: dict[str, float]  # dense, per dtype; fp32 is the non-tensor-core rate
    l2_bytes: int
    sources: dict[str, str] = field(default_factory=dict)
    device: str = "cuda"
    measured: bool = False  # False: declared figures (a datasheet's or our own), never timed here

    def peak_for(self, dtype: str) -> float | None:
        return self.peak_tflops.get(dtype)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_H100_DATASHEET = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)"
_H200_DATASHEET = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)"
_A100_DATASHEET = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)"
_L4_DATASHEET = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4)"
_RTX_PRO_DATASHEET = (
    "NVIDIA RTX PRO 6000 Blackwell datasheet: 125 TFLOPS fp32, 4000 AI TOPS (fp4 sparse), "
    "1792 GB/s; dense rates halve per precision step"
)
_B200_DATASHEET = "NVIDIA HGX B200 datasheet (per GPU: the 8-GPU totals divided by 8)"

TABLE: tuple[Hardware, ...] = (
    Hardware(
        slug="h100-sxm",
        name="NVIDIA H100 SXM5 80GB",
        bandwidth_gbps=3350.0,
        peak_tflops={"fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
        l2_bytes=50 * 2**20,
        sources={"all": _H100_DATASHEET + ", SXM column"},
    ),
    Hardware(
        slug="h100-pcie",
        name="NVIDIA H100 PCIe 80GB",
        bandwidth_gbps=2039.0,
        peak_tflops={"fp32": 51.2, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0, "fp8": 1513.0},
        l2_bytes=50 * 2**20,
        sources={"all": _H100_DATASHEET + ", PCIe column"},
    ),
    Hardware(
        slug="h200",
        name="NVIDIA H200 SXM 141GB",
        bandwidth_gbps=4800.0,
        peak_tflops={"fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
        l2_bytes=50 * 2**20,
        sources={"all": _H200_DATASHEET + ", SXM column"},
    ),
    Hardware(
        slug="a100",
        name="NVIDIA A100 SXM4 80GB",
        bandwidth_gbps=2039.0,
        peak_tflops={"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        l2_bytes=40 * 2**20,
        sources={"all": _A100_DATASHEET + ", 80GB SXM column (no fp8 tensor cores)"},
    ),
    Hardware(
        slug="l4",
        name="NVIDIA L4",
        bandwidth_gbps=300.0,
        peak_tflops={"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0, "fp8": 242.5},
        l2_bytes=48 * 2**20,
        sources={"all": _L4_DATASHEET},
    ),
    Hardware(
        slug="rtx-pro-6000",
        name="NVIDIA RTX PRO 6000 Blackwell",
        bandwidth_gbps=1792.0,
        peak_tflops={"fp32": 125.0, "tf32": 250.0, "bf16": 500.0, "fp16": 500.0, "fp8": 1000.0},
        l2_bytes=128 * 2**20,
        sources={"all": _RTX_PRO_DATASHEET},
    ),
    Hardware(
        slug="b200",
        name="NVIDIA B200",
        bandwidth_gbps=8000.0,
        peak_tflops={"fp32": 75.0, "tf32": 1125.0, "bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0},
        l2_bytes=126 * 2**20,
        sources={"all": _B200_DATASHEET},
    ),
)

# The CPU target grades smoke shapes under the Triton interpreter on whatever CI or demo machine
# runs it; its roofline is a modest declared one, so its peak fractions read as figures and are
# never ranked (timings_comparable is false on CPU).
CPU = Hardware(
    slug="cpu",
    name="CPU (declared figures)",
    bandwidth_gbps=25.6,
    peak_tflops={"fp32": 0.1, "bf16": 0.1, "fp16": 0.1, "fp8": 0.1},
    l2_bytes=2**20,
    sources={
        "all": "declared, not measured: one x86-64 core at about 3 GHz with two 256-bit FMA "
        "units (2 x 8 lanes x 2 flops x 3.1 GHz = 0.1 TFLOPS fp32; bf16, fp16 and fp8 computed "
        "in fp32), one DDR4-3200 channel (25.6 GB/s), 1 MiB L2"
    },
    device="cpu",
)

# Every row, for listings and by_slug; detect() picks GPUs from TABLE only.
ROWS: tuple[Hardware, ...] = (*TABLE, CPU)

_BY_SLUG = {hw.slug: hw for hw in ROWS}


def by_slug(slug: str) -> Hardware | None:
    return _BY_SLUG.get(slug)


def for_device(device: str, gpu_name: str) -> Hardware | None:
    """The declared CPU row on `cpu`, otherwise the GPU's row (None for an unknown GPU)."""
    return CPU if device == "cpu" else detect(gpu_name)


def detect(device_name: str) -> Hardware | None:
    """Pick the table row for a CUDA device name such as 'NVIDIA H100 80GB HBM3'."""
    name = device_name.upper()
    if "H100" in name:
        return _BY_SLUG["h100-pcie" if "PCIE" in name else "h100-sxm"]
    if "RTX PRO 6000" in name:
        return _BY_SLUG["rtx-pro-6000"]
    for token, slug in (("H200", "h200"), ("B200", "b200"), ("A100", "a100")):
        if token in name:
            return _BY_SLUG[slug]
    if name.split()[-1:] == ["L4"] or " L4 " in f" {name} ":
        return _BY_SLUG["l4"]
    return None


def speed_of_light_s(hw: Hardware, *, flops: float, nbytes: float, dtype: str) -> float:
    """The fastest time the hardware allows: the slower of its compute and memory bounds."""
    peak = hw.peak_for(dtype) or hw.peak_for("fp32") or 0.0
    compute_s = flops / (peak * 1e12) if peak else 0.0
    return max(compute_s, nbytes / (hw.bandwidth_gbps * 1e9))


def peak_fraction(
    hw: Hardware, *, regime: str, flops: float, nbytes: float, dtype: str, seconds: float
) -> float | None:
    if seconds <= 0:
        return None
    if regime == "memory":
        return nbytes / seconds / (hw.bandwidth_gbps * 1e9)
    if regime == "roofline":
        return speed_of_light_s(hw, flops=flops, nbytes=nbytes, dtype=dtype) / seconds
    peak = hw.peak_for(dtype)
    return None if not peak else flops / seconds / (peak * 1e12)
