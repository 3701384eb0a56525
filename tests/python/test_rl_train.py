"""R3Net training (issue 5): a short PPO run learns (beats the constant rate it starts from on
fixed evaluation episodes); the CLI trains, checkpoints, resumes and writes CSV, PNG and ONNX.
Needs the ``rl`` extra; run with ``pytest -m rl``."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from conftest import require

pytestmark = pytest.mark.rl
torch = require("torch")
require("gymnasium")
require("onnx")
_core = require("ratelab._core")

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


def test_validation_keeps_the_best_snapshot_and_survives_resume(tmp_path):
    # A tiny run validating after every update: best.pt / best.onnx hold the argmax of the logged
    # validation rewards, and re-validating best.pt's weights gives exactly the logged value
    # (fixed episodes and action noise). Resuming keeps the best across both parts of the run.
    out = tmp_path / "run"
    cfg = TrainConfig(steps=4 * 32 * 6, envs=4, rollout=32, seq_len=16, minibatch=64, epochs=1, lr=3e-3,
                      duration_s=1.0, seed=3, checkpoint_every=3, val_every=1, val_episodes=6)
    Trainer(cfg, out, log=lambda s: None).train()
    rows = list(csv.DictReader(open(out / "scalars.csv")))
    assert [int(r["update"]) for r in rows] == list(range(1, 7))
    vals = [float(r["val_reward"]) for r in rows]
    assert len(set(vals)) > 1, "the policy changed between validations"
    best = torch.load(out / "best.pt", weights_only=False)
    k = int(np.argmax(vals))
    assert best["updates"] == k + 1 and best["val_reward"] == pytest.approx(vals[k], abs=1e-6)
    again = Trainer(cfg, tmp_path / "re", log=lambda s: None)
    again.net.load_state_dict(best["net"])
    assert again.validate() == pytest.approx(best["val_reward"], abs=1e-9)
    import onnx

    meta = {p.key: p.value for p in onnx.load(str(out / "best.onnx")).metadata_props}
    assert int(meta["val_update"]) == k + 1 and float(meta["val_reward"]) == pytest.approx(vals[k], abs=1e-6)
    assert meta["ratelab.r3net.mapping"] == "linear"
    # resume to 10 updates: the best is the argmax over all 10 logged validations
    cfg2 = TrainConfig(**{**cfg.__dict__, "steps": 4 * 32 * 10})
    Trainer(cfg2, out, resume=True, log=lambda s: None).train()
    rows = list(csv.DictReader(open(out / "scalars.csv")))
    vals = [float(r["val_reward"]) for r in rows]
    assert [int(r["update"]) for r in rows] == list(range(1, 11))
    best = torch.load(out / "best.pt", weights_only=False)
    assert best["updates"] == int(np.argmax(vals)) + 1 and best["val_reward"] == pytest.approx(max(vals), abs=1e-6)
    # a fresh (non-resumed) run in the same folder starts its best afresh
    Trainer(TrainConfig(**{**cfg.__dict__, "steps": 4 * 32, "val_every": 0}), out, log=lambda s: None).train()
    assert not (out / "best.pt").exists() and not (out / "best.onnx").exists()
