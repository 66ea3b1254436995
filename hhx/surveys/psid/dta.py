"""Stata .dta (formats 117-119) read strictly forward, and the .dta members of the PSID
release ZIPs (read compressed, never unpacked) opened as such streams; used by hhx.surveys.psid.shelf
(PSID-SHELF long file) and hhx.surveys.psid.main_study (Complete Main Study).

Facts: shared/spec/00_common.md 1.1 (input fingerprint).

Reading. pandas' StataReader re-reads the strL table at the end of a .dta before every chunk
unless value labels were read, and on a ZIP member every backward seek restarts decompression
(measured on a 26 MB test file in 10 chunks: 13 times one decompression pass), so a 7.9 GB member
would be decompressed once per chunk. `DtaStream` therefore parses the Stata 117/118/119 layout
itself and reads a member strictly forward, once: header, then only the needed fields of each row
through a numpy record view (memory is bounded by one ~64 MB block), then the strL texts (when a
variable is a strL) and the value labels at the end. The spec-1.1 fingerprint of a one-member ZIP
is computed from the same bytes.
"""

from __future__ import annotations

import hashlib
import struct
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from hhx.errors import DataError
from hhx.surveys.base import input_sha256

SOURCE_URL = (
    "openICPSR project 194322 V2 (PSID-SHELF 1968-2021, https://doi.org/10.3886/E194322V2)"
)

_BLOCK_BYTES = 64 << 20  # rows are read in blocks of about this size


# ---------------------------------------------------------------------------------------------
# Stata .dta (formats 117-119) read strictly forward


class _Source:
    """A forward-only byte source that counts its position and can hash what passes through."""

    def __init__(self, fh: IO[bytes], where: str, digest: Any = None) -> None:
        self._fh = fh
        self.where = where
        self.pos = 0
        self.digest = digest

    def read(self, n: int) -> bytes:
        parts = []
        left = n
        while left > 0:
            piece = self._fh.read(min(left, 1 << 24))
            if not piece:
                break
            parts.append(piece)
            left -= len(piece)
        data = b"".join(parts) if len(parts) != 1 else parts[0]
        if len(data) != n:
            raise DataError(
                f"{self.where}: file ends early (wanted {n} bytes at offset {self.pos}); "
                "the archive is truncated, download it again"
            )
        self.pos += n
        if self.digest is not None:
            self.digest.update(data)
        return data

    def skip(self, n: int) -> None:
        while n > 0:
            step = min(n, 1 << 24)
            self.read(step)
            n -= step

    def drain(self) -> None:
        while True:
            piece = self._fh.read(1 << 24)
            if not piece:
                return
            self.pos += len(piece)
            if self.digest is not None:
                self.digest.update(piece)


# Stata storage types (117+): 1-2045 fixed strings, 32768 strL, then the numeric types.
_NUMERIC = {65526: "f8", 65527: "f4", 65528: "i4", 65529: "i2", 65530: "i1"}
_STRL = 32768
_FLOAT_MAX = struct.unpack("<f", b"\xff\xff\xff\x7e")[0]
_DOUBLE_MAX = struct.unpack("<d", b"\xff\xff\xff\xff\xff\xff\xdf\x7f")[0]
# Largest non-missing value per type; larger ones are Stata missing values (., .a-.z).
_VALID_MAX = {"i1": 100, "i2": 32740, "i4": 2147483620, "f4": _FLOAT_MAX, "f8": _DOUBLE_MAX}


class DtaStream:
    """Header, rows and value labels of a Stata 13+ (.dta 117-119) file, read in one pass.

    Construct, call `rows(columns)` once (optional), then `finish()` for the value labels."""

    def __init__(self, source: _Source) -> None:
        self._src = source
        self.where = source.where
        if source.read(11) != b"<stata_dta>":
            raise DataError(
                f"{self.where}: not a Stata 13+ .dta file (format 117-119); download the "
                f"original file again from {SOURCE_URL}"
            )
        self._expect(b"<header><release>")
        try:
            self.release = int(source.read(3))
        except ValueError:
            raise DataError(f"{self.where}: unreadable Stata release number") from None
        if self.release not in (117, 118, 119):
            raise DataError(f"{self.where}: Stata format {self.release} is not supported (117-119)")
        self._expect(b"</release><byteorder>")
        order = source.read(3)
        if order not in (b"LSF", b"MSF"):
            raise DataError(f"{self.where}: unknown byte order {order!r}")
        self.order = "<" if order == b"LSF" else ">"
        endian: Literal["little", "big"] = "little" if self.order == "<" else "big"
        self._expect(b"</byteorder><K>")
        self.nvar = int.from_bytes(source.read(4 if self.release == 119 else 2), endian)
        self._expect(b"</K><N>")
        self.nobs = int.from_bytes(source.read(4 if self.release == 117 else 8), endian)
        self._expect(b"</N><label>")
        self.encoding = "latin-1" if self.release == 117 else "utf-8"
        length = int.from_bytes(source.read(1 if self.release == 117 else 2), endian)
        self.data_label = source.read(length).decode(self.encoding, errors="replace")
        self._expect(b"</label><timestamp>")
        source.skip(source.read(1)[0])
        self._expect(b"</timestamp></header><map>")
        offsets = struct.unpack(f"{self.order}14Q", source.read(112))
        self._value_labels_at = offsets[11]
        self._expect(b"</map>")
        head_at = source.pos
        head = source.read(offsets[9] - head_at)  # variable types ... characteristics
        name_len = 33 if self.release == 117 else 129
        label_len = 81 if self.release == 117 else 321
        types = np.frombuffer(
            self._section(head, head_at, offsets[2], b"<variable_types>", 2 * self.nvar),
            dtype=f"{self.order}u2",
        )
        self.types = [int(t) for t in types]
        self.names = self._strings(head, head_at, offsets[3], b"<varnames>", name_len)
        self.label_sets = self._strings(
            head, head_at, offsets[6], b"<value_label_names>", name_len
        )
        self.variable_labels = self._strings(
            head, head_at, offsets[7], b"<variable_labels>", label_len
        )
        self._expect(b"<data>")
        widths = [t if t <= 2045 else 8 if t in (_STRL, 65526) else int(_NUMERIC[t][1])
                  for t in self.types]
        self._offsets = np.concatenate([[0], np.cumsum(widths)]).astype(int).tolist()
        self.row_size = self._offsets[-1]
        self._rows_started = False
        self._rows_read = 0

    def _expect(self, tag: bytes) -> None:
        got = self._src.read(len(tag))
        if got != tag:
            raise DataError(f"{self.where}: damaged Stata file (expected {tag!r}, got {got!r})")

    def _section(self, head: bytes, head_at: int, at: int, tag: bytes, size: int) -> bytes:
        start = at - head_at
        if head[start : start + len(tag)] != tag:
            raise DataError(f"{self.where}: damaged Stata file (no {tag!r} section)")
        return head[start + len(tag) : start + len(tag) + size]

    def _strings(self, head: bytes, head_at: int, at: int, tag: bytes, width: int) -> list[str]:
        raw = self._section(head, head_at, at, tag, width * self.nvar)
        return [
            raw[i * width : (i + 1) * width].split(b"\0", 1)[0].decode(
                self.encoding, errors="replace"
            )
            for i in range(self.nvar)
        ]

    def kind(self, name: str) -> str:
        """'number', 'string' (fixed width) or 'strL' for a variable name in the file."""
        t = self.types[self.names.index(name)]
        return "number" if t in _NUMERIC else "strL" if t == _STRL else "string"

    def rows(
        self, columns: list[str], chunk_rows: int = 250_000
    ) -> Iterator[dict[str, np.ndarray]]:
        """Blocks of rows as {name: values}: numbers float64 (Stata missing -> NaN), fixed-width
        strings as object arrays of str, strL variables as int64 references (0: empty) that
        `finish(strls=True)` resolves through `strl_text` (their text sits after the data)."""
        if self._rows_started:
            raise RuntimeError("DtaStream.rows() can run once")
        self._rows_started = True
        index = {name: i for i, name in enumerate(self.names)}
        fields = []
        for name in columns:
            i = index[name]
            t = self.types[i]
            if t == _STRL:
                fmt = "V8"
            else:
                fmt = f"{self.order}{_NUMERIC[t]}" if t in _NUMERIC else f"S{t}"
            fields.append((name, fmt, self._offsets[i]))
        record = np.dtype(
            {
                "names": [f"f{k}" for k in range(len(fields))],
                "formats": [f[1] for f in fields],
                "offsets": [f[2] for f in fields],
                "itemsize": max(self.row_size, 1),
            }
        )
        per_block = max(1, min(int(chunk_rows), _BLOCK_BYTES // max(self.row_size, 1)))
        while self._rows_read < self.nobs:
            n = min(per_block, self.nobs - self._rows_read)
            view = np.frombuffer(self._src.read(n * self.row_size), dtype=record, count=n)
            out: dict[str, np.ndarray] = {}
            for k, (name, fmt, _) in enumerate(fields):
                values = view[f"f{k}"]
                if fmt == "V8":
                    out[name] = self._strl_refs(values)
                    continue
                if fmt.startswith("S"):
                    out[name] = np.array(
                        [v.split(b"\0", 1)[0].decode(self.encoding, errors="replace")
                         for v in values],
                        dtype=object,
                    )
                    continue
                numbers = values.astype(np.float64)
                kind = fmt[1:]
                limit = _VALID_MAX[kind]
                missing = numbers > limit
                if kind in ("f4", "f8"):
                    missing |= np.isnan(numbers) | (numbers < -limit)
                numbers[missing] = np.nan
                out[name] = numbers
            self._rows_read += n
            yield out

    def _strl_refs(self, raw: np.ndarray) -> np.ndarray:
        """(v, o) of each 8-byte strL field as one int64, v * 2**40 + o (117: v 4 bytes, o 4;
        118: v 2, o 6; 119: v 3, o 5; each in the file's byte order)."""
        b = np.frombuffer(raw.tobytes(), dtype=np.uint8).reshape(-1, 8).astype(np.uint64)
        v_bytes = {117: 4, 118: 2, 119: 3}[self.release]

        def number(part: np.ndarray) -> np.ndarray:
            if self.order == ">":
                part = part[:, ::-1]
            weights = np.left_shift(np.uint64(1), 8 * np.arange(part.shape[1], dtype=np.uint64))
            return (part * weights).sum(axis=1)

        v, o = number(b[:, :v_bytes]), number(b[:, v_bytes:])
        return (v * np.uint64(1 << 40) + o).astype(np.int64)

    def _strl_table(self) -> dict[int, str]:
        """The <strls> section: reference -> text (binary strLs decoded as text too)."""
        self._expect(b"<strls>")
        endian: Literal["little", "big"] = "little" if self.order == "<" else "big"
        o_bytes = 4 if self.release == 117 else 8
        table: dict[int, str] = {}
        while True:
            tag = self._src.read(3)
            if tag == b"</s":
                self._expect(b"trls>")
                return table
            if tag != b"GSO":
                raise DataError(f"{self.where}: damaged strL table ({tag!r})")
            v = int.from_bytes(self._src.read(4), endian)
            o = int.from_bytes(self._src.read(o_bytes), endian)
            kind = self._src.read(1)[0]
            length = int.from_bytes(self._src.read(4), endian)
            data = self._src.read(length)
            if kind == 130:  # ASCII/UTF-8, null-terminated
                data = data.split(b"\0", 1)[0]
            table[v * (1 << 40) + o] = data.decode(self.encoding, errors="replace")

    def finish(self, labels: bool = True, strls: bool = False) -> dict[str, dict[int, str]]:
        """Read past the data; return {variable: {code: label}} for variables with a value-label
        set (empty if `labels` is False), then read to the end of the member. With `strls`, the
        strL texts are kept in `strl_text` (reference -> text; reference 0 is the empty text)."""
        self._rows_started = True
        self._src.skip((self.nobs - self._rows_read) * self.row_size)
        self._rows_read = self.nobs
        self.strl_text: dict[int, str] = {0: ""}
        if strls:
            self._expect(b"</data>")
            self.strl_text.update(self._strl_table())
        tables: dict[str, dict[int, str]] = {}
        if labels:
            self._src.skip(self._value_labels_at - self._src.pos)
            tables = self._value_label_tables()
        self._src.drain()
        by_var = {}
        for name, set_name in zip(self.names, self.label_sets, strict=True):
            if set_name and set_name in tables:
                by_var[name] = tables[set_name]
        return by_var

    def _value_label_tables(self) -> dict[str, dict[int, str]]:
        self._expect(b"<value_labels>")
        name_len = 33 if self.release == 117 else 129
        tables: dict[str, dict[int, str]] = {}
        while True:
            tag = self._src.read(5)
            if tag == b"</val":
                self._expect(b"ue_labels>")
                return tables
            if tag != b"<lbl>":
                raise DataError(f"{self.where}: damaged value-label table ({tag!r})")
            length = struct.unpack(f"{self.order}i", self._src.read(4))[0]
            name = self._src.read(name_len).split(b"\0", 1)[0].decode(self.encoding, "replace")
            self._src.read(3)
            table = self._src.read(length)
            self._expect(b"</lbl>")
            n, text_len = struct.unpack(f"{self.order}ii", table[:8])
            offs = np.frombuffer(table, dtype=f"{self.order}i4", count=n, offset=8)
            vals = np.frombuffer(table, dtype=f"{self.order}i4", count=n, offset=8 + 4 * n)
            text = table[8 + 8 * n : 8 + 8 * n + text_len]
            labels = {}
            for o, v in zip(offs.tolist(), vals.tolist(), strict=True):
                end = text.find(b"\0", o)
                labels[int(v)] = text[o : end if end >= 0 else len(text)].decode(
                    self.encoding, errors="replace"
                )
            tables[name] = labels


@dataclass
class _Member:
    stream: DtaStream
    source: _Source
    zip_path: Path
    member: str
    single_member: bool


@contextmanager
def open_member(zip_path: Path, member: str, what: str) -> Iterator[_Member]:
    """The named .dta member of a ZIP (matched by file name, any folder inside the archive) as a
    DtaStream; while reading, the bytes feed the spec-1.1 fingerprint of a one-member ZIP."""
    if not zip_path.is_file():
        raise DataError(
            f"{zip_path}: {what} not found; download it from {SOURCE_URL} and keep it compressed "
            "at that path"
        )
    try:
        zf = zipfile.ZipFile(zip_path)
    except zipfile.BadZipFile:
        raise DataError(f"{zip_path}: not a readable ZIP archive; download it again") from None
    with zf:
        files = [i for i in zf.infolist() if not i.is_dir()]
        matches = [i for i in files if Path(i.filename).name.lower() == member.lower()]
        if not matches:
            listing = ", ".join(i.filename for i in files[:5]) or "nothing"
            raise DataError(
                f"{zip_path}: member {member} not found in the archive (it holds {listing}); "
                f"download the original archive from {SOURCE_URL}"
            )
        info = matches[0]
        digest = None
        if len(files) == 1:
            digest = hashlib.sha256()
            digest.update(info.filename.encode("utf-8") + b"\0")
            digest.update(info.file_size.to_bytes(8, "big"))
        where = f"{zip_path}!{info.filename}"
        with zf.open(info) as fh:
            source = _Source(fh, where, digest)
            try:
                yield _Member(DtaStream(source), source, zip_path, info.filename, len(files) == 1)
            except zipfile.BadZipFile as exc:
                raise DataError(f"{where}: damaged archive ({exc}); download it again") from None


def _fingerprint(member: _Member) -> str:
    """The spec-1.1 fingerprint, from the bytes already read when the ZIP has one member."""
    if member.single_member and member.source.digest is not None:
        return member.source.digest.hexdigest()
    return input_sha256(member.zip_path)


def _column_map(stream: DtaStream, path: str) -> dict[str, str]:
    """lower-case name -> name in the file; names equal up to case are an error."""
    out: dict[str, str] = {}
    for name in stream.names:
        low = name.lower()
        if low in out:
            raise DataError(f"{path}: variables {out[low]} and {name} differ only by case")
        out[low] = name
    return out

