"""The ``ratelab`` command: exit codes, one-line errors, output files.

Subprocess tests run the real command; those that need the simulator are skipped when
``ratelab._core`` is not built. In-process tests with the fake core check the CLI's own paths.
"""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import HERE, restore_default_sigint
from ratelab import cli as cli_mod
from ratelab.cli import commands
from ratelab.scenario import TRACE_DIR

GOOD = textwrap.dedent("""
    name = "t"
    duration_s = 10
    [link]
    capacity_kbps = 1000
    [[flows]]
    kind = "media"
""")


def assert_bad_input(proc_or_rc, stderr: str | None = None, *, field: str = "", words: str = "") -> str:
    rc, err = (proc_or_rc.returncode, proc_or_rc.stderr) if stderr is None else (proc_or_rc, stderr)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    if field:
        assert f": {field}: " in lines[0], lines[0]
    if words:
        assert words in lines[0], lines[0]
    return lines[0]


# --- bad input that the front end catches on its own -------------------------------------------

def test_unknown_scenario(cli):
    line = assert_bad_input(cli("run", "no-such-scenario"), words="unknown scenario")
    assert line.startswith("error: no-such-scenario: ")


def test_missing_file(cli, tmp_path):
    assert_bad_input(cli("run", str(tmp_path / "nope.toml")), words="no such file")


def test_missing_trace(cli, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD.replace("capacity_kbps = 1000", 'trace = "missing.csv"'))
    assert_bad_input(cli("run", str(p)), field="link.trace", words="missing.csv")


@pytest.mark.parametrize("item", ["duration_s", "flows[x.start_s=1", "flows.9.start_s=1", "=3"])
def test_bad_set_syntax(cli, item):
    line = assert_bad_input(cli("run", "lcc-loss", "--set", item))
    assert line.startswith("error: --set: ")


def test_bad_flags(cli):
    assert_bad_input(cli("run", "lcc-loss", "--frobnicate"), words="--frobnicate")
    assert_bad_input(cli("run", "lcc-loss", "--seed", "abc"), words="--seed")
    assert_bad_input(cli("frobnicate"), words="frobnicate")


def test_invalid_toml(cli, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text("duration_s = = 1\n")
    assert_bad_input(cli("run", str(p)), field="line 1", words="invalid TOML")


def test_help_and_version(cli):
    r = cli("--help")
    assert r.returncode == 0 and "run" in r.stdout and "demo" in r.stdout
    r = cli("run", "--help")
    assert r.returncode == 0 and "--set" in r.stdout
    r = cli("--version")
    assert r.returncode == 0 and "ratelab" in r.stdout


# --- bad input that the simulator finds (needs the real core) ----------------------------------

def _file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("case", ["unknown key", "wrong type", "negative capacity", "unknown controller",
                                  "unknown controller in file", "unknown parameter", "non-monotonic trace"])
def test_bad_input_found_by_core(core, cli, tmp_path, case):
    if case == "unknown key":
        r = cli("run", _file(tmp_path, GOOD.replace("capacity_kbps = 1000", "capacity_kbps = 1000\ncapacty = 3")))
        line = assert_bad_input(r, words="capacty")
        assert ": link" in line and "column" not in line
    elif case == "wrong type":
        r = cli("run", _file(tmp_path, GOOD.replace("duration_s = 10", 'duration_s = "long"')))
        assert_bad_input(r, field="duration_s")
    elif case == "negative capacity":
        r = cli("run", "lcc-loss", "--set", "link.capacity_kbps=-5")
        line = assert_bad_input(r, field="link.capacity_kbps")
        assert line.startswith("error: lcc-loss: ")
    elif case == "unknown controller":
        assert_bad_input(cli("run", "lcc-loss", "-c", "nope"), words="nope")
    elif case == "unknown controller in file":
        r = cli("run", _file(tmp_path, GOOD + 'controller = "nope"\n'))
        assert_bad_input(r, words="nope")
    elif case == "unknown parameter":
        r = cli("run", "lcc-loss", "--set", "flows.0.params.no_such_param=1")
        assert_bad_input(r, words="no_such_param")
    elif case == "non-monotonic trace":
        (tmp_path / "t.csv").write_text("time_s,capacity_kbps,loss_rate,delay_ms\n0,1000,,\n5,800,,\n3,900,,\n10,900,,\n")
        r = cli("run", _file(tmp_path, GOOD.replace("capacity_kbps = 1000", 'trace = "t.csv"')))
        line = assert_bad_input(r)
        assert "t.csv" in line


# --- end to end with the real simulator --------------------------------------------------------

RUN_KEYS = {"controller", "wall_seconds", "sim_speed", "link", "flows"}
FLOW_KEYS = {"id", "kind", "controller", "throughput_kbps", "utilization", "owd_ms_mean", "owd_ms_p50", "owd_ms_p95",
             "queue_delay_ms_mean", "queue_delay_ms_p95", "loss_rate", "freeze_ratio", "frame_delay_ms_mean"}


def _numbers(summary: dict) -> list:
    """Everything in a summary that must not depend on the machine (wall time does)."""
    return [{k: v for k, v in run.items() if k not in ("wall_seconds", "sim_speed")} for run in summary["runs"]]


def test_run_end_to_end(core, cli, tmp_path):
    r = cli("run", "rmcat-5.1", "--set", "duration_s=10", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    out = tmp_path / "out"
    s = json.loads((out / "summary.json").read_text())
    assert {"scenario", "seed", "duration_s", "runs"} <= set(s)
    assert s["scenario"] == "rmcat-5.1" and s["seed"] == 1 and s["duration_s"] == 10
    assert len(s["runs"]) == 1 and RUN_KEYS <= set(s["runs"][0])
    assert {"utilization", "jain_index", "loss_rate"} <= set(s["runs"][0]["link"])
    for f in s["runs"][0]["flows"]:
        assert FLOW_KEYS <= set(f)
    assert s["runs"][0]["sim_speed"] > 0
    run_dir = out / s["runs"][0]["controller"]
    packets = pq.read_table(run_dir / "packets.parquet")
    assert {"flow", "seq", "size", "send_s", "recv_s", "lost"} <= set(packets.column_names) and packets.num_rows > 0
    series = pq.read_table(run_dir / "series.parquet")
    assert {"t_s", "flow", "target_kbps", "capacity_kbps", "owd_ms"} <= set(series.column_names)
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html
    assert "://" not in html and not re.search(r"<script[^>]*\bsrc=", html)
    assert "rmcat-5.1" in r.stdout and "throughput" in r.stdout
    assert not list(out.rglob("*.part"))


def test_deterministic(core, cli, tmp_path):
    args = ["run", "rmcat-5.2", "--set", "duration_s=15", "--no-packets", "--seed", "5"]
    for d in ("a", "b"):
        assert cli(*args, "--out", str(tmp_path / d)).returncode == 0
    a, b = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("a", "b"))
    assert _numbers(a) == _numbers(b)


def test_compare_controllers(core, cli, tmp_path):
    from ratelab.native import runnable_controller_names

    names = runnable_controller_names()
    args = [x for n in names for x in ("-c", n)]
    r = cli("run", "lcc-loss", *args, "--set", "duration_s=5", "--no-packets", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert [run["controller"] for run in s["runs"]] == names
    assert all(f["controller"] == run["controller"] for run in s["runs"] for f in run["flows"] if f["kind"] == "media")


def test_list(core, cli):
    r = cli("list")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert any(ln.split()[:2] == ["controller", "gcc"] for ln in lines)
    assert any(ln.split()[:2] == ["scenario", "rmcat-5.1"] for ln in lines)


def test_bench_markdown(core, cli):
    r = cli("bench", "-s", "lcc-loss", "--markdown")
    assert r.returncode == 0, r.stderr
    row = [ln for ln in r.stdout.splitlines() if ln.startswith("| lcc-loss")]
    assert len(row) == 1 and row[0].endswith("× |")


def test_demo(core, cli, tmp_path):
    assert TRACE_DIR.is_dir(), "the demo's real trace ships with the package"
    r = cli("demo", "--set", "duration_s=4", "--no-packets", "--out", str(tmp_path / "demo"))
    assert r.returncode == 0, r.stderr
    assert "report" in r.stdout
    html = (tmp_path / "demo" / "report.html").read_text()
    assert "Overview" in html and "://" not in html
    for _, _, _, folder in commands.DEMO_SCENARIOS:
        assert (tmp_path / "demo" / folder / "summary.json").is_file()


# --- CLI paths with the fake core, in process --------------------------------------------------

def test_fake_run_and_interrupt(fake_core, tmp_path, capsys, monkeypatch):
    assert cli_mod.main(["run", "lcc-loss", "-c", "gcc", "--set", "duration_s=3", "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "summary.json").is_file() and (tmp_path / "a" / "report.html").is_file()

    from ratelab.run import runner

    real = runner.run_one

    def flaky(sc, doc, controller, label, *a, **kw):
        if label == "oracle":
            raise KeyboardInterrupt
        return real(sc, doc, controller, label, *a, **kw)

    monkeypatch.setattr(runner, "run_one", flaky)
    rc = cli_mod.main(["run", "lcc-loss", "-c", "gcc", "-c", "oracle", "--set", "duration_s=3", "--out", str(tmp_path / "b")])
    assert rc == 130
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert [r["controller"] for r in s["runs"]] == ["gcc"]
    assert "interrupted" in capsys.readouterr().err


def test_fake_bad_input_one_line(fake_core, capsys):
    assert cli_mod.main(["run", "lcc-loss", "--set", "link.capacity_kbps=-5"]) == 2
    assert capsys.readouterr().err == "error: lcc-loss: link.capacity_kbps: must be > 0, got -5\n"
    assert cli_mod.main(["run", "lcc-loss", "-c", "nope"]) == 2
    assert capsys.readouterr().err == ("error: -c: nope: unknown controller (known: gcc, fixed, oracle; or path/to/file.py:Class, "
                                       "package.module:Class, a name registered in 'ratelab.controllers')\n")


def test_fake_demo_and_list(fake_core, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(commands, "DEMO_SCENARIOS", [s for s in commands.DEMO_SCENARIOS if not s[0].startswith("trace")])
    assert cli_mod.main(["demo", "--set", "duration_s=2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "report:" in out
    s = json.loads((tmp_path / "lcc-loss-5pct" / "summary.json").read_text())
    assert [r["controller"] for r in s["runs"]] == ["gcc", "oracle"]  # every controller but fixed
    assert cli_mod.main(["list"]) == 0
    assert "controller  gcc" in capsys.readouterr().out


def test_sigint_stops_cleanly(tmp_path):
    """A real Ctrl-C (SIGINT) between runs: exit 130, finished runs kept, no partial files."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import fake_core; sys.modules['ratelab._core'] = fake_core;"
            "from ratelab.cli import main; sys.exit(main(sys.argv[2:]))")
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-c", code, str(HERE), "run", "lcc-steps", "-c", "gcc", "-c", "oracle",
                          "--set", "duration_s=2000", "--no-packets", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=restore_default_sigint)
    deadline = time.time() + 120
    while not (out / "gcc" / "series.parquet").exists() and p.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    s = json.loads((out / "summary.json").read_text())
    assert [r["controller"] for r in s["runs"]] == ["gcc"]
    assert not list(out.rglob("*.part"))
    assert not (out / "oracle").exists()
