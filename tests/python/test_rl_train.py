"""R3Net training (issue 5): a short PPO run learns (beats the constant rate it starts from on
fixed evaluation episodes); the CLI trains, checkpoints, resumes and writes CSV, PNG and ONNX.
Needs the ``rl`` extra; run with ``pytest -m rl``."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytestmark = pytest.mark.rl
torch = pytest.importorskip("torch")
pytest.importorskip("gymnasium")
pytest.importorskip("onnx")
_core = pytest.importorskip("ratelab._core")

from ratelab.rl.evaluate import ConstantPolicy, TorchPolicy, evaluate  # noqa: E402
from ratelab.rl.train import TrainConfig, Trainer  # noqa: E402


def test_short_training_beats_the_constant_rate_it_starts_from(tmp_path):
    # 20 PPO updates of 2048 steps (~30 s on one busy core). The untrained policy's mean action
    # is init_action = 0.1 (0.8 Mbit/s) everywhere; training must beat that constant rate on the
    # same 16 seeded evaluation episodes.
    cfg = TrainConfig(steps=32 * 64 * 20, envs=32, rollout=64, seq_len=16, minibatch=1024, epochs=4, lr=1e-3,
                      duration_s=15.0, seed=0, checkpoint_every=1000)
    tr = Trainer(cfg, tmp_path, log=lambda s: None)
    untrained = TorchPolicy(Trainer(cfg, tmp_path / "u", log=lambda s: None).net)
    tr.train()
    ev = dict(episodes=16, seed=99, traces="train", duration_s=15.0)
    const = evaluate(ConstantPolicy(cfg.init_action), **ev)
    before = evaluate(untrained, **ev)
    after = evaluate(TorchPolicy(tr.net), **ev)
    assert before.reward == pytest.approx(const.reward, abs=0.05), "the untrained policy is the constant"
    assert after.reward > const.reward + 0.3, (after, const)


def test_cli_trains_checkpoints_and_resumes(tmp_path, cli):
    out = tmp_path / "run"
    small = ["--envs", "4", "--rollout", "32", "--seq-len", "16", "--minibatch", "64", "--epochs", "1",
             "--duration-s", "1.0", "--checkpoint-every", "1", "--out", str(out)]
    r = cli("train", "r3net", "--steps", "256", *small)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(out / "scalars.csv")))
    assert [int(x["update"]) for x in rows] == [1, 2]
    for f in ("checkpoint.pt", "r3net.onnx", "learning_curve.png"):
        assert (out / f).stat().st_size > 0, f
    # the export records the action mapping it was trained with (the core's default for it)
    from ratelab.rl.model import model_mapping

    assert model_mapping(out / "r3net.onnx") == {"mapping": "linear", "max_kbps": 8000.0, "log_min_kbps": 10.0}
    r = cli("train", "r3net", "--steps", "512", "--resume", *small)
    assert r.returncode == 0, r.stderr
    assert "resumed" in r.stdout
    rows = list(csv.DictReader(open(out / "scalars.csv")))
    assert [int(x["update"]) for x in rows] == [1, 2, 3, 4]
    assert int(rows[-1]["steps"]) == 512
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    assert state["updates"] == 4
    # the exported model runs in the Rust runtime
    a = _core.r3net_policy_steps(str(out / "r3net.onnx"), np.zeros((3, 4), np.float32))
    assert a.shape == (3,) and np.all((a > 0) & (a < 1))
