"""The official extraction of one JSON value from a model's text, in time linear in its length.

The reference (`household_bench_eval.parsing.extract_json_value`) tries `json.loads` on the whole
text, else `raw_decode` at EVERY `[`, `{` or `"` (on a copy of the rest of the text), keeping
all successes: the first list/object wins, else the first success (a string), else the text.
An exception other than a JSON syntax error at any of those starts ends the extraction: a
ValueError (an integer literal longer than Python's 4,300-digit limit) makes the answer invalid
with that message, a RecursionError (nesting deeper than the decoder allows) crashes the
reference. Trying every start costs time quadratic in the length (16 s for 40 KB of `\\"`).

Here the same outcome is computed in linear time: the end (or failure) of the string that
starts at each `"` is derived for all quotes at once (numpy), and the outcome at each `[`/`{`
comes from a memoised recogniser of Python's JSON grammar (runs of scalars are skipped by one
regular expression). Only a start where an exception is possible (a digit run at the integer
limit, nesting near the decoder's recursion limit) is decoded by `json` itself, so the
exception and its message are the interpreter's own. Texts below `SHORT_TEXT` characters use the
reference's loop directly, which is fast there. RecursionError becomes the hhx error
`nesting_too_deep` (the reference crashes instead).
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from typing import Any

import numpy as np

NESTING_TOO_DEEP = "nesting_too_deep"
SHORT_TEXT = 2000
_DECODER = json.JSONDecoder()
_DEPTH_MARGIN = 64  # recogniser depth below the decoder's limit that needs no real decode


class ExtractionError(ValueError):
    """The answer cannot be extracted; str() is the scorer's error string."""


@lru_cache(maxsize=1)
def decoder_depth_limit() -> int:
    """Smallest array nesting at which this interpreter's json decoder raises RecursionError."""
    lo, hi = 1, 1 << 20
    while lo < hi:  # invariant: depth hi fails (or is absurdly deep)
        mid = (lo + hi) // 2
        try:
            json.loads("[" * mid + "]" * mid)
        except RecursionError:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _int_limit() -> int:
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    return int(limit)


def _decode_at(text: str, start: int) -> Any:
    """`raw_decode` at `start` (no copy of the text); JSONDecodeError/ValueError propagate."""
    try:
        return _DECODER.raw_decode(text, start)[0]
    except RecursionError:
        raise ExtractionError(NESTING_TOO_DEEP) from None


def extract(text: str) -> Any:
    """The value the reference extracts from a stripped, non-empty answer text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first_error = exc
    except RecursionError:
        raise ExtractionError(NESTING_TOO_DEEP) from None
    if len(text) < SHORT_TEXT:
        return _extract_by_trying_every_start(text)
    return _extract_linear(text, first_error)


def _extract_by_trying_every_start(text: str) -> Any:
    """The reference's loop (raw_decode at each start), without its copies of the text."""
    first: list[Any] = []
    structured: list[Any] = []
    for start, char in enumerate(text):
        if char not in '[{"':
            continue
        try:
            value = _decode_at(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, (list, dict)):
            if not structured:
                structured.append(value)
        elif not first:
            first.append(value)
    if structured:
        return structured[0]
    return first[0] if first else text


# --------------------------------------------------------------------------------------------
# Strings: end of the string starting at every quote, for all quotes at once


def _string_ends(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(quote positions, end after the closing quote or -1) of the strings at every quote.

    The scan from a quote stops at the next quote q: if q is unescaped the string ends there;
    if escaped (an odd run of backslashes before it) the scan continues exactly as the scan
    that starts at q does, so both share q's outcome. Between two quotes the string is invalid
    if it holds a control character or a bad escape.
    """
    n = len(codes)
    quotes = np.flatnonzero(codes == 34)
    if len(quotes) == 0:
        return quotes, quotes
    # Backslash runs (start, length): escapes are pairs, an odd run escapes the next character.
    bpos = np.flatnonzero(codes == 92)
    breaks = np.flatnonzero(np.diff(bpos) != 1) + 1
    run_first = bpos[np.concatenate([[0], breaks])] if len(bpos) else bpos
    run_last = bpos[np.concatenate([breaks - 1, [len(bpos) - 1]])] if len(bpos) else bpos
    odd = run_last[(run_last - run_first) % 2 == 0]  # last backslash of each odd run
    after = odd + 1
    nxt = np.where(after < n, codes[np.minimum(after, n - 1)], -1)
    valid = np.isin(nxt, [34, 47, 98, 102, 110, 114, 116])  # " / b f n r t (\\ is in the run)
    is_u = np.flatnonzero(nxt == 117)
    if len(is_u):
        pos = after[is_u]
        ok = pos + 4 < n
        for k in range(1, 5):
            c = codes[np.minimum(pos + k, n - 1)]
            ok &= ((c >= 48) & (c <= 57)) | ((c >= 65) & (c <= 70)) | ((c >= 97) & (c <= 102))
        valid[is_u] = ok
    bad = np.union1d(np.flatnonzero(codes < 32), odd[~valid])
    qa, qb = quotes[:-1], quotes[1:]
    span_bad = np.searchsorted(bad, qb) > np.searchsorted(bad, qa + 1)
    # the quote at qb is escaped when an odd run ends right before it
    escaped = np.isin(qb - 1, odd)
    m = len(quotes)
    terminal = np.ones(m, dtype=bool)
    terminal[:-1] = span_bad | ~escaped
    base = np.full(m, -1, dtype=np.int64)
    base[:-1] = np.where(span_bad, -1, qb + 1)
    first_terminal = np.minimum.accumulate(np.where(terminal, np.arange(m), m)[::-1])[::-1]
    return quotes, base[first_terminal]


# --------------------------------------------------------------------------------------------
# Containers: a memoised recogniser of the json module's grammar

_OK, _FAIL, _CHECK = 0, 1, 2  # _CHECK: an exception is possible; decode with json to know
_WS = re.compile(r"[ \t\n\r]*")
_STR = r'"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+"'
_LIT = r"(?:true|false|null|NaN|-?Infinity)"


@lru_cache(maxsize=4)
def _patterns(int_limit: int) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], str]:
    integer = r"(?:0|[1-9][0-9]*+)" if int_limit <= 0 else (
        r"(?:0|[1-9][0-9]{0,%s}+)(?![0-9])".replace("%s", str(max(int_limit - 2, 0)))
    )
    number = rf"-?{integer}(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?"
    scalar = rf"(?:{_STR}|{number}|{_LIT})"
    ws = r"[ \t\n\r]*+"
    array_run = re.compile(rf"(?:{ws},{ws}{scalar})*+")
    object_run = re.compile(rf"(?:{ws},{ws}{_STR}{ws}:{ws}{scalar})*+")
    full_number = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
    return array_run, object_run, full_number, scalar


def scalar_run() -> re.Pattern[str]:
    """A run of JSON scalars each after any whitespace and commas, matching exactly what the
    decoder decodes there (an integer at the digit limit ends the run)."""
    return _scalar_run(_int_limit())


@lru_cache(maxsize=4)
def _scalar_run(int_limit: int) -> re.Pattern[str]:
    scalar = _patterns(int_limit)[3]
    return re.compile(rf"(?:[ \t\n\r,]*+{scalar})*+")


class _Recogniser:
    """Outcome (status, end, depth) of decoding a container at a position, memoised, iterative."""

    def __init__(self, text: str, quote_end: dict[int, int], depth_cap: int) -> None:
        self.text = text
        self.n = len(text)
        self.quote_end = quote_end
        self.memo: dict[int, tuple[int, int, int]] = {}
        self.int_limit = _int_limit()
        self.array_run, self.object_run, self.number, _ = _patterns(self.int_limit)
        self.depth_cap = depth_cap
        self.last_open = max(text.rfind("["), text.rfind("{"))

    def _tail(self, is_obj: bool, state: str, p: int) -> tuple[int, int]:
        """(status, end) of a container's rest from p when no `[`/`{` follows: json decodes
        it behind a prefix that puts it in the same state (no children, so no memo needed)."""
        prefix = {("value", False): "[0,", ("after", False): "[0 ",
                  ("key", True): '{"":0,', ("after", True): '{"":0 '}[(state, is_obj)]
        try:
            _, end = _DECODER.raw_decode(prefix + self.text[p:])
        except json.JSONDecodeError:
            return _FAIL, -1
        except ValueError:  # an integer beyond the digit limit: decode it for real
            return _CHECK, -1
        return _OK, p + end - len(prefix)

    def _scalar(self, p: int) -> tuple[int, int]:
        """(status, end) of a non-container value at p."""
        text, c = self.text, self.text[p]
        if c == '"':
            end = self.quote_end.get(p, -1)
            return (_OK, end) if end >= 0 else (_FAIL, -1)
        for lit in ("null", "true", "false", "NaN", "Infinity", "-Infinity"):
            if text.startswith(lit, p):
                return _OK, p + len(lit)
        m = self.number.match(text, p)
        if m is None:
            return _FAIL, -1
        if self.int_limit > 0 and m.group(1) is None and m.group(2) is None:
            if m.end() - p - (text[p] == "-") >= self.int_limit:
                return _CHECK, m.end()  # int() of this literal may raise ValueError
        return _OK, m.end()

    def outcome(self, start: int) -> tuple[int, int, int]:
        """(status, end, depth) of the container at `start`, its children decided first."""
        if start in self.memo:
            return self.memo[start]
        # frame: [start, is_object, position, state, depth of deepest child so far]
        stack: list[list[Any]] = [[start, self.text[start] == "{", start + 1, "open", 0]]
        result: tuple[int, int, int] | None = None  # a finished child, handed to its parent
        while stack:
            result = self._move(stack, result)
        return self.memo[start]

    def _move(self, stack: list[list[Any]],
              result: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        """One move of the top frame: resume after a finished child (`result`) or open, then a
        key, a value and what follows it. Returns the outcome of a container it finishes."""
        ws: Any  # _WS matches everywhere (possibly empty), so its match is never None
        text, n, ws = self.text, self.n, _WS.match
        _, is_obj, p, state, depth = stack[-1]
        if result is not None:  # resume after a child container
            status, end, child_depth = result
            depth = max(depth, child_depth)
            if status != _OK:
                return self._finish(stack, status, -1, depth)
            p, state = end, "after"
        elif state == "open":
            p = ws(text, p).end()
            close = "}" if is_obj else "]"
            if p < n and text[p] == close:
                return self._finish(stack, _OK, p + 1, depth)
            state = "key" if is_obj else "value"
        if state != "child" and p > self.last_open:
            return self._finish(stack, *self._tail(is_obj, state, p), depth)
        if state == "key":
            p = self._key(p)
            if p < 0:
                return self._finish(stack, _FAIL, -1, depth)
            state = "value"
        if state == "value":
            return self._value(stack, p, depth)
        if state == "after":
            return self._after_value(stack, p, depth)
        return None

    def _key(self, p: int) -> int:
        """Position of the value after the object key at p and its colon; -1 if there is none."""
        ws: Any = _WS.match  # matches everywhere
        text, n = self.text, self.n
        if p >= n or text[p] != '"' or self.quote_end.get(p, -1) < 0:
            return -1
        p = ws(text, self.quote_end[p]).end()
        if p >= n or text[p] != ":":
            return -1
        return int(ws(text, p + 1).end())

    def _value(self, stack: list[list[Any]], p: int,
               depth: int) -> tuple[int, int, int] | None:
        """The value at p in the top frame: a known or deferred child container (pushed onto
        the stack) or a scalar, then what follows it."""
        text, frame = self.text, stack[-1]
        if p >= self.n:
            return self._finish(stack, _FAIL, -1, depth)
        if text[p] in "[{":
            known = self.memo.get(p)
            if known is None:
                if len(stack) >= self.depth_cap:  # the decoder would give up here
                    return self._finish(stack, _CHECK, -1, self.depth_cap)
                frame[2], frame[3], frame[4] = p, "child", depth
                stack.append([p, text[p] == "{", p + 1, "open", 0])
                return None
            status, end, child_depth = known
            depth = max(depth, child_depth)
            if status != _OK:
                return self._finish(stack, status, -1, depth)
            p = end
        else:
            status, end = self._scalar(p)
            if status != _OK:
                return self._finish(stack, status, -1, depth)
            p = end
        return self._after_value(stack, p, depth)

    def _after_value(self, stack: list[list[Any]], p: int,
                     depth: int) -> tuple[int, int, int] | None:
        """After a value at p in the top frame: a run of scalars, then the closing bracket
        (finished) or a comma (the frame moves on to its next key or value)."""
        ws: Any = _WS.match  # matches everywhere
        text, n, frame = self.text, self.n, stack[-1]
        is_obj = frame[1]
        if p > self.last_open:
            return self._finish(stack, *self._tail(is_obj, "after", p), depth)
        run: Any = self.object_run if is_obj else self.array_run  # matches everywhere
        p = ws(text, run.match(text, p).end()).end()
        close = "}" if is_obj else "]"
        if p < n and text[p] == close:
            return self._finish(stack, _OK, p + 1, depth)
        if p >= n or text[p] != ",":
            return self._finish(stack, _FAIL, -1, depth)
        p = ws(text, p + 1).end()
        frame[2], frame[3], frame[4] = p, "key" if is_obj else "value", depth
        return None

    def _finish(self, stack: list[list[Any]], status: int, end: int,
                depth: int) -> tuple[int, int, int]:
        """Pop the top frame and memoise its outcome (status, end, its depth + 1)."""
        frame = stack.pop()
        outcome = (status, end, depth + 1)
        self.memo[frame[0]] = outcome
        return outcome


_VALUE_START = np.array([ord(c) for c in '"[{-0123456789tfnNI'])


def _quick_outcomes(codes: np.ndarray, opens: np.ndarray, quotes: np.ndarray,
                    str_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(status, end) of every container start decided by its first tokens, vectorised:
    `[]`, `{}` and `["x"]` succeed; a bad first token, a bad string, or a string followed by
    anything but `,` or the closing bracket fails. -1 = undecided (needs the recogniser)."""
    n = len(codes)
    plain = np.append(
        np.flatnonzero((codes != 32) & (codes != 9) & (codes != 10) & (codes != 13)), n)

    padded = np.append(codes, -1)  # codes[n] = -1: "end of text"

    def nxt(i: np.ndarray) -> np.ndarray:  # first non-whitespace position >= i (n: none)
        c = padded[i]
        out = i.copy()
        space = (c == 32) | (c == 9) | (c == 10) | (c == 13)
        out[space] = plain[np.searchsorted(plain, i[space])]
        return out

    send = np.full(n + 1, -1, dtype=np.int64)
    send[quotes] = str_end
    is_array = codes[opens] == 91
    first = nxt(opens + 1)
    c1 = padded[first]
    status = np.full(len(opens), -1, dtype=np.int8)
    end = np.full(len(opens), -1, dtype=np.int64)
    empty = np.where(is_array, c1 == 93, c1 == 125)
    status[empty], end[empty] = _OK, first[empty] + 1
    starts_value = np.isin(c1, _VALUE_START)
    status[~empty & ~starts_value] = _FAIL
    status[~is_array & ~empty & (c1 != 34)] = _FAIL  # an object needs a key string first
    string = ~empty & (c1 == 34)
    e = np.where(string, send[first], -1)
    status[string & (e < 0)] = _FAIL
    good = string & (e >= 0)
    after = nxt(np.maximum(e, 0))
    c2 = padded[after]
    closes = good & is_array & (c2 == 93)
    status[closes], end[closes] = _OK, after[closes] + 1
    status[good & is_array & (c2 != 93) & (c2 != 44)] = _FAIL
    colon = good & ~is_array
    status[colon & (c2 != 58)] = _FAIL
    c3 = padded[nxt(np.minimum(after + 1, n))]
    status[colon & (c2 == 58) & ~np.isin(c3, _VALUE_START)] = _FAIL
    return status, end


def _may_raise(codes: np.ndarray, opens: np.ndarray, quotes: np.ndarray, str_end: np.ndarray,
               safe_depth: int) -> bool:
    """Whether some start could raise: a digit run at the integer limit, or nesting that could
    come near the decoder's recursion limit."""
    int_limit = _int_limit()
    if int_limit > 0:
        digit = (codes >= 48) & (codes <= 57)
        if digit.sum() >= int_limit:
            edges = np.flatnonzero(np.diff(np.concatenate([[0], digit.view(np.int8), [0]])))
            if (edges[1::2] - edges[::2] >= int_limit).any():
                return True
    return len(opens) >= safe_depth and _max_depth_bound(codes, quotes, str_end) >= safe_depth


def _extract_linear(text: str, loads_error: json.JSONDecodeError | None = None) -> Any:
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int64)
    quotes, str_end = _string_ends(codes)
    opens = np.flatnonzero((codes == 91) | (codes == 123))
    limit = decoder_depth_limit()
    safe_depth = max(limit - _DEPTH_MARGIN, 1)
    structured = -1
    if len(opens):
        status, _ = _quick_outcomes(codes, opens, quotes, str_end)
        quick_ok = opens[status == _OK]
        first_quick = int(quick_ok[0]) if len(quick_ok) else len(text)
        pending = opens[status < 0].tolist()
        may_raise: bool | None = None  # decided once an answer is known (it may end the scan)
        if pending:
            quote_end = dict(zip(quotes.tolist(), str_end.tolist(), strict=True))
            recogniser = _Recogniser(text, quote_end, limit + _DEPTH_MARGIN)
            recogniser.memo.update(
                (int(p), (int(st), -1, 1)) for p, st in zip(opens, status, strict=True)
                if st == _FAIL)
            if loads_error is not None and opens[0] == 0:
                # json.loads already decoded from 0: "Extra data" means a value ended there
                done = (_OK, loads_error.pos, 1) if loads_error.msg == "Extra data" else (
                    _FAIL, -1, 1)
                recogniser.memo[0] = done
        for start in pending:
            if structured >= 0 or start > first_quick:
                if may_raise is None:
                    may_raise = _may_raise(codes, opens, quotes, str_end, safe_depth)
                if not may_raise:
                    break  # an earlier start succeeded and no later one can raise
            result, _, depth = recogniser.outcome(start)
            if result == _FAIL and depth < safe_depth:
                continue
            if result == _CHECK or depth >= safe_depth:
                try:
                    value = _decode_at(text, start)  # the interpreter's own verdict
                except json.JSONDecodeError:
                    continue
                if not isinstance(value, (list, dict)):
                    continue
            if structured < 0:
                structured = start
        if first_quick < len(text) and (structured < 0 or first_quick < structured):
            structured = first_quick
    if structured >= 0:
        return _decode_at(text, structured)
    ok = np.flatnonzero(str_end >= 0)
    if len(ok):
        return _decode_at(text, int(quotes[ok[0]]))
    return text


def _max_depth_bound(codes: np.ndarray, quotes: np.ndarray, str_end: np.ndarray) -> int:
    """An upper bound of the nesting any start can reach: opening brackets minus the closing
    brackets outside every valid string, over any stretch of the text."""
    n = len(codes)
    ok = str_end >= 0
    cover = np.bincount(quotes[ok] + 1, minlength=n + 1) - np.bincount(
        str_end[ok] - 1, minlength=n + 1)
    hidden = np.cumsum(cover[:n]) > 0
    step = ((codes == 91) | (codes == 123)).astype(np.int64)
    step -= (((codes == 93) | (codes == 125)) & ~hidden).astype(np.int64)
    level = np.concatenate([[0], np.cumsum(step)])
    return int((level - np.minimum.accumulate(level)).max())
