"""The task catalog (hhx/bench/catalog.csv) and what `stage=list` says per task: the release's
facts, download or rebuild, and each task's own input files (not another source's)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir

from hhx.bench import catalog as cat
from hhx.paths import register_resolvers
from hhx.predictors.base import register_schemas
from hhx.stages.listing import raw_state, task_inputs, task_rows
from hhx.sweeps.grid import register_resolvers as register_sweep_resolvers
from hhx.tasks.registry import load_task, task_names

CONF = Path(__file__).resolve().parents[2] / "conf"
register_schemas()
register_resolvers()
register_sweep_resolvers()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def test_catalog_covers_every_task_and_matches_the_release_totals():
    rows = cat.catalog()
    # the official release's tasks, each a task of hhx's (in the registry's order); a task hhx
    # adds beyond the release has no row (listing and the dry run say "?" for its sizes)
    assert list(rows) == [name for name in task_names() if name in rows]
    assert len(rows) == 32
    # the reference README's totals: 32 tasks, 17 on the Hub, 4,663,568 rows, 6,079 + 2,500 tests
    assert len(cat.downloadable_tasks()) == 17
    assert sum(r.rows for r in rows.values()) == 4_663_568
    assert sum(r.test_pre for r in rows.values()) == 6_079
    assert sum(r.test_post for r in rows.values()) == 2_500
    assert sum(r.test_pre for r in rows.values() if r.downloadable) == 3_200
    assert sum(r.test_post for r in rows.values() if r.downloadable) == 1_500
    for name, row in rows.items():
        task = load_task(name)
        assert (row.mode, row.target_type) == (task.mode.value, task.target_type.value), name
        assert row.downloadable == task.on_hf, name
        assert row.source and row.licence and row.prompt_chars > 0
        assert row.downloadable or "not redistributable" in row.licence, name


def test_a_task_lists_its_own_files_first_and_the_users_downloads_before_supplied(tmp_path):
    inputs = [p.relative_to(tmp_path).as_posix() for p in task_inputs("labor_cps_jobfind",
                                                                          tmp_path)]
    assert inputs[0] == "micro/cps/cps_basic.csv.gz" and "macro/fred-qd/2026-07-QD.csv" in inputs
    assert "micro/cps/cps_basic.csv.gz" in raw_state("labor_cps_jobfind", tmp_path)
    assert "IPUMS CPS" in raw_state("labor_cps_jobfind", tmp_path)
    assert "micro/mich/mich.csv" in raw_state("macro_mich_outlook", tmp_path)
    assert "icpsr" in raw_state("cons_cex_sspay", tmp_path)  # not the supplied BLS diaries
    assert "micro/sce/" in raw_state("cons_sce_growth", tmp_path)
    for path in task_inputs("cons_sce_growth", tmp_path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    assert raw_state("cons_sce_growth", tmp_path).startswith("raw (")


def test_stage_list_rows_say_download_or_rebuild_and_see_a_fetched_eval_sample(tmp_path):
    cfg = composed(f"paths.root={tmp_path}")
    sample = tmp_path / "data" / "official" / "householdbench_evalsample" / "pre_cutoff"
    sample.mkdir(parents=True)
    (sample / "cons_sce_growth.jsonl").write_text("{}\n")
    rows = {r["task"]: r for r in task_rows(cfg)}
    assert rows["cons_sce_growth"]["release"] == "download"
    assert "official eval sample" in rows["cons_sce_growth"]["data here"]
    assert "not fetched" in rows["house_sce_move"]["data here"]
    jobfind = rows["labor_cps_jobfind"]
    assert jobfind["release"] == "rebuild" and jobfind["rows"] == "505,774"
    assert "cps_basic.csv.gz" in jobfind["data here"] and "fred-qd" not in jobfind["data here"]


def test_the_readme_real_data_table_is_the_catalog():
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = text.split("### Real data", 1)[1].split("\n### ", 1)[0]
    found = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith("`") and cells[0].strip("`") in cat.catalog():
            found[cells[0].strip("`")] = cells
    assert list(found) == list(cat.catalog())
    for name, cells in found.items():
        row = cat.catalog()[name]
        assert cells[1:5] == [row.survey, row.target_type, row.years, f"{row.rows:,}"], name
        assert cells[5] == f"{row.test_pre} / {row.test_post or '–'}", name
        assert cells[6].startswith("download" if row.downloadable else "rebuild: "), name
