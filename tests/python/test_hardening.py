"""Issue 14's table, one test per row, against the real core and the real command line:
deeply nested TOML, out-of-range fields, runaway durations and flow counts, progress, Ctrl-C,
memory over long runs; plus the declared ranges in the docs and gymnasium registration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ratelab import cli as cli_mod
from ratelab import limits
from conftest import restore_default_sigint, require

ROOT = Path(__file__).resolve().parents[2]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# --- row 1: 5,000 nested tables --------------------------------------------------------------

@pytest.mark.parametrize("body", [
    "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",  # inline tables: tomllib recursion
    "[" + ".".join(["t"] * 5000) + "]\nv = 1\n",        # a table header 5,000 deep: parses, too deep
    "x = " + "[" * 5000 + "]" * 5000 + "\n",             # arrays
])
def test_deeply_nested_toml_is_one_line_naming_the_file(core, cli, tmp_path, body):
    f = tmp_path / "deep.toml"
    f.write_text(body)
    r = cli("run", str(f), "-q", "--out", str(tmp_path / "out"), timeout=60)
    assert r.returncode == 2
    assert one_error_line(r.stderr).startswith(f"error: {f}: ")
    assert "nested more than 32 levels" in r.stderr
    plan = tmp_path / "plan.toml"
    plan.write_text(body)
    r = cli("sweep", str(plan), "--dry-run", timeout=60)
    assert r.returncode == 2 and one_error_line(r.stderr).startswith(f"error: {plan}: ")
    r = cli("run", "lcc-loss", "--set", "link.loss=" + "[" * 5000 + "]" * 5000, timeout=60)
    assert r.returncode == 2 and one_error_line(r.stderr).startswith("error: --set: ")


# --- rows 2 and 3: ranges named with field, value and range ----------------------------------

@pytest.mark.parametrize("override, line", [
    ("flows[0].one_way_delay_ms=1e12",
     "error: rmcat-5.1: flows[0].one_way_delay_ms: 1e12 is out of range: must be in [0, 10000] ms"),
    ("link.queue.ms=0", "error: rmcat-5.1: link.queue.ms: 0 is out of range: must be in (0, 600000] ms"),
    ("duration_s=1e12", "error: rmcat-5.1: duration_s: 1e12 is out of range: must be in (0, 604800] s"),
    ("flows[0].count=100000", "error: rmcat-5.1: flows[0].count: 100000 is out of range: must be in [1, 1000]"),
    ("link.loss=1.5", "error: rmcat-5.1: link.loss: 1.5 is out of range: must be in [0, 1]"),
    ("flows[0].tcp.mss_bytes=0", None),  # a tcp table is range-checked even on a media flow
    ("duration_s=nan", "error: rmcat-5.1: duration_s: nan and inf are not allowed"),
    ("link.capacity_kbps=inf", "error: rmcat-5.1: link.capacity_kbps: nan and inf are not allowed"),
    ("reverse_link.capacity_kbps=-inf", "error: rmcat-5.1: reverse_link.capacity_kbps: nan and inf are not allowed"),
])
def test_out_of_range_values_name_field_value_and_range(core, capsys, override, line):
    rc = cli_mod.main(["run", "rmcat-5.1", "-q", "--set", override])
    err = capsys.readouterr().err
    assert rc == 2, err
    if line is not None:
        assert one_error_line(err) == line


def test_total_flow_count_is_limited(core, capsys):
    rc = cli_mod.main(["run", "rmcat-5.1", "-q", "--set", "flows[0].count=600",
                       "--set", "flows=[{kind='media', count=600}, {kind='media', count=600}]"])
    assert rc == 2
    assert one_error_line(capsys.readouterr().err) == \
        "error: rmcat-5.1: flows: 1200 flows (counts included) is more than the limit of 1000"


def test_tcp_fields_are_range_checked_and_unknown_ones_named(core, capsys):
    assert cli_mod.main(["run", "rmcat-5.6", "-q", "--set", "flows[1].tcp.mss_bytes=0"]) == 2
    assert one_error_line(capsys.readouterr().err) == \
        "error: rmcat-5.6: flows[1].tcp.mss_bytes: 0 is out of range: must be in [1, 65535] bytes"
    assert cli_mod.main(["run", "rmcat-5.6", "-q", "--set", "flows[1].tcp.mss_byte=1000"]) == 2
    assert "flows[1].tcp.mss_byte" in one_error_line(capsys.readouterr().err)


def test_a_simulated_day_is_within_the_limits(core):
    from ratelab import load_scenario

    load_scenario("rmcat-5.1", ["duration_s=86400"]).validate()
    load_scenario("rmcat-5.1", ["duration_s=604800", "flows[0].count=1000"]).validate()


def test_plan_fields_are_range_checked(core, cli, tmp_path):
    cases = {
        "seeds = 100000": "seeds: 100000 is out of range: must be an integer in [1, 10000]",
        "seeds = [1, -2]": "seeds[1]: -2 is out of range: must be an integer in [0, 2^63 - 1]",
        "seeds = [1.5]": "seeds[0]: 1.5 is out of range",
        "trace_duration_s = 1e12\ntraces = ['cellular']": "trace_duration_s: 1000000000000.0 is out of range: must be a number in (0, 604800] s",
        "trace_duration_s = nan\ntraces = ['cellular']": "trace_duration_s: nan is out of range",
    }
    for i, (extra, message) in enumerate(cases.items()):
        p = tmp_path / f"p{i}.toml"
        p.write_text(f"controllers = ['gcc']\nscenarios = ['rmcat-5.1']\n{extra}\n")
        r = cli("sweep", str(p), "--dry-run", timeout=60)
        assert r.returncode == 2 and message in one_error_line(r.stderr), (extra, r.stderr)
    p = tmp_path / "big.toml"
    p.write_text("controllers = 'all'\nscenarios = ['rmcat-5.1']\nseeds = 10000\n[grid]\n'link.loss' = [0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1]\n")
    r = cli("sweep", str(p), "--dry-run", timeout=60)
    assert r.returncode == 2 and "more than the limit of 1,000,000" in one_error_line(r.stderr), r.stderr


def test_docs_list_the_declared_ranges(core):
    text = (ROOT / "docs" / "scenarios.md").read_text()
    assert limits.markdown() in text, "docs/scenarios.md is out of date: paste `python -m ratelab.limits` over its ranges section"
    rows = core.scenario_limits()
    assert {r["field"] for r in rows} >= {"duration_s", "flows[*].one_way_delay_ms", "link.queue.ms", "flows[*].count"}
    from ratelab.campaign.plan import MAX_DURATION_S  # the plan's and the flags' copy of the core's limit

    assert MAX_DURATION_S == next(r["max"] for r in rows if r["field"] == "duration_s")


# --- row 3 (second half) and section 3: progress with an ETA, -q silences it ------------------

def test_long_run_shows_progress_with_eta_and_q_silences_it(core, tmp_path):
    env = dict(os.environ, RATELAB_PROGRESS_EVERY_S="0")
    args = [sys.executable, "-m", "ratelab", "run", "lcc-loss", "--set", "duration_s=30", "--no-packets"]
    r = subprocess.run([*args, "--out", str(tmp_path / "a")], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("progress: ")]
    assert lines and all(" ETA " in x and "of 30 simulated s" in x for x in lines), r.stderr
    r = subprocess.run([*args, "-q", "--out", str(tmp_path / "b")], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "progress" not in r.stderr, r.stderr


# --- row 4: Ctrl-C gives exit 130 ------------------------------------------------------------

def _ctrl_c(args: list[str], ready, tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """Start ``ratelab ARGS`` in its own process group, wait until ``ready()``, then send SIGINT to
    the whole group as a terminal's Ctrl-C does (worker processes included)."""
    p = subprocess.Popen([sys.executable, "-m", "ratelab", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"),
                         preexec_fn=restore_default_sigint)
    deadline = time.time() + timeout
    while not ready() and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, p.communicate()
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_ctrl_c_during_run_exits_130_and_leaves_nothing_half_written(core, tmp_path):
    out = tmp_path / "out"
    r = _ctrl_c(["run", "rmcat-5.1", "-q", "--set", "duration_s=50000", "--out", str(out)],
                lambda: any(out.rglob("*.part")), tmp_path)
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "interrupted: finished runs were kept", r.stderr
    assert "Traceback" not in r.stderr
    assert not list(out.rglob("*.part")) and not list(out.rglob("*.parquet"))


def test_ctrl_c_during_sweep_exits_130(core, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text("name = 'ctrlc'\ncontrollers = ['gcc']\nscenarios = ['rmcat-5.1']\nseeds = 3\n"
                    "set = ['duration_s=20000']\n")
    root = tmp_path / "results" / "ctrlc"
    r = _ctrl_c(["sweep", str(plan), "-j", "1", "--out", str(tmp_path / "results")],
                lambda: (root / "plan.json").is_file() and any(root.rglob("*.part")), tmp_path)
    assert r.returncode == 130, r.stderr
    assert "interrupted: finished runs were kept" in r.stderr.strip().splitlines()[-1], r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert not list(root.rglob("*.part"))


# --- section 3: gymnasium registration without torch -----------------------------------------

@pytest.mark.parametrize("order", ["ratelab first", "gymnasium first"])
def test_gymnasium_make_after_import_ratelab_without_torch(core, order):
    require("gymnasium")
    imports = "import ratelab; import gymnasium" if order == "ratelab first" else "import gymnasium; import ratelab"
    code = (f"import sys; {imports}\n"
            "env = gymnasium.make('ratelab/BandwidthEstimation-v0')\n"
            "obs, info = env.reset(seed=1)\n"
            "env.step(env.action_space.sample())\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "print('ok', obs.shape)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr


def test_import_ratelab_does_not_import_gymnasium(core):
    r = subprocess.run([sys.executable, "-c", "import sys, ratelab; print('gymnasium' in sys.modules, 'torch' in sys.modules)"],
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["False", "False"], r.stderr


# --- row 5: memory bounded whatever the duration ---------------------------------------------

_RSS_SCRIPT = """
import resource, sys
from ratelab.report import plots
from ratelab.run import runner
from ratelab.cli import main
runner.FLUSH_ROWS = 4096        # small buffers: the bound is reached after ~100 simulated s
plots.MAX_PLOT_ROWS = 8000
rc = main(["run", "rmcat-5.1", "-q", "--set", "duration_s=" + sys.argv[1], "--out", sys.argv[2]])
print(rc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_memory_does_not_grow_with_the_duration(core, tmp_path):
    """Peak RSS of a whole `ratelab run` (simulation, Parquet, plots, report) of 200 s and of
    2,000 s of rmcat-5.1 with the packet log: before the streaming fixes it grew ~28 KB per
    simulated second (50 MB here); now the buffers are bounded, so the difference is noise.
    (The full-size figures, 20,000 s and a simulated day, are in docs/reliability.md.)"""
    peaks = []
    for d in ("200", "2000"):
        r = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, d, str(tmp_path / d)], capture_output=True, text=True,
                           timeout=300)
        rc, kb = r.stdout.split()[-2:]
        assert rc == "0", r.stderr
        peaks.append(int(kb) / 1024)
    assert peaks[1] - peaks[0] < 20, f"peak RSS {peaks[0]:.0f} MB at 200 s, {peaks[1]:.0f} MB at 2,000 s"


def test_plots_read_long_series_decimated_per_flow(tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ratelab.report.plots import read_series

    n = 10_000  # two flows interleaved, as the simulator writes them
    t = np.repeat(np.arange(n) * 0.025, 2)
    flow = np.tile(np.array([0, 1], dtype=np.uint32), n)
    path = tmp_path / "series.parquet"
    pq.write_table(pa.table({"t_s": t, "flow": flow, "owd_ms": np.arange(2 * n, dtype=float)}), path, row_group_size=3000)
    whole = read_series(path, max_rows=2 * n)
    assert len(whole["t_s"]) == 2 * n and np.array_equal(whole["owd_ms"], np.arange(2 * n))
    small = read_series(path, ["t_s", "flow"], max_rows=2000)
    assert set(small) == {"t_s", "flow"}
    for f in (0, 1):  # every 10th sample of each flow, across row-group boundaries
        ts = small["t_s"][small["flow"] == f]
        assert np.allclose(ts, np.arange(0, n, 10) * 0.025)
    # Lost packets per interval: a kept row carries the losses of the rows skipped before it, so
    # the loss-per-second panel keeps every loss up to the last kept row through the decimation.
    lost = np.where(np.arange(2 * n) % 7 == 0, 3.0, 0.0)
    pq.write_table(pa.table({"t_s": t, "flow": flow, "lost_packets": lost}), path, row_group_size=3000)
    small = read_series(path, ["t_s", "flow", "lost_packets"], max_rows=2000)
    for f in (0, 1):
        got = small["lost_packets"][small["flow"] == f]
        want = lost[flow == f]
        assert got.sum() == want[: n - 9].sum()  # up to the last kept sample, 9990
        assert got[1] == want[1:11].sum()  # the second kept row (sample 10) holds samples 1..10


def test_sink_abort_after_commit_leaves_nothing(tmp_path):
    """A run interrupted between the commits of its Parquet files discards the committed one too."""
    from ratelab.run.runner import ParquetSink

    s = ParquetSink(tmp_path / "series.parquet")
    s.write({"t_s": [0.0, 0.025]})
    s.commit()
    assert (tmp_path / "series.parquet").is_file()
    s.abort()
    assert not list(tmp_path.iterdir())
