"""The fidelity study's metrics (ratelab.report.fidelity) against hand-computed series, and the
study's case list and resume rule (tools/fidelity.py); no real-time run here."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ratelab.report import fidelity as F

ROOT = Path(__file__).resolve().parents[2]


def tool(name: str = "fidelity"):
    """tools/<name>.py, loaded once under its own name (the report and score modules import
    ``fidelity``, and one module means one ``Bad``)."""
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules[name]


def test_grid_averages_the_samples_of_each_bin_and_leaves_empty_bins_unknown():
    t = np.array([0.25, 0.5, 0.75, 1.0, 1.75, 2.0])
    v = np.array([1.0, 3.0, 5.0, 7.0, np.nan, 4.0])
    g = F.grid(t, v, 2.5, 0.5)
    # bins (0,.5] (.5,1] (1,1.5] (1.5,2] (2,2.5]
    assert g[0] == 2.0 and g[1] == 6.0 and g[3] == 4.0  # the NaN sample is ignored
    assert math.isnan(g[2]) and math.isnan(g[4])
    assert list(F.grid_times(2.5, 0.5)) == [0.5, 1.0, 1.5, 2.0, 2.5]


def test_utilization_counts_only_bins_where_both_are_known():
    assert F.utilization(np.array([400.0, 500.0, np.nan]), np.array([500.0, 500.0, 500.0])) == pytest.approx(90.0)
    assert math.isnan(F.utilization(np.array([1.0]), np.array([0.0])))


def test_packet_queue_stats_weights_the_mean_by_packets_and_takes_the_largest_p95():
    flows = [{"queue_delay_ms_mean": 10.0, "queue_delay_ms_p95": 30.0, "packets_received": 100},
             {"queue_delay_ms_mean": 40.0, "queue_delay_ms_p95": 90.0, "packets_received": 300},
             {"queue_delay_ms_mean": None, "queue_delay_ms_p95": None, "packets_received": 0}]
    mean, p95 = F.packet_queue_stats(flows)
    assert mean == pytest.approx((10 * 100 + 40 * 300) / 400)  # 32.5
    assert p95 == 90.0
    assert all(math.isnan(x) for x in F.packet_queue_stats([]))


def test_queue_stats_of_a_series():
    mean, p95 = F.queue_stats(np.array([0.0] * 19 + [100.0, np.nan]))
    assert mean == pytest.approx(5.0)
    assert p95 == pytest.approx(5.0)  # numpy's linear interpolation: 0.95 * 19 = 18.05 -> 0 + 0.05 * 100


def test_steps_of_the_rmcat_5_1_link_inside_the_run():
    link = {"steps": [[0, 1000], [40, 2500], [60, 600], [80, 1000]]}
    assert F.steps_of(link, 100) == [(40.0, 1000.0, 2500.0, 60.0), (60.0, 2500.0, 600.0, 80.0), (80.0, 600.0, 1000.0, 100.0)]
    assert F.steps_of(link, 50) == [(40.0, 1000.0, 2500.0, 50.0)]  # capped: the later steps are outside
    assert F.steps_of({"capacity_kbps": 1000}, 100) == []


def ramp():
    t = F.grid_times(10.0, 0.5)
    rate = np.where(t <= 5.0, 1000.0, 1000.0 + 500.0 * (t - 5.0))
    return t, rate


def test_time_to_90_percent_after_a_step_up():
    t, rate = ramp()
    # 0.9 * 2500 = 2250 = 1000 + 500 (t - 5)  ->  t = 7.5: 2.5 s after the step
    assert F.time_to_fraction(t, rate, 5.0, 2500.0, 10.0) == pytest.approx(2.5)
    assert math.isnan(F.time_to_fraction(t, rate, 5.0, 2500.0, 7.0))  # the next step came first


def test_reaction_time_after_a_step_down_uses_the_sending_rate():
    t = F.grid_times(10.0, 0.5)
    send = np.where(t <= 6.0, 2500.0, 500.0)
    assert F.reaction_time(t, send, 5.0, 600.0, 10.0) == pytest.approx(1.5)
    assert math.isnan(F.reaction_time(t, np.full(len(t), 2500.0), 5.0, 600.0, 10.0))


def test_median_absolute_relative_error_skips_unknown_and_zero_references():
    sim = np.array([110.0, 90.0, 200.0, np.nan, 50.0])
    real = np.array([100.0, 100.0, 100.0, 100.0, 0.0])
    assert F.median_abs_rel_error(sim, real) == pytest.approx(10.0)  # |.1|, |.1|, 1.0 -> median .1
    assert math.isnan(F.median_abs_rel_error(np.array([1.0]), np.array([np.nan])))


def test_nanmean_rows_and_spread():
    m = F.nanmean_rows([np.array([1.0, np.nan, np.nan]), np.array([3.0, 4.0, np.nan])])
    assert m[0] == 2.0 and m[1] == 4.0 and math.isnan(m[2])
    assert F.spread([1.0, 3.0, 2.0, float("nan")]) == (2.0, 1.0, 3)
    mean, half, n = F.spread([])
    assert n == 0 and math.isnan(mean)


def test_run_grid_sums_the_forward_flows_and_a_missing_sample_makes_the_sum_unknown():
    series = {"t_s": np.array([0.5, 1.0, 0.5]), "flow": np.array([0, 0, 1]),
              "recv_kbps": np.array([100.0, 200.0, 50.0]), "send_kbps": np.array([110.0, 210.0, 60.0]),
              "target_kbps": np.array([120.0, 220.0, 70.0]), "queue_ms": np.array([10.0, 20.0, 30.0])}
    g = F.run_grid(series, [0, 1], 1.0, 0.5)
    assert g["delivered"][0] == 150.0 and math.isnan(g["delivered"][1])
    assert list(g["target0"]) == [120.0, 220.0]
    assert g["queue"][0] == 20.0 and g["queue"][1] == 20.0  # mean of the flows that have a sample
    only0 = F.run_grid(series, [0], 1.0, 0.5)
    assert list(only0["delivered"]) == [100.0, 200.0]


def test_run_metrics_of_a_hand_made_run():
    t, rate = ramp()
    g = {"delivered": np.minimum(rate, 2500.0), "send": rate, "target": rate, "queue": np.zeros(len(t))}
    cap = np.where(t <= 5.0, 1000.0, 2500.0)
    summary = {"link": {"loss_rate": 0.02},
               "flows": [{"id": 0, "freeze_count": 2, "queue_delay_ms_mean": 12.0, "queue_delay_ms_p95": 40.0, "packets_received": 10},
                         {"id": 1, "freeze_count": 5, "queue_delay_ms_mean": 99.0, "queue_delay_ms_p95": 99.0, "packets_received": 10}]}
    m = F.run_metrics(g, cap, summary, [0], [(5.0, 1000.0, 2500.0, 10.0)], 0.5)
    assert m["freezes"] == 2.0  # flow 1 is not a forward flow of this case
    assert m["queue_mean_ms"] == 12.0 and m["queue_p95_ms"] == 40.0
    assert m["loss_pct"] == pytest.approx(2.0)
    assert m["t90_up_s"] == pytest.approx(2.5)
    assert math.isnan(m["react_down_s"])  # no step down
    # A 2000 kbit/s ceiling: 90 % of it (1800 = 1000 + 500 (t - 5), t = 6.6) is first seen in the bin ending at 7 s
    assert F.run_metrics(g, cap, summary, [0], [(5.0, 1000.0, 2500.0, 10.0)], 0.5, ceiling_kbps=2000.0)["t90_up_s"] == pytest.approx(2.0)
    delivered = np.minimum(rate, 2500.0)
    assert m["utilization"] == pytest.approx(100 * delivered.sum() / cap.sum())


def test_goal_bounds():
    real = {"utilization": [76.0, 78.0], "queue_p95_ms": [80.0, 80.0], "freezes": [0.0, 2.0]}
    assert F.goal({"utilization": [80.0], "queue_p95_ms": [100.0], "freezes": [1.0]}, real) == (True, "")  # 25 % of 80 = 20: on the bound
    met, why = F.goal({"utilization": [84.0], "queue_p95_ms": [30.0], "freezes": [3.0]},
                      {"utilization": [77.0], "queue_p95_ms": [10.0], "freezes": [0.0, 2.0]})
    assert met is False and why == "util +7.0 pt, p95 +20 ms, freezes 3 vs 0..2"  # 10 ms floor: 20 > 10
    assert F.goal({"utilization": [80.0], "queue_p95_ms": [1.0], "freezes": [0.0]}, {}) == (None, "no runs")


def test_case_list_covers_the_issue_and_marks_the_trace_split():
    T = tool()
    cs = T.cases()
    names = [c.name for c in cs]
    for n in ("rmcat-5.1", "rmcat-5.2", "rmcat-5.3", "const-500k", "const-1500k", "const-4000k", "loss-1pct", "loss-5pct"):
        assert n in names
    assert len(set(names)) == len(names)
    split = {r["file"]: r["split"] for r in csv.DictReader((ROOT / "python/ratelab/traces/split.csv").open())}
    traces = [c for c in cs if c.base.startswith("trace-")]
    assert len(traces) >= 10
    for c in traces:
        f = next(o.split("=", 1)[1] for o in c.overrides if o.startswith("link.trace="))
        assert c.split == split[f]
    assert {c.split for c in traces} == {"train", "test"}


def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys):
    T = tool()
    with pytest.raises(T.Bad):
        T.select("no-such-case")
    assert T.main(["run", "--out", str(tmp_path / "o"), "--cases", "("]) == 2
    assert T.main(["run", "--out", str(tmp_path / "o"), "--contender", "firefox"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("error: --cases") and err[1].startswith("error: --contender")
    assert not (tmp_path / "o").exists()  # nothing written before the input is checked


def test_a_complete_run_folder_is_not_run_again(tmp_path, monkeypatch):
    T = tool()
    done = tmp_path / "const-500k" / "chromium" / "r1"
    done.mkdir(parents=True)
    (done / "meta.json").write_text(json.dumps({"rep": "r1"}))
    import ratelab.run.runner as runner

    def boom(*a, **k):
        raise AssertionError("a complete run was started again")
    monkeypatch.setattr(runner, "run_scenario", boom)
    case = next(c for c in T.cases() if c.name == "const-500k")
    args = SimpleNamespace(duration_cap=None, same_fps=True)
    assert T.one_run(tmp_path / "const-500k" / "chromium", "r1", case, SimpleNamespace(duration_s=100.0), "browser",
                     "chromium", {}, args) is True


def test_browser_options_are_checked_before_any_run(tmp_path, capsys):
    T = tool()
    assert T.browser_options(["fec=false", 'codec="VP9"', "max_kbps=800"]) == {"fec": False, "codec": "VP9", "max_kbps": 800}
    assert T.browser_options(["codec=VP9"]) == {"codec": "VP9"}  # as --set reads a bare word
    for bad, says in (("fec", "expected KEY=VALUE"), ("fec=no", "fec: 'no' is not true or false"), ("fecc=true", "fecc: unknown parameter"),
                      ("fec=1", "fec: 1 is not true or false")):
        with pytest.raises(T.Bad) as e:
            T.browser_options([bad])
        assert str(e.value).startswith("error: --browser") and says in str(e.value), str(e.value)
    assert T.main(["run", "--out", str(tmp_path / "o"), "--cases", "const-500k", "--browser", "fec=maybe"]) == 2
    assert not (tmp_path / "o").exists()


def test_ulpfec_packets_are_told_from_media_by_timestamp_and_marker():
    """libwebrtc sends a frame's ULPFEC packets after the frame's marker packet, on the media SSRC
    with the frame's timestamp and no marker; RTX is another SSRC (by hand)."""
    S = tool("fidelity_fec_share")
    media, rtx = 0xA, 0xB
    #          frame 1 (2 packets) + 1 FEC | frame 2 (1 packet) + 2 FEC | RTX | frame 3 starts, FEC of 2 late
    ssrc = np.array([media, media, media, media, media, media, rtx, media, media, media])
    marker = np.array([0, 1, 0, 1, 0, 0, 1, 0, 0, 1], dtype=bool)
    ts = np.array([100, 100, 100, 200, 200, 200, 100, 300, 200, 300])
    assert S.classify(ssrc, marker, ts).tolist() == [0, 0, 1, 0, 1, 1, 2, 0, 1, 0]
    assert S.classify(ssrc[:0], marker[:0], ts[:0]).tolist() == []


def test_freeze_causes_of_a_hand_made_run(tmp_path):
    """Three freezes: one with the encoder at 2 frames/s, one after a 300 ms delivery gap, one
    with steady arrivals and nothing lost."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    C = tool("fidelity_freeze_causes")
    t = np.arange(0, 30, 0.25)
    fps = np.where((t >= 3) & (t < 6), 2.0, 15.0)
    freezes = (t >= 5.5).astype(float) + (t >= 15.0) + (t >= 25.0)
    pq.write_table(pa.table({"t_s": t, "flow": np.zeros(len(t), np.uint32), "fps": fps, "freezes": freezes}), tmp_path / "series.parquet")
    recv = np.arange(0, 30, 0.02)
    recv = recv[~((recv > 14.5) & (recv < 14.8))]  # a 300 ms gap before the second freeze
    pq.write_table(pa.table({"flow": np.zeros(len(recv), np.uint32), "send_s": recv - 0.05, "recv_s": recv,
                             "lost": np.zeros(len(recv), bool)}), tmp_path / "packets.parquet")
    got = C.classify_run(str(tmp_path / "series.parquet"), str(tmp_path / "packets.parquet"))
    assert got == {"encoder": 1, "network gap": 1, "none": 1}
    # A getStats sample missing after the second freeze: the count holds through it, so no
    # freeze is counted twice (read as 0, the next sample would count both again).
    freezes[np.flatnonzero(t == 20.0)] = np.nan
    pq.write_table(pa.table({"t_s": t, "flow": np.zeros(len(t), np.uint32), "fps": fps, "freezes": freezes}), tmp_path / "series.parquet")
    assert C.classify_run(str(tmp_path / "series.parquet"), str(tmp_path / "packets.parquet")) == got


def test_adjuster_replay_factor_by_hand():
    """The replayed adjuster (tools/fidelity_adjuster_replay.py) follows libwebrtc's rules: 1.2
    for 30 frames, then the mean charge over 3 s; a resolution change starts it over."""
    R = tool("fidelity_adjuster_replay")
    fps, rate = 15.0, 150_000.0
    ideal = rate / fps
    t = np.arange(60) / fps
    # 20 % overshoot on every frame: the bucket keeps 0.2 ideal after each interval's drain and
    # the next frame is charged it, 1.2; frames exactly ideal are charged nothing.
    over = R.replay_factor(t, np.full(60, 1.2 * ideal), lambda _: rate, lambda _: 640.0, fps, np.array([1.0, 3.9]))
    assert over[0] == 1.2 and abs(over[1] - 1.2) < 1e-6
    exact = R.replay_factor(t, np.full(60, ideal), lambda _: rate, lambda _: 640.0, fps, np.array([1.9, 3.9]))
    assert exact[0] == 1.2, "29 frames: the default"
    assert abs(exact[1] - 1.0) < 1e-9, "30 and more frames on target: 1"
    # A new width at 2 s: 30 frames counted again from there.
    moved = R.replay_factor(t, np.full(60, ideal), lambda _: rate, lambda x: 640.0 if x < 2.0 else 480.0, fps, np.array([3.9]))
    assert moved[0] == 1.2


def test_score_judges_simulator_runs_against_a_runs_csv(tmp_path, capsys):
    """``score`` applies item 4's rule to fresh simulator runs and real rows from a runs.csv:
    the same numbers as real runs pass, utilization 10 points off fails, bad input is one line."""
    T = tool()
    out = tmp_path / "variant"
    assert T.main(["run", "--out", str(out), "--cases", "^const-500k$", "--contender", "sim-gcc",
                   "--seeds", "1", "--duration-cap", "6"]) == 0
    R = tool("fidelity_report")
    m = R.measured_case(out, next(c for c in T.cases() if c.name == "const-500k"))
    sim = m.runs["sim-gcc"][0].metrics
    fields = ["case", "split", "contender", "rep", *R.GAP_METRICS]

    def runs_csv(path, util_offset):
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            for rep in ("r1", "r2"):
                w.writerow({"case": "const-500k", "split": "-", "contender": "chromium", "rep": rep,
                            **{k: sim[k] for k in R.GAP_METRICS}, "utilization": sim["utilization"] + util_offset})
        return path

    assert T.main(["score", "--out", str(out), "--real", str(runs_csv(tmp_path / "same.csv", 0.0))]) == 0
    text = capsys.readouterr().out
    assert "| const-500k | - |" in text and "| pass |" in text and "Goal met on 1 of 1 cases." in text
    assert T.main(["score", "--out", str(out), "--real", str(runs_csv(tmp_path / "off.csv", 10.0)),
                   "--md", str(tmp_path / "off.md")]) == 0
    text = (tmp_path / "off.md").read_text()
    assert "| fail | util -10.0 pt |" in text and "Goal met on 0 of 1 cases." in text
    capsys.readouterr()
    assert T.main(["score", "--out", str(out), "--real", str(tmp_path / "none.csv")]) == 2
    assert T.main(["score", "--out", str(out), "--real", str(tmp_path / "same.csv"), "--real-contender", "live-gcc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("error: --real: no such file") and "no run of contender 'live-gcc'" in err[1]


def test_a_rerun_keeps_only_runs_of_the_same_simulator_and_model(tmp_path, capsys):
    """A rerun skips complete simulated runs made by this build with the same ``--model``; one
    made with other settings or by another build is one line naming its folder, exit 2 (it
    would mix two variants); a run recorded before builds were recorded is kept."""
    T = tool()
    out = tmp_path / "variant"
    args = ["run", "--out", str(out), "--cases", "^const-500k$", "--contender", "sim-gcc", "--seeds", "1", "--duration-cap", "4"]
    assert T.main(args) == 0
    meta_path = out / "const-500k" / "sim-gcc" / "s1" / "meta.json"
    meta = json.loads(meta_path.read_text())
    assert meta["simulator"] == T.simulator_build() and meta["simulator"].startswith("0.1.0+")
    assert T.main(args) == 0 and json.loads(meta_path.read_text())["started_unix"] == meta["started_unix"]
    capsys.readouterr()
    assert T.main(args + ["--model", "media.fps=10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(meta_path.parent) in err[0] and "media.fps=10" in err[0], err
    meta_path.write_text(json.dumps({**meta, "simulator": "0.1.0+000000000000"}))
    assert T.main(args) == 2
    assert "made by simulator 0.1.0+000000000000" in capsys.readouterr().err
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "simulator"}))
    assert T.main(args) == 0


def test_score_subsets_count_the_goal_over_choices_of_seeds(tmp_path, capsys):
    """``score --subsets K``: every choice of K seeds when there are few; all the seeds give the
    main count; the real side equal to one seed's metrics passes on that seed alone; more seeds
    than ran is one line, exit 2."""
    T, R = tool(), tool("fidelity_report")
    out = tmp_path / "variant"
    assert T.main(["run", "--out", str(out), "--cases", "^const-500k$", "--contender", "sim-gcc",
                   "--seeds", "3", "--duration-cap", "6"]) == 0
    m = R.measured_case(out, next(c for c in T.cases() if c.name == "const-500k"))
    first = next(lo for lo in m.runs["sim-gcc"] if lo.meta["rep"] == "s1").metrics
    path = tmp_path / "real.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["case", "split", "contender", "rep", *R.GAP_METRICS])
        w.writeheader()
        for rep in ("r1", "r2"):
            w.writerow({"case": "const-500k", "split": "-", "contender": "chromium", "rep": rep, **{k: first[k] for k in R.GAP_METRICS}})
    assert T.main(["score", "--out", str(out), "--real", str(path), "--subsets", "1"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("Over 3 choices of 1 of the 3 seeds: goal met on ") and " to 1 cases" in line, line
    assert T.main(["score", "--out", str(out), "--real", str(path), "--subsets", "3"]) == 0
    text = capsys.readouterr().out
    n = int(text.split("Goal met on ")[1].split(" of")[0])
    assert text.strip().splitlines()[-1] == f"Over 1 choice of 3 of the 3 seeds: goal met on {n} to {n} cases (median {n}, middle half {n} to {n})."
    assert T.main(["score", "--out", str(out), "--real", str(path), "--subsets", "4"]) == 2
    assert T.main(["score", "--out", str(out), "--real", str(path), "--subsets", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --subsets 4: the variant has only 3 seeds run in every case", "error: --subsets must be ≥ 1"]


def test_report_keeps_the_runs_of_an_earlier_runs_csv_whose_folders_are_gone(tmp_path, capsys):
    """``report --keep``: a run in the folder wins over its row; a row without a folder is
    counted (metrics only) and copied to the new runs.csv."""
    T, R = tool(), tool("fidelity_report")
    out = tmp_path / "runs"
    assert T.main(["run", "--out", str(out), "--cases", "^const-500k$", "--contender", "sim-gcc",
                   "--seeds", "1", "--duration-cap", "6"]) == 0
    assert T.main(["report", "--out", str(out), "--docs", str(tmp_path / "first"), "--no-figures"]) == 0
    with (tmp_path / "first" / "runs.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["rep"] for r in rows] == ["s1"]
    old = dict(rows[0], utilization="1.0")  # the folder's s1 must win over this stale row
    kept = [old, dict(rows[0], contender="chromium", rep="r1", utilization="50.0"),
            dict(rows[0], contender="chromium", rep="r2", utilization="60.0")]
    with (tmp_path / "old.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(kept)
    assert T.main(["report", "--out", str(out), "--docs", str(tmp_path / "second"), "--no-figures",
                   "--keep", str(tmp_path / "old.csv")]) == 0
    table = (tmp_path / "second" / "table.md").read_text()
    assert "| const-500k | - | chromium | 2 | 55 ± 5 |" in table
    assert f"| const-500k | - | sim-gcc | 1 | {float(rows[0]['utilization']):.0f} |" in table
    with (tmp_path / "second" / "runs.csv").open(newline="") as fh:
        again = list(csv.DictReader(fh))
    assert sorted((r["contender"], r["rep"], r["utilization"]) for r in again) == [
        ("chromium", "r1", "50.0"), ("chromium", "r2", "60.0"), ("sim-gcc", "s1", rows[0]["utilization"])]
    capsys.readouterr()
    assert T.main(["report", "--out", str(out), "--docs", str(tmp_path / "x"), "--keep", str(tmp_path / "no.csv")]) == 2
    assert capsys.readouterr().err.strip().startswith("error: --keep: no such file")


def test_freeze_rule_on_render_times_by_hand():
    """libwebrtc's rule on whole milliseconds: the interval joins the last-30 average before
    it is tested, and 5 intervals are needed (the simulator's receiver, media/receiver.rs)."""
    from ratelab.report import freezes as Z

    # 10 frames 67 ms apart, then 300 ms: avg (9·67 + 300) // 10 = 90, threshold max(270, 240)
    t = [i * 0.067 for i in range(10)] + [9 * 0.067 + 0.300]
    assert Z.freeze_times(t) == [pytest.approx(0.903)]
    # 260 ms: (603 + 260) // 10 = 86, threshold 258, a freeze; 250 ms: 85, threshold 255, none
    assert len(Z.freeze_times([i * 0.067 for i in range(10)] + [0.603 + 0.260])) == 1
    assert Z.freeze_times([i * 0.067 for i in range(10)] + [0.603 + 0.250]) == []
    # too few intervals: 3 frames then a long gap is no freeze
    assert Z.freeze_times([0.0, 0.067, 0.134, 1.0]) == []


def test_delivered_frames_wait_for_the_repair_of_a_lost_packet_and_block_later_frames():
    """Frame 2 loses a packet whose RTX copy arrives 400 ms later: frames 2-7 decode then; the
    delivered-frame freeze lands there, and a getStats freeze 0.3 s later is matched to it."""
    import pandas as pd

    from ratelab.report import freezes as Z

    rows = []
    for k in range(20):  # 20 frames at 15 frames/s, two packets each, 40 ms one way
        for j in range(2):
            sent = k * 0.0667 + j * 0.001
            lost = (k == 12 and j == 1)
            rows.append(dict(flow=0, send_s=sent, recv_s=np.nan if lost else sent + 0.040, lost=lost, ssrc=1,
                             marker=(j == 1), rtp_ts=k * 6000))
    rows.append(dict(flow=0, send_s=0.9, recv_s=12 * 0.0667 + 0.040 + 0.400, lost=False, ssrc=2, marker=False, rtp_ts=0))
    d = Z.decodable_times(pd.DataFrame(rows))
    assert len(d) == 20
    assert d[12] == pytest.approx(12 * 0.0667 + 0.440)
    assert (d[12:18] == d[12]).all()  # frames 13-17 arrived before frame 12 was repaired
    assert d[18] == pytest.approx(18 * 0.0667 + 0.041) and d[19] == pytest.approx(19 * 0.0667 + 0.041)
    got = Z.freeze_times(d)
    assert got == [pytest.approx(d[12], abs=1e-3)]
    assert Z.split([got[0] + 0.3, 20.0], got) == (1, 1)
    # an FEC packet of frame 12 that arrived repairs the loss instead (the RTX copy is spare)
    fec = dict(flow=0, send_s=12 * 0.0667 + 0.002, recv_s=12 * 0.0667 + 0.045, lost=False, ssrc=1, marker=False,
               rtp_ts=12 * 6000)
    d = Z.decodable_times(pd.DataFrame(rows + [fec]))
    assert d[12] == pytest.approx(12 * 0.0667 + 0.045) and Z.freeze_times(d) == []
    # a loss never repaired ends what decodes
    rows.pop()
    assert len(Z.decodable_times(pd.DataFrame(rows))) == 12


def test_getstats_freeze_times_are_the_steps_of_the_counter():
    import pandas as pd

    from ratelab.report import freezes as Z

    s = pd.DataFrame(dict(t_s=[0.25, 0.5, 0.75, 1.0, 1.25], flow=[0] * 5, freezes=[0, np.nan, 1, 1, 3]))
    assert Z.getstats_freeze_times(s) == [0.75, 1.25, 1.25]


def test_evidence_freezes_table_of_a_hand_made_study(tmp_path, capsys):
    """One Chromium run whose frame 12 waits 400 ms for its RTX copy (one delivered-frame
    freeze), getStats counting it 0.3 s later and one more with steady arrivals; a sim seed with
    2 freezes. A run recorded before the RTP columns is named, not a traceback."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    T = tool()
    run = tmp_path / "const-500k" / "chromium" / "r1" / "chromium"
    run.mkdir(parents=True)
    rows = {k: [] for k in ("flow", "send_s", "recv_s", "lost", "ssrc", "marker", "rtp_ts", "size")}
    for k in range(60):
        for j in range(2):
            sent = k * 0.0667 + j * 0.001
            lost = k == 30 and j == 1
            for key, v in zip(rows, (0, sent, np.nan if lost else sent + 0.04, lost, 1, j == 1, k * 6000, 1000)):
                rows[key].append(v)
    for key, v in zip(rows, (0, 2.1, 30 * 0.0667 + 0.44, False, 2, False, 0, 1000)):
        rows[key].append(v)
    pq.write_table(pa.table(rows), run / "packets.parquet")
    t = np.arange(0.25, 5.0, 0.25)
    fz = (t >= 2.75).astype(float) + (t >= 4.5)
    pq.write_table(pa.table({"t_s": t, "flow": np.zeros(len(t), np.uint32), "freezes": fz}), run / "series.parquet")
    sim = tmp_path / "const-500k" / "sim-gcc" / "s1"
    sim.mkdir(parents=True)
    (sim / "summary.json").write_text(json.dumps({"runs": [{"flows": [{"id": 0, "freeze_count": 2}]}]}))
    old = tmp_path / "const-500k" / "chromium" / "r2" / "chromium"
    old.mkdir(parents=True)
    pq.write_table(pa.table({"flow": [0], "send_s": [0.0], "recv_s": [0.1], "lost": [False]}), old / "packets.parquet")
    assert T.main(["evidence", "--freezes", "--out", str(tmp_path), "--cases", "^const-500k$"]) == 0
    out = capsys.readouterr().out
    assert "| const-500k | r1 | 2 | 1 | 1 | 1 | 2.0 (1) |" in out, out
    assert "| const-500k | r2 | — | — (its packet record predates the RTP columns)" in out, out


def test_frame_interval_histogram_by_hand(tmp_path, capsys):
    """Chromium frames captured 1, 2, 2, 3 and 7 periods apart (15 frames/s) after 10 s, one
    packet each; a sim seed whose series shows a frame every 2 periods."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    T = tool()
    run = tmp_path / "const-500k" / "chromium" / "r1" / "chromium"
    run.mkdir(parents=True)
    periods = [0, 1, 3, 5, 8, 15]
    send = [10.5 + k / 15 for k in periods]
    pq.write_table(pa.table({"flow": [0] * 6, "send_s": send, "size": [1000] * 6, "ssrc": [7] * 6, "marker": [True] * 6,
                             "rtp_ts": [1000 + 6000 * k for k in periods]}), run / "packets.parquet")
    pq.write_table(pa.table({"flow": [0], "t_s": [0.25], "target_kbps": [500.0], "encoder_target_kbps": [400.0],
                             "fps": [15.0], "width": [640.0]}), run / "series.parquet")
    sim = tmp_path / "const-500k" / "sim-gcc" / "s1" / "gcc"
    sim.mkdir(parents=True)
    t = np.arange(0.025, 20.0, 0.025)
    every = np.zeros(len(t))
    every[np.round(np.arange(0, 20, 2 / 15) / 0.025).astype(int)[1:] - 1] = 40.0  # one frame in a 25 ms sample
    pq.write_table(pa.table({"t_s": t, "flow": np.zeros(len(t), np.uint32), "fps": every}), sim / "series.parquet")
    assert T.main(["evidence", "--frame-intervals", "--out", str(tmp_path), "--cases", "^const-500k$"]) == 0
    out = capsys.readouterr().out
    assert "| const-500k | r1 | 1 | 2 | 1 | 0 | 0 | 0 | 1 | 0 | 0 |" in out, out
    row = next(line for line in out.splitlines() if "sim s1" in line).split("|")
    assert int(row[3]) == 0 and int(row[4]) > 60 and sum(int(x) for x in row[5:-1]) == 0, out
    # --window: only the intervals that end inside it (here the 1, 2, 2 before 11 s)
    assert T.main(["evidence", "--frame-intervals", "--out", str(tmp_path), "--cases", "^const-500k$", "--window", "10:11"]) == 0
    assert "| const-500k | r1 | 1 | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |" in capsys.readouterr().out
    for bad in ("60", "5:2", "a:b", "-1:"):
        assert T.main(["evidence", "--frame-intervals", "--out", str(tmp_path), f"--window={bad}"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: --window '{bad}'"), err
