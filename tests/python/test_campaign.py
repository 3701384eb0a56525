"""Campaign plans (expansion, filters), the results store (atomic runs, provenance, failures,
resume after kill -9), DuckDB queries and the engines (process pool, Ray on a local instance)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import require

from ratelab.campaign.plan import RunSpec, expand_plan, load_plan, trace_files
from ratelab.errors import InputError

KNOWN = ["gcc", "fixed", "oracle"]

TINY = """
name = "tiny"
duration_s = 3
[link]
capacity_kbps = 1000
queue = { ms = 300 }
[[flows]]
kind = "media"
controller = "gcc"
media = { min_kbps = 100, max_kbps = 2000, start_kbps = 300 }
"""


def plan(data: dict, name: str = "t"):
    return load_plan(name, data={"name": name, **data})


def write_plan(tmp_path: Path, body: str, scenario: str = TINY) -> Path:
    (tmp_path / "tiny.toml").write_text(scenario)
    p = tmp_path / "plan.toml"
    p.write_text(textwrap.dedent(body))
    return p


# --- plan expansion -------------------------------------------------------------------------

def test_grid_is_the_product_of_controllers_scenarios_values_and_seeds():
    p = plan({"controllers": ["gcc", "oracle"], "scenarios": ["rmcat-5.1", "lcc-loss"], "seeds": 3,
              "grid": {"link.loss": [0, 0.02]}})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert len(runs) == 2 * 2 * 2 * 3
    assert len({r.run_id for r in runs}) == len(runs)
    r = next(r for r in runs if r.controller == "oracle" and r.scenario == "lcc-loss~link.loss_0.02" and r.seed == 2)
    assert r.run_id == "controller=oracle/scenario=lcc-loss~link.loss_0.02/seed=2"
    assert r.scenario_doc["link"]["loss"] == 0.02
    # the controller is applied to every media flow of the resolved document
    assert all(f["controller"] == "oracle" for f in r.scenario_doc["flows"] if f["kind"] == "media")
    assert r.grid == {"link.loss": 0.02}


def test_all_controllers_leaves_out_fixed_and_params_make_variants():
    p = plan({"controllers": "all", "scenarios": ["rmcat-5.1"], "params": {"gcc": {"profile": ["current", "m84"]}}})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert sorted(r.controller for r in runs) == ["gcc~profile_current", "gcc~profile_m84", "oracle"]
    m84 = next(r for r in runs if r.controller == "gcc~profile_m84")
    assert m84.controller_params == {"profile": "m84"}
    assert m84.scenario_doc["flows"][0]["params"] == {"profile": "m84"}


def test_filters_exclude_and_include_with_globs():
    base = {"controllers": ["gcc", "oracle", "fixed"], "scenarios": ["rmcat-5.1", "rmcat-5.6", "lcc-loss"], "seeds": [1, 2]}
    runs = expand_plan(plan({**base, "exclude": [{"controller": "fixed", "scenario": "rmcat-*"}]}), known_controllers=KNOWN)
    assert len(runs) == 3 * 3 * 2 - 2 * 2
    assert not any(r.controller == "fixed" and r.scenario.startswith("rmcat") for r in runs)
    runs = expand_plan(plan({**base, "include": [{"seed": 2, "scenario": "lcc-*"}]}), known_controllers=KNOWN)
    assert [(r.controller, r.seed) for r in runs] == [("gcc", 2), ("oracle", 2), ("fixed", 2)]


def test_scenario_variants_and_sets():
    p = plan({"controllers": ["gcc"], "scenarios": ["rmcat-5.6", {"scenario": "rmcat-5.6", "label": "q1000", "set": ["link.queue.ms=1000"]}],
              "set": ["duration_s=7"]})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert [r.scenario for r in runs] == ["rmcat-5.6", "q1000"]
    assert runs[1].scenario_doc["link"]["queue"]["ms"] == 1000 and runs[0].scenario_doc["link"]["queue"]["ms"] == 300
    assert all(r.scenario_doc["duration_s"] == 7 for r in runs)


def test_trace_sets_make_one_scenario_per_trace():
    cellular = trace_files("cellular")
    assert cellular and all("opennetlab-WIRED" not in f.name and "trace_" not in f.name for f in cellular)
    p = plan({"controllers": ["gcc"], "traces": ["cellular"], "trace_duration_s": 20})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert len(runs) == len(cellular)
    r = runs[0]
    assert Path(r.scenario_doc["link"]["trace"]).is_file() and r.scenario_doc["duration_s"] == 20
    assert r.scenario_doc["link"]["queue"]["rate_kbps"] > 0


@pytest.mark.parametrize("data, field", [
    ({"controllers": ["nope"], "scenarios": ["rmcat-5.1"]}, "controllers"),
    ({"controllers": ["gcc"]}, "scenarios"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "seeds": 0}, "seeds"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "grid": {"link.loss": 0.1}}, "grid.link.loss"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1", "rmcat-5.1"]}, "scenarios"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "frobnicate": 1}, "frobnicate"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "params": {"oracle": {"x": 1}}}, "params.oracle"),
])
def test_bad_plans_name_the_field(data, field):
    with pytest.raises(InputError) as e:
        expand_plan(plan(data), known_controllers=KNOWN)
    assert e.value.field == field


def test_builtin_rmcat_plan_covers_rfc8867_and_8869():
    runs = expand_plan(load_plan("rmcat"), known_controllers=KNOWN)
    names = {r.scenario_name for r in runs}
    for case in ("5.1", "5.2", "5.3", "5.4", "5.5", "5.6", "5.7", "5.8"):
        assert f"rmcat-{case}" in names, case
    assert any(n.startswith("rmcat-8869") for n in names)
    assert {r.seed for r in runs} == {1, 2, 3}
    assert {r.controller for r in runs} == {"gcc", "oracle"}
    # 10 RFC 8867 cases (5.1-5.8, with 5.1 at 100 ms and 5.6 with a 1000 ms queue) + 4 RFC 8869 ones
    assert len({r.scenario for r in runs}) == 14 and len(runs) == 14 * 2 * 3
    # 5.3 has its reverse bottleneck and its backward flow in the resolved document
    doc = next(r.scenario_doc for r in runs if r.scenario == "rmcat-5.3")
    assert "reverse_link" in doc and [f.get("direction", "forward") for f in doc["flows"]] == ["forward", "reverse"]


# --- the results store ------------------------------------------------------------------------

def _spec(tmp_path: Path, **extra) -> RunSpec:
    from ratelab.scenario import load_scenario

    (tmp_path / "tiny.toml").write_text(TINY)
    doc = load_scenario(str(tmp_path / "tiny.toml")).data
    return RunSpec("c", "controller=gcc/scenario=tiny/seed=1", "gcc", "gcc", {}, "tiny", "tiny", doc, 1, **extra)


def _tree_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and ".tmp" not in p.parts]


def test_a_finished_run_is_one_complete_folder_with_provenance(tmp_path, fake_core):
    from ratelab.campaign.store import execute_run, read_provenance

    root = tmp_path / "camp"
    out = execute_run(_spec(tmp_path, git_commit="abc123"), root)
    assert out["status"] == "done"
    run = root / "controller=gcc/scenario=tiny/seed=1"
    assert sorted(p.name for p in run.iterdir()) == ["flows.parquet", "series.parquet"]
    meta = read_provenance(run / "flows.parquet")
    assert meta["ratelab.git_commit"] == "abc123" and meta["ratelab.seed"] == "1"
    assert json.loads(meta["ratelab.scenario"])["link"]["capacity_kbps"] == 1000
    assert meta["ratelab.controller"] == "gcc" and json.loads(meta["ratelab.controller_params"]) == {}
    assert read_provenance(run / "series.parquet") == meta
    flows = pq.read_table(run / "flows.parquet").to_pylist()
    assert flows[0]["flow_controller"] == "gcc" and flows[0]["link_utilization"] > 0
    assert not any((root / ".tmp").iterdir()), "work area cleaned"
    # a second call skips the finished run and leaves its files alone
    before = (run / "flows.parquet").stat().st_mtime_ns
    assert execute_run(_spec(tmp_path), root)["status"] == "skipped"
    assert (run / "flows.parquet").stat().st_mtime_ns == before


def test_a_run_that_dies_midway_leaves_only_its_error(tmp_path, fake_core, monkeypatch):
    from ratelab.campaign.store import execute_run, failures

    calls = {"n": 0}
    real_run = fake_core.Simulation.run

    def failing_run(self, until_s=None):
        calls["n"] += 1
        if calls["n"] > 1:  # after the first chunk was written into series.parquet.part
            raise RuntimeError("simulated crash")
        return real_run(self, min(until_s or 1.0, 1.0))

    monkeypatch.setattr(fake_core.Simulation, "run", failing_run)
    monkeypatch.setattr("ratelab.run.runner.CHUNK_S", 1.0)
    root = tmp_path / "camp"
    out = execute_run(_spec(tmp_path), root)
    assert out["status"] == "failed" and "simulated crash" in out["error"]
    run = root / "controller=gcc/scenario=tiny/seed=1"
    assert [p.name for p in run.iterdir()] == ["error.json"]
    assert not any((root / ".tmp").iterdir())
    (rec,) = failures(root)
    assert rec["type"] == "RuntimeError" and "Traceback" in rec["traceback"]
    # a later successful attempt replaces the failure
    monkeypatch.setattr(fake_core.Simulation, "run", real_run)
    assert execute_run(_spec(tmp_path), root)["status"] == "done"
    assert sorted(p.name for p in run.iterdir()) == ["flows.parquet", "series.parquet"]


def test_packed_runs_travel_as_bytes_and_commit_like_local_ones(tmp_path, fake_core, monkeypatch):
    """Ray's default: the worker returns the run's files, the driver commits them (no shared disk)."""
    from ratelab.campaign.store import commit_packed, execute_run, execute_run_packed, failures

    out = execute_run_packed(_spec(tmp_path, git_commit="abc"))
    files = out.pop("files")
    assert out["status"] == "done" and sorted(files) == ["flows.parquet", "series.parquet"]
    root = tmp_path / "camp"
    commit_packed(root, out["run_id"], files)
    direct = tmp_path / "direct"
    execute_run(_spec(tmp_path, git_commit="abc"), direct)
    run = "controller=gcc/scenario=tiny/seed=1"
    timing = ["wall_seconds", "sim_speed"]  # the only columns two runs of one spec may differ in
    for name in files:  # the same table and provenance as a run the worker committed itself
        a, b = pq.read_table(root / run / name), pq.read_table(direct / run / name)
        keep = [c for c in a.column_names if c not in timing]
        assert a.column_names == b.column_names and a.select(keep).equals(b.select(keep)), name
        assert a.schema.metadata == b.schema.metadata
    assert not any((root / ".tmp").iterdir())
    # a failure travels as error.json and replaces nothing but the run's own folder
    monkeypatch.setattr(fake_core.Simulation, "run", lambda self, until_s=None: 1 / 0)
    bad = execute_run_packed(_spec(tmp_path))
    assert bad["status"] == "failed" and list(bad["files"]) == ["error.json"]
    commit_packed(root, bad["run_id"], bad["files"])
    assert [p.name for p in (root / run).iterdir()] == ["error.json"]
    assert failures(root)[0]["type"] == "ZeroDivisionError"
    # a reply that is not a run, or names a file outside the run folder, is refused
    with pytest.raises(ValueError, match="no flows.parquet"):
        commit_packed(root, run, {"series.parquet": b""})
    with pytest.raises(ValueError, match="leaves the run folder"):
        commit_packed(root, run, {"flows.parquet": b"", "../../evil": b""})
    assert [p.name for p in (root / run).iterdir()] == ["error.json"] and not (root / "evil").exists()


SWEEP_PLAN = """
name = "camp"
controllers = ["gcc", "oracle"]
scenarios = ["tiny.toml"]
seeds = [1, 2]
[grid]
"link.loss" = [0, 0.05, 3]
"""


def test_failures_are_isolated_and_query_sees_the_rest(tmp_path, core):
    from ratelab.campaign.store import connect
    from ratelab.campaign.sweep import campaign_root, campaign_status, plan_specs, run_sweep

    p = load_plan(str(write_plan(tmp_path, SWEEP_PLAN)))
    root = campaign_root(p, tmp_path / "results")
    res = run_sweep(p, root, workers=2)
    assert (res.total, res.done, res.failed) == (12, 8, 4)
    st = campaign_status(root, plan_specs(p))
    assert len(st["failed"]) == 4 and all("link.loss_3" in r for r in st["failed"])
    con = connect(root)
    n, ctl = con.execute("SELECT count(*), count(DISTINCT controller) FROM runs").fetchone()
    assert (n, ctl) == (8, 2)
    # the same numbers as the files themselves
    for row in con.execute("SELECT controller, scenario, seed, throughput_kbps FROM flows").fetchall():
        c, s, seed, tput = row
        direct = pq.read_table(root / f"controller={c}/scenario={s}/seed={seed}/flows.parquet").column("throughput_kbps")[0].as_py()
        assert tput == direct
    assert con.execute("SELECT count(*) FROM failures").fetchone()[0] == 4
    # the summary table is rebuilt from the run files
    summary = pq.read_table(root / "summary.parquet")
    assert summary.num_rows == con.execute("SELECT count(*) FROM flows").fetchone()[0]
    # loss makes a difference the query can see
    lossy, clean = con.execute("""SELECT avg(loss_rate) FILTER (WHERE scenario LIKE '%0.05'),
                                         avg(loss_rate) FILTER (WHERE scenario LIKE '%loss_0') FROM flows""").fetchone()
    assert lossy > 0.02 and clean < 0.01


def test_sweep_cli_dry_run_status_query(tmp_path, core, cli):
    plan_path = write_plan(tmp_path, SWEEP_PLAN.replace("3]", "0.5]"))
    out = tmp_path / "res"
    r = cli("sweep", str(plan_path), "--out", str(out), "--dry-run")
    assert r.returncode == 0 and r.stdout.startswith("12 runs in campaign 'camp'"), r.stdout + r.stderr
    r = cli("sweep", str(plan_path), "--out", str(out), "-j", "2", "-q")
    assert r.returncode == 0, r.stderr
    assert "done 12, failed 0" in r.stdout
    r = cli("sweep", str(plan_path), "--out", str(out), "--status")
    assert "done 12  failed 0  pending 0  total 12" in r.stdout
    r = cli("query", "camp", "--out", str(out), "--format", "csv",
            "SELECT controller, count(*) AS n FROM runs GROUP BY controller ORDER BY controller")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["controller,n", "gcc,6", "oracle,6"]
    r = cli("query", "camp", "--out", str(out), "SELECT nope FROM flows")
    assert r.returncode == 2 and r.stderr.startswith("error: query: ")
    # the SQL may be a .sql file, comments included (a leading "--" is not taken for an option)
    sql = tmp_path / "count.sql"
    sql.write_text("-- runs per controller\nSELECT controller, count(*) AS n FROM runs GROUP BY controller ORDER BY controller\n")
    r = cli("query", "camp", "--out", str(out), "--format", "csv", str(sql))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["controller,n", "gcc,6", "oracle,6"]
    r = cli("query", "camp", "--out", str(out), str(tmp_path / "missing.sql"))
    assert r.returncode == 2 and "missing.sql" in r.stderr and "Traceback" not in r.stderr


KILL_PLAN = """
name = "killme"
controllers = ["gcc"]
scenarios = ["rmcat-5.1"]
seeds = 10
"""


def test_kill_9_mid_campaign_loses_no_finished_run_and_resume_completes(tmp_path, core):
    from ratelab.campaign.store import read_provenance
    from ratelab.campaign.sweep import campaign_root, campaign_status, plan_specs

    plan_path = write_plan(tmp_path, KILL_PLAN)
    out = tmp_path / "res"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.Popen([sys.executable, "-m", "ratelab", "sweep", str(plan_path), "--out", str(out), "-j", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    done_lines = 0
    deadline = time.monotonic() + 300
    try:
        while done_lines < 2 and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            done_lines += " done " in line
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
        proc.wait(timeout=60)
    assert done_lines == 2, "the sweep did not report two finished runs"
    time.sleep(0.5)
    p = load_plan(str(plan_path))
    root = campaign_root(p, out)
    specs = plan_specs(p)
    st = campaign_status(root, specs)
    assert len(st["done"]) >= 2 and not st["failed"] and len(st["pending"]) >= 1, st
    # no half-written file in the tree: every run folder is complete, every file reads
    leaves = [d for d in root.glob("controller=*/scenario=*/seed=*")]
    assert sorted(str(d.relative_to(root)) for d in leaves) == sorted(st["done"])
    for f in _tree_files(root):
        assert not f.name.endswith(".part"), f
        if f.suffix == ".parquet" and f.parent != root:
            pq.read_table(f)
            assert read_provenance(f)["ratelab.campaign"] == "killme"
    kept = {d: (d / "flows.parquet").stat().st_mtime_ns for d in leaves}
    # resume: the finished runs are skipped, the rest run
    r = subprocess.run([sys.executable, "-m", "ratelab", "sweep", str(plan_path), "--out", str(out), "-j", "2", "-q"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"{len(kept)} already done" in r.stdout
    st = campaign_status(root, specs)
    assert len(st["done"]) == 10 and not st["pending"]
    assert all((d / "flows.parquet").stat().st_mtime_ns == t for d, t in kept.items())
    assert not any((root / ".tmp").iterdir())


def test_ray_engine_on_a_local_instance_matches_the_local_engine(tmp_path, core):
    require("ray")
    from ratelab.campaign.store import connect
    from ratelab.campaign.sweep import campaign_root, run_sweep

    body = """
    name = "r"
    controllers = ["gcc", "oracle"]
    scenarios = ["tiny.toml"]
    seeds = 2
    """
    p = load_plan(str(write_plan(tmp_path, body)))
    ray_root = campaign_root(p, tmp_path / "ray")
    res = run_sweep(p, ray_root, engine="ray", workers=2)
    assert (res.done, res.failed, res.lost) == (4, 0, 0)
    local_root = campaign_root(p, tmp_path / "local")
    run_sweep(p, local_root, workers=2)
    q = "SELECT controller, scenario, seed, id, throughput_kbps, owd_ms_p95 FROM flows ORDER BY ALL"
    assert connect(ray_root).execute(q).fetchall() == connect(local_root).execute(q).fetchall()
