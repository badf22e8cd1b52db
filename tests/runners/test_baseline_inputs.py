"""First grades time the reference once per shape and kind: a shape's input sets are read once
for all its kinds, and on a roofline a baseline samples for one round's share of the time cap."""

from types import SimpleNamespace

import pytest
import torch

from runners import oracle, performance, tensor_file


def input_file(tmp_path, name: str, elements: int) -> str:
    path = tmp_path / f"inputs_{name}.tensors"
    tensor_file.save([[torch.arange(elements, dtype=torch.float32)] for _ in range(2)], path)
    return str(path)


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The files the reference reads, in order."""
    seen = []
    load = tensor_file.load

    def counted(path, device, **kwargs):
        seen.append(path)
        return load(path, device, **kwargs)

    monkeypatch.setattr(tensor_file, "load", counted)
    return seen


def test_a_shapes_inputs_are_read_once_for_all_its_baselines(tmp_path, reads):
    made = oracle.Oracle()
    small = input_file(tmp_path, "small", 16)
    first = made._baseline_bases(small, "cpu")
    again = made._baseline_bases(small, "cpu")
    assert again is first and reads == [small]
    assert torch.equal(first[1][0], torch.arange(16, dtype=torch.float32))


def test_the_inputs_held_stay_within_their_bytes_the_first_shapes_kept(
    tmp_path, monkeypatch, reads
):
    """The baselines go kind by kind over the shapes: what is kept stays, so the shapes that fit
    are read once for every kind, and the others each time."""
    monkeypatch.setattr(oracle, "BASELINE_INPUT_BYTES", 1100)  # each file below: 2 x 256 B
    made = oracle.Oracle()
    one, two, three = (input_file(tmp_path, name, 64) for name in ("one", "two", "three"))
    for _kind in range(3):
        for path in (one, two, three):
            made._baseline_bases(path, "cpu")
    assert list(made._baseline_inputs) == [one, two]
    assert (reads.count(one), reads.count(two), reads.count(three)) == (1, 1, 3)
    huge = input_file(tmp_path, "huge", 1024)  # larger than the whole budget: read, not held
    assert len(made._baseline_bases(huge, "cpu")) == 2
    assert list(made._baseline_inputs) == [one, two]


def test_a_roofline_baseline_samples_for_a_compute_rounds_share_and_a_speedup_one_for_the_cap(
    monkeypatch,
):
    monkeypatch.setattr(performance.environment, "l2_bytes", lambda: 50 << 20)
    made = performance.Performance.__new__(performance.Performance)
    made.device, made.hardware = "cuda", None
    made.grading = SimpleNamespace(result=SimpleNamespace(gate=lambda name: None))
    for regime, share in (("memory", 1 / 6), ("compute", 1 / 6), ("speedup", 1.0)):
        made.problem = SimpleNamespace(regime=regime, time_cap_s=2.0)
        assert made._reference_settings().cap_s == 2.0 * share
        assert made._settings().cap_s == 2.0  # the candidate's own cap is its rounds' to share
