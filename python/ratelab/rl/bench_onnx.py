"""Speed of the ``onnx`` controller (issue 12 targets: a 150→256→256→1 MLP at ≤ 50 µs per
decision and ≥ 3,000× real time).

``python -m ratelab.rl.bench_onnx [--decisions N] [--repeat R]`` exports the MLP of
docs/bring-your-own-onnx.md with torch (random weights, seed 0) into a temporary folder, then

* times N decisions of the Rust inference (tract) through ``ratelab._core.onnx_policy_steps``
  (one call; the load and smoke run are taken out by also timing one decision), and
* runs rmcat-5.1 (100 s simulated, packet log off) with ``onnx`` and with ``gcc`` and reports
  their simulation speed (simulated seconds per wall second),

best of R, as a Markdown table. Needs the ``rl`` extra (torch).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def export_mlp(path: Path) -> Path:
    import torch

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(150, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                           torch.nn.ReLU(), torch.nn.Linear(256, 1))

        def forward(self, obs):
            x = torch.sign(obs) * torch.log1p(torch.abs(obs))
            return 5e4 + 2.95e6 * torch.sigmoid(self.net(x))

    torch.manual_seed(0)
    torch.onnx.export(Mlp().eval(), (torch.zeros(1, 150),), str(path), input_names=["obs"], output_names=["output"],
                      opset_version=17, dynamo=False)
    return path


def per_decision_us(model: Path, n: int, repeat: int) -> float:
    from ratelab import _core

    obs = np.random.default_rng(0).random((n, 150), dtype=np.float32) * 1000
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        _core.onnx_policy_steps(str(model), obs[:1])
        t1 = time.perf_counter()
        _core.onnx_policy_steps(str(model), obs)
        t2 = time.perf_counter()
        best = min(best, ((t2 - t1) - (t1 - t0)) / (n - 1))
    return best * 1e6


def sim_speed(controller: str, model: Path, repeat: int) -> tuple[float, float]:
    from ratelab.runner import run_scenario
    from ratelab.scenario import load_scenario

    sets = ["metrics.packet_log=false"]
    if controller == "onnx":
        sets += ['flows[0].controller="onnx"', f"flows[0].params={{model='{model}'}}"]
    sc = load_scenario("rmcat-5.1", sets)
    runs = [run_scenario(sc, seed=1).runs[0] for _ in range(repeat)]
    best = min(runs, key=lambda r: r.wall_seconds)
    return best.sim_speed, best.wall_seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--decisions", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as d:
        model = export_mlp(Path(d) / "mlp.onnx")
        us = per_decision_us(model, a.decisions, a.repeat)
        onnx_speed, onnx_wall = sim_speed("onnx", model, a.repeat)
        gcc_speed, gcc_wall = sim_speed("gcc", model, a.repeat)
    print(f"load average before: {load:.1f} on {os.cpu_count()} cores\n")
    print("| what | value |")
    print("|---|---:|")
    print(f"| MLP 150→256→256→1, one decision (tract, {a.decisions:,} decisions) | {us:.1f} µs |")
    print(f"| rmcat-5.1 (100 s) with `onnx` (1,667 decisions) | {onnx_speed:,.0f}× real time ({onnx_wall:.3f} s) |")
    print(f"| rmcat-5.1 (100 s) with `gcc`, same machine | {gcc_speed:,.0f}× real time ({gcc_wall:.3f} s) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
