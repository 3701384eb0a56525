"""Evaluate bandwidth-estimation policies in the RL environment (same episodes for every policy).

A *policy* is an object with ``reset(n)`` and ``act(obs [n, 4]) -> actions [n]`` (deterministic).
:class:`TorchPolicy` runs an :class:`~ratelab.rl.model.R3Net` (mean action), :class:`ConstantPolicy`
a fixed action. Metrics follow paper 004 Table 1: mean reward per step, bandwidth utilisation
(received / capacity), RTT mean/p50/p95 and loss rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ratelab.rl.env import BandwidthEstimationVectorEnv


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
    """Run ``episodes`` episodes (all in parallel, seeded) and pool the per-step metrics.
    ``config`` overrides the environment (e.g. ``{"mapping": "log"}`` for a log-mapping policy)."""
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


class OnnxPolicy:
    """An exported R3Net ONNX model in onnxruntime; ``sample=True`` draws ``N(μ, action_std)``
    like the ``r3net`` controller (seeded), else the mean action."""

    def __init__(self, path, sample: bool = True, seed: int = 0):
        import onnxruntime as ort

        self.sess = ort.InferenceSession(str(path))
        self.names = [o.name for o in self.sess.get_outputs()]
        self.hidden = self.sess.get_inputs()[1].shape[2]
        self.sample, self.rng = sample, np.random.default_rng(seed)

    def reset(self, n: int) -> None:
        self.h = np.zeros((n, 1, 1, self.hidden), np.float32)

    def act(self, obs: np.ndarray) -> np.ndarray:
        out = np.empty(len(obs), np.float32)
        for i, o in enumerate(obs):
            res = dict(zip(self.names, self.sess.run(None, {"obs": o[None].astype(np.float32), "h": self.h[i]})))
            self.h[i] = res["h_out"]
            mu = float(res["action_mean"][0, 0])
            std = float(res["action_std"][0, 0]) if "action_std" in res else 0.0
            out[i] = np.clip(mu + std * self.rng.standard_normal(), 0.0, 1.0) if self.sample else mu
        return out


def main(argv: list[str] | None = None) -> int:
    """``python -m ratelab.rl.evaluate [--model PATH]``: the model card's test table."""
    import argparse
    from pathlib import Path

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--model", default=str(Path(__file__).resolve().parent.parent / "models" / "r3net.onnx"))
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--traces", default="test")
    p.add_argument("--no-constants", action="store_true", help="only the model's rows")
    a = p.parse_args(argv)
    from ratelab.rl.model import model_mapping

    # The environment runs the action mapping the model was trained with (its ONNX metadata).
    config = model_mapping(a.model)
    kind, top, low = config.get("mapping", "linear"), config.get("max_kbps", 8000.0), config.get("log_min_kbps", 10.0)
    print(f"model {a.model}: mapping {kind}, {low if kind == 'log' else 0:g} … {top:g} kbit/s")
    rows = [("R3Net, sampled (as deployed)", OnnxPolicy(a.model, True)), ("R3Net, mean action", OnnxPolicy(a.model, False))]
    if not a.no_constants:
        # The same constant rates whatever the mapping: 200, 400, 800 and 1600 kbit/s.
        for c in (0.025, 0.05, 0.1, 0.2):
            act = math.log(c * 8000 / low) / math.log(top / low) if kind == "log" else c * 8000 / top
            rows.append((f"constant {c * 8000:.0f} kbit/s", ConstantPolicy(act)))
    print("| policy | reward/step | utilization | RTT mean (ms) | p50 | p95 | loss |\n|---|---:|---:|---:|---:|---:|---:|")
    for name, pol in rows:
        r = evaluate(pol, episodes=a.episodes, seed=a.seed, traces=a.traces, config=config)
        print(f"| {name} | {r.reward:.3f} | {100 * r.utilization:.1f} % | {r.rtt_mean_ms:.0f} | {r.rtt_p50_ms:.0f} | "
              f"{r.rtt_p95_ms:.0f} | {r.loss_pct:.2f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
