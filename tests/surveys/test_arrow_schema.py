"""Intermediates carry the official Arrow schema (hhx.arrow_schema): the writer against a file
the official writer (pandas 2.2.3 + pyarrow 18.1.0) wrote from the same hand-made rows, and every
intermediate the demo builds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hhx.arrow_schema import nonofficial_fields, official_table
from hhx.errors import DataError
from hhx.io import atomic_path, write_parquet_atomic, write_parquet_chunks

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "arrow_schema_pandas223.parquet"
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from arrow_frame import sample_frame  # noqa: E402

# The writer's own library versions, which hhx does not pretend to be the official ones.
VERSIONS = ("creator", "pandas_version")


def pandas_meta(schema: pa.Schema) -> dict:
    meta = json.loads(schema.metadata[b"pandas"])
    return {key: value for key, value in meta.items() if key not in VERSIONS}


def test_the_writer_gives_the_official_files_schema_and_pandas_metadata(tmp_path):
    frame = sample_frame()
    # hhx's pandas holds this frame with other dtypes than the official one did
    assert str(frame["date"].dtype) != "datetime64[ns]" or str(frame["text"].dtype) != "object"
    mine = write_parquet_atomic(tmp_path / "mine.parquet", frame)
    official = pq.read_schema(GOLDEN)
    ours = pq.read_schema(mine)
    assert ours.equals(official), f"{ours}\n!=\n{official}"
    assert pandas_meta(ours) == pandas_meta(official)
    assert pq.read_table(mine).equals(pq.read_table(GOLDEN))
    # the same frame back, in either file: extension dtypes (Int64, boolean, ...) included
    pd.testing.assert_frame_equal(pd.read_parquet(mine), pd.read_parquet(GOLDEN))


def test_pandas_own_writer_differs_where_the_official_schema_is_restored(tmp_path):
    """What the shared writer is for: pandas 3's to_parquet gives large text and us times."""
    plain = tmp_path / "plain.parquet"
    sample_frame().to_parquet(plain, index=False)
    bad = nonofficial_fields(pq.read_schema(plain))
    assert "text: large_string" in bad and "date: timestamp[us]" in bad
    assert nonofficial_fields(pq.read_schema(GOLDEN)) == []


def test_chunks_take_the_official_schema_from_the_first_chunk(tmp_path):
    frame = sample_frame()
    target = tmp_path / "chunks.parquet"
    with atomic_path(target) as tmp:
        rows = write_parquet_chunks(tmp, [frame.iloc[:2], frame.iloc[2:]], "chunks test")
    assert rows == 3
    official = pq.read_schema(GOLDEN)
    file = pq.ParquetFile(target)
    assert file.num_row_groups == 2
    assert file.schema_arrow.equals(official)
    assert pandas_meta(file.schema_arrow) == pandas_meta(official)


def test_a_time_outside_the_nanosecond_range_is_one_line_naming_the_column(tmp_path):
    frame = pd.DataFrame({"when": pd.to_datetime(["2020-01-01", "2300-01-01"])})
    assert str(frame["when"].dtype) != "datetime64[ns]"  # pandas 3 holds year 2300 in us
    with pytest.raises(DataError, match=r"out\.parquet: column 'when' does not convert"):
        write_parquet_atomic(tmp_path / "out.parquet", frame)
    assert not (tmp_path / "out.parquet").exists()


def test_other_metadata_and_real_frame_attributes_are_kept():
    frame = pd.DataFrame({"x": ["a"]})
    frame.attrs["note"] = "kept"
    table = official_table(frame)
    meta = json.loads(table.schema.metadata[b"pandas"])
    assert meta["attributes"] == {"note": "kept"}
    assert table.schema.field("x").type == pa.string()


# --------------------------------------------------------------------------------------------
# every intermediate the demo builds


def _as_official(numpy_type: str) -> str:
    """pandas 3's numpy_type as pandas 2.2.3 records the same column: text held as object,
    times in ns (the time zone stays in the column's metadata)."""
    if numpy_type == "str":
        return "object"
    for kind in ("datetime64[", "timedelta64["):
        if numpy_type.startswith(kind):
            return kind + "ns]"
    return numpy_type


# The ten sources the issue measured against the official files (the macro series and the two
# state-level policy tables), fast on the demo; the survey microdata in the heavy tier.
MACRO = ["cpi", "fred_qd", "fhfa_hpi", "bls_laus", "bea_sainc", "state_macro_panel",
         "cps_ui_policy", "sce_financing"]
MACRO_OUTPUTS = {"cpi_major_groups", "householdbench_macro_context", "fhfa_hpi_state_annual",
                 "fhfa_hpi_us_annual", "bls_laus_state_annual", "bea_sainc_state_annual",
                 "bea_sainc_us_annual", "state_macro_panel", "cps_ui_policy",
                 "house_sce_financing"}
SURVEY_OUTPUTS = {"cps_basic", "cex_interview", "cex_rebate_2001", "cex_diary_daily",
                  "psid_main", "sce_core", "sce_housing", "mich", "census_decennial",
                  "release_dates_cps"}
SMALL_DEMO = ("data.demo.surveys={cps: {n_households: 300}, psid: {n_families: 120}, "
              "census: {n_households: 200}, cex_diary: {n_cu_per_quarter: 8}, "
              "cex_interview: {n_cu_per_quarter: 12}, mich: {per_month: 15}, "
              "sce: {new_per_month: 6, lockin_entrants: 40}}")


def build_demo(root: Path, names: list[str]) -> Path:
    """`names` (and what they read) built from a small demo under `root`; the intermediates."""
    from hhx.tasks.sources import ensure_demo_raw, ensure_surveys, run_surveys
    from tests.tasks.test_sources import cfg_for

    cfg = cfg_for(root, SMALL_DEMO)
    surveys = run_surveys(cfg.data, names)
    ensure_demo_raw(cfg.data, surveys)
    ensure_surveys(cfg.data, surveys)
    return root / "inter"


@pytest.fixture(scope="module")
def macro_intermediates(tmp_path_factory) -> Path:
    return build_demo(tmp_path_factory.mktemp("arrow_macro"), MACRO)


def check_official_schemas(folder: Path, expected: set[str]) -> None:
    """Every parquet file in `folder`: official Arrow types, and pandas metadata that is pandas'
    own record of the frame it holds, spelt as the official pandas 2.2.3 writes it."""
    files = sorted(folder.glob("*.parquet"))
    assert expected <= {p.stem for p in files}, sorted(p.stem for p in files)
    for path in files:
        schema = pq.read_schema(path)
        assert nonofficial_fields(schema) == [], path.name
        meta = json.loads(schema.metadata[b"pandas"])
        assert "attributes" not in meta, path.name
        assert meta["index_columns"] == [], path.name
        frame = pd.read_parquet(path)
        pandas_own = json.loads(pa.Schema.from_pandas(frame, preserve_index=False)
                                .metadata[b"pandas"])["columns"]
        for col, own in zip(meta["columns"], pandas_own, strict=True):
            where = f"{path.name}: {col['name']}"
            assert col["name"] == own["name"], where
            field = schema.field(col["field_name"])
            # text is "unicode" (large_string would make pyarrow say "object")
            if pa.types.is_string(field.type):
                assert col["pandas_type"] == "unicode", where
            if col["pandas_type"] == "empty":  # all missing: an object column of None
                continue
            # pandas' own record of the frame read back (an Int64 column stays Int64)
            assert col["numpy_type"] == _as_official(own["numpy_type"]), where
            assert col["metadata"] == own["metadata"], where


@pytest.mark.slow
def test_every_macro_intermediate_has_the_official_arrow_schema(macro_intermediates):
    check_official_schemas(macro_intermediates, MACRO_OUTPUTS)


@pytest.mark.heavy
def test_every_demo_intermediate_has_the_official_arrow_schema(tmp_path):
    from hhx.surveys.registry import survey_names

    folder = build_demo(tmp_path, list(survey_names()))
    check_official_schemas(folder, MACRO_OUTPUTS | SURVEY_OUTPUTS)


@pytest.mark.slow
def test_bea_statefip_carries_the_official_int64_metadata(macro_intermediates):
    schema = pq.read_schema(macro_intermediates / "bea_sainc_state_annual.parquet")
    cols = {c["name"]: c for c in json.loads(schema.metadata[b"pandas"])["columns"]}
    assert (cols["statefip"]["pandas_type"], cols["statefip"]["numpy_type"]) == ("int64", "Int64")
    assert cols["state_name"]["numpy_type"] == "object"
    assert schema.field("state_name").type == pa.string()
    macro = pq.read_schema(macro_intermediates / "householdbench_macro_context.parquet")
    assert macro.field("macro_reference_date").type == pa.timestamp("ns")
