"""The reverse bottleneck (RFC 8867 5.3) in the front end: summary.json, the CLI table, the
report, input errors, ``--set`` on ``reverse_link``, and the campaign store / DuckDB views over
old and new runs. The end-to-end tests run the real simulator (skipped when it is not built) on
short durations; the formatting tests build results by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ratelab.run.runner import RunResult, ScenarioRun
from ratelab.scenario import Scenario, load_scenario
from test_cli import GOOD, assert_bad_input

LINK_KEYS = {"utilization", "jain_index", "loss_rate", "capacity_kbps_mean", "queue_drops", "random_drops",
             "control_kbps_mean"}
RETURN_KEYS = {"return_packets_sent", "return_packets_lost", "return_bytes_sent", "return_loss_rate"}

# A one-flow scenario (test_cli's GOOD: 10 s, 1 Mbit/s, one media flow).
ONE_WAY = GOOD


def _file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return str(p)


# --- end to end: ratelab run --------------------------------------------------------------------

def test_run_rmcat_5_3_writes_both_links_and_return_path_counters(core, cli, tmp_path):
    out = tmp_path / "out"
    r = cli("run", "rmcat-5.3", "--set", "duration_s=20", "--no-packets", "--out", str(out))
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    (run,) = s["runs"]
    assert list(run) == ["controller", "wall_seconds", "sim_speed", "link", "reverse_link", "flows"]
    assert set(run["link"]) == set(run["reverse_link"]) == LINK_KEYS
    flows = run["flows"]
    assert [f["direction"] for f in flows] == ["forward", "reverse"]
    for f in flows:
        assert RETURN_KEYS <= set(f)
        # TWCC every 100 ms for 20 s: about 200 reports each way, every one a packet on the other link
        assert 150 <= f["return_packets_sent"] <= 250, f
        assert 0 <= f["return_packets_lost"] <= f["return_packets_sent"]
        assert f["return_bytes_sent"] >= 52 * f["return_packets_sent"]  # ≥ 24 bytes of RTCP + 28 of IPv4/UDP each
        assert 0.0 <= f["return_loss_rate"] <= 1.0
    fwd, rev = flows
    # the reverse link's control traffic is the forward flow's feedback, delivered (≤ what was sent)
    sent_kbps = fwd["return_bytes_sent"] * 8 / 20 / 1e3
    assert 0.5 * sent_kbps < run["reverse_link"]["control_kbps_mean"] <= sent_kbps + 1e-9
    sent_kbps = rev["return_bytes_sent"] * 8 / 20 / 1e3
    assert 0.5 * sent_kbps < run["link"]["control_kbps_mean"] <= sent_kbps + 1e-9
    # the two bottlenecks have their own capacities (forward 2000, reverse 2000 until 35 s)
    assert run["link"]["capacity_kbps_mean"] == pytest.approx(2000) and run["reverse_link"]["capacity_kbps_mean"] == pytest.approx(2000)
    # the table marks directions and shows both utilizations
    assert "fwd / rev" in r.stdout and "backward (rev)" in r.stdout and "forward (fwd)" in r.stdout
    util = f"{100 * run['link']['utilization']:.1f} % / {100 * run['reverse_link']['utilization']:.1f} %"
    assert util in r.stdout
    html = (out / "report.html").read_text()
    assert "Reverse bottleneck" in html and "control (feedback) kbit/s" in html and "feedback loss" in html
    assert f"{run['reverse_link']['control_kbps_mean']:.1f}</td>" in html


def test_one_way_run_keeps_its_summary_keys(core, cli, tmp_path):
    r = cli("run", "rmcat-5.1", "--set", "duration_s=3", "--no-packets", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = json.loads((tmp_path / "summary.json").read_text())["runs"]
    assert list(run) == ["controller", "wall_seconds", "sim_speed", "link", "flows"]
    (f,) = run["flows"]
    assert f["direction"] == "forward" and all(f[k] is None for k in RETURN_KEYS)
    assert "fwd" not in r.stdout and "(rev)" not in r.stdout
    assert "Reverse bottleneck" not in (tmp_path / "report.html").read_text()


# --- bad input ----------------------------------------------------------------------------------

def test_reverse_direction_without_reverse_link_is_one_error_line(core, cli, tmp_path):
    text = ONE_WAY + 'direction = "reverse"\n'
    line = assert_bad_input(cli("run", _file(tmp_path, text)), field="flows[0].direction", words="reverse_link")
    assert line.startswith(f"error: {tmp_path / 's.toml'}: ")


def test_unknown_direction_names_the_field(core, cli):
    assert_bad_input(cli("run", "rmcat-5.3", "--set", 'flows.1.direction="sideways"'), field="flows[1].direction")


def test_missing_reverse_link_trace_is_one_error_line(cli, tmp_path):
    text = ONE_WAY + '[reverse_link]\ntrace = "no-such-trace.csv"\n'
    assert_bad_input(cli("run", _file(tmp_path, text)), field="reverse_link.trace", words="no-such-trace.csv")
    assert_bad_input(cli("run", "rmcat-5.3", "--set", 'reverse_link.trace="gone.csv"'), field="reverse_link.trace")


def test_bad_reverse_link_value_names_the_field(core, cli):
    assert_bad_input(cli("run", "rmcat-5.3", "--set", "reverse_link.capacity_kbps=-5"), field="reverse_link.capacity_kbps")


# --- --set on reverse_link ----------------------------------------------------------------------

def test_set_reverse_link_capacity_replaces_the_steps():
    sc = load_scenario("rmcat-5.3", ["reverse_link.capacity_kbps=500"])
    assert sc.data["reverse_link"]["capacity_kbps"] == 500 and "steps" not in sc.data["reverse_link"]
    assert "steps" in sc.data["link"]  # the forward link is left alone
    assert sc.data["reverse_link"]["queue"] == {"ms": 300, "rate_kbps": 2000}


def test_set_reverse_link_capacity_runs(core, cli, tmp_path):
    r = cli("run", "rmcat-5.3", "--set", "reverse_link.capacity_kbps=500", "--set", "duration_s=5", "--no-packets",
            "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = json.loads((tmp_path / "summary.json").read_text())["runs"]
    assert run["reverse_link"]["capacity_kbps_mean"] == pytest.approx(500)
    assert run["link"]["capacity_kbps_mean"] == pytest.approx(2000)


# --- formatting, with results built by hand -----------------------------------------------------

def _result(two_way: bool) -> ScenarioRun:
    link = {"utilization": 0.8, "jain_index": 1.0, "loss_rate": 0.01, "capacity_kbps_mean": 2000.0,
            "queue_drops": 3, "random_drops": 0, "control_kbps_mean": 5.25 if two_way else 0.0}
    flows = [{"id": 0, "label": "a", "kind": "media", "controller": "gcc", "direction": "forward",
              "throughput_kbps": 1600.0, "utilization": 0.8, "return_loss_rate": 0.0 if two_way else None},
             {"id": 1, "label": "b", "kind": "tcp", "controller": "newreno", "direction": "reverse" if two_way else "forward",
              "throughput_kbps": 700.0, "utilization": 0.35, "return_loss_rate": 0.125 if two_way else None}]
    rev = {**link, "utilization": 0.35, "capacity_kbps_mean": 1000.0, "control_kbps_mean": 4.75} if two_way else None
    run = RunResult(name="gcc", controller="gcc", wall_seconds=1.0, sim_speed=10.0, link=link, flows=flows,
                    duration_s=10.0, reverse_link=rev)
    return ScenarioRun(Scenario({"name": "x", "duration_s": 10}, "x"), seed=1, runs=[run])


def _table_text(res: ScenarioRun) -> str:
    import io

    from rich.console import Console

    from ratelab.cli.app import summary_table

    buf = io.StringIO()
    Console(file=buf, width=200).print(summary_table(res))
    return buf.getvalue()


def test_cli_table_one_way_unchanged_two_way_marks_directions():
    one = _table_text(_result(False))
    assert "link util." in one and "fwd" not in one and "rev" not in one
    assert "80.0 %" in one and " b (tcp) " in one
    two = _table_text(_result(True))
    assert "link util. fwd / rev" in two and "80.0 % / 35.0 %" in two
    assert " a (fwd) " in two and " b (tcp, rev) " in two


def test_summary_json_has_reverse_link_only_when_present():
    assert "reverse_link" not in _result(False).runs[0].to_summary()
    s = _result(True).runs[0].to_summary()
    assert s["reverse_link"]["utilization"] == 0.35 and list(s)[-1] == "flows"


def test_report_shows_the_reverse_link_when_present(tmp_path):
    from ratelab.report.run_report import write_report

    one = write_report([_result(False)], tmp_path / "one.html", plots=False).read_text()
    assert "Reverse bottleneck" not in one and "feedback loss" not in one and "direction" not in one
    two = write_report([_result(True), _result(False)], tmp_path / "two.html", plots=False).read_text()
    assert "Reverse bottleneck" in two
    assert "80.0 / 35.0" in two and "link util. (%) fwd / rev" in two  # forward / reverse utilization
    # the links table: reverse capacity, loss, control rate; the flows table: direction, feedback loss
    assert '<td class="l">reverse</td><td>1000</td><td>35.0 %</td><td>1.0 %</td><td>3</td><td>0</td><td>4.8</td>' in two
    assert '<td class="l">b</td><td class="l">tcp</td><td class="l">reverse</td><td>700</td>' in two
    assert "<th>feedback loss (%)</th>" in two and "<td>12.5</td></tr>" in two


# --- campaigns: store, views, query -------------------------------------------------------------

MIX_PLAN = """
name = "mix"
controllers = ["gcc"]
scenarios = ["rmcat-5.3", "rmcat-5.1"]
seeds = 1
set = ["duration_s=4"]
"""

OLD_COLUMNS = ["direction", "return_packets_sent", "return_packets_lost", "return_bytes_sent", "return_loss_rate",
               "link_control_kbps_mean"]


def test_campaign_with_rmcat_5_3_stores_and_queries_the_reverse_columns(core, cli, tmp_path):
    from ratelab.report.leaderboard import write_leaderboard
    from ratelab.campaign.store import connect, rebuild_summary

    (tmp_path / "plan.toml").write_text(MIX_PLAN)
    out = tmp_path / "res"
    r = cli("sweep", str(tmp_path / "plan.toml"), "--out", str(out), "-j", "1", "-q")
    assert r.returncode == 0, r.stderr
    assert "done 2, failed 0" in r.stdout
    root = out / "mix"
    two = pq.read_table(root / "controller=gcc/scenario=rmcat-5.3/seed=1/flows.parquet").to_pylist()
    assert [f["direction"] for f in two] == ["forward", "reverse"]
    assert all(f["reverse_link_utilization"] > 0 and f["return_packets_sent"] > 0 for f in two)
    assert two[0]["reverse_link_capacity_kbps_mean"] == pytest.approx(2000)
    one = pq.read_table(root / "controller=gcc/scenario=rmcat-5.1/seed=1/flows.parquet")
    assert not [c for c in one.column_names if c.startswith("reverse_link_")]

    # an old run (before the reverse link): no direction, no return_* columns
    old = root / "controller=gcc/scenario=old/seed=1"
    old.mkdir(parents=True)
    pq.write_table(one.drop_columns([c for c in OLD_COLUMNS if c in one.column_names]), old / "flows.parquet")

    r = cli("query", "mix", "--out", str(out), "--format", "json",
            "SELECT scenario, reverse_link_utilization, reverse_link_control_kbps_mean, reverse_flows, flows "
            "FROM runs ORDER BY scenario")
    assert r.returncode == 0, r.stderr
    rows = {x["scenario"]: x for x in json.loads(r.stdout)}
    assert rows["rmcat-5.3"]["reverse_link_utilization"] == pytest.approx(two[0]["reverse_link_utilization"])
    assert rows["rmcat-5.3"]["reverse_link_control_kbps_mean"] > 0
    assert (rows["rmcat-5.3"]["reverse_flows"], rows["rmcat-5.3"]["flows"]) == (1, 2)
    for s in ("rmcat-5.1", "old"):
        assert rows[s]["reverse_link_utilization"] is None and rows[s]["reverse_flows"] == 0
    con = connect(root)
    got = con.execute("SELECT scenario, id, direction, return_packets_sent FROM flows ORDER BY scenario, id").fetchall()
    assert [g[:3] for g in got] == [("old", 0, "forward"), ("rmcat-5.1", 0, "forward"),
                                    ("rmcat-5.3", 0, "forward"), ("rmcat-5.3", 1, "reverse")]
    assert got[0][3] is None and got[1][3] is None and got[2][3] == two[0]["return_packets_sent"]
    con.close()
    summary = pq.read_table(rebuild_summary(root))
    assert summary.num_rows == 4 and "reverse_link_utilization" in summary.column_names
    # the leaderboard page builds over such a campaign too
    shutil.rmtree(old)
    page = write_leaderboard(root, tmp_path / "lb.html").read_text()
    assert "rmcat-5.3" in page


def test_one_way_campaign_views_have_the_reverse_columns(tmp_path, fake_core):
    """Runs that never wrote direction or reverse columns still answer queries that name them."""
    from ratelab.campaign.plan import RunSpec
    from ratelab.campaign.store import connect, execute_run

    doc = load_scenario(_file(tmp_path, ONE_WAY)).data
    spec = RunSpec("c", "controller=gcc/scenario=t/seed=1", "gcc", "gcc", {}, "t", "t", doc, 1)
    assert execute_run(spec, tmp_path / "camp")["status"] == "done"
    con = connect(tmp_path / "camp")
    assert con.execute("SELECT direction, return_loss_rate, reverse_link_utilization FROM flows").fetchall() == [("forward", None, None)]
    assert con.execute("SELECT reverse_link_utilization, reverse_flows, flows FROM runs").fetchall() == [(None, 0, 1)]


def test_percentages_never_read_minus_zero():
    """A link no flow's data crosses reports utilization -0.0 (an empty f64 sum in the core)."""
    from ratelab.report.run_report import fmt

    assert fmt(-0.0, "pct") == "0.0 %" and fmt(0.25, "pct") == "25.0 %"
