"""Speed of the ``onnx`` controller (issue 12 targets: a 150→256→256→1 MLP at ≤ 50 µs per
decision and ≥ 3,000× real time).

``python -m ratelab.rl.bench_onnx [--decisions N] [--repeat R]`` exports the MLP of
docs/bring-your-own.md (ONNX part) with torch (random weights, seed 0) into a temporary folder, then

* times N decisions of the Rust inference (tract) through ``ratelab._core.onnx_policy_steps``
  (one call; the load and smoke run are taken out by also timing one decision), and
* runs rmcat-5.1 (100 s simulated, packet log off) with ``onnx`` and with ``gcc`` and reports
  their simulation speed (simulated seconds per wall second),

best of R, as a Markdown table, by wall clock and by the process's CPU time (on a shared,
overloaded host the CPU time is what the code costs; the wall clock includes waiting for a core).
Needs the ``rl`` extra (torch).
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


def per_decision_us(model: Path, n: int, repeat: int) -> tuple[float, float]:
    """(wall, CPU) µs per decision, best of ``repeat``."""
    from ratelab import _core

    obs = np.random.default_rng(0).random((n, 150), dtype=np.float32) * 1000
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for k, clock in enumerate((time.perf_counter, time.process_time)):
            t0 = clock()
            _core.onnx_policy_steps(str(model), obs[:1])
            t1 = clock()
            _core.onnx_policy_steps(str(model), obs)
            t2 = clock()
            best[k] = min(best[k], ((t2 - t1) - (t1 - t0)) / (n - 1))
    return best[0] * 1e6, best[1] * 1e6


def sim_speed(controller: str, model: Path, repeat: int) -> tuple[float, float]:
    """(wall, CPU) simulated seconds per second, best of ``repeat``."""
    from ratelab.run.runner import run_scenario
    from ratelab.scenario import load_scenario

    sets = ["metrics.packet_log=false"]
    if controller == "onnx":
        sets += ['flows[0].controller="onnx"', f"flows[0].params={{model='{model}'}}"]
    sc = load_scenario("rmcat-5.1", sets)
    wall, cpu = [], []
    for _ in range(repeat):
        c0 = time.process_time()
        r = run_scenario(sc, seed=1).runs[0]
        cpu.append(r.duration_s / max(time.process_time() - c0, 1e-9))
        wall.append(r.sim_speed)
    return max(wall), max(cpu)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--decisions", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as d:
        model = export_mlp(Path(d) / "mlp.onnx")
        us = per_decision_us(model, a.decisions, a.repeat)
        onnx = sim_speed("onnx", model, a.repeat)
        gcc = sim_speed("gcc", model, a.repeat)
    print(f"load average before: {load:.1f} on {os.cpu_count()} cores\n")
    print("| what | wall clock | CPU time |")
    print("|---|---:|---:|")
    print(f"| MLP 150→256→256→1, µs per decision (tract, {a.decisions:,} decisions) | {us[0]:.1f} | {us[1]:.1f} |")
    print(f"| rmcat-5.1 (100 s) with `onnx` (1,667 decisions), × real time | {onnx[0]:,.0f}× | {onnx[1]:,.0f}× |")
    print(f"| rmcat-5.1 (100 s) with `gcc`, × real time | {gcc[0]:,.0f}× | {gcc[1]:,.0f}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
