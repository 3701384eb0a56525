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
