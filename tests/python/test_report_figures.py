"""The numbers behind the report's figures (Pareto front, spread over seeds, CDFs, per-second
loss), the figures themselves as PNGs, the sortable table, and the report against the fake core."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ratelab.report.compare import aggregate, competitors_front, ecdf, front_path, pareto_front, run_point
from ratelab.report.page import Column, fmt, sortable_table


def test_pareto_front_by_hand():
    # (utilization, p95 queuing delay ms)
    pts = {
        "low-delay": (0.60, 5.0),     # nothing has less delay: on the front
        "balanced": (0.90, 40.0),     # beats "dominated" on both: on the front
        "dominated": (0.85, 60.0),    # balanced has more utilization and less delay
        "greedy": (0.98, 300.0),      # nothing has more utilization: on the front
        "worse-greedy": (0.98, 310.0),  # same utilization as greedy, more delay: dominated
        "broken": (math.nan, 1.0),    # never on the front, dominates nothing
    }
    assert pareto_front(pts) == {"low-delay", "balanced", "greedy"}
    assert front_path(pts, pareto_front(pts)) == [(0.60, 5.0), (0.90, 40.0), (0.98, 300.0)]
    # equal points do not dominate each other
    assert pareto_front({"a": (0.5, 10.0), "b": (0.5, 10.0)}) == {"a", "b"}
    # the oracle is a reference: it dominates everything here, yet the competitors keep their front
    with_oracle = {**pts, "oracle": (0.99, 1.0)}
    assert pareto_front(with_oracle) == {"oracle"}
    assert competitors_front(with_oracle) == {"low-delay", "balanced", "greedy"}


def test_run_point_sums_media_utilization_and_takes_the_worst_delay():
    flows = [
        {"kind": "media", "utilization": 0.3, "queue_delay_ms_p95": 20.0},
        {"kind": "media", "utilization": 0.25, "queue_delay_ms_p95": 45.0},
        {"kind": "tcp", "utilization": 0.4, "queue_delay_ms_p95": 300.0},
    ]
    assert run_point(flows) == (pytest.approx(0.55), 45.0)
    # two directions: the forward media flows only
    two_way = flows[:2] + [{"kind": "media", "direction": "reverse", "utilization": 0.9, "queue_delay_ms_p95": 900.0}]
    assert run_point(two_way) == (pytest.approx(0.55), 45.0)
    u, d = run_point([{"kind": "tcp", "utilization": 0.9, "queue_delay_ms_p95": 1.0}])
    assert math.isnan(u) and math.isnan(d)


def test_aggregate_means_and_spread_over_seeds():
    samples = [
        # controller, seed, utilization, delay: seed 1 over two traces, seed 2 over two traces
        ("x", 1, 0.8, 10.0), ("x", 1, 0.6, 30.0),   # seed 1 mean: 0.7, 20
        ("x", 2, 0.9, 50.0), ("x", 2, 0.9, 70.0),   # seed 2 mean: 0.9, 60
        ("y", 1, 0.5, 5.0), ("y", 1, math.nan, 1.0),  # a run without media counts for nothing
    ]
    a = aggregate(samples)
    x = a["x"]
    assert x.utilization == pytest.approx(0.8) and x.delay_ms == pytest.approx(40.0)
    assert (x.util_lo, x.util_hi) == (pytest.approx(0.7), pytest.approx(0.9))
    assert (x.delay_lo, x.delay_hi) == (pytest.approx(20.0), pytest.approx(60.0))
    assert x.runs == 4 and x.seeds == 2 and x.has_spread
    y = a["y"]
    assert (y.utilization, y.delay_ms, y.runs, y.seeds) == (0.5, 5.0, 1, 1) and not y.has_spread


def test_ecdf_by_hand():
    x, y = ecdf([30.0, None, 10.0, math.nan, 20.0, 10.0])
    assert x.tolist() == [10.0, 10.0, 20.0, 30.0]
    assert y.tolist() == [0.25, 0.5, 0.75, 1.0]
    x, y = ecdf([])
    assert len(x) == len(y) == 0


def test_per_second_loss_bins():
    from ratelab.report.plots import _per_second

    t = np.array([0.0, 0.5, 0.975, 1.0, 1.5, 3.2])
    v = np.array([1, 2, 3, 4, np.nan, 5], dtype=float)
    sec, n = _per_second(t, v)
    assert sec.tolist() == [0.0, 1.0, 2.0, 3.0] and n.tolist() == [6.0, 4.0, 0.0, 5.0]
    # a longer run: bins of ceil(span / max_bins) seconds, as lost packets per second
    sec, n = _per_second(t, v, max_bins=2)
    assert sec.tolist() == [0.0, 2.0] and n.tolist() == [5.0, 2.5]
    t = np.arange(0.0, 86_400.0, 0.025)
    sec, n = _per_second(t, np.ones(len(t)))
    assert len(sec) <= 2_000 and sec[1] - sec[0] == 44.0 and np.allclose(n, 40.0)


def test_figures_are_written(tmp_path):
    from PIL import Image

    from ratelab.report.figures import plot_cdfs, plot_pareto, styles

    names = [f"c{i}" for i in range(12)] + ["oracle"]
    st = styles(names)
    assert st["oracle"]["marker"] == "*" and st["c0"] != st["c10"] and st["c0"]["color"] == st["c10"]["color"]
    rng = np.random.default_rng(1)
    samples = [(n, seed, rng.uniform(0.5, 1), rng.uniform(0.5, 400)) for n in names for seed in (1, 2, 3) for _ in range(2)]
    groups = [("all", aggregate(samples)), ("one seed", aggregate(s for s in samples if s[1] == 1))]
    p = plot_pareto(groups, tmp_path / "pareto.png", names)
    w, h = Image.open(p).size
    assert (w, h) == (1140, 400)  # two panels side by side
    runs = {}
    for n, _, u, d in samples:
        runs.setdefault(n, []).append((u, d))
    p = plot_cdfs(runs, tmp_path / "cdf.png", names)
    assert Image.open(p).size[0] == 1140
    assert plot_cdfs({}, tmp_path / "none.png", names) is None


def test_sortable_table_numbers_and_best_cells():
    rows = [{"n": "a", "u": 0.5}, {"n": "oracle", "u": 0.99}, {"n": "b", "u": 0.75}, {"n": "c", "u": None}]
    html = sortable_table([Column("name", lambda r: r["n"], left=True), Column("util. (%)", lambda r: r["u"], "pct0", best="max")],
                          rows, id="t", row_class=lambda r: "oracle" if r["n"] == "oracle" else "")
    assert '<table id="t" class="sortable">' in html and "<thead>" in html
    assert re.findall(r'data-v="([^"]+)"', html) == ["0.5", "0.99", "0.75"]
    # the best is b's (the oracle is a reference), the missing value is a dash without data-v
    assert '<td class="best" data-v="0.75">75.0</td>' in html
    assert "<td>–</td>" in html
    # nothing is marked when every row has the same value
    same = sortable_table([Column("x", lambda r: 1.0, best="max")], [1, 2])
    assert "best" not in same
    assert fmt(0.0042, "ms") == "0.0" and fmt(9.96, "ms") == "10.0" and fmt(123.4, "ms") == "123" and fmt(None, "ms") == "–"


def test_report_pages_with_the_fake_core(fake_core, tmp_path):
    from ratelab.report.run_report import write_report
    from ratelab.run.runner import run_scenario

    a = run_scenario("rmcat-5.6", ["gcc", "oracle"], out_dir=tmp_path / "a", overrides=["duration_s=10"])
    b = run_scenario("lcc-loss", ["gcc"], out_dir=tmp_path / "b", overrides=["duration_s=10", "link.loss=0.05"])
    b.title = "lcc-loss with 5 % loss"
    html = write_report([a, b], tmp_path / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "://" not in html and not re.search(r"<script[^>]*\bsrc=", html) and "<link" not in html
    # Pareto plot first, CDFs (gcc ran twice), small multiples of a, the run figure of b
    assert html.count("data:image/png;base64,") == 4
    assert html.index("Pareto plot") < html.index("Overview") < html.index('id="s-rmcat-5-6"')
    assert "lcc-loss with 5 % loss" in html and "link.loss=0.05" in html
    assert (tmp_path / "a" / "comparison.png").exists() and (tmp_path / "a" / "gcc" / "plot.png").exists()
    assert (tmp_path / "report-figures" / "pareto.png").exists() and (tmp_path / "report-figures" / "cdf.png").exists()
    # a page per run, linked relatively
    assert 'href="a/gcc/report.html"' in html and (tmp_path / "a" / "gcc" / "report.html").is_file()
    # one scenario, one run: the run's page itself
    one = write_report([b], tmp_path / "one.html").read_text()
    assert one.count("data:image/png;base64,") == 1 and "<h2>Flows</h2>" in one and "Pareto" not in one


def test_smoothing_keeps_the_series_length_and_averages_by_hand():
    """The 1 s moving average of the run plot: same length as the series even when the series is
    shorter than the window (a 1 s run has 39 samples at 25 ms; np.convolve gave 40), NaN left out."""
    from ratelab.report.plots import smooth

    t = np.arange(39) * 0.025
    v = np.ones(39)
    assert smooth(t, v).shape == (39,) and np.allclose(smooth(t, v), 1.0)
    # window of 3 samples (0.075 s at 25 ms): mean of the neighbours, NaN skipped, edges partial
    t = np.arange(5) * 0.025
    v = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    assert np.allclose(smooth(t, v, window_s=0.075), [1.5, 1.5, 3.0, 4.5, 4.5])


def test_a_run_shorter_than_the_smoothing_window_gets_its_report(tmp_path, cli):
    r = cli("run", "rmcat-5.1", "-c", "gcc", "--set", "duration_s=1", "--no-packets", "-q", "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "report.html").is_file()
