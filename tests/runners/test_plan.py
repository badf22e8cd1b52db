import torch
from engine_support import TINY

from runners.oracle import apply_distribution, perturb_parameters
from runners.plan import masked_paths, plan_shapes
from runners.problem import load_problem, problems_root


def test_cuda_plan_runs_every_visible_and_held_out_shape():
    problem = load_problem(TINY)
    visible, hidden = plan_shapes(problem, "cuda")
    assert [p.params for p in visible] == problem.visible
    assert [p.params for p in hidden] == problem.hidden
    assert all(p.seeds == problem.hidden_seeds for p in hidden)


def test_cpu_plan_uses_smoke_shapes_and_the_smallest_held_out_shape():
    problem = load_problem(TINY)
    visible, hidden = plan_shapes(problem, "cpu")
    assert [p.set for p in visible] == ["smoke"]
    assert [p.params for p in hidden] == [{"rows": 3, "cols": 5}]
    assert hidden[0].case == "scale-down"


def test_seeds_cycle_through_the_problem_distributions():
    visible, _ = plan_shapes(load_problem(TINY), "cuda")
    assert visible[0].dists == ["normal", "large", "offset"]


def test_held_out_labels_name_no_parameters():
    _, hidden = plan_shapes(load_problem(TINY), "cuda")
    assert hidden[1].label == "held-out case 2"  # counted from 1
    assert "rows" not in hidden[1].label
    # Short names, as the platform's pages give them
    visible, _ = plan_shapes(load_problem(TINY), "cuda")
    assert hidden[1].name == "held-out case 2" and visible[0].name == "visible 1"


def test_masked_paths_cover_the_deck_and_the_problem_folder():
    masked = masked_paths(load_problem(TINY))
    assert problems_root().resolve() in masked and TINY.resolve() in masked


def test_distributions_change_floats_and_leave_integers():
    x, n = torch.ones(4), torch.arange(4)
    large, same = apply_distribution([x, n, 3], "large")[:2]
    assert torch.equal(large, torch.full((4,), 64.0)) and torch.equal(same, n)
    assert torch.equal(apply_distribution([x], "offset")[0], torch.full((4,), 5.0))
    uniform = apply_distribution([x.repeat(1000)], "uniform")[0]
    assert uniform.min() >= -1 and uniform.max() <= 1 and uniform.std() > 0.3


def test_perturbed_parameters_move_off_their_constant_start():
    layer = torch.nn.Linear(8, 8)
    torch.nn.init.ones_(layer.weight)
    perturb_parameters(layer)
    assert layer.weight.std() > 0.05
