"""R3Net environment (issue 5): gymnasium API, seeding, reward and features, vector env, SB3.

Needs the ``rl`` extra (gymnasium); run with ``pytest -m rl``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import require

pytestmark = pytest.mark.rl
gym = require("gymnasium")
_core = require("ratelab._core")

from ratelab.rl import ENV_ID  # noqa: E402
from ratelab.rl import traces as rl_traces  # noqa: E402
from ratelab.rl.env import BandwidthEstimationEnv, BandwidthEstimationVectorEnv  # noqa: E402

FAST = {"duration_s": 3.0}


def test_env_checker_passes():
    from gymnasium.utils.env_checker import check_env

    env = BandwidthEstimationEnv(config=FAST)
    check_env(env, skip_render_check=True)


def test_registered_ids_build_both_envs():
    env = gym.make(ENV_ID, config=FAST)
    assert isinstance(env.unwrapped, BandwidthEstimationEnv)
    venv = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", config=FAST)
    assert isinstance(venv, BandwidthEstimationVectorEnv)
    assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP


def _rollout(env, seed, actions):
    obs, info = env.reset(seed=seed)
    out = [(obs.copy(), 0.0)]
    for a in actions:
        obs, r, term, trunc, info = env.step(np.array([a], np.float32))
        assert not term
        out.append((obs.copy(), r))
    return out


def test_seeding_from_np_random_is_reproducible():
    acts = [0.05, 0.1, 0.3, 0.02] * 10
    a = _rollout(BandwidthEstimationEnv(config=FAST), 7, acts)
    b = _rollout(BandwidthEstimationEnv(config=FAST), 7, acts)
    c = _rollout(BandwidthEstimationEnv(config=FAST), 8, acts)
    assert all(np.array_equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(a, b))
    assert any(not np.array_equal(x[0], y[0]) for x, y in zip(a, c))
    env = BandwidthEstimationEnv(config=FAST)
    env.reset(seed=3)
    e1 = env.episode()
    env.reset(seed=3)
    assert env.episode() == e1


def test_reward_and_scaling_follow_spec_10():
    env = BandwidthEstimationEnv(config={"duration_s": 5.0, "synthetic_prob": 1.0, "synthetic_kbps": [1500, 1500]})
    env.reset(seed=1)
    seen_loss = False
    for k in range(100):
        obs, r, term, trunc, info = env.step(np.array([0.4 if k > 50 else 0.1], np.float32))
        R, D, L = info["recv_kbps"] / 1000, info["rtt_ms"] / 1000, info["loss_pct"] / 100
        assert r == pytest.approx(0.6 * math.log(4 * R + 1) - D - 10 * L, abs=1e-9)
        assert obs == pytest.approx(np.array([info["recv_kbps"] / 1000, info["interval_ms"] / 10,
                                              info["loss_pct"] / 100, info["rtt_ms"] / 100], np.float32), rel=1e-6)
        assert info["capacity_kbps"] == pytest.approx(1500)
        assert info["estimate_kbps"] == pytest.approx(8000 * (0.4 if k > 50 else 0.1), rel=1e-6)
        assert 0.0 <= info["interval_ms"] <= 50.0
        seen_loss |= info["loss_pct"] > 0
        assert trunc == (k == 99)
    assert seen_loss, "3.2 Mbit/s into a 1.5 Mbit/s link must overflow the queue"


def test_log_mapping():
    env = BandwidthEstimationEnv(config=FAST, mapping="log")
    env.reset(seed=1)
    for a, want in ((0.0, 10.0), (1.0, 8000.0), (0.5, math.sqrt(10 * 8000))):
        *_, info = env.step(np.array([a], np.float32))
        assert info["estimate_kbps"] == pytest.approx(want, rel=1e-6)


def test_vector_env_same_step_autoreset_and_final_obs():
    venv = BandwidthEstimationVectorEnv(4, config={"duration_s": 1.0})
    obs, info = venv.reset(seed=5)
    assert obs.shape == (4, 4) and obs.dtype == np.float32
    assert venv.observation_space.shape == (4, 4) and venv.action_space.shape == (4, 1)
    for k in range(20):
        obs, rew, term, trunc, info = venv.step(np.full((4, 1), 0.1, np.float32))
        assert rew.shape == (4,) and not term.any()
        if k < 19:
            assert not trunc.any() and "final_obs" not in info
    assert trunc.all() and info["_final_obs"].all() and info["final_obs"].shape == (4, 4)
    # the returned observation is the new episode's first one (a fresh 50-ms window)
    assert venv.episode(0) != {} and obs.shape == (4, 4)
    # vector env with a seed reproduces itself
    a = BandwidthEstimationVectorEnv(2, config=FAST)
    b = BandwidthEstimationVectorEnv(2, config=FAST)
    oa, _ = a.reset(seed=11)
    ob, _ = b.reset(seed=11)
    assert np.array_equal(oa, ob)
    for _ in range(30):
        ra = a.step(np.full((2, 1), 0.2, np.float32))
        rb = b.step(np.full((2, 1), 0.2, np.float32))
        assert np.array_equal(ra[0], rb[0]) and np.array_equal(ra[1], rb[1])


def test_trace_split_is_disjoint_and_complete():
    train, val, test = rl_traces.split("train"), rl_traces.split("val"), rl_traces.split("test")
    assert len(test) == 10 and len(val) == 6 and len(train) == 24
    assert not set(train) & set(test) and not set(val) & set(test) and not set(train) & set(val)
    assert set(train) | set(val) | set(test) == set(rl_traces.shipped())
    assert set(test) == set(rl_traces.TEST_TRACES) and set(val) == set(rl_traces.VAL_TRACES)
    # deterministic: the same lists on every call (fixed names, sorted)
    assert rl_traces.split("val") == val == sorted(val) and rl_traces.split("train") == train
    # two of each family in val (OpenNetLab, Norway 3G, FCC), and every family still in train
    for fam in (lambda n: n.startswith("opennetlab-"), lambda n: "report" in n, lambda n: "_http---" in n):
        assert sum(map(fam, val)) == 2 and any(map(fam, train))
    # a validation environment only ever draws validation traces (or synthetic ones)
    env = BandwidthEstimationVectorEnv(8, config={"duration_s": 0.5, "synthetic_prob": 0.0}, traces="val")
    env.reset(seed=1)
    assert all(env.episode(i)["trace"] in rl_traces.VAL_TRACES for i in range(8))
    # a test-set environment only ever draws test traces (or synthetic ones)
    env = BandwidthEstimationVectorEnv(8, config={"duration_s": 0.5, "synthetic_prob": 0.0}, traces="test")
    env.reset(seed=1)
    assert all(env.episode(i)["trace"] in rl_traces.TEST_TRACES for i in range(8))


def test_synthetic_generator():
    for kind in ("markov", "random-walk", "step"):
        t, c = _core.synthetic_trace(kind, 3, 60.0)
        assert t[0] == 0 and np.all(np.diff(t) > 0) and t[-1] < 60
        assert np.all((c >= 100) & (c <= 8000))
    with pytest.raises(ValueError):
        _core.synthetic_trace("sine", 1, 10.0)


def test_bad_config_names_the_field():
    with pytest.raises(_core.ScenarioError) as e:
        BandwidthEstimationEnv(config={"owd_ms": [50, 10]})
    assert e.value.field == "owd_ms"


def test_stable_baselines3_ppo_trains_unchanged(tmp_path):
    sb3 = require("stable_baselines3")
    env = gym.make(ENV_ID, config={"duration_s": 2.0})
    model = sb3.PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=128)
    model.save(tmp_path / "ppo")
    obs, _ = env.reset(seed=0)
    a, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(np.clip(a, 0, 1).astype(np.float32))
