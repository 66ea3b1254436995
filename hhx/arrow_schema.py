"""The Arrow schema of the official intermediates, for every parquet file hhx writes.

The official preprocessing (Jn-Huang/householdbench_eval, scripts/1_preprocessing/*.py) writes
each intermediate with `DataFrame.to_parquet(path, index=False)` under the versions its
pyproject pins for the pipeline (pandas 2.2.3, pyarrow 18.1.0). hhx runs a newer pandas (3.x),
whose defaults give other Arrow types for the same values. Measured with both stacks on one frame
(`to_parquet(index=False)`, then `pq.read_schema`):

| column (pandas 2.2.3 dtype) | official Arrow type | official pandas metadata    | pandas 3 writes instead            |
|-----------------------------|---------------------|-----------------------------|------------------------------------|
| text (object)               | string              | unicode / object            | large_string, object / str         |
| text (StringDtype "string") | string              | unicode / string            | large_string, object / string      |
| datetime64[ns] (naive, tz)  | timestamp[ns(, tz)] | datetime(tz) / datetime64[ns] | timestamp[us], datetime64[us]    |
| Int64, Int8, boolean, ...   | int64, int8, bool   | int64 / Int64, ...          | the same                           |
| category                    | dictionary          | categorical / <codes dtype> | the same                           |
| (top level)                 | no "attributes" key |                             | "attributes": {} added             |

(metadata shown as pandas_type / numpy_type.) `official_table` turns pandas 3's table into the
official one: text as `string`, timestamps and durations in ns, and the per-column pandas
metadata the official writer gives the same frame, so that `pd.read_parquet` of either file
gives the same dtypes (an `Int64` column written as such reads back as `Int64`). The `creator`
and `pandas_version` fields keep naming the libraries that really wrote the file.

Which columns are nullable extension dtypes (e.g. BEA `statefip` as `Int64`) is each builder's
business: it holds the frame as the official script holds it, and this writer keeps that.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hhx.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

PANDAS_KEY = b"pandas"
# pandas 3's default text dtype ("str"); pandas 2.2.3 held the same column as object.
_NUMPY_TEXT = {"str": "object"}


def official_type(typ: pa.DataType) -> pa.DataType:
    """The Arrow type the official writer gives a column that pandas 3 gives `typ`."""
    if pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return pa.string()
    if pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ):
        return pa.binary()
    if pa.types.is_timestamp(typ) and typ.unit != "ns":
        return pa.timestamp("ns", typ.tz)
    if pa.types.is_duration(typ) and typ.unit != "ns":
        return pa.duration("ns")
    if pa.types.is_dictionary(typ):
        return pa.dictionary(typ.index_type, official_type(typ.value_type), typ.ordered)
    if pa.types.is_large_list(typ) or pa.types.is_list(typ):
        return pa.list_(official_type(typ.value_type))
    return typ


def _numpy_type(numpy_type: str | None, typ: pa.DataType) -> str | None:
    if numpy_type in _NUMPY_TEXT:
        return _NUMPY_TEXT[numpy_type]
    if numpy_type and pa.types.is_timestamp(typ) and numpy_type.startswith("datetime64["):
        return f"datetime64[{typ.unit}]"
    if numpy_type and pa.types.is_duration(typ) and numpy_type.startswith("timedelta64["):
        return f"timedelta64[{typ.unit}]"
    return numpy_type


def _logical_type() -> Callable[[pa.DataType], str]:
    # pyarrow's own rule from Arrow type to pandas_type ("unicode" for string, ...)
    from pyarrow.pandas_compat import get_logical_type

    return get_logical_type


def official_pandas_metadata(meta: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    """pandas metadata `meta` (of a table without index columns) as the official writer gives
    it for the fields of `schema` (already of official types)."""
    logical = _logical_type()
    columns = []
    by_name = {field.name: field for field in schema}
    for col in meta.get("columns", []):
        field = by_name.get(col.get("field_name", col.get("name")))
        if field is None:  # an index column: none in intermediates (index=False); kept as is
            columns.append(col)
            continue
        fixed = dict(col)
        fixed["pandas_type"] = logical(field.type)
        fixed["numpy_type"] = _numpy_type(col.get("numpy_type"), field.type)
        columns.append(fixed)
    out = {key: value for key, value in meta.items() if key != "attributes"}
    out["columns"] = columns
    if meta.get("attributes"):  # DataFrame.attrs: pyarrow 18 did not write them; keep real ones
        out["attributes"] = meta["attributes"]
    # the official key order (pyarrow 18.1.0)
    order = ["index_columns", "column_indexes", "columns", "attributes", "creator",
             "pandas_version"]
    return {key: out[key] for key in sorted(out, key=lambda k: order.index(k)
                                            if k in order else len(order))}


def official_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with official field types and pandas metadata (other metadata kept)."""
    fields = [field.with_type(official_type(field.type)) for field in schema]
    metadata = dict(schema.metadata or {})
    out = pa.schema(fields)
    if PANDAS_KEY in metadata:
        meta = json.loads(metadata[PANDAS_KEY])
        metadata[PANDAS_KEY] = json.dumps(official_pandas_metadata(meta, out)).encode("utf-8")
    return out.with_metadata(metadata) if metadata else out


def conform(table: pa.Table, schema: pa.Schema, source: str) -> pa.Table:
    """`table` cast to `schema`; a timestamp outside the ns range (years 1677-2262) or a
    column that does not cast is an error naming the column."""
    if table.schema.equals(schema, check_metadata=True):
        return table
    columns = []
    for name, column, field in zip(table.column_names, table.columns, schema, strict=True):
        if column.type.equals(field.type):
            columns.append(column)
            continue
        try:
            columns.append(column.cast(field.type, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise DataError(f"{source}: column {name!r} does not convert from {column.type} to "
                            f"{field.type} as the official intermediates store it ({exc}); fix "
                            f"the values or the builder") from None
    return pa.Table.from_arrays(columns, schema=schema)


def official_table(frame: pd.DataFrame, source: str = "frame") -> pa.Table:
    """`frame` as the Arrow table the official `to_parquet(index=False)` writes."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return conform(table, official_schema(table.schema), source)


def nonofficial_fields(schema: pa.Schema) -> list[str]:
    """Fields whose type the official writer would not produce (large text, non-ns times)."""
    return [f"{field.name}: {field.type}" for field in schema
            if not official_type(field.type).equals(field.type)]
