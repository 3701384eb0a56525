"""The encoder at low rates (media.frame_floor_kbit, media.quality_scaler, media.encoder_min_kbps;
docs/models/encoder.md): the settings arrive from the command line and change what the
receiver sees, and a scaler without a floor is one clear line."""

from __future__ import annotations

import pytest

import ratelab
from ratelab.scenario import load_scenario


def _run(extra):
    # a 150 kbit/s link: the encoder's budget at 15 frames/s is ~9 kbit per frame, below a
    # 27 kbit floor at 640x360 (and below 11.5 kbit at 320x180)
    sc = load_scenario("rmcat-5.1", ["duration_s=20", "metrics.packet_log=false", "link.steps=[[0, 150]]",
                                     "flows.0.media.fps=15", "flows.0.media.min_kbps=30", *extra])
    res = ratelab.run_scenario(sc, ["gcc"], packets=False)
    return res.runs[0].flows[0]


def test_a_floor_drops_frames_the_plain_encoder_would_shrink(core):
    plain = _run([])
    floored = _run(["flows.0.media.frame_floor_kbit=27"])
    # 20 s at 15 frames/s is 300 captures: the plain encoder renders nearly all of them
    assert plain["frames_rendered"] > 250
    assert floored["frames_rendered"] < 0.6 * plain["frames_rendered"]
    # the scaler steps down to 320x180, where the floor is 11.5 kbit: more frames get through
    scaled = _run(["flows.0.media.frame_floor_kbit=27", "flows.0.media.quality_scaler=true"])
    assert scaled["frames_rendered"] > floored["frames_rendered"]


def test_quality_scaler_without_a_floor_is_refused_by_name(core, cli):
    p = cli("run", "rmcat-5.1", "-c", "gcc", "--set", "flows.0.media.quality_scaler=true")
    err = p.stderr
    assert p.returncode == 2 and len(err.strip().splitlines()) == 1
    assert "flows[0].media.quality_scaler" in err and "frame_floor_kbit" in err and "Traceback" not in err


def test_the_encoders_drops_and_picture_reach_the_summary_and_the_series(core, tmp_path):
    import numpy as np
    import pyarrow.parquet as pq

    sc = load_scenario("rmcat-5.1", ["duration_s=20", "metrics.packet_log=false", "link.steps=[[0, 150]]",
                                     "flows.0.media.fps=15", "flows.0.media.min_kbps=30",
                                     "flows.0.media.frame_floor_kbit=27", "flows.0.media.quality_scaler=true"])
    res = ratelab.run_scenario(sc, ["gcc"], packets=False, out_dir=tmp_path)
    f = res.runs[0].flows[0]
    s = pq.read_table(tmp_path / "gcc" / "series.parquet").to_pydict()
    fps, width = np.array(s["fps"], float), np.array(s["width"], float)
    iv = s["t_s"][1] - s["t_s"][0]
    # the 300 captures of 20 s at 15 frames/s: encoded (the series), dropped by the encoder (the
    # summary), or a few dropped before the encoder by GCC's congestion-window pushback
    encoded = fps.sum() * iv
    assert f["frames_dropped_by_encoder"] > 100 and encoded > 100
    assert 285 <= encoded + f["frames_dropped_by_encoder"] <= 300
    # the scaler's steps show in the series: 640 wide at first, narrower later
    assert width[0] == 640 and width[-1] < 640 and np.all(np.diff(width) <= 0)
    # without the floor the encoder's drops are not modelled: no key, no picture
    plain = ratelab.run_scenario(load_scenario("rmcat-5.1", ["duration_s=5", "metrics.packet_log=false"]), ["gcc"], packets=False)
    assert "frames_dropped_by_encoder" not in plain.runs[0].flows[0]
