"""The leaderboard: ranking and trace groups (its page in a browser: test_report_browser.py)."""

from __future__ import annotations

import math

import pytest

from ratelab.report.leaderboard import _ranks, ranking, trace_group


def test_ranks_average_ties_and_put_missing_last():
    assert _ranks([0.5, 0.9, 0.9, None], higher_better=True) == [3.0, 1.5, 1.5, 4.0]
    assert _ranks([100.0, 50.0, math.nan], higher_better=False) == [2.0, 1.0, 3.0]


def test_ranking_by_mean_rank_over_traces():
    m = [
        # trace A: x better in utilization and delay, same freezes -> x ranks (1+1+1.5)/3, y (2+2+1.5)/3
        {"controller": "x", "scenario": "A", "utilization": 0.9, "owd_ms_p95": 80, "freeze_ratio": 0.0, "throughput_kbps": 900, "loss_rate": 0},
        {"controller": "y", "scenario": "A", "utilization": 0.8, "owd_ms_p95": 90, "freeze_ratio": 0.0, "throughput_kbps": 800, "loss_rate": 0},
        # trace B: y better everywhere
        {"controller": "x", "scenario": "B", "utilization": 0.5, "owd_ms_p95": 300, "freeze_ratio": 0.1, "throughput_kbps": 500, "loss_rate": 0},
        {"controller": "y", "scenario": "B", "utilization": 0.7, "owd_ms_p95": 100, "freeze_ratio": 0.0, "throughput_kbps": 700, "loss_rate": 0},
    ]
    r = ranking(m)
    assert [x["controller"] for x in r] == ["y", "x"]
    assert r[0]["score"] == pytest.approx(((2 + 2 + 1.5) / 3 + 1) / 2)
    assert r[1]["score"] == pytest.approx(((1 + 1 + 1.5) / 3 + 2) / 2)
    assert r[0]["utilization"] == pytest.approx(0.75) and r[0]["owd_ms_p95"] == pytest.approx(95)


def test_trace_groups_from_the_index():
    index = {"a.csv": {"network": "4G (per file name)"}, "b": {"network": "fixed broadband (US FCC, 2016)"}}
    assert trace_group("a", index) == "4G"
    assert trace_group("b", index) == "fixed broadband"
    assert trace_group("c", index) == "other traces"
