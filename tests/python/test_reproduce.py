"""`ratelab reproduce`: statistics, binning, claims/Markdown, parallel = serial, the command end to end."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ratelab.reproduce import PAPERS, paper
from ratelab.reproduce.core import (Job, PaperSpec, ReportContext, Results, RunData, Stat, bin_series, md_table,
                                    reproduce, run_jobs, scenario)


# --- statistics --------------------------------------------------------------------------------


def test_stat_mean_and_sample_std_on_known_values():
    s = Stat.of([1.0, 2.0, 3.0, 4.0])
    assert s.n == 4 and s.mean == 2.5
    assert s.std == pytest.approx(math.sqrt(5.0 / 3.0))  # Σ(x − 2.5)² = 5, over n − 1 = 3
    assert s.fmt(2) == "2.50 ± 1.29"
    assert Stat.of([0.824, 0.826]).pct() == "82.5 ± 0.1 %"


def test_stat_edge_cases():
    one = Stat.of([7.0])
    assert (one.mean, one.std, one.n) == (7.0, 0.0, 1)
    assert Stat.of([1.0, float("nan"), 3.0]) == Stat(2.0, math.sqrt(2.0), 2)  # NaN runs are left out
    none = Stat.of([])
    assert none.n == 0 and not none.ok and none.fmt() == "–"


def test_results_group_by_key_and_aggregate_over_seeds():
    def run(variant: str, seed: int, thr: float) -> RunData:
        summary = {"link": {}, "flows": [{"id": 0, "throughput_kbps": thr}]}
        return RunData("e", "c", variant, seed, summary, np.array([1.0]), {}, np.array([1.0]), np.array([0.0]))

    res = Results([run("a", 1, 10.0), run("b", 1, 5.0), run("a", 2, 14.0), run("a", 3, 12.0)])
    st = res.stat("e", "c", "a", lambda r: r.flow_summary(0)["throughput_kbps"])
    assert (st.mean, st.std, st.n) == (12.0, 2.0, 3)
    assert res.variants("e") == ["a", "b"] and res.cases("e") == ["c"]


# --- binning -----------------------------------------------------------------------------------


def test_bin_series_averages_each_flow_per_bin():
    # flow 0 every 0.5 s from 0.5 to 3.0; flow 1 only from 1.5 s; a NaN OWD sample is skipped
    t0 = np.arange(1, 7) * 0.5
    t1 = np.array([2.0, 2.5, 3.0])
    series = {
        "t_s": np.concatenate([t0, t1]),
        "flow": np.array([0] * 6 + [1] * 3),
        "recv_kbps": np.array([100, 200, 300, 400, 500, 600, 10, 20, 30], dtype=float),
        "send_kbps": np.zeros(9), "target_kbps": np.zeros(9),
        "owd_ms": np.array([50, np.nan, 60, 70, 80, 90, 1, 2, 3], dtype=float),
        "capacity_kbps": np.full(9, 1000.0), "queue_ms": np.zeros(9),
    }
    t, flows, cap, _ = bin_series(series, 1.0, 3.0, interval_s=0.5)
    assert t.tolist() == [1.0, 2.0, 3.0]
    assert flows[0]["recv_kbps"].tolist() == [150.0, 350.0, 550.0]
    assert flows[0]["owd_ms"].tolist() == [50.0, 65.0, 85.0]
    assert np.isnan(flows[1]["recv_kbps"][0]) and flows[1]["recv_kbps"][1:].tolist() == [10.0, 25.0]
    assert cap.tolist() == [1000.0, 1000.0, 1000.0]


def test_window_selects_bins_by_end_time():
    r = RunData("e", "c", "v", 1, {"flows": []}, np.array([1.0, 2.0, 3.0, 4.0]),
                {0: {"recv_kbps": np.array([1.0, np.nan, 3.0, 4.0])}}, np.zeros(4), np.zeros(4))
    assert r.window(0, "recv_kbps", 1.0, 3.0).tolist() == [3.0]  # (1, 3]: bins ending at 2 and 3; NaN dropped
    assert r.window_mean(0, "recv_kbps", 0.0, 4.0) == pytest.approx(8.0 / 3.0)


def test_md_table_escapes_pipes():
    text = md_table(["a", "b"], [["x|y", 1]])
    assert text.splitlines() == ["| a | b |", "|---|---:|", "| x\\|y | 1 |"]


# --- with the simulator ------------------------------------------------------------------------


def _tiny_jobs(seeds, quick):
    out = []
    for seed in seeds:
        for loss in (0.0, 0.05):
            for c in ("dcrc-pi", "tfrc"):
                doc = scenario("tiny", 8.0, {"capacity_kbps": 1000, "loss": loss, "queue": {"ms": 500}},
                               [{"kind": "media", "controller": c, "one_way_delay_ms": 20}])
                out.append(Job("loss", f"{loss:g}", c, seed, doc))
    return out


def _tiny_report(res: Results, ctx: ReportContext) -> str:
    ctx.h2("Tiny")
    for case in res.cases("loss"):
        pi = res.stat("loss", case, "dcrc-pi", lambda r: r.flow_summary(0)["throughput_kbps"])
        tf = res.stat("loss", case, "tfrc", lambda r: r.flow_summary(0)["throughput_kbps"])
        ctx.claim("Tiny", f"dcrc-pi ≥ tfrc at loss {case}", "yes", f"{pi.fmt(1)} vs {tf.fmt(1)} kbit/s",
                  pi.mean >= tf.mean, key=f"thr:{case}")
    ctx.claim("Tiny", "a number without claim", "1", "2", None)
    ctx.put_claims("Tiny")
    return "Intro text."


TINY = PaperSpec("tiny", "Tiny reproduction", 2, _tiny_jobs, _tiny_report)


def test_parallel_and_serial_give_identical_numbers(core):
    jobs = _tiny_jobs([1, 2], False)
    serial = run_jobs(jobs, 1)
    parallel = run_jobs(jobs, 2)
    assert [r.key + (r.seed,) for r in parallel] == [j.key + (j.seed,) for j in jobs]  # job order kept
    assert all(a.same_numbers(b) for a, b in zip(serial, parallel))
    # and the seeds really differ (random loss): otherwise "std over seeds" would mean nothing
    lossy = [r for r in serial if r.case == "0.05" and r.variant == "tfrc"]
    assert lossy[0].summary["flows"][0]["packets_lost"] != lossy[1].summary["flows"][0]["packets_lost"]


def test_report_holds_claims_table_and_mean_std_of_the_runs(core, tmp_path):
    out = reproduce(TINY, [1, 2, 3], 2, False, tmp_path, "ratelab reproduce tiny --seeds 3")
    text = out.path.read_text()
    assert out.path == tmp_path / "tiny.md"
    lines = text.splitlines()
    assert lines[0] == "# Tiny reproduction"
    assert lines[2:5] == ["```sh", "ratelab reproduce tiny --seeds 3", "```"]  # the command at the top
    assert "Seeds 1–3" in text and "## Claims at a glance" in text
    checked = [c for c in out.claims if c.holds is not None]
    assert len(checked) == 2 and len(out.claims) == 3
    assert f"{sum(c.holds for c in checked)} of 2 checkable claims hold" in text
    # the experiment's table: claim, paper, ours, verdict; the number is the mean ± std of the three runs
    runs = [r for r in run_jobs(_tiny_jobs([1, 2, 3], False), 1) if r.case == "0.05" and r.variant == "tfrc"]
    thr = [r.summary["flows"][0]["throughput_kbps"] for r in runs]
    expected = f"{np.mean(thr):.1f} ± {np.std(thr, ddof=1):.1f}"
    row = next(line for line in lines if line.startswith("| dcrc-pi ≥ tfrc at loss 0.05 |"))
    assert row.split(" | ")[2].endswith(f"vs {expected} kbit/s")
    claim = next(c for c in out.claims if c.what == "dcrc-pi ≥ tfrc at loss 0.05")
    assert row.endswith("| holds |" if claim.holds else "| **does not hold** |")
    assert "| a number without claim | 1 | 2 | – |" in text


def test_dcrc_quick_through_the_command(cli, core, tmp_path):
    r = cli("reproduce", "dcrc", "--quick", "--seeds", "2", "--workers", "2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "dcrc.md").read_text()
    assert text.startswith("# Reproduction: DCRC")
    assert f"ratelab reproduce dcrc --seeds 2 --workers 2 --quick --out {tmp_path}" in text
    figures = re.findall(r"!\[[^]]*\]\((dcrc/[^)]+\.png)\)", text)
    assert len(figures) == 4 and all((tmp_path / f).is_file() for f in figures)
    # every section has its claims table, and the summary counts the verdicts it lists
    n_rows = len(re.findall(r"^\| Fig[^|]*\| [^|]* \| (?:holds|\*\*does not hold\*\*) \|$", text, re.M))
    m = re.search(r"(\d+) of (\d+) checkable claims hold", text)
    assert m and int(m.group(2)) == n_rows > 10
    assert "claims hold" in r.stdout


def test_unknown_paper_is_bad_input(cli):
    r = cli("reproduce", "nope")
    assert r.returncode == 2 and "nope" in r.stderr


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_every_paper_builds_its_jobs(name):
    spec = paper(name)
    assert spec.name == name and spec.default_seeds >= 3
    for quick in (True, False):
        jobs = spec.jobs([1, 2], quick)
        assert {j.seed for j in jobs} == {1, 2}
        assert all(j.document().count('"packet_log": false') == 1 for j in jobs)
        # every seed runs the same set of experiments
        assert sorted(j.key for j in jobs if j.seed == 1) == sorted(j.key for j in jobs if j.seed == 2)
    quick_cost = sum(j.cost() for j in spec.jobs([1], True))
    assert quick_cost < sum(j.cost() for j in spec.jobs([1], False)) / 3


@pytest.mark.parametrize("name", ["lcc", "iris"])
def test_quick_reproduction_writes_its_report(core, name, tmp_path):
    needed = {"lcc": {"lcc", "gcc"}, "iris": {"iris", "iris-mid", "vivace", "pcc-allegro"}}[name]
    assert needed <= {c["name"] for c in core.controllers()}, "the paper's controllers are built in"
    out = reproduce(paper(name), [1], 2, True, tmp_path, f"ratelab reproduce {name} --quick")
    text = out.path.read_text()
    assert "## Claims at a glance" in text and sum(c.holds is not None for c in out.claims) >= 5
    assert out.figures and all(p.is_file() and p.stat().st_size > 1000 for p in out.figures)
    assert all(f"({name}/{p.name})" in text for p in out.figures)
