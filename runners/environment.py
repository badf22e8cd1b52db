"""What the grading ran on: GPU, driver, library versions and clocks."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from typing import Any

import torch

_SMI_FIELDS = (
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "temperature.gpu",
    "power.draw",
    "clocks_throttle_reasons.active",
)


def describe(device: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": _triton_version(),
        "hostname": socket.gethostname(),
        "cpu": platform.processor() or platform.machine(),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        uuid = gpu_uuid(props)
        env.update(
            gpu=props.name,
            gpu_uuid=uuid,
            cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            cuda=torch.version.cuda,
            sm_count=props.multi_processor_count,
            l2_bytes=l2_bytes(),
            memory_bytes=props.total_memory,
        )
        env.update(_nvidia_smi(uuid))
    else:
        env["gpu"] = None
    return env


def gpu_uuid(props) -> str | None:
    """The UUID of the GPU this process sees as device 0, as nvidia-smi writes it (GPU-...):
    on a host of several GPUs it names which one graded (workers pin one each)."""
    raw = getattr(props, "uuid", None)
    if raw is None:
        return None
    text = str(raw)
    return text if text.startswith("GPU-") else f"GPU-{text}"


def l2_bytes() -> int:
    props = torch.cuda.get_device_properties(0)
    return int(getattr(props, "L2_cache_size", 0) or 0)


def _triton_version() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    return triton.__version__


def _nvidia_smi(uuid: str | None) -> dict[str, Any]:
    if not shutil.which("nvidia-smi"):
        return {}
    # nvidia-smi ignores CUDA_VISIBLE_DEVICES: index 0 is the host's first GPU, maybe not ours
    query = [
        "nvidia-smi",
        f"--query-gpu={','.join(_SMI_FIELDS)}",
        "--format=csv,noheader",
        "-i",
        uuid or "0",
    ]
    try:
        done = subprocess.run(query, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in done.stdout.strip().split(",")]
    if len(values) != len(_SMI_FIELDS):
        return {}
    smi = dict(zip(_SMI_FIELDS, values, strict=True))
    return {
        "driver": smi["driver_version"],
        "clocks": {k: v for k, v in smi.items() if k != "driver_version"},
    }
