"""Gymnasium environments for receiver-side bandwidth estimation (R3Net, paper 004, spec 10).

``ratelab/BandwidthEstimation-v0`` (:class:`BandwidthEstimationEnv`): one simulated call per
episode. Every 50 ms step the agent at the receiver observes ``[recv_kbps/1000, interval_ms/10,
loss_pct/100, rtt_ms/100]`` over the last window and answers an estimate ``a ∈ [0, 1]`` mapped to
(0, 8) Mbit/s (``mapping="linear"``, or ``"log"`` from 10 kbit/s); it reaches the sender after
the return delay and becomes its target rate. Reward ``0.6·ln(4R+1) − D − 10·L`` (R Mbit/s, D
mean RTT in s, L loss fraction, all of the step's window). Episodes end by truncation (30 s).

Each episode draws a trace (a shipped training trace at a random offset, or a synthetic one) and a
random path (one-way delay, drop-tail queue, random loss, optional competing TCP or GCC flow); the
distribution is ``ratelab._core.rl_env_defaults()`` (the Rust ``EnvConfig``), overridable with
``config={...}``. The Rust simulator is seeded from the environment's ``np_random``.

:class:`BandwidthEstimationVectorEnv` steps N simulators in one Rust call with the GIL released
(same-step autoreset: a finished sub-environment is reset in the same call; its last observation
is in ``info["final_obs"]`` where ``info["_final_obs"]`` is set).

``observation="mmsys24"`` makes the agent see the 150-feature observation of the ACM MMSys 2024
bandwidth-estimation challenge instead (raw units, every 60 ms; docs/models/mmsys24.md), the one the
``onnx`` controller feeds a model, so that an offline-RL model can be fine-tuned online here and run
unchanged with ``-c onnx``. Action and reward stay as above (``mapping="log"`` is closer to the
challenge's range); ``audio_kbps`` adds the sender's audio stream so that the audio fraction is real.

``info`` carries the unscaled features and ground truth for evaluation: ``recv_kbps``,
``interval_ms``, ``loss_pct``, ``rtt_ms``, ``capacity_kbps`` (mean bottleneck capacity of the
window — not observed by the agent) and ``estimate_kbps`` (the action's estimate).
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ratelab.rl import traces as _traces

RAW_KEYS = ("recv_kbps", "interval_ms", "loss_pct", "rtt_ms", "capacity_kbps", "estimate_kbps")


def _core():
    from ratelab import _core

    return _core


def env_config(config: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """Defaults of the Rust ``EnvConfig`` updated with ``config`` and keyword overrides."""
    cfg = dict(_core().rl_env_defaults())
    cfg.update(config or {})
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    return cfg


def _obs_space(dim: int) -> spaces.Box:
    # The MMSys'24 features include signed ones (delay minus a 200 ms base).
    low = 0.0 if dim == 4 else -np.inf
    return spaces.Box(low=low, high=np.inf, shape=(dim,), dtype=np.float32)


def _act_space() -> spaces.Box:
    return spaces.Box(low=0.0, high=1.0, shape=(1,), dtype=np.float32)


class BandwidthEstimationEnv(gym.Env):
    """Single environment (see the module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, config: dict[str, Any] | None = None, traces: Any = "train",
                 mapping: str | None = None, duration_s: float | None = None, observation: str | None = None):
        self.config = env_config(config, mapping=mapping, duration_s=duration_s, observation=observation)
        self._traces = _traces.load(traces)
        self._env = _core().RlVecEnv(json.dumps(self.config), self._traces, 1, seed=0, autoreset=False)
        self.observation_space = _obs_space(self._env.obs_dim)
        self.action_space = _act_space()
        self.steps_per_episode = self._env.steps_per_episode

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        s = int(self.np_random.integers(0, 2**63 - 1))
        obs, raw = self._env.reset([s])
        return obs[0], self._info(raw[0])

    def step(self, action):
        a = np.asarray(action, dtype=np.float32).reshape(-1)[:1]
        obs, rew, _term, trunc, _fin, raw = self._env.step(np.ascontiguousarray(a))
        return obs[0], float(rew[0]), False, bool(trunc[0]), self._info(raw[0])

    def episode(self) -> dict[str, Any]:
        """How the current episode was drawn (trace, offset, delays, queue, loss, competitors)."""
        return self._env.episode(0)

    @staticmethod
    def _info(raw: np.ndarray) -> dict[str, float]:
        return {k: float(v) for k, v in zip(RAW_KEYS, raw)}


class BandwidthEstimationVectorEnv(VectorEnv):
    """N environments in one Rust object, stepped with the GIL released (same-step autoreset)."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, config: dict[str, Any] | None = None, traces: Any = "train",
                 mapping: str | None = None, duration_s: float | None = None, threads: int = 1,
                 observation: str | None = None):
        self.config = env_config(config, mapping=mapping, duration_s=duration_s, observation=observation)
        self.num_envs = int(num_envs)
        self._traces = _traces.load(traces)
        self._env = _core().RlVecEnv(json.dumps(self.config), self._traces, self.num_envs, seed=0,
                                     threads=threads, autoreset=True)
        self.single_observation_space = _obs_space(self._env.obs_dim)
        self.single_action_space = _act_space()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.steps_per_episode = self._env.steps_per_episode

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        if isinstance(seed, int):
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        elif seed is not None:
            seeds = [int(s) for s in seed]
            obs, raw = self._env.reset(seeds)
            return obs, self._info(raw)
        seeds = [int(s) for s in self.np_random.integers(0, 2**63 - 1, size=self.num_envs)]
        obs, raw = self._env.reset(seeds)
        return obs, self._info(raw)

    def step(self, actions):
        a = np.ascontiguousarray(np.asarray(actions, dtype=np.float32).reshape(self.num_envs, -1)[:, 0])
        obs, rew, term, trunc, fin, raw = self._env.step(a)
        info = self._info(raw)
        if trunc.any():
            info["final_obs"] = fin
            info["_final_obs"] = trunc.copy()
        return obs, rew, term, trunc, info

    def episode(self, i: int) -> dict[str, Any]:
        return self._env.episode(i)

    @staticmethod
    def _info(raw: np.ndarray) -> dict[str, np.ndarray]:
        return {k: raw[:, j] for j, k in enumerate(RAW_KEYS)}
