"""`ratelab reproduce cross` (paper 002): built-in scenarios, job set, metrics, quick report."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from ratelab.reproduce import cross
from ratelab.reproduce.core import RunData, reproduce
from ratelab.scenario import load_scenario

# --- built-in scenarios (Table III, VI-C, VI-D) ---------------------------------------------------


def test_packets_queue_follows_the_harness_formula():
    # queue-disc max(1500, bps·ms/8000)/1500 (integer division) + 5 device packets
    assert cross.packets_queue(3, 90) == 22 + 5        # 33 750 B → 22.5 → 22
    assert cross.packets_queue(12, 200) == 200 + 5     # 300 000 B
    assert cross.packets_queue(15, 90) == 112 + 5      # 168 750 B → 112.5 → 112
    assert cross.packets_queue(0.01, 1) == 1 + 5       # the 1500-byte floor
    assert cross.packets_queue(15, 200, device=20) == 270  # VI-D dumbbell


@pytest.mark.parametrize("n", range(1, 9))
def test_table3_scenarios(n):
    bw, owd, q = cross.CASES[n]
    d = load_scenario(f"cross-case{n}").data
    assert d["duration_s"] == 300
    link = d["link"]
    assert link["capacity_kbps"] == bw * 1000 and link["queue"] == {"packets": cross.packets_queue(bw, q)}
    assert link["loss_start_s"] == 10 and link["loss_after_queue"] is True and link["loss"] == 0
    sched = [(f.get("start_s", 0), f.get("stop_s", 300)) for f in d["flows"]]
    assert sched == [(0, 300), (35, 200), (80, 300)]
    for f in d["flows"]:
        assert f["one_way_delay_ms"] == owd and f["controller"] == "gcc" and f["params"] == {"profile": "m84"}
        m = f["media"]
        assert (m["min_kbps"], m["start_kbps"], m["max_kbps"]) == (300, 500, bw * 1000)
        assert m["max_payload_bytes"] + 40 == 1500 and m["encoder_lag_ms"] == 0


def test_fast_adapt_and_rtt_fairness_scenarios():
    d = load_scenario("cross-fast-adapt").data
    assert d["link"]["steps"] == [[0, 10000], [40, 4000], [80, 10000]] and len(d["flows"]) == 1
    d = load_scenario("cross-rtt-fairness").data
    assert d["link"]["capacity_kbps"] == 15000 and d["duration_s"] == 150
    # RTprop 40 ms and 80 ms: one-way 20 and 40 ms (return path the same); flow 2 from 40 s
    assert [(f["one_way_delay_ms"], f["start_s"]) for f in d["flows"]] == [(20, 0), (40, 40)]


def test_every_builtin_scenario_is_valid_for_every_controller_it_runs(core):
    names = [f"cross-case{n}" for n in range(1, 9)] + ["cross-fast-adapt", "cross-rtt-fairness"]
    for name in names:
        load_scenario(name).validate()
    for c in cross.VIA:
        load_scenario("cross-case1").validate(controller=c)


# --- the job set ---------------------------------------------------------------------------------


def test_full_job_set():
    jobs = cross.jobs([1], False)
    via = [j for j in jobs if j.experiment == "VI-A"]
    assert {j.case for j in via} == {f"case {n}" for n in range(1, 9)}
    assert {j.variant for j in via} == {*cross.VIA, cross.CROSS_MEDIAN, cross.CROSS_NOACCEL}
    gcc = next(j for j in via if j.variant == "gcc" and j.case == "case 7")
    assert all(f["params"] == {"profile": "m84"} for f in gcc.scenario["flows"])
    rb = next(j for j in via if j.variant == "rbbr" and j.case == "case 7")
    assert all(f["controller"] == "rbbr" and "params" not in f for f in rb.scenario["flows"])
    copa = next(j for j in via if j.variant == "copa" and j.case == "case 1")
    assert all(f["params"] == {"mss_bytes": 1500.0} for f in copa.scenario["flows"])  # the harness's packets
    assert all(j.duration_s == 300 for j in via)
    vib = [j for j in jobs if j.experiment == "VI-B"]
    assert {j.case for j in vib} == {"0 %", "2 %", "4 %", "6 %", "8 %", "10 %"}
    ten = {j.variant: j.scenario["link"] for j in vib if j.case == "10 %"}
    assert ten["cross"]["loss"] == 0.1 and ten["cross"]["loss_after_queue"] is True
    assert ten["cross, loss at entrance"]["loss_after_queue"] is False
    vic = {j.variant: j for j in jobs if j.experiment == "VI-C"}
    assert vic["with fast adaptation"].scenario["flows"][0]["params"] == {"fast_adapt": True, "accel": True}
    assert vic["without (acceleration off, Fig. 16)"].scenario["flows"][0]["params"] == {"fast_adapt": False, "accel": False}
    t2 = {(j.case, j.variant): j.scenario for j in jobs if j.experiment == "Table II"}
    a = t2["A", "bbr-webrtc"]
    assert a["link"]["capacity_kbps"] == 6000 and a["link"]["queue"] == {"packets": 155}
    assert all(f["one_way_delay_ms"] == 100 for f in a["flows"])
    assert all(f["params"] == {"use_cwnd": False} for f in t2["A", cross.NCWND]["flows"])


def test_quick_jobs_scale_the_schedule():
    jobs = cross.jobs([1, 2], True)
    assert sorted(j.key for j in jobs if j.seed == 1) == sorted(j.key for j in jobs if j.seed == 2)
    via = next(j for j in jobs if j.experiment == "VI-A")
    assert via.duration_s == 60
    assert [(f.get("start_s"), f.get("stop_s")) for f in via.scenario["flows"]] == [(0, None), (7, 40), (16, None)]
    vib = next(j for j in jobs if j.experiment == "VI-B" and j.case == "10 %")
    assert vib.scenario["link"]["loss_start_s"] == 2
    assert sum(j.cost() for j in cross.jobs([1], True)) < sum(j.cost() for j in cross.jobs([1], False)) / 10


# --- metrics on hand-made runs -------------------------------------------------------------------


def _run(flows, t, series, summary_link=None):
    return RunData("e", "c", "v", 1, {"link": summary_link or {}, "flows": flows}, np.asarray(t, float),
                   {i: {k: np.asarray(v, float) for k, v in s.items()} for i, s in series.items()},
                   np.zeros(len(t)), np.zeros(len(t)))


def test_mean_owd_is_packet_weighted_and_loss_over_all_flows():
    flows = [{"id": 0, "owd_ms_mean": 40.0, "packets_received": 300, "packets_sent": 310, "packets_lost": 10},
             {"id": 1, "owd_ms_mean": 80.0, "packets_received": 100, "packets_sent": 100, "packets_lost": 0}]
    r = _run(flows, [1.0], {})
    assert cross.mean_owd(r) == pytest.approx((40 * 300 + 80 * 100) / 400)  # 50 ms, not the plain mean 60
    assert cross.loss_rate(r) == pytest.approx(10 / 410)


def test_latecomer_ratio_jain_and_fluctuation():
    t = np.arange(1, 11, dtype=float)  # bins ending at 1..10 s
    flows = [{"id": 0, "start_s": 0, "stop_s": 10}, {"id": 1, "start_s": 2, "stop_s": 10},
             {"id": 2, "start_s": 3, "stop_s": 10}]
    series = {0: {"recv_kbps": [100] * 10, "target_kbps": [100, 200] * 5},
              1: {"recv_kbps": [np.nan, np.nan] + [150] * 8, "target_kbps": [100] * 10},
              2: {"recv_kbps": [np.nan] * 3 + [250] * 7, "target_kbps": [100] * 10}}
    r = _run(flows, t, series)
    assert cross.flow_rates(r, 4, 10) == [100, 150, 250]
    assert cross.latecomer_ratio(r, 4, 10) == pytest.approx(2.0)          # mean(150, 250) / 100
    assert cross.jain([100, 150, 250]) == pytest.approx(500 ** 2 / (3 * (100 ** 2 + 150 ** 2 + 250 ** 2)))
    # flow 0 alternates 100/200 (std/mean = 50/150), flows 1 and 2 are flat
    assert cross.fluctuation(r, [(4, 10)]) == pytest.approx((50 / 150) / 3)


def test_time_to_gain():
    t = np.arange(1, 61, dtype=float)
    target = np.where(t <= 20, 1000.0, 1000.0 + 50.0 * (t - 20))  # +50 kbit/s per second from 20 s
    r = _run([{"id": 0, "start_s": 0, "stop_s": 60}], t, {0: {"target_kbps": target}})
    # the 1 s mean before 20 s is 1000; the bin ending at 40 s is the first at ≥ 2000
    assert cross.time_to_gain(r, 0, 20, 1000, 40) == pytest.approx(20.0)
    assert cross.time_to_gain(r, 0, 20, 1000, 10) == math.inf


def test_spike_and_recovery_on_a_hand_made_trace():
    dt = 0.025
    t = np.arange(1, int(120 / dt) + 1) * dt
    owd = np.full(len(t), 26.0)
    owd[(t > 40) & (t <= 43)] = 300.0              # 3 s above 25 + 100 ms
    owd[(t > 45) & (t <= 45.5)] = 200.0            # and 0.5 s more, ending at 45.5 s
    target = np.where((t > 40) & (t <= 82), 4000.0, 10000.0)
    r = _run([{"id": 0}], t, {0: {"owd_ms": owd, "target_kbps": target}})
    sp = cross.spike(r, 40.0, 80.0, 25.0)
    assert sp["above"] == pytest.approx(3.5, abs=dt) and sp["settle"] == pytest.approx(5.5, abs=dt)
    assert sp["peak"] == 300.0
    # 1 s mean back at 90 % of the 20–40 s level (10 000): the window must hold ≥ 8/9.6 of post-82 s bins
    rec = cross.recovery(r, 80.0, (20.0, 40.0))
    assert 2.5 < rec < 3.0


# --- the quick reproduction ----------------------------------------------------------------------


def test_quick_reproduction_writes_the_report(core, tmp_path):
    out = reproduce(cross.SPEC, [1], 2, True, tmp_path, "ratelab reproduce cross --quick")
    text = out.path.read_text()
    assert out.path == tmp_path / "cross.md" and text.startswith("# Reproduction: Cross")
    for head in ("## VI-A", "## VI-B", "## VI-C", "## VI-D", "## Tables I–II", "## Where we differ, and why"):
        assert head in text
    figures = re.findall(r"!\[[^]]*\]\((cross/[^)]+\.png)\)", text)
    assert len(figures) == 5 and all((tmp_path / f).stat().st_size > 1000 for f in figures)
    m = re.search(r"(\d+) of (\d+) checkable claims hold", text)
    assert m and int(m.group(2)) == sum(c.holds is not None for c in out.claims) >= 25
    # VI-C runs whole even in quick mode: Algorithm 3 must shorten the delay spike (paper: ≈ 2 s vs ≈ 10 s)
    c = {c.key: c for c in out.claims}
    assert c["spike-on"].holds and c["spike-ratio"].holds, (c["spike-on"].ours, c["spike-ratio"].ours)
    # the VI-A table has one row per case run plus the mean, one column per controller
    rows = [line for line in text.splitlines() if line.startswith("| 1 (3 Mbit/s, 30 ms, 90 ms) |")]
    assert len(rows) == 3 and all(line.count("|") == len(cross.VIA) + 2 for line in rows)
    json.dumps([c.__dict__ for c in out.claims])  # claims are plain data


def test_quick_through_the_command(cli, core, tmp_path):
    r = cli("reproduce", "cross", "--quick", "--seeds", "1", "--workers", "2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "cross.md").read_text()
    assert f"ratelab reproduce cross --seeds 1 --workers 2 --quick --out {tmp_path}" in text
    assert "Quick mode" in text and "claims hold" in r.stdout
