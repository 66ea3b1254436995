"""Numbers as the official release writes and re-reads them (pandas 2.2.3's default converter)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hhx.bench import csvnum


def test_the_issue_case_is_re_read_as_5_105_and_shown_as_5_11():
    value = 5.1049999999999995
    assert repr(value) == "5.1049999999999995"  # what pandas writes
    assert csvnum.precise_xstrtod("5.1049999999999995") == 5.105
    assert f"{csvnum.reread_floats([value])[0]:.2f}" == "5.11"
    assert f"{value:.2f}" == "5.10"  # rendering from the float in memory differs


def test_converter_rules_by_hand():
    # 17 digits at most, leading zeros included: the 18th digit (7) is dropped.
    assert csvnum.precise_xstrtod("0.12345678901234567") == 1234567890123456 / 1e16
    # extra integer digits raise the exponent instead
    assert csvnum.precise_xstrtod("123456789012345678901") == 12345678901234567 * 1e4
    # each digit step is one rounding: 51049999999999995 accumulates to 5.105e16
    acc = 0.0
    for d in "51049999999999995":
        acc = acc * 10.0 + int(d)
    assert acc == 5.105e16 and acc / 1e16 == 5.105
    assert csvnum.precise_xstrtod("1e-05") == 1e-05
    assert csvnum.precise_xstrtod(" -2.5E+3 ") == -2500.0
    assert csvnum.precise_xstrtod("34") == 34.0 and csvnum.precise_xstrtod("2.0") == 2.0
    assert math.copysign(1, csvnum.precise_xstrtod("-0.0")) == -1
    # below 1e-308: two divisions
    assert csvnum.precise_xstrtod("1e-320") == 1.0 / 1e12 / 1e308
    for bad in ("", ".", "-", "1e", "1e+", "abc", "1.5x", "1e400"):
        with pytest.raises(ValueError):
            csvnum.precise_xstrtod(bad)


def test_vectorised_re_read_equals_the_scalar_converter():
    rng = np.random.default_rng(3)
    values = np.concatenate([
        rng.normal(0, 1, 4000) * 10.0 ** rng.integers(-25, 25, 4000),
        rng.integers(-10**6, 10**6, 500) / 100,
        [0.0, -0.0, 1e16, 1e-5, 5e-324, 1e-310, 123456789012345678.0, 5.1049999999999995, np.nan],
    ])
    fast = csvnum.reread_floats(values)
    slow = np.array([np.nan if np.isnan(v) else csvnum.precise_xstrtod(repr(float(v)))
                     for v in values])
    assert np.array_equal(fast, slow, equal_nan=True)
    assert (fast != values)[~np.isnan(values)].mean() > 0.1  # the converter is often 1 ulp off
    # short texts are exact, so the re-read value is the value itself
    short = np.array([0.5, 12.25, -3.0, 1234567.125, 0.001])
    assert np.array_equal(csvnum.reread_floats(short), short)


def test_pandas_writes_floats_as_repr():
    values = [5.1049999999999995, 1e16, 1e-05, 0.1 + 0.2, -0.0, 2.0]
    text = pd.DataFrame({"a": values}).to_csv(index=False).splitlines()[1:]
    assert text == [repr(v) for v in values]


def test_integer_columns():
    assert csvnum.is_integer_column(pd.Series([1, 2, 3]))
    assert csvnum.is_integer_column(pd.Series([1, None], dtype="Int64"))  # integer dtype: yes
    assert csvnum.is_integer_column(pd.Series([34.0, 25.0]))  # complete and integral
    assert not csvnum.is_integer_column(pd.Series([34.0, np.nan]))  # a gap: float as the reference
    assert not csvnum.is_integer_column(pd.Series([34.0, 25.5]))
    assert not csvnum.is_integer_column(pd.Series([1e16, 2.0]))
