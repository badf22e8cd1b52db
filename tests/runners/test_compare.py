import torch

from runners.compare import Comparison, compare_call

TOL = [{"atol": 1e-5, "rtol": 1e-5}]


def compare(expected, actual, tolerances=TOL) -> Comparison:
    result = Comparison()
    compare_call(result, expected, actual, tolerances)
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


def test_tensor_subclass_is_not_a_plain_tensor():
    class Lazy(torch.Tensor):
        pass

    want = torch.ones(2)
    assert "not a plain torch.Tensor" in compare([want], [want.clone().as_subclass(Lazy)]).error


def test_missing_output_reported_by_the_child_fails():
    assert not compare([torch.ones(2)], [None]).correct
