"""Numbers in the release CSVs as the official pipeline writes and re-reads them.

Writing: a float column is written as pandas writes float64 (`repr`, the shortest text that
round-trips: `5.1049999999999995`, `1e-05`); an integer column as integers (`2`, not `2.0`).

Re-reading: the official renderers and the XGBoost baseline read every non-text column back with
`pd.read_csv(dtype=float64)` of the release's pinned pandas 2.2.3, whose default C converter
(`float_precision=None` = `precise_xstrtod` in pandas/_libs/src/parser/tokenizer.c of 2.2.x) is
not correctly rounded. It accumulates at most 17 digits in a double, one `number * 10. + digit`
at a time (each step rounded), then scales by one power of ten from a table of `1e0` .. `1e308`
(`number *= e[k]` for k > 0, `number /= e[-k]` for k <= 0, two divisions below 1e-308).
Leading zeros count among the 17 digits; further integer digits raise the exponent; further
fraction digits are dropped. So `5.1049999999999995` is re-read as 5.105 and a prompt that
shows it with `{:.2f}` says `5.11`. pandas >= 3 converts exactly, so hhx reproduces the 2.2.3
converter here instead of calling pandas (fact checked against the 2.2.x source; the x86-64
build, where `a * 10. + d` is two roundings, as numpy computes it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

MAX_DIGITS = 17
# The converter's power table: C literals 1e0 .. 1e308, i.e. the correctly rounded doubles.
POW10 = np.array([float(f"1e{k}") for k in range(309)], dtype=np.float64)
_WS = " \t\n\v\f\r"
# Texts the converter gets exactly, so float() agrees: at most 15 digits (an exact mantissa),
# no exponent (one division by an exact power of ten, correctly rounded).
_SHORT = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)$")


def _short(text: str) -> bool:
    return len(text) <= 17 and bool(_SHORT.match(text)) and sum(c.isdigit() for c in text) <= 15


def precise_xstrtod(text: str) -> float:
    """pandas 2.2.3's default float conversion of one CSV field; ValueError if it rejects it."""
    n = len(text)
    p = 0
    while p < n and text[p] in _WS:
        p += 1
    negative = p < n and text[p] == "-"
    if p < n and text[p] in "+-":
        p += 1
    number, exponent, digits, decimals = 0.0, 0, 0, 0
    while p < n and "0" <= text[p] <= "9":
        if digits < MAX_DIGITS:
            number = number * 10.0 + (ord(text[p]) - 48)
            digits += 1
        else:
            exponent += 1
        p += 1
    if p < n and text[p] == ".":
        p += 1
        while digits < MAX_DIGITS and p < n and "0" <= text[p] <= "9":
            number = number * 10.0 + (ord(text[p]) - 48)
            p += 1
            digits += 1
            decimals += 1
        if digits >= MAX_DIGITS:
            while p < n and "0" <= text[p] <= "9":
                p += 1
        exponent -= decimals
    if digits == 0:
        raise ValueError(f"{text!r} is not a number")
    if negative:
        number = -number
    if p < n and text[p] in "eE":
        q = p + 1
        sign = 1
        if q < n and text[q] in "+-":
            sign = -1 if text[q] == "-" else 1
            q += 1
        k, m = 0, 0
        while m < MAX_DIGITS and q < n and "0" <= text[q] <= "9":
            k = k * 10 + ord(text[q]) - 48
            q += 1
            m += 1
        if m:
            exponent += sign * k
            p = q
    while p < n and text[p] in _WS:
        p += 1
    if p != n:
        raise ValueError(f"{text!r} is not a number")
    if exponent > 308:
        raise ValueError(f"{text!r} overflows")  # ERANGE: pandas rejects the field
    if exponent > 0:
        number *= POW10[exponent]
    elif exponent < -308:
        number = 0.0 if exponent < -616 else number / POW10[-308 - exponent] / POW10[308]
    else:
        number /= POW10[-exponent]
    if math.isinf(number):
        raise ValueError(f"{text!r} overflows")
    return float(number)


def parse_texts(texts: Iterable[str]) -> np.ndarray:
    """`precise_xstrtod` of many texts (each distinct text converted once)."""
    values = list(texts)
    cache: dict[str, float] = {}
    out = np.empty(len(values), dtype=np.float64)
    for i, text in enumerate(values):
        value = cache.get(text)
        if value is None:
            value = float(text) if _short(text) else precise_xstrtod(text)
            cache[text] = value
        out[i] = value
    return out


def _parse_reprs(texts: list[str]) -> np.ndarray:
    """`precise_xstrtod` of many `repr` texts of finite floats, vectorised over a byte matrix
    (same arithmetic: numpy's `x * 10.0 + d` is two roundings, as the C loop)."""
    width = max(len(t) for t in texts)
    m = np.array(texts, dtype=f"S{width}").view(np.uint8).reshape(len(texts), width)
    is_e = (m == ord("e")) | (m == ord("E"))
    epos = np.where(is_e.any(axis=1), is_e.argmax(axis=1), width)
    cols = np.arange(width)
    in_mant = cols[None, :] < epos[:, None]
    digit = (m >= 48) & (m <= 57)
    mant = digit & in_mant
    is_dot = (m == ord(".")) & in_mant
    dotpos = np.where(is_dot.any(axis=1), is_dot.argmax(axis=1), epos)
    order = np.cumsum(mant, axis=1)
    taken = mant & (order <= MAX_DIGITS)
    number = np.zeros(len(texts), dtype=np.float64)
    for j in range(width):
        d = m[:, j].astype(np.float64) - 48.0
        number = np.where(taken[:, j], number * 10.0 + d, number)
    before_dot = cols[None, :] < dotpos[:, None]
    int_digits = (mant & before_dot).sum(axis=1)
    frac_taken = (taken & ~before_dot).sum(axis=1)
    exp_digit = digit & (cols[None, :] > epos[:, None])
    exp10 = np.zeros(len(texts), dtype=np.int64)
    for j in range(width):
        exp10 = np.where(exp_digit[:, j], exp10 * 10 + (m[:, j].astype(np.int64) - 48), exp10)
    rows = np.arange(len(texts))
    sign_at = np.minimum(epos + 1, width - 1)
    exp10 = np.where((epos < width) & (m[rows, sign_at] == ord("-")), -exp10, exp10)
    exponent = np.maximum(int_digits - MAX_DIGITS, 0) - frac_taken + exp10
    number = np.where(m[:, 0] == ord("-"), -number, number)
    out = number.copy()
    up = exponent > 0
    out[up] = number[up] * POW10[np.minimum(exponent[up], 308)]
    mid = (exponent <= 0) & (exponent >= -308)
    out[mid] = number[mid] / POW10[-exponent[mid]]
    low = exponent < -308
    if low.any():
        k = np.minimum(-308 - exponent[low], 308)
        out[low] = np.where(exponent[low] < -616, 0.0, number[low] / POW10[k] / POW10[308])
    if (exponent > 308).any() or np.isinf(out).any():
        bad = texts[int(np.flatnonzero((exponent > 308) | np.isinf(out))[0])]
        raise ValueError(f"{bad!r} overflows")  # pandas 2.2.3 rejects such a field (ERANGE)
    return out


def reread_floats(values: np.ndarray | pd.Series) -> np.ndarray:
    """What the official reader gets back for float64 values hhx (or pandas) wrote: the shortest
    `repr` text of each value, converted as pandas 2.2.3 does. NaN stays NaN; each zero keeps
    its sign (`-0.0` is written and read back as `-0.0`, `0.0` as `0.0`)."""
    x = np.asarray(values, dtype=np.float64)
    out = x.copy()
    finite = np.isfinite(x)
    if not finite.any():
        return out
    # Distinct values by bit pattern: np.unique of the floats would merge 0.0 and -0.0, and every
    # zero would then take the sign of the first one (the official reader keeps each zero's sign).
    bits, inverse = np.unique(x[finite].view(np.int64), return_inverse=True)
    texts = [repr(float(u)) for u in bits.view(np.float64)]
    out[finite] = _parse_reprs(texts)[inverse.reshape(-1)]
    return out


def is_integer_column(values: pd.Series) -> bool:
    """Whether a numeric column is written as integers, as the official builders' frames are.

    An integer dtype always is (missing values are written empty). A float column is when it is
    complete and every value is integral and below 1e15: the official builders collect Python
    ints row by row, which pandas holds as int64 while no row lacks the value.
    """
    if pd.api.types.is_bool_dtype(values):
        return True
    if pd.api.types.is_integer_dtype(values):
        return True
    x = values.to_numpy(dtype=np.float64, na_value=np.nan)
    if len(x) == 0 or np.isnan(x).any():
        return False
    return bool(np.all(np.abs(x) < 1e15) and np.all(x == np.round(x)))
