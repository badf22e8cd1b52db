"""Numbers on pages: significant digits and units, never a raw float."""

import pytest

from submissions.templatetags import arena_format as f


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.000000014901161193847656, "1.49e-8"),
        (0.423456, "0.423"),
        (12.345, "12.3"),
        (1234.5, "1,234"),
        (0.9996, "1"),
        (99.97, "100"),
        (0, "0"),
        (None, "—"),
        (float("nan"), "—"),
        ("", "—"),
    ],
)
def test_sig_keeps_three_significant_digits(value, text):
    assert f.sig(value) == text


def test_times_take_the_unit_that_keeps_them_short():
    assert f.duration_us(12.345) == "12.3 µs"
    assert f.duration_us(1530.0) == "1.53 ms"
    assert f.duration_us(2_500_000) == "2.50 s"
    assert f.seconds(42.0) == "42 s"
    assert f.seconds(754) == "13 min"
    assert f.seconds(5400) == "1.5 h"


def test_rates_fractions_and_speedups_carry_their_units():
    assert f.tflops(312.456) == "312 TFLOPS"
    assert f.gbps(3350.2) == "3,350 GB/s"
    assert f.percent(0.4234) == "42.3 %"
    assert f.signed_percent(0.0421) == "+4.2 pp"
    assert f.signed_percent(-0.1) == "-10 pp"
    assert f.speedup(1.8312) == "1.83\u00d7"


def test_counts_and_money_read_at_a_glance():
    assert f.thousands(1234567) == "1,234,567"
    assert f.compact(950) == "950"
    assert f.compact(12_345) == "12.3k"
    assert f.compact(4_560_000) == "4.56M"
    assert f.usd(12.5) == "$12.50"
    assert f.usd(0.0423) == "$0.042"
    assert f.usd(0) == "$0.00"


def test_evidence_formats_numbers_and_escapes_text():
    html = f.evidence(
        {"hits": [{"rule": "<script>", "line": 3}], "max_abs_err": 0.000000014901161193847656}
    )
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert "1.49e-8" in html and "0.0000000149" not in html


def test_evidence_shortens_long_lists():
    assert f.evidence(list(range(25))).endswith("… and 5 more")


def test_the_environment_manifest_reads_sizes_and_nested_values():
    rows = f.manifest({"l2_bytes": 52428800, "clocks": {"sm": 1980}, "gpu": "H100"})
    assert rows == [("l2 bytes", "50.0\xa0MB"), ("clocks", "sm=1980"), ("gpu", "H100")]


def test_shape_params_list_names_and_values():
    assert f.shape_params({"batch": 8, "dim": 1024}) == "batch=8, dim=1024"
    assert f.shape_params(None) == "—"
