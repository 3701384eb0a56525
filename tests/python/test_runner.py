"""Runner, Parquet streaming, summary, plots and report against the fake core (no simulator)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from ratelab.run import runner
from ratelab.errors import InputError
from ratelab.run.results import build_summary, write_summary
from ratelab.run.runner import Interrupted, run_scenario

FLOW_KEYS = {"id", "kind", "controller", "throughput_kbps", "utilization", "owd_ms_mean", "owd_ms_p50", "owd_ms_p95",
             "queue_delay_ms_mean", "queue_delay_ms_p95", "loss_rate", "freeze_ratio", "frame_delay_ms_mean"}


def test_run_writes_parquet_and_summary(fake_core, tmp_path):
    res = run_scenario("rmcat-5.6", ["gcc", "oracle"], seed=3, out_dir=tmp_path, overrides=["duration_s=12"])
    assert [r.name for r in res.runs] == ["gcc", "oracle"]
    for r in res.runs:
        packets = pq.read_table(r.dir / "packets.parquet")
        assert packets.column_names == ["flow", "seq", "size", "send_s", "recv_s", "lost"]
        assert packets.num_rows == r.packets > 0
        series = pq.read_table(r.dir / "series.parquet")
        assert set(series.column("flow").to_pylist()) == {0, 1}
        assert max(series.column("t_s").to_pylist()) < 12
        assert r.sim_speed > 0 and r.wall_seconds > 0
    assert not list(tmp_path.rglob("*.part"))
    path = write_summary(res)
    s = json.loads(path.read_text())
    assert set(s) == {"ratelab_version", "scenario", "seed", "duration_s", "runs"}
    assert s["scenario"] == "rmcat-5.6" and s["seed"] == 3 and s["duration_s"] == 12
    for run in s["runs"]:
        assert set(run) == {"controller", "wall_seconds", "sim_speed", "link", "flows"}
        assert {"utilization", "jain_index", "loss_rate"} <= set(run["link"])
        for f in run["flows"]:
            assert FLOW_KEYS <= set(f)
    # TCP has no frame delay: NaN becomes null, and the file is strict JSON
    assert s["runs"][0]["flows"][1]["frame_delay_ms_mean"] is None
    assert "NaN" not in path.read_text()


def test_scenario_controllers_when_none_given(fake_core, tmp_path):
    res = run_scenario("rmcat-5.1", seed=1, out_dir=tmp_path, overrides=["duration_s=2"])
    assert [r.controller for r in res.runs] == ["gcc"]


def test_duplicate_controllers_get_distinct_folders(fake_core, tmp_path):
    res = run_scenario("lcc-loss", ["gcc", "gcc"], out_dir=tmp_path, overrides=["duration_s=1"])
    assert [r.name for r in res.runs] == ["gcc", "gcc-2"]


def test_no_packets_and_no_out_dir(fake_core, tmp_path):
    res = run_scenario("lcc-loss", ["gcc"], out_dir=tmp_path, packets=False, overrides=["duration_s=2"])
    assert not (tmp_path / "gcc" / "packets.parquet").exists()
    assert (tmp_path / "gcc" / "series.parquet").exists()
    res = run_scenario("lcc-loss", ["gcc"], overrides=["duration_s=2"])
    assert res.runs[0].dir is None and res.runs[0].packets > 0


def test_parquet_is_written_in_row_groups(fake_core, tmp_path, monkeypatch):
    from ratelab.run import sinks

    monkeypatch.setattr(sinks, "FLUSH_ROWS", 500)
    res = run_scenario("lcc-loss", ["gcc"], out_dir=tmp_path, overrides=["duration_s=30"])
    f = pq.ParquetFile(res.runs[0].dir / "packets.parquet")
    assert f.metadata.num_row_groups > 1
    seq = f.read().column("seq").to_pylist()
    assert seq == list(range(len(seq)))


def test_deterministic_for_a_seed(fake_core, tmp_path):
    def numbers(seed, d):
        return build_summary(run_scenario("lcc-loss", ["gcc"], seed=seed, out_dir=tmp_path / d,
                                          overrides=["duration_s=5", "link.loss=0.1"]))["runs"][0]["flows"]
    assert numbers(7, "a") == numbers(7, "b")
    assert numbers(7, "a") != numbers(8, "c")


def test_bad_input_before_any_run(fake_core, tmp_path):
    with pytest.raises(InputError) as e:
        run_scenario("lcc-loss", ["gcc", "nope"], out_dir=tmp_path)
    assert e.value.line().startswith("error: -c: nope: unknown controller (known: gcc, fixed, oracle; or path/to/file.py:Class")
    assert not (tmp_path / "gcc").exists()
    with pytest.raises(InputError) as e:
        run_scenario("lcc-loss", out_dir=tmp_path, overrides=["link.capacity_kbps=-5"])
    assert e.value.line() == "error: lcc-loss: link.capacity_kbps: must be > 0, got -5"


def test_interrupt_keeps_finished_runs_and_no_partial_files(fake_core, tmp_path):
    calls = []

    def progress(desc, sim_s):
        calls.append(desc)
        if "oracle" in desc and len([c for c in calls if "oracle" in c]) == 2:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as e:
        run_scenario("rmcat-5.1", ["gcc", "oracle", "fixed"], out_dir=tmp_path, progress=progress,
                     overrides=["duration_s=20"])
    res = e.value.result
    assert res.interrupted and [r.name for r in res.runs] == ["gcc"]
    assert (tmp_path / "gcc" / "packets.parquet").exists()
    assert not list(tmp_path.rglob("*.part"))
    assert not (tmp_path / "oracle" / "packets.parquet").exists()
