"""The trade-off summary of trace campaigns (issue 15, plan `real`): split, capped utilization, means."""

import math

import pytest

from ratelab.campaign.plan import expand_plan, load_plan
from ratelab.errors import InputError
from ratelab.report.tradeoff import SPLIT_FILE, shipped_split, split_of, summarize, trace_family


def test_family_of_names():
    assert trace_family("pensieve-trace_866_http---www.amazon.com.csv") == "fcc"
    assert trace_family("pensieve-bus.ljansbakken-oslo-report.2010-09-28_1407CEST") == "norway"
    assert trace_family("/x/opennetlab-4G_3mbps.csv") == "opennetlab"
    assert trace_family("mahimahi-TMobile-LTE-short.up.csv") == "mahimahi"


def test_split_is_stratified_and_stable():
    names = [f"pensieve-trace_{i}.csv" for i in range(9)] + [f"opennetlab-{i}.csv" for i in range(6)]
    sp = split_of(names)
    assert sp == split_of(list(reversed(names)))  # order of the input does not matter
    fcc = [v for k, v in sp.items() if k.startswith("pensieve-trace_")]
    onl = [v for k, v in sp.items() if k.startswith("opennetlab-")]
    assert fcc.count("test") == 3 and onl.count("test") == 2  # every third in each family


def test_shipped_split_file_matches_the_rule():
    import csv

    with SPLIT_FILE.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 49
    assert shipped_split() == split_of([r["file"] for r in rows])
    # Dots inside names are kept (bus.ljansbakken-… is not cut at its first dot).
    assert "pensieve-bus.ljansbakken-oslo-report.2010-09-28_1407CEST" in shipped_split()


def _rows():
    out = []
    # Two traces, two seeds; the oracle at 90 % / 100 ms everywhere, "a" at 60/80 % and 50/150 ms.
    for seed in (1, 2):
        for trace, (ua, qa) in {"t1": (0.6, 50.0), "t2": (0.8, 150.0)}.items():
            out.append({"controller": "oracle", "scenario": trace, "seed": seed, "utilization": 0.9, "queue_delay_ms_p95": 100.0})
            out.append({"controller": "a", "scenario": trace, "seed": seed, "utilization": ua + 0.02 * (seed - 1),
                        "queue_delay_ms_p95": qa})
    return out


def test_summary_means_hand_computed():
    table = summarize(_rows(), "all", splits={"t1": "train", "t2": "test"})
    assert [r["controller"] for r in table] == ["oracle", "a"]
    a = table[1]
    # seed 1: (0.6 + 0.8)/2 = 0.70; seed 2: 0.72 → mean 0.71, spread 0.01.
    assert a["utilization"] == pytest.approx(0.71)
    assert a["utilization_spread"] == pytest.approx(0.01)
    assert a["queue_delay_ms_p95"] == pytest.approx(100.0)
    assert a["p95_vs_oracle"] == pytest.approx(1.0)
    test = summarize(_rows(), "test", splits={"t1": "train", "t2": "test"})
    assert test[1]["queue_delay_ms_p95"] == pytest.approx(150.0) and test[1]["traces"] == 1


def test_plot_points_are_the_table_numbers(tmp_path):
    """The Pareto plot draws each controller at the table's mean, bars over the per-seed range."""
    from ratelab.report.tradeoff import plot, points

    sp = {"t1": "train", "t2": "test"}
    tables = {s: summarize(_rows(), s, splits=sp) for s in ("all", "train", "test")}
    pts = points(tables["all"])
    a, o = pts["a"], pts["oracle"]
    assert (a.utilization, a.delay_ms) == (pytest.approx(0.71), pytest.approx(100.0))
    # per-seed means 0.70 and 0.72: the bar spans them; the mean ± the table's spread gives the same.
    assert (a.util_lo, a.util_hi) == (pytest.approx(0.70), pytest.approx(0.72))
    assert a.util_hi - a.util_lo == pytest.approx(2 * tables["all"][1]["utilization_spread"])
    assert a.seeds == 2 and a.runs == 4 and a.has_spread
    assert (o.utilization, o.delay_ms, o.has_spread) == (pytest.approx(0.9), pytest.approx(100.0), False)
    assert points(tables["test"])["a"].delay_ms == pytest.approx(150.0)
    png = plot(tables, tmp_path / "pareto.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_summary_uses_only_traces_every_controller_finished():
    rows = [r for r in _rows() if not (r["controller"] == "a" and r["scenario"] == "t2" and r["seed"] == 2)]
    table = summarize(rows, "all", splits={"t1": "train", "t2": "test"})
    assert all(r["traces"] == 1 for r in table)
    assert table[1]["queue_delay_ms_p95"] == pytest.approx(50.0)


def test_unknown_split_is_one_clear_error():
    with pytest.raises(InputError, match="unknown split"):
        summarize(_rows(), "validation")


def test_real_plan_template():
    specs = expand_plan(load_plan("real"))
    doc = specs[0].scenario_doc
    assert doc["duration_s"] == 300
    assert doc["link"]["queue"]["ms"] == 500 and doc["link"]["queue"]["rate_kbps"] > 0
    assert doc["flows"][0]["one_way_delay_ms"] == 40 and doc["flows"][0]["media"]["max_kbps"] == 20000
    assert len({s.scenario for s in specs}) == len(shipped_split()) - sum(1 for k in shipped_split() if k.startswith("mahimahi"))
    assert {s.seed for s in specs} == {1, 2, 3}
    assert not math.isnan(doc["link"]["queue"]["rate_kbps"])


def test_tradeoff_cli_on_a_small_campaign(tmp_path, core, cli):
    """A real sweep (oracle, gcc; one shipped trace, 20 s) and its summary: the oracle, which
    sends at 95 % of the capacity, shows ≈ 95 % utilization of min(capacity, media max)."""
    import json

    plan = tmp_path / "small.toml"
    plan.write_text('name = "small"\ncontrollers = ["oracle", "gcc"]\nseeds = 1\n'
                    'traces = ["opennetlab-WIRED_900kbs.csv"]\ntrace_duration_s = 20\n'
                    'set = ["flows.0.media.max_kbps=20000"]\n')
    from ratelab.scenario import TRACE_DIR

    plan.write_text(plan.read_text().replace('"opennetlab-WIRED_900kbs.csv"', json.dumps(str(TRACE_DIR / "opennetlab-WIRED_900kbs.csv"))))
    out = tmp_path / "res"
    r = cli("sweep", str(plan), "--out", str(out), "-j", "1", "-q")
    assert r.returncode == 0, r.stderr
    r = cli("tradeoff", "small", "--out", str(out), "--split", "all", "--format", "json")
    assert r.returncode == 0, r.stderr
    table = table_rows = {row["controller"]: row for row in json.loads(r.stdout)["all"]}
    assert list(table)[0] == "oracle"
    assert 0.85 < table["oracle"]["utilization"] < 1.0
    assert table["oracle"]["p95_vs_oracle"] == pytest.approx(1.0)
    assert 0.0 < table["gcc"]["utilization"] < 1.05
    png = tmp_path / "pareto.png"
    r = cli("tradeoff", "small", "--out", str(out), "--split", "all", "--plot", str(png))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:4] == b"\x89PNG" and f"]({png})" in r.stdout
    r = cli("tradeoff", "small", "--out", str(out), "--plot", str(tmp_path / "p.svg"))
    assert r.returncode == 2 and "--plot" in r.stderr and "Traceback" not in r.stderr
    r = cli("tradeoff", "markdown-test", "--out", str(out))
    assert r.returncode == 2 and "no campaign folder" in r.stderr
    # --per-run lists each run with its trace's split, and --split filters them
    from ratelab.report.tradeoff import shipped_split

    split = shipped_split()["opennetlab-WIRED_900kbs"]
    other = "test" if split == "train" else "train"
    r = cli("tradeoff", "small", "--out", str(out), "--per-run", "--format", "json")
    runs = json.loads(r.stdout)["runs"]
    assert len(runs) == 2 and {x["split"] for x in runs} == {split}
    r = cli("tradeoff", "small", "--out", str(out), "--per-run", "--split", split, "--format", "json")
    assert len(json.loads(r.stdout)["runs"]) == 2
    r = cli("tradeoff", "small", "--out", str(out), "--per-run", "--split", other, "--format", "json")
    assert json.loads(r.stdout)["runs"] == []

    # The campaign's HTML page carries the same summary: the section against the oracle, its
    # Pareto figure and, per split, a table whose numbers are the JSON's (data-v, 6 digits).
    page = tmp_path / "page.html"
    r = cli("tradeoff", "small", "--out", str(out), "--split", "all", "--report", str(page))
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    section = html[html.index("<h2>Against the oracle</h2>"):html.index("<h2>Per trace</h2>")]
    assert "alt=\"Pareto plot against the oracle per trace split\"" in section and "data:image/png;base64," in section
    table = section[section.index('id="tradeoff-all"'):]
    table = table[:table.index("</table>")]
    for c, row in table_rows.items():
        tr = table[table.index(f">{c}</td>"):]
        tr = tr[:tr.index("</tr>")]
        for v in (row["utilization"], row["queue_delay_ms_p95"], row["p95_vs_oracle"]):
            assert f'data-v="{v:.6g}"' in tr, (c, v, tr)
    r = cli("tradeoff", "small", "--out", str(out), "--report", str(tmp_path / "page.pdf"))
    assert r.returncode == 2 and "--report" in r.stderr and "Traceback" not in r.stderr
