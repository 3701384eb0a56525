#!/usr/bin/env python3
"""Sim-vs-live agreement table (docs/live.md).

For each built-in scenario and controller, runs the simulator and the live driver (emulator +
receiver + sender on loopback, real time) on the same scenario and seed with
``ratelab-live compare``, and prints one Markdown row per pair:

    cargo build --release -p ratelab-live --bin ratelab-live
    python3 tools/live_agreement.py target/release/ratelab-live \
        --scenario rmcat-5.1 --scenario trace-4g-700kbps -c gcc -c nada -c copa > agreement.md

Each pair takes the scenario's duration in wall-clock time (``--duration S`` shortens it). Raw
JSON goes to --raw DIR. ``--per-flow`` prints one row per flow instead (throughput and queuing
delay of each flow, for multi-flow scenarios such as rmcat-5.2 and rmcat-5.3):

    python3 tools/live_agreement.py target/release/ratelab-live --per-flow \
        --scenario rmcat-5.2 --scenario rmcat-5.3 -c gcc -c nada
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "python" / "ratelab" / "scenarios"
TRACES = ROOT / "python" / "ratelab" / "traces"


def scenario_json(name: str, out: Path, duration: float | None = None) -> Path:
    data = tomllib.loads((SCENARIOS / f"{name}.toml").read_text())
    if duration is not None:
        data["duration_s"] = duration
    for key in ("link", "reverse_link"):
        link = data.get(key) or {}
        if isinstance(link.get("trace"), str) and not Path(link["trace"]).is_absolute():
            link["trace"] = str(TRACES / link["trace"])
    path = out / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def row(name: str, ctl: str, d: dict) -> str:
    sim, live = d["sim"], d["live"]["summary"]
    fs, fl = sim["flows"][0], live["flows"][0]
    us, ul = sim["link"]["utilization"], live["link"]["utilization"]
    qs, ql = fs["queue_delay_ms_mean"] or 0.0, fl["queue_delay_ms_mean"] or 0.0
    det = d["live"]["details"]
    pe = det["flows"][0]["sender"]["pacer_error_us"]
    ok = abs(us - ul) * 100 <= 5 and abs(qs - ql) <= 10
    return (f"| {name} | {ctl} | {live['duration_s']:.0f} | {100 * us:.1f} | {100 * ul:.1f} | {100 * (ul - us):+.1f} | "
            f"{qs:.1f} | {ql:.1f} | {ql - qs:+.1f} | {fs['owd_ms_mean']:.1f} | {fl['owd_ms_mean']:.1f} | "
            f"{100 * fs['loss_rate']:.2f} | {100 * fl['loss_rate']:.2f} | {pe['p50']:.0f} / {pe['p99']:.0f} | "
            f"{'yes' if ok else '**no**'} |")


FLOW_HEADER = ("| scenario | controller | s | flow | thr. sim kbit/s | thr. live kbit/s | Δ % | queue sim ms | queue live ms "
               "| Δ ms | link util. sim / live % | Jain sim / live |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|")


def flow_rows(name: str, ctl: str, d: dict) -> list[str]:
    """One row per flow: throughput and mean queuing delay, simulated and live."""
    sim, live = d["sim"], d["live"]["summary"]
    rows = []
    for fs, fl in zip(sim["flows"], live["flows"]):
        link = "reverse_link" if fs["direction"] == "reverse" else "link"
        ts, tl = fs["throughput_kbps"], fl["throughput_kbps"]
        qs, ql = fs["queue_delay_ms_mean"] or 0.0, fl["queue_delay_ms_mean"] or 0.0
        rows.append(f"| {name} | {ctl} | {live['duration_s']:.0f} | {fs['label']} ({fs['direction']}) | {ts:.0f} | {tl:.0f} | "
                    f"{100 * (tl - ts) / ts if ts else 0.0:+.1f} | {qs:.1f} | {ql:.1f} | {ql - qs:+.1f} | "
                    f"{link}: {100 * sim[link]['utilization']:.1f} / {100 * live[link]['utilization']:.1f} | "
                    f"{sim[link]['jain_index']:.3f} / {live[link]['jain_index']:.3f} |")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--scenario", action="append", default=[])
    ap.add_argument("-c", "--controller", action="append", default=[])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", default="twcc")
    ap.add_argument("--raw", type=Path, default=Path("agreement-raw"))
    ap.add_argument("--duration", type=float, default=None, help="Override the scenarios' duration_s.")
    ap.add_argument("--per-flow", action="store_true", help="One row per flow (multi-flow scenarios).")
    ap.add_argument("--from-raw", action="store_true", help="Print the table from the JSON in --raw (no runs).")
    a = ap.parse_args()
    a.raw.mkdir(parents=True, exist_ok=True)
    if a.per_flow:
        print(FLOW_HEADER)
    else:
        print("| scenario | controller | s | util. sim % | util. live % | Δ pp | queue sim ms | queue live ms | Δ ms "
          "| OWD sim ms | OWD live ms | loss sim % | loss live % | pacer err p50/p99 µs | within bounds |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in a.scenario or ["rmcat-5.1", "trace-4g-700kbps"]:
        sc = scenario_json(name, a.raw, a.duration)
        for ctl in a.controller or ["gcc"]:
            raw = a.raw / f"{name}-{ctl}-{a.format}-seed{a.seed}.json"
            if a.from_raw:
                d = json.loads(raw.read_text())
                print("\n".join(flow_rows(name, ctl, d)) if a.per_flow else row(name, ctl, d), flush=True)
                continue
            r = subprocess.run([a.binary, "compare", str(sc), "--controller", ctl, "--seed", str(a.seed), "--format", a.format],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"| {name} | {ctl} | error: {r.stderr.strip()} |")
                continue
            raw.write_text(r.stdout)
            d = json.loads(r.stdout)
            print("\n".join(flow_rows(name, ctl, d)) if a.per_flow else row(name, ctl, d), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
