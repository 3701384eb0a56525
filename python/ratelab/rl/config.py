"""What a training run is configured by, and the accepted range of each number, declared once.

Needs no torch: the ``ratelab train r3net`` options are made from :data:`CLI_FIELDS` and
:data:`TRAIN_LIMITS` without loading the trainer, and :class:`TrainConfig` checks the same ranges
when it is built, so a config from the command line or from Python code is refused alike (one
line naming the option, never a traceback from deep in PPO).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ratelab.campaign.plan import Range
from ratelab.errors import InputError

#: Seeds of torch, numpy and the environments (the environment seed is ``seed * 1_000_003 +
#: update``, which must stay below 2^64).
_SEED = Range(0, 2**32 - 1, integer=True)
_COUNT = Range(1, 1_000_000, integer=True)

#: Every number ``ratelab train r3net`` takes, with its range: wide enough for any experiment,
#: narrow enough that a typo (``--steps -5``, ``--lr 3``) is an error instead of a run.
TRAIN_LIMITS: dict[str, Range] = {
    "steps": Range(1, 1e12, integer=True),
    "envs": Range(1, 4096, integer=True),
    "rollout": Range(1, 100_000, integer=True),
    "seq_len": Range(1, 100_000, integer=True),
    "minibatch": Range(1, 10_000_000, integer=True),
    "epochs": Range(1, 1000, integer=True),
    "seed": _SEED,
    "env_threads": Range(1, 1024, integer=True),
    "torch_threads": Range(1, 1024, integer=True),
    "checkpoint_every": _COUNT,
    "val_every": Range(0, 1_000_000, integer=True, note="0: no validation"),
    "val_episodes": Range(1, 100_000, integer=True),
    "val_seed": _SEED,
    "lr": Range(0, 1, lo_open=True),
    "gamma": Range(0, 1),
    "gae_lambda": Range(0, 1),
    "clip": Range(0, 10, lo_open=True),
    "init_std": Range(0, 10, lo_open=True),
    "init_action": Range(0, 1),
    "duration_s": Range(0, 86_400, "s", lo_open=True),
    "reward_scale": Range(0, 1e6, lo_open=True),
    "entropy_coef": Range(0, 10),
}
#: The fields the command line sets (``--seq-len`` for ``seq_len``), in help order.
CLI_FIELDS = ["steps", "envs", "rollout", "seq_len", "minibatch", "epochs", "seed", "env_threads", "torch_threads",
              "checkpoint_every", "val_every", "val_episodes", "val_seed", "lr", "gamma", "gae_lambda", "clip",
              "init_std", "init_action", "duration_s", "reward_scale", "entropy_coef"]
#: Trace sets of ``--traces`` / ``--val-traces`` (``ratelab.rl.traces.load``).
TRACE_SETS = ["train", "val", "test", "all", "none"]


#: Fields spelled as the same thing is on the other commands (the episode length is a duration).
SPELLED = {"duration_s": "--duration"}


def flag(name: str) -> str:
    """The command-line spelling of a config field: ``seq_len`` is ``--seq-len``."""
    return SPELLED.get(name, "--" + name.replace("_", "-"))


def flags(name: str) -> list[str]:
    """All spellings of a field's option, the first the one shown (``--duration``, and the
    former ``--duration-s``)."""
    plain = "--" + name.replace("_", "-")
    return [flag(name)] + ([plain] if plain != flag(name) else [])


@dataclass
class TrainConfig:
    steps: int = 2_000_000          # environment steps in total (all envs together)
    envs: int = 64                  # parallel environments
    rollout: int = 128              # steps per environment per update (8192 per update; DeepRL: 2048)
    seq_len: int = 32               # BPTT chunk length (spec 10.2: sequence minibatches)
    minibatch: int = 2048           # transitions per minibatch (= 64 chunks of 32; DeepRL: 64)
    epochs: int = 4                 # PPO epochs per update (DeepRL: 10; fewer for the CPU budget)
    lr: float = 3e-4                # paper 004: 3e-5 (with 10 epochs of 64-sample minibatches, i.e. ~40× more
                                    # optimizer steps per sample than here; see docs/models/r3net.md)
    adam_eps: float = 1e-5
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    grad_clip: float = 0.5
    value_coef: float = 0.5
    entropy_coef: float = 0.0
    reward_scale: float = 0.01      # rewards are multiplied by this for the critic (policy optimum unchanged)
    init_std: float = 0.05          # spec 10.2 suggestion (OpenNetLab) instead of DeepRL's 0.693
    init_action: float = 0.1        # initial mean action (0.8 Mbit/s linear)
    hidden: int = 64
    seed: int = 0
    duration_s: float = 30.0        # episode length
    traces: str = "train"           # shipped trace set (plus synthetic traces, see EnvConfig)
    mapping: str = "linear"
    env_threads: int = 1
    torch_threads: int = 1
    checkpoint_every: int = 10      # updates
    val_every: int = 20             # updates between validations (0: none); ~7 % of the update time
    val_episodes: int = 64          # validation episodes (all in parallel)
    val_seed: int = 7               # seeds the validation episodes and their action noise
    val_traces: str = "val"         # trace split of the validation episodes (plus synthetic ones)
    env_config: dict[str, Any] = field(default_factory=dict)

    @property
    def batch(self) -> int:
        return self.envs * self.rollout

    def __post_init__(self) -> None:
        for name, r in TRAIN_LIMITS.items():
            v = getattr(self, name)
            if not r.admits(v):
                kind = "an integer" if r.integer else "a number"
                shown = v if isinstance(v, str) or not isinstance(v, float) or math.isfinite(v) else str(v)
                raise InputError("train r3net", flag(name), f"{shown!r} is out of range: must be {kind} in {r.text()}")
        if self.rollout % self.seq_len:
            raise InputError("train r3net", "--rollout", f"{self.rollout} is not a multiple of --seq-len {self.seq_len} "
                             "(the rollout is cut into chunks of seq_len steps)")
        for name in ("traces", "val_traces"):
            if isinstance(getattr(self, name), str) and getattr(self, name) not in TRACE_SETS:
                raise InputError("train r3net", flag(name), f"{getattr(self, name)!r}: expected one of {', '.join(TRACE_SETS)}")

