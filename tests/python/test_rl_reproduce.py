"""`ratelab reproduce r3net` metrics (needs only the compiled core, no torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ratelab.rl import reproduce as rep


def test_window_rewards_hand_worked():
    # Window 0 (0–50 ms): two 1250-byte packets, RTTs 60 and 80 ms (OWD 20/40 ms + 40 ms return).
    # Window 1: one packet lost (sent at 45 ms + 20 ms OWD → would arrive at 65 ms), none received.
    p = {
        "send_s": np.array([0.000, 0.010, 0.045]),
        "recv_s": np.array([0.020, 0.050 - 1e-6, np.nan]),
        "size": np.array([1250, 1250, 1250]),
        "lost": np.array([False, False, True]),
    }
    r = rep.window_rewards(p, owd_s=0.020, ret_s=0.040, duration=0.1)
    R0 = 2500 * 8 / 0.05 / 1e6  # 0.4 Mbit/s
    D0 = (0.060 + 0.080 - 1e-6) / 2
    assert r[0] == pytest.approx(0.6 * math.log(4 * R0 + 1) - D0)
    # window 1: nothing received (R = 0, D = last RTT), 1 of 1 lost
    assert r[1] == pytest.approx(-D0 - 10.0)


def test_reproduce_runs_every_controller_on_the_test_traces(core):
    res = rep.reproduce(duration=2.0, controllers=["fixed", "oracle"], progress=lambda s: None)
    assert set(res) == {"fixed", "oracle"}
    for m in res.values():
        assert m["runs"] == 10 * len(rep.DELAYS_MS)
        assert 0 <= m["utilization"] <= 150 and m["rtt_p50"] <= m["rtt_p95"] and m["loss"] >= 0
    md = rep.markdown(res, 2.0, 1.0)
    assert "R3Net (paper)" in md and "| oracle |" in md


def test_run_with_model_flag_uses_r3net(core, cli, tmp_path):
    import json
    from pathlib import Path

    model = Path(rep.__file__).resolve().parent.parent / "models" / "r3net.onnx"
    r = cli("run", "rmcat-5.1", "--model", str(model), "--no-packets", "--set", "duration_s=5", "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert "r3net" in json.dumps(s)
    r = cli("run", "rmcat-5.1", "--model", str(tmp_path / "missing.onnx"))
    assert r.returncode == 2 and "missing.onnx" in r.stderr
