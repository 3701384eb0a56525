"""A tiny pure-Python stand-in for ``ratelab._core`` with the same API.

It lets the front end (runner, Parquet streaming, results, plots, report, CLI) be tested quickly
and independently of the simulator's behaviour. Its "simulation" is a toy: every media flow sends
at min(target, fair share) with a fixed 50 ms delay plus a little seeded noise. Nothing here says
anything about congestion control.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

__version__ = "0.0.0-fake"

_CONTROLLERS = [
    {"name": "gcc", "summary": "fake gcc", "defaults": {"profile": "current"},
     "side": "sender", "required_file": None, "compared": True, "in_all": True},
    {"name": "fixed", "summary": "fake fixed", "defaults": {"rate_kbps": 1000.0},
     "side": "sender", "required_file": None, "compared": False, "in_all": False},
    {"name": "oracle", "summary": "fake oracle", "defaults": {},
     "side": "sender", "required_file": None, "compared": True, "in_all": True},
]
_TOP = {"name", "description", "duration_s", "link", "flows", "metrics", "route_changes"}


class ConfigError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}" if field else message)
        self.field, self.message = field, message


class TraceError(ValueError):
    def __init__(self, path: str, line: int | None, message: str):
        super().__init__(message)
        self.path, self.line, self.message = path, line, message


def controllers() -> list[dict]:
    return [dict(c) for c in _CONTROLLERS]


def validate_scenario(scenario_json: str, controller: str | None = None) -> None:
    Simulation(scenario_json, controller=controller)


def _parse(doc: str) -> dict:
    sc = json.loads(doc)
    for k in sc:
        if k not in _TOP:
            raise ConfigError("", f"unknown field `{k}`")
    if not isinstance(sc.get("duration_s"), (int, float)) or isinstance(sc.get("duration_s"), bool):
        raise ConfigError("duration_s", "invalid type: expected f64")
    link = sc.get("link", {})
    cap = link.get("capacity_kbps")
    if cap is not None and cap <= 0:
        raise ConfigError("link.capacity_kbps", f"must be > 0, got {cap}")
    if "trace" in link:
        if not os.path.isfile(link["trace"]):
            raise TraceError(link["trace"], None, "cannot read file")
    names = [c["name"] for c in _CONTROLLERS]
    for i, f in enumerate(sc.get("flows", [])):
        if f.get("kind") == "media" and f.get("controller", "gcc") not in names:
            raise ConfigError(f"flows[{i}].controller", f"unknown controller '{f['controller']}'")
    return sc


def _capacity_at(link: dict, t: float) -> float:
    if "capacity_kbps" in link:
        return float(link["capacity_kbps"])
    if "steps" in link:
        c = link["steps"][0][1]
        for ts, kbps in link["steps"]:
            if t >= ts:
                c = kbps
        return float(c)
    return 1500.0


class Simulation:
    def __init__(self, scenario_json: str, seed: int = 1, controller: str | None = None):
        sc = _parse(scenario_json)
        if controller is not None and controller not in [c["name"] for c in _CONTROLLERS]:
            raise ConfigError("controller", f"unknown controller '{controller}'")
        self._sc = sc
        self._rng = np.random.default_rng(seed)
        self.duration_s = float(sc["duration_s"])
        self.now_s = 0.0
        self._log = sc.get("metrics", {}).get("packet_log", True)
        self._dt = sc.get("metrics", {}).get("series_interval_ms", 25.0) / 1000
        self.flows = []
        for entry in sc["flows"]:
            for _ in range(entry.get("count", 1)):
                i = len(self.flows)
                kind = entry["kind"]
                ctl = (controller or entry.get("controller", "gcc")) if kind == "media" else "newreno"
                self.flows.append({
                    "id": i, "label": entry.get("label") or f"{kind}{i}", "kind": kind, "controller": ctl,
                    "start_s": float(entry.get("start_s", 0.0)), "stop_s": float(entry.get("stop_s", self.duration_s)),
                    "one_way_delay_ms": float(entry.get("one_way_delay_ms", 50.0)),
                })
        self._seq = [0] * len(self.flows)
        self._sent = [0] * len(self.flows)
        self._lost = [0] * len(self.flows)
        self._bytes = [0.0] * len(self.flows)
        self._owd: list[list[float]] = [[] for _ in self.flows]
        self._packets: list[tuple] = []
        self._series: list[tuple] = []

    def run(self, until_s: float | None = None) -> bool:
        end = self.duration_s if until_s is None else min(until_s, self.duration_s)
        loss = self._sc["link"].get("loss", 0.0)
        while self.now_s + 1e-9 < end:
            t = self.now_s
            cap = _capacity_at(self._sc["link"], t)
            active = [f for f in self.flows if f["start_s"] <= t < f["stop_s"]]
            share = cap / max(1, len(active))
            for f in active:
                i = f["id"]
                rate = share * (0.9 if f["controller"] != "oracle" else 1.0)
                n = max(1, int(rate * 1000 * self._dt / 8 / 1200))
                owd = f["one_way_delay_ms"] + 5 * self._rng.random()
                lost_here = 0
                for k in range(n):
                    lost = self._rng.random() < loss
                    send = t + k * self._dt / n
                    if self._log:
                        self._packets.append((i, self._seq[i], 1200, send, math.nan if lost else send + owd / 1000, lost))
                    self._seq[i] += 1
                    self._sent[i] += 1
                    self._lost[i] += lost
                    lost_here += lost
                    self._bytes[i] += 0 if lost else 1200
                self._owd[i].append(owd)
                target = math.nan if f["kind"] == "tcp" else rate
                freezes = math.nan if f["kind"] == "tcp" else float(int(t) // 4)  # a toy freeze every 4 s
                self._series.append((t, i, target, rate * 2.5, rate, rate * (1 - loss), owd, cap, 5.0, float(lost_here), freezes))
            self.now_s = round(t + self._dt, 9)
        return self.now_s + 1e-9 >= self.duration_s

    def take_packets(self) -> dict:
        p, self._packets = self._packets, []
        cols = list(zip(*p)) if p else [()] * 6
        return {
            "flow": np.array(cols[0], dtype=np.uint32), "seq": np.array(cols[1], dtype=np.uint64),
            "size": np.array(cols[2], dtype=np.uint32), "send_s": np.array(cols[3], dtype=np.float64),
            "recv_s": np.array(cols[4], dtype=np.float64), "lost": np.array(cols[5], dtype=bool),
        }

    def take_series(self) -> dict:
        s, self._series = self._series, []
        names = ["t_s", "flow", "target_kbps", "pacing_kbps", "send_kbps", "recv_kbps", "owd_ms", "capacity_kbps", "queue_ms",
                 "lost_packets", "freezes"]
        cols = list(zip(*s)) if s else [()] * len(names)
        return {n: np.array(c, dtype=np.uint32 if n == "flow" else np.float64) for n, c in zip(names, cols)}

    def summary(self) -> dict:
        flows = []
        cap_mean = float(np.mean([_capacity_at(self._sc["link"], t) for t in np.arange(0, self.duration_s, 1.0)]))
        for f in self.flows:
            i = f["id"]
            active = max(1e-9, min(self.duration_s, f["stop_s"]) - f["start_s"])
            tput = self._bytes[i] * 8 / 1000 / active
            owd = np.array(self._owd[i]) if self._owd[i] else np.array([math.nan])
            flows.append({
                "id": i, "label": f["label"], "kind": f["kind"], "controller": f["controller"],
                "throughput_kbps": tput, "utilization": tput / cap_mean,
                "owd_ms_mean": float(owd.mean()), "owd_ms_p50": float(np.median(owd)), "owd_ms_p95": float(np.percentile(owd, 95)),
                "queue_delay_ms_mean": 5.0, "queue_delay_ms_p95": 5.0,
                "loss_rate": self._lost[i] / max(1, self._sent[i]), "freeze_count": 0, "freeze_ratio": 0.0,
                "frame_delay_ms_mean": math.nan if f["kind"] == "tcp" else float(owd.mean()) + 10,
                "packets_sent": self._sent[i], "packets_lost": self._lost[i],
            })
        total = sum(x["throughput_kbps"] for x in flows)
        return {"link": {"utilization": total / cap_mean, "jain_index": 1.0, "loss_rate": 0.0, "capacity_kbps_mean": cap_mean},
                "flows": flows}
