"""How many cores a browser call needs: run one call per resolution and report the browser's
CPU (all its processes, from /proc), the time its encoder was CPU-limited and what it sent.

    PYTHONPATH=python python3 tools/browser_cores.py [--duration 20] [--capacity-kbps 10000] [RES ...]

RES is WIDTHxHEIGHT[@FPS] (default 320x180@30 640x360@30 1280x720@30); content of --complexity
(default 1: high motion). The load average before each call is printed with it: on a shared host, a
busy CPU makes the browser CPU-limited sooner.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from ratelab.browser import BrowserOptions, run_browser
from ratelab.scenario import Scenario

TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) of the live descendants of ``root``."""
    kids: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(d.name), int(f[1])
        kids.setdefault(ppid, []).append(pid)
        cpu[pid] = (int(f[11]) + int(f[12])) / TICK
    total, todo = 0.0, list(kids.get(root, []))
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0.0)
        todo.extend(kids.get(p, []))
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("res", nargs="*", default=["320x180@30", "640x360@30", "1280x720@30"])
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--capacity-kbps", type=float, default=10000.0)
    ap.add_argument("--max-kbps", type=float, default=5000.0)
    ap.add_argument("--complexity", type=float, default=1.0)
    a = ap.parse_args()
    for r in a.res:
        wh, _, fps = r.partition("@")
        w, h = (int(x) for x in wh.split("x"))
        sc = Scenario({"name": "cores", "duration_s": a.duration, "link": {"capacity_kbps": a.capacity_kbps, "queue": {"ms": 300}},
                       "flows": [{"kind": "media", "one_way_delay_ms": 25}]}, source="cores")
        load = os.getloadavg()[0]
        peak = {"cpu": 0.0}
        stop = threading.Event()

        def watch() -> None:
            # The browser's CPU: sampled until the run ends (processes that exit take theirs along).
            while not stop.is_set():
                peak["cpu"] = max(peak["cpu"], _tree_cpu_s(os.getpid()))
                time.sleep(0.5)
        th = threading.Thread(target=watch, daemon=True)
        th.start()
        t0 = time.time()
        with tempfile.TemporaryDirectory() as tmp:
            res = run_browser(sc, out_dir=Path(tmp) / "chromium",
                              options=BrowserOptions(width=w, height=h, fps=float(fps or 30), complexity=a.complexity, max_kbps=a.max_kbps))
        wall = time.time() - t0
        stop.set()
        th.join()
        f = res.flows[0]
        print(f"{w}x{h}@{fps or 30}: load(1 min) before {load:.2f}; browser+driver+emulator CPU {peak['cpu']:.1f} s over {wall:.1f} s "
              f"wall = {peak['cpu'] / wall:.2f} cores; cpu-limited {f['cpu_limited_fraction']:.0%} of the time; "
              f"sent {f['frame_width']:.0f}x{f['frame_height']:.0f} at the end, {f['source_fps']:.1f} frames/s from the source, {f['encoded_fps']:.1f} encoded, "
              f"throughput {f['throughput_kbps']:.0f} kbit/s; quality limitation s {f['quality_limitation_s']}", flush=True)


if __name__ == "__main__":
    main()
