"""runners.construction: a solution's model is built on the CPU as before, its large random
initializations drawn elsewhere (on CUDA the GPU; here a second CPU tensor stands in)."""

import pytest
import torch

from runners import construction


class Wide(torch.nn.Module):
    def __init__(self, rows: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(rows, 1024, dtype=torch.bfloat16))
        torch.nn.init.normal_(self.weight, std=0.02)
        self.linear = torch.nn.Linear(1024, 2048)  # kaiming_uniform_ on 2 M elements
        self.small = torch.nn.Parameter(torch.empty(16))
        self.small.data.uniform_(0.0, 1.0)
        self.table = torch.arange(rows)  # not a draw: built as it would be
        chosen = torch.Generator().manual_seed(5)
        self.seeded = torch.empty(rows, 1024).normal_(generator=chosen)


def test_large_draws_move_and_keep_their_distribution_and_tensors():
    draws = construction._DeviceDraws("cpu")
    with draws:
        model = Wide(2048)
    assert draws.moved == 2  # weight's normal_ and linear's kaiming_uniform_
    assert model.weight.device.type == "cpu" and model.weight.dtype == torch.bfloat16
    assert isinstance(model.weight, torch.nn.Parameter) and model.weight.requires_grad
    assert abs(model.weight.float().std().item() - 0.02) < 0.001
    bound = 1 / 1024**0.5
    assert model.linear.weight.abs().max().item() <= bound
    assert model.linear.weight.abs().max().item() > 0.9 * bound
    assert torch.equal(model.table, torch.arange(2048))
    expected = torch.empty(2048, 1024).normal_(generator=torch.Generator().manual_seed(5))
    assert torch.equal(model.seeded, expected)  # a caller's generator keeps its draw
    assert model.small.min().item() >= 0.0 and model.small.max().item() <= 1.0


def test_small_draws_and_cpu_builds_stay_where_they_are():
    draws = construction._DeviceDraws("cpu")
    with draws:
        Wide(8)
    assert draws.moved == 1  # only linear's 2 M elements
    model = construction.build(Wide, [8], "cpu")  # no mode on the CPU device
    assert model.weight.shape == (8, 1024)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_build_leaves_the_model_on_the_cpu_with_its_draws_made():
    model = construction.build(Wide, [4096], "cuda")
    assert model.weight.device.type == "cpu" and model.linear.weight.device.type == "cpu"
    assert abs(model.weight.float().std().item() - 0.02) < 0.001
    assert torch.equal(model.table, torch.arange(4096))
