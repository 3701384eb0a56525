"""Evaluate bandwidth-estimation policies in the RL environment (same episodes for every policy).

A *policy* is an object with ``reset(n)`` and ``act(obs [n, 4]) -> actions [n]`` (deterministic).
:class:`TorchPolicy` runs an :class:`~ratelab.rl.model.R3Net` (mean action), :class:`ConstantPolicy`
a fixed action. Metrics follow paper 004 Table 1: mean reward per step, bandwidth utilisation
(received / capacity), RTT mean/p50/p95 and loss rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .env import BandwidthEstimationVectorEnv


class ConstantPolicy:
    def __init__(self, action: float):
        self.action = float(action)

    def reset(self, n: int) -> None:
        self.n = n

    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.full(len(obs), self.action, dtype=np.float32)


class TorchPolicy:
    def __init__(self, net):
        self.net = net

    def reset(self, n: int) -> None:
        self.h = self.net.initial_state(n)

    def act(self, obs: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            mu, _v, self.h = self.net(torch.as_tensor(obs, dtype=torch.float32)[None], self.h)
        return mu[0].numpy().astype(np.float32)


@dataclass
class EvalResult:
    reward: float
    utilization: float
    rtt_mean_ms: float
    rtt_p50_ms: float
    rtt_p95_ms: float
    loss_pct: float
    episodes: int

    def row(self) -> dict[str, Any]:
        return dict(self.__dict__)


def evaluate(policy, episodes: int = 16, seed: int = 12345, traces: Any = "test",
             config: dict[str, Any] | None = None, duration_s: float = 30.0) -> EvalResult:
    """Run ``episodes`` episodes (all in parallel, seeded) and pool the per-step metrics."""
    env = BandwidthEstimationVectorEnv(episodes, config=config, traces=traces, duration_s=duration_s)
    obs, _ = env.reset(seed=seed)
    policy.reset(episodes)
    rew, recv, cap, rtt, loss = [], [], [], [], []
    for _ in range(env.steps_per_episode):
        obs, r, _t, trunc, info = env.step(policy.act(obs)[:, None])
        rew.append(r)
        recv.append(info["recv_kbps"]); cap.append(info["capacity_kbps"])
        rtt.append(info["rtt_ms"]); loss.append(info["loss_pct"])
    rtt_a = np.concatenate(rtt)
    rtt_a = rtt_a[rtt_a > 0]
    cap_sum = float(np.sum(cap))
    return EvalResult(
        reward=float(np.mean(rew)),
        utilization=float(np.sum(np.minimum(recv, cap)) / cap_sum) if cap_sum > 0 else float("nan"),
        rtt_mean_ms=float(rtt_a.mean()) if rtt_a.size else float("nan"),
        rtt_p50_ms=float(np.percentile(rtt_a, 50)) if rtt_a.size else float("nan"),
        rtt_p95_ms=float(np.percentile(rtt_a, 95)) if rtt_a.size else float("nan"),
        loss_pct=float(np.mean(loss)),
        episodes=episodes,
    )
