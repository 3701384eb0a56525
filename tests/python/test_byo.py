"""Python controllers (issue 12 §1, docs/bring-your-own.md): the API, naming, errors, determinism,
parity of the Python port of `aimd` with the Rust one, sweeps, live mode."""

from __future__ import annotations

import json
import math
import re
import textwrap
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import require

import ratelab
from ratelab.byo import loader
from ratelab.errors import InputError
from ratelab.scenario import load_scenario

USER_CODE = '''
import ratelab

class Boom(ratelab.Controller):
    """Fails in on_feedback after `when_s`."""
    def __init__(self, when_s=1.0):
        self.when = when_s
    def on_feedback(self, fb):
        if fb.time_s > self.when:
            return 1 / 0
        return {"target_bps": 400_000.0}

CASES = {"ok": 700_000, "nan": float("nan"), "neg": -5.0, "str": "fast", "key": {"target": 1},
         "inf": {"target_bps": float("inf")}, "bool": {"target_bps": True}, "probe": {"probes": [{"min_packets": 5}]}}

class Returns(ratelab.Controller):
    """Returns CASES[case] from on_tick after 1 s."""
    def __init__(self, case="ok"):
        self.value = CASES[case]
    def on_tick(self, now_s):
        return self.value if now_s > 1 else None

class Noisy(ratelab.Controller):
    """A random rate every 100 ms from the run's generator."""
    tick_interval_s = 0.1
    def on_tick(self, now_s):
        return 200_000 + 600_000 * self.rng.random()

class Counting(ratelab.Controller):
    """Counts on_packet_sent calls and checks the feedback columns."""
    def __init__(self):
        self.sent = 0
        self.reported = 0
    def on_packet_sent(self, p):
        self.sent += 1
        assert p.size > 0 and p.in_flight >= p.size
    def on_feedback(self, fb):
        assert fb.seq.dtype.kind == "i" and fb.size.dtype.kind == "i" and fb.probe_id.dtype.kind == "i"
        assert (np.diff(fb.seq) > 0).all() and (fb.arrival_time_s[fb.received] > fb.send_time_s[fb.received]).all()
        assert fb.time_s >= np.nanmax(fb.arrival_time_s, initial=0.0)
        self.reported += len(fb)
        return ratelab.Update(target_bps=600_000, pacing_bps=900_000)

class Remb(ratelab.ReceiverEstimator):
    """Receiver side: reports 500 kbit/s until 3 s, then 800 kbit/s."""
    def on_tick(self, now_s, packets):
        assert packets.seq.dtype.kind == "i" and (packets.arrival_time_s >= packets.send_time_s).all()
        return 500_000.0 if now_s < 3 else 800_000.0

import numpy as np
'''


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    d = tmp_path / "user"
    d.mkdir()
    (d / "my_cc.py").write_text(USER_CODE)
    monkeypatch.chdir(d)
    monkeypatch.delenv("RATELAB_BASE_DIR", raising=False)
    return d


def short(seconds: float = 4.0):
    return load_scenario("rmcat-5.1", [f"duration_s={seconds}", "metrics.packet_log=false"])


def series(run) -> dict:
    return pq.read_table(run.dir / "series.parquet").to_pydict()


# --- the API without the simulator ---------------------------------------------------------------

def test_base_class_starts_at_the_start_rate_and_loader_lists_only_overridden_events(user_dir):
    c = ratelab.Constraints(min_bps=1e5, max_bps=2e6, start_bps=3e5)
    assert ratelab.Controller().on_start(0.0, c) == ratelab.Update(target_bps=3e5, pacing_bps=3e5)
    obj, side, tick, events, _ = loader._build("my_cc.py:Counting", "null", 7)
    assert side == "sender" and tick == 0.025
    assert set(events) == {"on_start", "on_packet_sent", "on_feedback"}  # on_tick etc. are never called
    _, _, tick, events, _ = loader._build("my_cc.py:Noisy", "{}", 7)
    assert tick == 0.1 and set(events) == {"on_start", "on_tick"}
    _, side, tick, events, pf = loader._build("my_cc.py:Remb", "null", 7)
    assert (side, tick, events, pf) == ("receiver", 0.05, [], 1.1)
    assert loader._build("gccx", "null", 1) is None  # not a Python name: the core says "unknown"


# --- naming ----------------------------------------------------------------------------------------

def _entry_points(monkeypatch, **names: str) -> None:
    eps = metadata.EntryPoints(metadata.EntryPoint(n, v, loader.ENTRY_POINT_GROUP) for n, v in names.items())
    monkeypatch.setattr(loader.metadata, "entry_points", lambda group=None: eps if group == loader.ENTRY_POINT_GROUP else metadata.EntryPoints(()))


def test_file_module_and_entry_point_names_run_and_name_the_flow(core, user_dir, monkeypatch, tmp_path):
    pkg = tmp_path / "site" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cc.py").write_text(USER_CODE)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    _entry_points(monkeypatch, **{"my-noisy": "mypkg.cc:Noisy"})
    names = ["my_cc.py:Noisy", f"{user_dir / 'my_cc.py'}:Noisy", "mypkg.cc:Noisy", "my-noisy"]
    res = ratelab.run_scenario(short(), names, seed=3, out_dir=tmp_path / "out")
    assert [r.controller for r in res.runs] == names
    assert [r.flows[0]["controller"] for r in res.runs] == names
    # a path never becomes nested folders
    assert all(r.dir.parent == tmp_path / "out" for r in res.runs)
    # same class, same seed: the same run whatever the name
    targets = [series(r)["target_kbps"] for r in res.runs]
    assert all(t == targets[0] for t in targets[1:])


def test_entry_points_show_in_list(core, monkeypatch, capsys, user_dir):
    from ratelab.cli import main

    monkeypatch.syspath_prepend(str(user_dir))
    _entry_points(monkeypatch, **{"my-boom": "my_cc:Boom", "broken": "nowhere:X"})
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "my-boom" in out and "Python controller my_cc:Boom: Fails in on_feedback after `when_s`." in out
    assert "broken" in out and "(broken: 'nowhere:X': no module named 'nowhere')" in out


@pytest.mark.parametrize("name, message", [
    ("my_cc.py:Nope", "'my_cc.py:Nope': my_cc.py has no class 'Nope'"),
    ("nofile.py:X", "'nofile.py:X': no such file"),
    ("no.such.mod:X", "'no.such.mod:X': no module named 'no.such.mod'"),
    ("my_cc.py:np", "'my_cc.py:np': np is not a class"),
    ("gccc", "unknown controller (known: gcc"),
])
def test_bad_names_are_one_line(core, user_dir, name, message):
    with pytest.raises(InputError) as e:
        ratelab.run_scenario(short(), [name])
    assert message in e.value.line() and "\n" not in e.value.line()


def test_parameters_come_from_params_and_unknown_ones_fail(core, user_dir, tmp_path):
    sc = short().with_overrides(['flows[0].controller="my_cc.py:Returns"', 'flows[0].params.case="ok"'])
    run = ratelab.run_scenario(sc, seed=1, out_dir=tmp_path / "o").runs[0]
    assert run.controller == "my_cc.py:Returns"
    assert series(run)["target_kbps"][-1] == 700.0
    bad = sc.with_overrides(["flows[0].params.csae=1"])
    with pytest.raises(InputError) as e:
        ratelab.run_scenario(bad)
    assert e.value.field == "flows[0].params.csae" and "unknown parameter of my_cc.py:Returns (known: case)" in e.value.message
    with pytest.raises(InputError) as e:  # the constructor itself fails: one line too
        ratelab.run_scenario(sc.with_overrides(['flows[0].params.case="nope"']))
    assert e.value.line() == "error: rmcat-5.1: flows[0].controller: my_cc.py:Returns.__init__: KeyError: 'nope'"


# --- errors in user code ---------------------------------------------------------------------------

def test_exception_is_one_line_with_exit_2_and_traceback_only_with_debug(core, user_dir, cli):
    r = cli("run", "rmcat-5.1", "-c", "my_cc.py:Boom", "--set", "duration_s=5", "--no-packets", "--out", "o", cwd=user_dir)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: my_cc.py:Boom.on_feedback at t=1.050 s: ZeroDivisionError: division by zero"
    r = cli("--debug", "run", "rmcat-5.1", "-c", "my_cc.py:Boom", "--set", "duration_s=5", "--no-packets", "--out", "o", cwd=user_dir)
    assert r.returncode == 2
    first, *rest = r.stderr.strip().splitlines()
    assert first.startswith("error: my_cc.py:Boom.on_feedback at t=1.050 s")
    assert rest[0].startswith("Traceback") and "return 1 / 0" in r.stderr and "my_cc.py" in r.stderr


@pytest.mark.parametrize("case, what", [
    ("nan", "returned rate = NaN (must be a finite number ≥ 0)"),
    ("neg", "returned a negative rate (-5)"),
    ("str", "returned 'fast' (expected an Update, a dict with keys target_bps, pacing_bps, padding_bps, cwnd_bytes, probes, a number or None)"),
    ("key", "returned an update with unknown key 'target' (known: target_bps, pacing_bps, padding_bps, cwnd_bytes, probes)"),
    ("inf", "returned target_bps = inf (must be a finite number ≥ 0)"),
    ("bool", "returned a non-numeric target_bps (True)"),
    ("probe", "returned a probe without rate_bps"),
])
def test_invalid_updates_stop_the_run(core, user_dir, case, what):
    sc = short().with_overrides(['flows[0].controller="my_cc.py:Returns"', f'flows[0].params.case="{case}"'])
    with pytest.raises(ratelab.ControllerError) as e:
        ratelab.run_scenario(sc)
    assert e.value.line() == f"error: my_cc.py:Returns.on_tick at t=1.025 s: {what}"


# --- determinism -----------------------------------------------------------------------------------

def test_the_run_seeds_the_controllers_generator(core, user_dir, tmp_path):
    def targets(seed: int, flows: int = 1):
        sc = short().with_overrides([f"flows[0].count={flows}"])
        run = ratelab.run_scenario(sc, ["my_cc.py:Noisy"], seed=seed, out_dir=tmp_path / f"s{seed}-{flows}").runs[0]
        s = series(run)
        return [np.array(s["target_kbps"])[np.array(s["flow"]) == f] for f in range(flows)]

    a, b, c = targets(1), targets(1), targets(2)
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[0], c[0])
    assert a[0][0] == 150 and 200 <= a[0][3:].min() and a[0].max() <= 800  # start rate until the first tick
    # one stream per flow, derived like the built-in controllers' (seed, flow)
    two = targets(1, flows=2)
    assert not np.array_equal(two[0], two[1])


# --- the Python port of aimd -----------------------------------------------------------------------

def test_python_aimd_matches_rust_aimd_bit_for_bit_on_rmcat_5_1(core, tmp_path):
    """Same float operations in the same order on the same integer-µs times: tolerance zero."""
    sc = load_scenario("rmcat-5.1", ["metrics.packet_log=false"])
    res = ratelab.run_scenario(sc, ["aimd", "ratelab.examples.aimd:Aimd"], seed=5, out_dir=tmp_path)
    rust, py = (series(r) for r in res.runs)
    assert len(rust["t_s"]) == 3999
    for col in ("target_kbps", "pacing_kbps", "send_kbps", "owd_ms", "queue_ms"):
        assert np.array_equal(np.array(rust[col], float), np.array(py[col], float), equal_nan=True), col
    a, b = (r.flows[0] for r in res.runs)
    assert a["packets_lost"] > 0  # the multiplicative decrease was exercised
    assert {k: v for k, v in a.items() if k != "controller"} == {k: v for k, v in b.items() if k != "controller"}


# --- receiver side, per-packet events ---------------------------------------------------------------

def test_receiver_estimator_reaches_the_sender_like_remb(core, user_dir, tmp_path):
    run = ratelab.run_scenario(short(5.0), ["my_cc.py:Remb"], out_dir=tmp_path).runs[0]
    s = series(run)
    t, target, pacing = (np.array(s[k]) for k in ("t_s", "target_kbps", "pacing_kbps"))
    assert set(target[(t > 1) & (t < 3)]) == {500.0} and set(target[t > 3.2]) == {800.0}
    assert np.allclose(pacing[t > 3.2], 880.0)  # pacing_factor 1.1


def test_on_packet_sent_sees_every_packet_and_feedback_every_report(core, user_dir, tmp_path):
    run = ratelab.run_scenario(short(), ["my_cc.py:Counting"], out_dir=tmp_path).runs[0]
    assert run.flows[0]["packets_sent"] > 100
    s = series(run)
    assert s["target_kbps"][-1] == 600.0 and s["pacing_kbps"][-1] == 900.0


# --- campaigns and live mode -------------------------------------------------------------------------

def _plan(tmp_path: Path, controllers: list[str]) -> Path:
    (tmp_path / "tiny.toml").write_text(textwrap.dedent("""
        name = "tiny"
        duration_s = 3
        link = { capacity_kbps = 1000, queue = { ms = 200 } }
        [[flows]]
        kind = "media"
        controller = "gcc"
        one_way_delay_ms = 20
    """))
    p = tmp_path / "plan.toml"
    p.write_text(f'name = "byo"\ncontrollers = {json.dumps(controllers)}\nscenarios = ["tiny.toml"]\nseeds = 1\n')
    return p


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_sweep_runs_python_controllers_and_records_their_errors(core, user_dir, tmp_path, engine):
    if engine == "ray":
        require("ray")
    from ratelab.campaign.plan import load_plan
    from ratelab.campaign.store import connect
    from ratelab.campaign.sweep import campaign_root, run_sweep

    p = load_plan(str(_plan(user_dir, ["my_cc.py:Noisy", "my_cc.py:Boom", "ratelab.examples.aimd:Aimd"])))
    root = campaign_root(p, tmp_path / engine)
    res = run_sweep(p, root, engine=engine, workers=2)
    assert (res.done, res.failed, res.lost) == (2, 1, 0), res.errors
    err = json.loads((root / "controller=my_cc.py:Boom" / "scenario=tiny" / "seed=1" / "error.json").read_text())
    assert re.fullmatch(r"my_cc\.py:Boom\.on_feedback at t=1\.\d{3} s: ZeroDivisionError: division by zero", err["error"]), err["error"]
    assert "return 1 / 0" in err["traceback"]
    rows = connect(root).execute("SELECT controller, flow_controller FROM flows ORDER BY controller").fetchall()
    assert rows == [("my_cc.py:Noisy", "my_cc.py:Noisy"), ("ratelab.examples.aimd:Aimd", "ratelab.examples.aimd:Aimd")]


def test_live_runs_the_same_class_against_the_wall_clock(core, user_dir, tmp_path):
    from ratelab.run import live

    sc = load_scenario("rmcat-5.1", ["duration_s=3"])
    run = live.run_live(sc, ["ratelab.examples.aimd:Aimd"], out_dir=tmp_path, seed=2).runs[0]
    flow = run.flows[0]
    assert flow["controller"] == "ratelab.examples.aimd:Aimd"
    assert flow["packets_sent"] > 30 and flow["packets_received"] > 0.8 * flow["packets_sent"]
    assert len(set(series(run)["target_kbps"])) > 5  # it adapted
    with pytest.raises(ratelab.ControllerError) as e:
        live.run_live(sc, ["my_cc.py:Boom"], seed=2)
    assert e.value.line().startswith("error: my_cc.py:Boom.on_feedback at t=1.")
    assert e.value.line().endswith(" s: ZeroDivisionError: division by zero")
    assert math.isfinite(run.wall_seconds) and run.wall_seconds < 10


def test_the_documented_controller_runs_with_run_sweep_and_live(core, cli, tmp_path):
    """docs/bring-your-own.md: its AIMD file, its plan and its commands, as a user runs them."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    doc = (Path(__file__).resolve().parents[2] / "docs" / "bring-your-own.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    assert 25 <= len(code.strip().splitlines()) <= 40
    (tmp_path / "my_aimd.py").write_text(code)
    plan = tomllib.loads(re.search(r"```toml\n# my-plan.toml\n(.*?)```", doc, re.S).group(1))
    assert plan["controllers"][0] == "my_aimd.py:MyAimd"
    plan.update(seeds=1, scenarios=["rmcat-5.1"], set=["duration_s=8"])
    lines = [f"{k} = {json.dumps(v)}" for k, v in plan.items() if k != "params"]
    lines += ['[params."my_aimd.py:MyAimd"]', f"decrease = {json.dumps(plan['params']['my_aimd.py:MyAimd']['decrease'])}"]
    (tmp_path / "my-plan.toml").write_text("\n".join(lines) + "\n")

    r = cli("run", "rmcat-5.1", "-c", "my_aimd.py:MyAimd", "-c", "aimd", "--set", "duration_s=30", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    runs = json.loads((tmp_path / "o" / "summary.json").read_text())["runs"]
    mine, rust = (run["flows"][0] for run in runs)
    assert mine["controller"] == "my_aimd.py:MyAimd"
    assert abs(mine["throughput_kbps"] - rust["throughput_kbps"]) < 0.1 * rust["throughput_kbps"]
    r = cli("sweep", "my-plan.toml", "-j", "2", "-q", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0 and "failed 0" in r.stdout, r.stdout + r.stderr
    assert len(list((tmp_path / "c" / "my-aimd").glob("controller=*/scenario=*/seed=1/flows.parquet"))) == 4
    r = cli("live", "run", "rmcat-5.1", "-c", "my_aimd.py:MyAimd", "--set", "duration_s=3", "--out", "l", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "l" / "my_aimd.py:MyAimd" / "series.parquet").is_file()


def test_leaderboard_ranks_a_python_controller_like_a_builtin(core, user_dir, tmp_path):
    from ratelab.report.leaderboard import leaderboard_plan, write_leaderboard
    from ratelab.scenario import TRACE_DIR
    from ratelab.campaign.sweep import campaign_root, plan_specs, run_sweep

    traces = tmp_path / "traces"
    traces.mkdir()
    src = TRACE_DIR / "opennetlab-4G_700kbps.csv"
    (traces / src.name).write_bytes(src.read_bytes())
    p = leaderboard_plan(traces, ["ratelab.examples.aimd:Aimd", "aimd"], 1, 5.0)
    root = campaign_root(p, tmp_path / "lb")
    res = run_sweep(p, root, workers=2, specs=plan_specs(p))
    assert (res.done, res.failed) == (2, 0)
    html = write_leaderboard(root, root / "lb.html").read_text()
    assert "ratelab.examples.aimd:Aimd" in html and "aimd" in html


def test_gym_environment_takes_a_python_competitor(core, user_dir):
    """`config={"competitor": ...}`: the competing media flow of the RL environment runs any
    controller a scenario can name; its errors surface as in a run."""
    require("gymnasium")
    from ratelab.rl.env import BandwidthEstimationEnv

    cfg = {"duration_s": 2.0, "media_prob": 1.0, "tcp_prob": 0.0, "synthetic_prob": 1.0, "competitor": "my_cc.py:Noisy"}
    env = BandwidthEstimationEnv(config=cfg, traces=None)
    env.reset(seed=3)
    assert env.episode()["media"] is True
    for _ in range(10):
        env.step(np.array([0.2], dtype=np.float32))
    env = BandwidthEstimationEnv(config={**cfg, "competitor": "my_cc.py:Boom"}, traces=None)
    env.reset(seed=3)
    with pytest.raises(ratelab.ControllerError, match=r"my_cc\.py:Boom\.on_feedback at t=\d+\.\d{3} s: ZeroDivisionError"):
        for _ in range(40):
            env.step(np.array([0.2], dtype=np.float32))


ROUTE_CODE = '''
import ratelab

class Routes(ratelab.Controller):
    """Halves its rate at each route change; records when it was told."""
    def __init__(self):
        self.told = []
    def on_start(self, now_s, c):
        return 1_000_000.0
    def on_route_change(self, now_s, c):
        self.told.append((round(now_s, 3), c.start_bps))
        return 500_000.0 / len(self.told)
'''


def test_python_controller_is_told_of_route_changes(core, tmp_path, monkeypatch):
    """The handover scenario changes route at 30 s and 60 s: on_route_change is called at those
    times with the flow's constraints, and its update takes effect (issue 22)."""
    d = tmp_path / "routes"
    d.mkdir()
    (d / "routes.py").write_text(ROUTE_CODE)
    monkeypatch.chdir(d)
    sc = load_scenario("handover", ["duration_s=65", "metrics.packet_log=false"])
    res = ratelab.run_scenario(sc, ["routes.py:Routes"], out_dir=tmp_path / "o")
    t = series(res.runs[0])
    target = dict(zip(t["t_s"], t["target_kbps"]))
    assert [v for k, v in target.items() if 20 <= k < 29.9] == [1000.0] * len([k for k in target if 20 <= k < 29.9])
    assert all(v == 500.0 for k, v in target.items() if 30.1 <= k < 59.9)
    assert all(v == 250.0 for k, v in target.items() if 60.1 <= k <= 64.9)
