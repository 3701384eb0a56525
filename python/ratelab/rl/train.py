"""A small, readable PPO trainer for R3Net (paper 004, spec 10.2).

PPO with a recurrent policy: rollouts of ``rollout`` steps from ``envs`` parallel environments
(one Rust call per step), GAE(λ) advantages, then ``epochs`` passes over *sequence* minibatches —
chunks of ``seq_len`` consecutive steps of one environment, replayed through the GRU from the
hidden state stored at the chunk's start (truncated BPTT; the GRU state is zeroed where an episode
starts inside a chunk). Time-limit ends are bootstrapped with the critic's value of the final
observation. Adam (lr 3e-5, eps 1e-5), clip 0.2, γ 0.99, λ 0.95, gradient-norm clip 0.5, no
entropy bonus: the DeepRL defaults the paper's code base uses (spec 10.2 table).

Run ``ratelab train r3net --steps N --envs N --out DIR`` (its options: :mod:`ratelab.rl.config`).
``DIR`` receives ``checkpoint.pt`` (resumable with ``--resume``), ``scalars.csv``,
``learning_curve.png`` and ``r3net.onnx`` (the latest snapshot).

Snapshot selection: every ``val_every`` updates (and after the last) the current policy runs a
fixed validation set — ``val_episodes`` episodes of the training distribution on the ``val``
trace split (``ratelab.rl.traces``; never trained on), half of them synthetic, environment and
action noise seeded with ``val_seed`` so every evaluation sees the same episodes — sampled as
deployed (``N(μ, σ)`` clipped to [0, 1]). Its mean reward per step is the ``val_reward`` column of
``scalars.csv``; the best so far is kept as ``best.pt`` (weights, update, steps, ``val_reward``)
and ``best.onnx`` (metadata ``val_reward``, ``val_update``).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from ratelab.rl.config import TrainConfig
from ratelab.rl.env import BandwidthEstimationVectorEnv
from ratelab.rl.model import R3Net, export_onnx, mapping_metadata


def _save_atomic(state: dict[str, Any], path: Path) -> None:
    """``torch.save`` to a temporary file renamed over ``path``: a stop mid-write never leaves a
    half-written checkpoint."""
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


class Trainer:
    def __init__(self, cfg: TrainConfig, out: str | Path, resume: bool = False,
                 log: Callable[[str], None] = print):
        self.cfg, self.out, self.log = cfg, Path(out), log
        self.out.mkdir(parents=True, exist_ok=True)
        torch.set_num_threads(max(1, cfg.torch_threads))
        torch.manual_seed(cfg.seed)
        self.net = R3Net(hidden=cfg.hidden, init_std=cfg.init_std, init_action=cfg.init_action)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
        self.env = BandwidthEstimationVectorEnv(cfg.envs, config=cfg.env_config, traces=cfg.traces,
                                                mapping=cfg.mapping, duration_s=cfg.duration_s,
                                                threads=cfg.env_threads)
        self.updates = 0
        self.steps = 0
        self.wall = 0.0
        self.episode_rewards: list[float] = []
        self.val_wall = 0.0
        self.best_val = -math.inf
        self._val_env: BandwidthEstimationVectorEnv | None = None
        ckpt = self.out / "checkpoint.pt"
        if resume and ckpt.exists():
            state = torch.load(ckpt, weights_only=False)
            self.net.load_state_dict(state["net"])
            self.opt.load_state_dict(state["opt"])
            self.updates, self.steps, self.wall = state["updates"], state["steps"], state["wall"]
            torch.set_rng_state(state["torch_rng"])
            self.val_wall = state.get("val_wall", 0.0)
            if (self.out / "best.pt").exists():
                self.best_val = torch.load(self.out / "best.pt", weights_only=False)["val_reward"]
            self.log(f"resumed from {ckpt} at update {self.updates}, {self.steps} steps")
        else:
            for f in ("scalars.csv", "best.pt", "best.onnx"):
                if (self.out / f).exists():
                    (self.out / f).unlink()
        self.env_seed = cfg.seed * 1_000_003 + self.updates

    # -- rollout -------------------------------------------------------------------------
    def rollout(self, obs: np.ndarray, h: torch.Tensor):
        c, N, T = self.cfg, self.cfg.envs, self.cfg.rollout
        buf = {k: torch.zeros(T, N) for k in ("act", "logp", "val", "rew", "trunc", "vfinal", "start")}
        buf["obs"] = torch.zeros(T, N, 4)
        h0 = torch.zeros(T // c.seq_len, 1, N, self.net.hidden)
        std = self.net.std().detach()
        ep_ret = self._ep_ret
        with torch.no_grad():
            for t in range(T):
                if t % c.seq_len == 0:
                    h0[t // c.seq_len] = h
                o = torch.as_tensor(obs)
                mu, v, h = self.net(o[None], h)
                a = mu[0] + std * torch.randn(N)
                buf["obs"][t], buf["act"][t], buf["val"][t] = o, a, v[0]
                buf["logp"][t] = torch.distributions.Normal(mu[0], std).log_prob(a)
                obs, rew, _term, trunc, info = self.env.step(a.clamp(0.0, 1.0).numpy()[:, None])
                buf["rew"][t] = torch.as_tensor(rew, dtype=torch.float32)
                ep_ret += rew
                self._ep_len += 1
                if trunc.any():
                    idx = np.flatnonzero(trunc)
                    _, vf, _ = self.net(torch.as_tensor(info["final_obs"])[None], h)
                    buf["trunc"][t, idx] = 1.0
                    buf["vfinal"][t, idx] = vf[0, idx]
                    h[:, idx] = 0.0
                    if t + 1 < T:
                        buf["start"][t + 1, idx] = 1.0
                    for i in idx:
                        self.episode_rewards.append(ep_ret[i] / max(1, self._ep_len[i]))
                        ep_ret[i], self._ep_len[i] = 0.0, 0
            _, v_last, _ = self.net(torch.as_tensor(obs)[None], h)
        buf["h0"], buf["v_last"] = h0, v_last[0]
        return obs, h, buf

    def advantages(self, buf):
        c = self.cfg
        T = c.rollout
        s = c.reward_scale
        adv = torch.zeros_like(buf["rew"])
        gae = torch.zeros(c.envs)
        for t in reversed(range(T)):
            nxt = buf["v_last"] if t == T - 1 else buf["val"][t + 1]
            nxt = torch.where(buf["trunc"][t] > 0, buf["vfinal"][t], nxt)
            delta = s * buf["rew"][t] + c.gamma * nxt - buf["val"][t]
            gae = delta + c.gamma * c.gae_lambda * (1.0 - buf["trunc"][t]) * gae
            adv[t] = gae
        return adv, adv + buf["val"]

    # -- validation ----------------------------------------------------------------------
    def validate(self) -> float:
        """Mean reward per step of the current policy, sampled as deployed, on the fixed
        validation episodes (same episodes and action noise at every call)."""
        c = self.cfg
        if self._val_env is None:
            self._val_env = BandwidthEstimationVectorEnv(c.val_episodes, config=c.env_config, traces=c.val_traces,
                                                         mapping=c.mapping, duration_s=c.duration_s,
                                                         threads=c.env_threads)
        env, n = self._val_env, c.val_episodes
        obs, _ = env.reset(seed=c.val_seed)
        gen = torch.Generator().manual_seed(c.val_seed)
        total = 0.0
        with torch.no_grad():
            h, std = self.net.initial_state(n), self.net.std()
            for _ in range(env.steps_per_episode):
                mu, _v, h = self.net(torch.as_tensor(obs)[None], h)
                a = (mu[0] + std * torch.randn(n, generator=gen)).clamp(0.0, 1.0)
                obs, rew, _term, _trunc, _info = env.step(a.numpy()[:, None])
                total += float(np.sum(rew))
        return total / (n * env.steps_per_episode)

    def save_best(self, val: float) -> None:
        self.best_val = val
        state = {"net": self.net.state_dict(), "updates": self.updates, "steps": self.steps, "val_reward": val,
                 "config": dataclasses.asdict(self.cfg)}
        _save_atomic(state, self.out / "best.pt")
        export_onnx(self.net, self.out / "best.onnx",
                    {**self._meta(), "val_reward": f"{val:.6f}", "val_update": self.updates})

    # -- PPO update ----------------------------------------------------------------------
    def update(self, buf) -> dict[str, float]:
        c = self.cfg
        adv, ret = self.advantages(buf)
        L, K = c.seq_len, c.rollout // c.seq_len

        def chunks(x):  # [T, N, ...] -> [L, K*N, ...] (chunk k of env n is column k*N + n)
            return x.reshape(K, L, c.envs, *x.shape[2:]).transpose(0, 1).reshape(L, K * c.envs, *x.shape[2:])

        obs, act, logp_old, start = (chunks(buf[k]) for k in ("obs", "act", "logp", "start"))
        adv_c, ret_c = chunks(adv), chunks(ret)
        h0 = buf["h0"].permute(1, 0, 2, 3).reshape(1, K * c.envs, -1)
        n_seq = K * c.envs
        per_mb = max(1, c.minibatch // L)
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "approx_kl": 0.0, "clipfrac": 0.0}
        n = 0
        for _ in range(c.epochs):
            perm = torch.randperm(n_seq)
            for i in range(0, n_seq, per_mb):
                j = perm[i:i + per_mb]
                mu, v, _ = self.net(obs[:, j], h0[:, j], start[:, j])
                dist = torch.distributions.Normal(mu, self.net.std())
                logp = dist.log_prob(act[:, j])
                a = adv_c[:, j]
                a = (a - a.mean()) / (a.std() + 1e-8)
                ratio = torch.exp(logp - logp_old[:, j])
                pl = -torch.min(ratio * a, ratio.clamp(1 - c.clip, 1 + c.clip) * a).mean()
                vl = 0.5 * (v - ret_c[:, j]).pow(2).mean()
                loss = pl + c.value_coef * vl - c.entropy_coef * dist.entropy().mean()
                self.opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), c.grad_clip)
                self.opt.step()
                with torch.no_grad():
                    stats["policy_loss"] += float(pl)
                    stats["value_loss"] += float(vl)
                    stats["approx_kl"] += float((logp_old[:, j] - logp).mean())
                    stats["clipfrac"] += float(((ratio - 1).abs() > c.clip).float().mean())
                n += 1
        return {k: v / max(1, n) for k, v in stats.items()}

    # -- main loop -----------------------------------------------------------------------
    def train(self) -> Path:
        c = self.cfg
        obs, _ = self.env.reset(seed=self.env_seed)
        h = self.net.initial_state(c.envs)
        self._ep_ret = np.zeros(c.envs)
        self._ep_len = np.zeros(c.envs, dtype=np.int64)
        total_updates = math.ceil(c.steps / c.batch)
        csv_path = self.out / "scalars.csv"
        new = not csv_path.exists()
        fields = ["update", "steps", "wall_s", "episode_reward", "episodes", "policy_loss", "value_loss",
                  "approx_kl", "clipfrac", "std", "steps_per_s", "val_reward", "val_s"]
        if not new:  # a run from before a column was added: rewrite it with the current header
            with open(csv_path, newline="") as fh:
                old = csv.DictReader(fh)
                if old.fieldnames != fields:
                    rows = list(old)
                    with open(csv_path, "w", newline="") as out:
                        rw = csv.DictWriter(out, fieldnames=fields, restval="", extrasaction="ignore")
                        rw.writeheader()
                        rw.writerows(rows)
        progress = _Progress(total_updates, self.updates, self.log)
        with open(csv_path, "a", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=fields, restval="")
            if new:
                w.writeheader()
            while self.updates < total_updates:
                t0 = time.perf_counter()
                obs, h, buf = self.rollout(obs, h)
                stats = self.update(buf)
                self.updates += 1
                self.steps += c.batch
                dt = time.perf_counter() - t0
                self.wall += dt
                ep = self.episode_rewards
                row = {"update": self.updates, "steps": self.steps, "wall_s": round(self.wall, 2),
                       "episode_reward": float(np.mean(ep)) if ep else float("nan"), "episodes": len(ep),
                       "std": float(self.net.std().detach()), "steps_per_s": round(c.batch / dt, 1),
                       **{k: round(v, 6) for k, v in stats.items()}}
                self.episode_rewards = []
                if c.val_every > 0 and (self.updates % c.val_every == 0 or self.updates == total_updates):
                    t1 = time.perf_counter()
                    val = self.validate()
                    row["val_s"] = round(time.perf_counter() - t1, 3)
                    self.val_wall += row["val_s"]
                    row["val_reward"] = round(val, 6)
                    if val > self.best_val:
                        self.save_best(val)
                w.writerow(row)
                fh.flush()
                progress.update(self.updates, row)
                if self.updates % c.checkpoint_every == 0 or self.updates == total_updates:
                    self.save()
        progress.close()
        self.save()
        if c.val_every > 0 and self.best_val > -math.inf:
            self.log(f"best validation reward {self.best_val:.4f} -> {self.out / 'best.onnx'} "
                     f"(validation took {self.val_wall:.0f} s, update loop {self.wall:.0f} s)")
        plot_learning_curve(csv_path, self.out / "learning_curve.png")
        return self.out / "r3net.onnx"

    def save(self) -> None:
        state = {"net": self.net.state_dict(), "opt": self.opt.state_dict(), "updates": self.updates,
                 "steps": self.steps, "wall": self.wall, "config": dataclasses.asdict(self.cfg),
                 "torch_rng": torch.get_rng_state(), "val_wall": self.val_wall}
        _save_atomic(state, self.out / "checkpoint.pt")
        export_onnx(self.net, self.out / "r3net.onnx", self._meta())

    def _meta(self) -> dict[str, Any]:
        return {"trainer": "ratelab.rl.train", "steps": self.steps, "updates": self.updates,
                "train_wall_s": round(self.wall, 1), "config": json.dumps(dataclasses.asdict(self.cfg)),
                **mapping_metadata(self.env.config)}


class _Progress:
    """A rich progress bar when available and on a terminal, else one line per few updates."""

    def __init__(self, total: int, done: int, log: Callable[[str], None]):
        self.total, self.log, self.bar = total, log, None
        try:
            if sys.stderr.isatty():
                from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

                self.bar = Progress(TextColumn("R3Net"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                    TextColumn("{task.fields[msg]}"), TimeRemainingColumn())
                self.task = self.bar.add_task("train", total=total, completed=done, msg="")
                self.bar.start()
        except ImportError:
            self.bar = None
        self.last = 0.0

    def update(self, n: int, row: dict[str, Any]) -> None:
        msg = f"reward/step {row['episode_reward']:.3f}  {row['steps_per_s']:.0f} steps/s"
        if self.bar is not None:
            self.bar.update(self.task, completed=n, msg=msg)
        elif time.time() - self.last > 10 or n == self.total:
            self.last = time.time()
            self.log(f"update {n}/{self.total}  steps {row['steps']}  {msg}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def plot_learning_curve(csv_path: str | Path, png: str | Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        return None
    steps = np.array([float(r["steps"]) for r in rows])
    rew = np.array([float(r["episode_reward"]) for r in rows])
    ok = ~np.isnan(rew)  # rows where episodes ended
    steps, rew = steps[ok], rew[ok]
    if not len(rew):
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps / 1e6, rew, lw=0.8, alpha=0.5, label="episodes ending in the update")
    k = max(1, len(rew) // 20)
    if len(rew) > k > 1:
        sm = np.convolve(rew, np.ones(k) / k, mode="valid")
        ax.plot(steps[k - 1:] / 1e6, sm, lw=1.8, label=f"moving mean ({k})")
    val = [(float(r["steps"]), float(r["val_reward"])) for r in rows if r.get("val_reward")]
    if val:
        vs, vr = np.array(val).T
        ax.plot(vs / 1e6, vr, ".-", ms=3, lw=0.8, label="validation episodes (sampled)")
        k_best = int(np.argmax(vr))
        ax.plot(vs[k_best] / 1e6, vr[k_best], "k*", ms=10, label="best snapshot")
    ax.set_xlabel("environment steps (millions)")
    ax.set_ylabel("mean reward per 50-ms step")
    ax.set_title("R3Net PPO training")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return Path(png)
