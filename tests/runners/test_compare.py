import json

import pytest
import torch

from runners import compare as compare_module
from runners.compare import Comparison, compare_call

TOL = [{"atol": 1e-5, "rtol": 1e-5}]


def compare(expected, actual, tolerances=TOL, inputs=None) -> Comparison:
    result = Comparison()
    compare_call(result, expected, actual, tolerances, inputs)
    return result


def test_equal_outputs_match_with_zero_error():
    x = torch.randn(4, 5)
    result = compare([x], [x.clone()])
    assert result.correct and result.max_abs_err == 0.0 and result.mismatches == 0


def test_error_statistics_name_the_worst_element():
    want = torch.ones(3, 4)
    got = want.clone()
    got[2, 1] += 0.5
    result = compare([want], [got])
    assert not result.correct
    assert result.mismatches == 1
    assert result.worst_index == [2, 1]
    assert result.max_abs_err == 0.5 and result.max_rel_err == 0.5


def test_relative_tolerance_scales_with_magnitude():
    want = torch.full((8,), 1e4)
    result = compare([want], [want + 0.05], [{"atol": 1e-5, "rtol": 1e-5}])
    assert result.correct


def test_nan_where_the_reference_is_finite_fails():
    want = torch.ones(4)
    got = want.clone()
    got[0] = float("nan")
    assert "NaN or Inf" in compare([want], [got]).error


def test_all_zero_output_fails_against_a_nonzero_reference():
    result = compare([torch.full((4,), 1e-7)], [torch.zeros(4)])
    assert "all zeros" in result.error


def test_dtype_shape_and_output_count_must_match():
    want = torch.ones(2, 2)
    assert "dtype" in compare([want], [want.double()]).error
    assert "shape" in compare([want], [want.reshape(4)]).error
    assert "output" in compare([want], [want, want]).error


def test_outputs_never_compared_have_no_error_figure_rather_than_zero():
    want = torch.ones(2, 2)
    for got in ([want.reshape(4)], [want, want]):
        result = compare([want], got)
        assert not result.correct and (result.max_abs_err, result.max_rel_err) == (None, None)


def test_tensor_subclass_is_not_a_plain_tensor():
    class Lazy(torch.Tensor):
        pass

    want = torch.ones(2)
    assert "not a plain torch.Tensor" in compare([want], [want.clone().as_subclass(Lazy)]).error


def test_a_sparse_output_is_not_a_dense_tensor():
    want = torch.eye(3)
    assert compare([want], [want.to_sparse()]).error == "output 0: is not a dense tensor"


def test_missing_output_reported_by_the_child_fails():
    assert not compare([torch.ones(2)], [None]).correct


def test_outputs_compared_in_chunks_read_as_one_whole(monkeypatch):
    monkeypatch.setattr(compare_module, "CHUNK", 4)
    want = torch.arange(1.0, 13.0).reshape(3, 4)  # three chunks of four
    got = want.clone()
    got[0, 0] += 0.5  # relative error 0.5, the largest, in the first chunk
    got[2, 3] += 2.0  # the worst, in the last chunk
    got[1, 2] += 2.0  # ties the last chunk's: not the first occurrence, so not the worst
    result = compare([want], [got])
    assert result.mismatches == 3
    assert result.worst_index == [1, 2]  # the first of the two largest excesses
    assert result.max_abs_err == 2.0
    assert result.max_rel_err == 0.5
    assert result.error == "output 0: 3 element(s) outside atol+rtol"


def test_a_later_chunk_worse_than_an_earlier_one_is_the_worst(monkeypatch):
    monkeypatch.setattr(compare_module, "CHUNK", 4)
    want = torch.ones(12)
    got = want.clone()
    got[1], got[10] = 1.5, 4.0
    assert compare([want], [got]).worst_index == [10]


def test_nonfinite_reference_values_match_only_themselves_across_chunks(monkeypatch):
    monkeypatch.setattr(compare_module, "CHUNK", 3)
    want = torch.tensor([1.0, float("nan"), 2.0, float("inf"), 3.0, -float("inf"), 4.0])
    assert compare([want], [want.clone()]).correct
    got = want.clone()
    got[5] = float("inf")  # -inf expected
    result = compare([want], [got])
    assert result.mismatches == 1 and result.worst_index == [5]


def test_an_output_is_all_zeros_only_if_every_chunk_is(monkeypatch):
    monkeypatch.setattr(compare_module, "CHUNK", 2)
    want = torch.tensor([0.0, 0.0, 0.0, 1e-7])
    assert "all zeros" not in (compare([want], [want.clone()]).error or "")
    assert "all zeros" in compare([want], [torch.zeros(4)]).error
    got = torch.zeros(4)
    got[0] = float("nan")
    assert "NaN or Inf" in compare([torch.ones(4)], [got]).error


def test_half_precision_outputs_are_compared_in_float32():
    want = torch.full((5,), 1000.0, dtype=torch.float16)
    got = want.clone()
    got[3] = 1001.0
    result = compare([want], [got], [{"atol": 0.0, "rtol": 1e-4}])
    assert result.mismatches == 1 and result.max_abs_err == 1.0


def test_any_chunk_size_gives_the_whole_tensor_answer(monkeypatch):
    torch.manual_seed(0)
    want = torch.randn(7, 33)
    want.view(-1)[torch.randint(0, want.numel(), (6,))] = float("nan")
    want.view(-1)[torch.randint(0, want.numel(), (6,))] = float("inf")
    got = want + 1e-3 * torch.randn(7, 33)
    got.view(-1)[torch.randint(0, got.numel(), (5,))] = float("nan")
    whole = compare([want], [got], [{"atol": 1e-4, "rtol": 1e-3}])
    for chunk in (1, 5, 32, 100):
        monkeypatch.setattr(compare_module, "CHUNK", chunk)
        assert compare([want], [got], [{"atol": 1e-4, "rtol": 1e-3}]) == whole
    assert whole.mismatches > 0 and not whole.correct


def test_a_comparison_survives_its_json_form():
    want = torch.ones(3, 4)
    result = compare([want], [want + torch.eye(3, 4)])
    again = Comparison.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result and again.error == result.error


# -- index outputs compared up to ties ----------------------------------------------------------
TIES = [{"atol": 0.0, "rtol": 0.0}, {"ties": {"values": 0, "input": 0, "dim": -1}}]
ROWS = torch.tensor([[3.0, 5.0, 5.0, 1.0], [2.0, 2.0, 2.0, 7.0]])
VALUES = torch.tensor([[5.0, 5.0], [7.0, 2.0]])
INDICES = torch.tensor([[1, 2], [3, 0]])  # the reference's: equal values by ascending index


def compare_ties(indices, values=VALUES, rules=TIES):
    return compare([VALUES, INDICES], [values, indices], rules, inputs=[ROWS])


def test_indices_picking_other_equal_values_match_up_to_ties():
    assert compare_ties(torch.tensor([[2, 1], [3, 2]])).correct
    assert compare_ties(INDICES.clone()).correct


def test_an_index_of_a_different_value_fails_on_the_values_it_selects():
    result = compare_ties(torch.tensor([[1, 0], [3, 2]]))  # x[0, 0] is 3, not 5
    assert result.errors == [
        "output 1: the input's values at these indices: 1 element(s) outside atol+rtol"
    ]
    assert result.worst_index == [0, 1] and result.max_abs_err == 2.0


def test_an_index_out_of_range_fails_and_names_the_range_in_parentheses():
    result = compare_ties(torch.tensor([[1, 4], [3, -1]]))
    assert result.errors == ["output 1: 2 index(es) out of range (0 to 3) along dim -1"]


def test_float_indices_fail_as_not_integer():
    result = compare_ties(INDICES.float())
    assert result.errors == ["output 1: indices must be an integer tensor, got torch.float32"]


def test_an_index_repeated_within_a_row_fails_though_it_selects_equal_values():
    result = compare_ties(torch.tensor([[1, 1], [3, 0]]))
    assert result.errors == ["output 1: an index appears twice along dim -1"]


def test_indices_of_another_integer_dtype_or_shape_fail_as_any_output_does():
    assert "dtype torch.int32" in compare_ties(INDICES.int()).error
    assert "shape (2, 1)" in compare_ties(INDICES[:, :1]).error


def test_a_wrong_values_output_fails_on_its_own_tolerance():
    result = compare_ties(INDICES.clone(), values=VALUES + 1.0)
    assert result.errors == ["output 0: 4 element(s) outside atol+rtol"]


def test_a_near_tie_is_no_tie_however_loose_the_values_tolerance():
    """Selected values of the values output's dtype are copies of the input: an index of 2.95
    where 3.0 is expected is a wrong top-k, even where the values output may be off by 0.1."""
    row = torch.tensor([[3.0, 5.0, 2.95, 1.0]])
    want = [torch.tensor([[5.0, 3.0]]), torch.tensor([[1, 0]])]
    picks = [want[0], torch.tensor([[1, 2]])]  # 2.95 where 3.0 is expected
    loose = [{"atol": 0.1, "rtol": 0.0}, TIES[1]]
    assert not compare(want, picks, loose, inputs=[row]).correct
    assert not compare(want, picks, TIES, inputs=[row]).correct


def test_values_cast_on_the_way_out_keep_the_values_output_tolerance():
    """Where the values output has another dtype than the input (a cast), the selected input
    values differ from it by the cast's rounding: its tolerance applies."""
    row = torch.tensor([[3.0001, 5.0, 2.0, 1.0]])
    want = [torch.tensor([[5.0, 3.0001]]).half(), torch.tensor([[1, 0]])]
    rules = [{"atol": 0.01, "rtol": 0.0}, TIES[1]]
    assert compare(want, [want[0], torch.tensor([[1, 0]])], rules, inputs=[row]).correct


def test_argmax_like_indices_with_the_dimension_reduced_away():
    rules = [{"atol": 0.0, "rtol": 0.0}, {"ties": {"values": 0, "input": 0, "dim": 1}}]
    want = [torch.tensor([5.0, 7.0]), torch.tensor([1, 3])]
    assert compare(want, [want[0], torch.tensor([2, 3])], rules, inputs=[ROWS]).correct
    assert not compare(want, [want[0], torch.tensor([0, 3])], rules, inputs=[ROWS]).correct


def test_ties_without_the_inputs_is_a_programming_error():
    with pytest.raises(ValueError, match="inputs"):
        compare([VALUES, INDICES], [VALUES, INDICES], TIES)


def test_complex_outputs_are_compared_in_both_parts():
    want = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
    rule = [{"atol": 1e-3, "rtol": 0.0}]
    wrong_imaginary = want.clone()
    wrong_imaginary.imag += 1.0
    assert compare([want], [want.conj().conj()], rule).correct
    assert not compare([want], [wrong_imaginary], rule).correct
    assert not compare([want], [want.conj().resolve_conj()], rule).correct
    # the error is the distance in the plane against atol + rtol * |want|, as in torch.allclose
    large = torch.tensor([1000 + 0.001j])
    near = torch.tensor([1000 + 0.0011j])
    relative = [{"atol": 1e-5, "rtol": 1e-3}]
    assert torch.allclose(near, large, rtol=1e-3, atol=1e-5)
    assert compare([large], [near], relative).correct
    assert compare([want], [wrong_imaginary], rule).mismatches == 2  # elements, not parts
