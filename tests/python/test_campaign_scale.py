"""Campaign work that must not grow with the campaign (issue 16 §2), checked by counting work:
the summary rebuild opens only the runs it does not hold yet, a query opens none when the
summary is up to date, and the result always equals a rebuild from scratch. Plus the per-run
savings: Parquet chunks joined once, and campaign runs simulated in longer chunks with the same
results."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ratelab.campaign.plan import RunSpec

from test_campaign import TINY  # the one-flow 3 s scenario every campaign test uses


def _spec(tmp_path: Path, seed: int, controller: str = "gcc") -> RunSpec:
    from ratelab.scenario import load_scenario

    path = tmp_path / "tiny.toml"
    if not path.exists():
        path.write_text(TINY)
    doc = load_scenario(str(path)).data
    return RunSpec("c", f"controller={controller}/scenario=tiny/seed={seed}", controller, controller, {}, "tiny", "tiny",
                   doc, seed)


def _run(tmp_path: Path, root: Path, seeds, controller: str = "gcc") -> None:
    from ratelab.campaign.store import execute_run

    (root / ".tmp").mkdir(parents=True, exist_ok=True)
    for s in seeds:
        assert execute_run(_spec(tmp_path, s, controller), root)["status"] == "done"


def _sorted(table: pa.Table) -> pa.Table:
    """A summary's rows in key order, its columns by name (an incremental summary may list its
    columns in another order than a full rebuild)."""
    table = table.select(sorted(table.column_names)).replace_schema_metadata(None)
    return table.sort_by([("controller", "ascending"), ("scenario", "ascending"), ("seed", "ascending"), ("id", "ascending")])


def _equals_full_rebuild(root: Path, tmp_path: Path) -> None:
    from ratelab.campaign.summary import rebuild_summary

    ref = tmp_path / "ref"
    shutil.rmtree(ref, ignore_errors=True)
    shutil.copytree(root, ref, ignore=shutil.ignore_patterns("summary.parquet"))
    rebuild_summary(ref, full=True)
    a, b = pq.read_table(root / "summary.parquet"), pq.read_table(ref / "summary.parquet")
    assert _sorted(a).equals(_sorted(b))
    ids = a.select(["controller", "scenario", "seed", "id"]).to_pylist()
    assert ids == sorted(ids, key=lambda r: (r["controller"], r["scenario"], r["seed"], r["id"]))  # written in key order


def test_summary_rebuild_reads_only_the_runs_it_lacks(tmp_path, fake_core):
    from ratelab.campaign.summary import rebuild_summary, summary_runs

    root = tmp_path / "camp"
    _run(tmp_path, root, range(1, 7))
    stats: dict[str, int] = {}
    rebuild_summary(root, stats=stats)
    assert stats == {"listed": 6, "read_files": 6}
    assert summary_runs(root / "summary.parquet") == {f"controller=gcc/scenario=tiny/seed={s}" for s in range(1, 7)}

    stats = {}
    rebuild_summary(root, stats=stats)  # nothing new: the folders are listed, no file is opened
    assert stats == {"listed": 6}

    _run(tmp_path, root, range(7, 10))
    _run(tmp_path, root, [1], controller="oracle")
    stats = {}
    rebuild_summary(root, stats=stats)
    assert stats == {"listed": 10, "read_files": 4}  # the 4 new runs only, not the 10
    _equals_full_rebuild(root, tmp_path)
    assert pq.read_table(root / "summary.parquet").num_rows == 10


def test_a_removed_run_folder_forces_a_full_rebuild(tmp_path, fake_core):
    from ratelab.campaign.summary import rebuild_summary

    root = tmp_path / "camp"
    _run(tmp_path, root, range(1, 5))
    rebuild_summary(root)
    shutil.rmtree(root / "controller=gcc/scenario=tiny/seed=2")
    stats: dict[str, int] = {}
    rebuild_summary(root, stats=stats)
    assert stats["read_files"] == 3  # its rows cannot be told apart: every remaining run is read
    assert sorted(pq.read_table(root / "summary.parquet").column("seed").to_pylist()) == [1, 3, 4]
    _equals_full_rebuild(root, tmp_path)


def test_a_summary_without_its_run_list_is_rebuilt_from_scratch(tmp_path, fake_core):
    """A summary written before the run list existed (or damaged) is not trusted."""
    from ratelab.campaign.summary import rebuild_summary

    root = tmp_path / "camp"
    _run(tmp_path, root, range(1, 4))
    rebuild_summary(root)
    pq.write_table(pq.read_table(root / "summary.parquet").replace_schema_metadata(None), root / "summary.parquet")
    stats: dict[str, int] = {}
    rebuild_summary(root, stats=stats)
    assert stats["read_files"] == 3
    (root / "summary.parquet").write_bytes(b"not parquet")
    stats = {}
    rebuild_summary(root, stats=stats)
    assert stats["read_files"] == 3
    _equals_full_rebuild(root, tmp_path)


def test_queries_open_only_the_runs_the_summary_lacks(tmp_path, fake_core):
    """`ratelab query` on a campaign whose sweep was killed before it rewrote the summary: the
    summary plus the runs finished since, every run exactly once."""
    from ratelab.campaign.store import ERROR_FILE
    from ratelab.campaign.summary import connect, rebuild_summary

    root = tmp_path / "camp"
    _run(tmp_path, root, range(1, 6))
    rebuild_summary(root)
    stats: dict[str, int] = {}
    con = connect(root, views={"flows", "runs"}, stats=stats)
    assert stats == {"listed": 5, "read_files": 0}
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 5
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert "series" not in tables  # not asked for: no series file is opened
    con.close()

    _run(tmp_path, root, [6, 7])  # finished after the last summary
    failed = root / "controller=gcc/scenario=tiny/seed=8"
    failed.mkdir(parents=True)
    (failed / ERROR_FILE).write_text('{"run_id": "controller=gcc/scenario=tiny/seed=8", "error": "boom"}')
    stats = {}
    con = connect(root, stats=stats)
    assert stats == {"listed": 8, "read_files": 2}
    assert sorted(r[0] for r in con.execute("SELECT seed FROM runs").fetchall()) == list(range(1, 8))
    assert con.execute("SELECT count(DISTINCT seed) FROM series").fetchone()[0] == 7
    assert con.execute("SELECT error FROM failures").fetchall() == [("boom",)]
    con.close()


def test_views_named_finds_the_optional_views_of_a_query():
    from ratelab.campaign.summary import views_named

    assert views_named("SELECT count(*) FROM runs") == {"runs"}
    assert views_named("select * from Series s join flows f using (seed)") == {"series", "flows"}
    assert "packets" not in views_named("SELECT packets_sent FROM flows")


def test_parquet_chunks_are_joined_into_the_same_table():
    from ratelab.run.sinks import join_chunks

    rng = np.random.default_rng(1)
    chunks = [{"t": rng.random(n), "flow": np.arange(n, dtype=np.uint32), "lost": rng.random(n) < 0.5} for n in (3, 0, 5, 1)]
    chunks = [c for c in chunks if len(c["t"])]
    joined = join_chunks(chunks)
    assert joined.equals(pa.concat_tables([pa.table(c) for c in chunks]))
    assert joined.schema.field("flow").type == pa.uint32() and joined.schema.field("lost").type == pa.bool_()
    # not numpy (a list column): still one table with every row
    mixed = [{"a": [1, 2]}, {"a": np.array([3])}]
    assert join_chunks(mixed).column("a").to_pylist() == [1, 2, 3]


def test_campaign_runs_in_long_chunks_give_the_same_results(tmp_path, core):
    """A campaign run is simulated in CAMPAIGN_CHUNK_S chunks, `ratelab run` in CHUNK_S ones:
    the same summary and the same series, value for value."""
    from ratelab.run.runner import no_progress, run_one
    from ratelab.scenario import load_scenario

    sc = load_scenario("rmcat-5.3", ["duration_s=30", "metrics.packet_log=false"])
    out = {}
    for chunk in (1.0, 60.0):
        d = tmp_path / f"c{chunk}"
        r = run_one(sc, sc.to_json(), None, "gcc", "gcc", 4, d, no_progress, None, chunk_s=chunk)
        out[chunk] = (r.flows, r.link, pq.read_table(d / "series.parquet"))
    assert out[1.0][0] == out[60.0][0] and out[1.0][1] == out[60.0][1]
    a, b = out[1.0][2], out[60.0][2]
    assert a.num_rows > 100 and a.schema == b.schema
    for name in a.column_names:  # NaN (no sample) compares equal to NaN
        assert np.array_equal(a.column(name).to_numpy(), b.column(name).to_numpy(), equal_nan=True), name


def test_a_resumed_sweep_updates_the_summary_to_equal_a_full_rebuild(tmp_path, core):
    """Real sweeps through the process pool: 4 seeds; then seed 5 finished by a sweep that was
    killed before it updated the summary; then the plan grown to 6 seeds (a resume): the last
    sweep runs only seed 6, and the summary it leaves holds all 6 runs once and equals one
    rebuilt from every run file."""
    from ratelab.campaign.plan import expand_plan, load_plan
    from ratelab.campaign.store import execute_run
    from ratelab.campaign.sweep import run_sweep

    (tmp_path / "tiny.toml").write_text(TINY.replace("duration_s = 3", "duration_s = 2"))
    root = tmp_path / "out" / "grow"

    def plan(seeds):
        return load_plan("grow", data={"name": "grow", "controllers": ["gcc"], "seeds": seeds,
                                       "scenarios": [str(tmp_path / "tiny.toml")]})

    res = run_sweep(plan(4), root, workers=2)
    assert (res.done, res.skipped) == (4, 0)
    killed = expand_plan(plan(6), known_controllers=["gcc"])[4]
    assert killed.seed == 5 and execute_run(killed, root)["status"] == "done"
    res = run_sweep(plan(6), root, workers=2)
    assert (res.done, res.skipped) == (1, 5)
    _equals_full_rebuild(root, tmp_path)
    assert sorted(set(pq.read_table(root / "summary.parquet").column("seed").to_pylist())) == list(range(1, 7))


def test_plan_json_encodes_each_scenario_document_once(tmp_path, monkeypatch):
    """write_plan streams the runs and encodes a document shared by many runs (the seeds of a
    scenario) once: work and memory per run do not include a copy of the scenario."""
    import json

    import ratelab.campaign.store as store
    from ratelab.campaign.plan import expand_plan, load_plan

    p = load_plan("p", data={"name": "p", "controllers": ["gcc"], "scenarios": ["rmcat-5.1", "rmcat-5.2"], "seeds": 40})
    specs = expand_plan(p, known_controllers=["gcc"])
    encoded = []
    real = json.dumps
    monkeypatch.setattr(store.json, "dumps", lambda obj, **kw: (encoded.append(obj) if isinstance(obj, dict) and "flows" in obj else None) or real(obj, **kw))
    store.write_plan(tmp_path, "p", specs)
    monkeypatch.setattr(store.json, "dumps", real)
    assert len(specs) == 80 and len(encoded) == 2
    assert [s.to_dict() for s in store.read_plan(tmp_path)] == [s.to_dict() for s in specs]
    assert not list(tmp_path.glob("*.part"))


def test_atomic_text_leaves_no_file_when_the_writer_fails(tmp_path):
    """plan.json and summary.json go through results.atomic_text: a block that raises half-way
    leaves the old file as it was and no temporary file behind."""
    from ratelab.run.results import atomic_text

    path = tmp_path / "plan.json"
    path.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_text(path) as fh:
            fh.write("half a fi")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
    with atomic_text(path) as fh:
        fh.write("new\n")
    assert path.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_the_summary_after_a_sweep_uses_the_workers_tables_and_equals_a_full_rebuild(tmp_path, core, monkeypatch):
    """The workers hand each run's flows rows back with its result, so the summary update at the
    end of a sweep reads no flows file; the summary still equals one rebuilt from the files, with
    runs whose columns differ (controller parameters, grid values, a failed run) in one sweep."""
    import ratelab.campaign.summary as summary
    from ratelab.campaign.plan import load_plan
    from ratelab.campaign.sweep import run_sweep

    (tmp_path / "tiny.toml").write_text(TINY.replace("duration_s = 3", "duration_s = 2"))
    plan = load_plan("mixed", data={"name": "mixed", "controllers": ["gcc", "aimd"], "seeds": [1, 2],
                                    "params": {"gcc": {"profile": ["current", "m84"]}},
                                    "scenarios": [str(tmp_path / "tiny.toml")], "grid": {"link.loss": [0, 0.02, 2]}})  # 2: out of range, those runs fail
    read = []
    real = summary._read_files
    monkeypatch.setattr(summary, "_read_files", lambda files: read.append(len(files)) or real(files))
    root = tmp_path / "out" / "mixed"
    res = run_sweep(plan, root, workers=2)
    assert (res.done, res.failed) == (12, 6) and read == []
    _equals_full_rebuild(root, tmp_path)
    table = pq.read_table(root / "summary.parquet")
    assert table.schema.field("seed").type == pa.int64() and table.schema.field("scenario").type == pa.string()


def test_fresh_flows_match_the_file_as_the_summary_reads_it(tmp_path, core):
    """One run's table from the worker, with its hive columns, equals DuckDB's read of its file;
    folder names it cannot parse exactly fall back to reading the file."""
    import duckdb

    from ratelab.campaign.summary import _flows_select, _read_files, fresh_flows

    root = tmp_path / "c"
    _run(tmp_path, root, [3])
    path = root / "controller=gcc/scenario=tiny/seed=3/flows.parquet"
    con = duckdb.connect()
    from_file = con.sql(_flows_select(con, _read_files([str(path)]))).to_arrow_table()
    held = pa.ipc.open_stream(fresh_flows("controller=gcc/scenario=tiny/seed=3", pq.read_table(path))).read_all()
    con.register("held", held)
    assert con.sql(_flows_select(con, "held")).to_arrow_table().equals(from_file)
    for odd in ("controller=gcc/scenario=a%20b/seed=3", "controller=gcc/scenario=x/seed=03", "scenario=x/seed=3",
                "controller=gcc/scenario=x/seed=3/extra=1"):
        assert fresh_flows(odd, pq.read_table(path)) is None
