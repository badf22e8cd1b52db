"""The engine's GPU benchmarks run on the CPU at a small size: what docs/benchmarks.md quotes, or
what the next device session measures, does not break unnoticed."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def run(script: str, *args: str) -> None:
    command = [sys.executable, str(BENCH / script), "--device", "cpu", *args]
    subprocess.run(command, check=True, capture_output=True, timeout=300)


def test_transport(tmp_path):
    out = tmp_path / "transport.json"
    run("transport.py", "--gib", "0.01", "--dir", str(tmp_path), "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["device"] == "cpu"
    assert {"torch.save", "tensor_file.save", "tensor_file.load"} <= set(figures)
    assert all(value >= 0 for key, value in figures.items() if key != "device")


def test_warmup_gap(tmp_path):
    out = tmp_path / "gap.json"
    run(
        "warmup_gap.py",
        *("--size", "64", "--calls", "12", "--busy-s", "0.02", "--repeats", "1"),
        *("--gaps-ms", "0,2", "--out", str(out)),
    )
    report = json.loads(out.read_text())
    assert report["device"] == "cpu" and set(report["gaps"]) == {"0.0", "2.0"}
    for entry in report["gaps"].values():
        assert entry["steady_ms"] > 0 and entry["first_10_over_steady"] > 0
        assert entry["settle_ms"] >= 0
