"""``tools/fidelity.py score``: a simulator variant judged against real runs recorded in a
``runs.csv`` (the committed docs/fidelity/full/runs.csv holds every Chromium call's metrics),
so a calibration round needs neither the real runs' folders nor hours of real time: run the
variant (``tools/fidelity.py run --contender sim-gcc --model ...``), then score it.

    PYTHONPATH=python python3 tools/fidelity.py score --out /tmp/variant \\
        --real docs/fidelity/full/runs.csv [--md /tmp/variant.md]

It prints item 4's goal per case (the same rule as ``report``: python/ratelab/report/fidelity.py
``goal``) and the median gaps per split. What it cannot give without the real series: the
target-rate error over time (``report``'s MARE column).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any


def load_real(path: Path, contender: str, metrics: tuple[str, ...]) -> dict[str, dict[str, list[float]]]:
    """Per case, ``contender``'s value of each metric in each of its runs (a row per run)."""
    from fidelity import Bad

    if not path.is_file():
        raise Bad(f"error: --real: no such file: {path}")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    missing = [k for k in ("case", "contender", *metrics) if rows and k not in rows[0]]
    if not rows or missing:
        raise Bad(f"error: --real: {path} is not a fidelity runs.csv (missing: {', '.join(missing) or 'rows'})")
    out: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if r["contender"] != contender:
            continue
        case = out.setdefault(r["case"], {k: [] for k in metrics})
        for k in metrics:
            case[k].append(float(r[k]) if r[k] not in ("", None) else math.nan)
    if not out:
        raise Bad(f"error: --real: {path} has no run of contender '{contender}'")
    return out


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to the repository when it is inside it (the Markdown is committed)."""
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _mean(v: list[float]) -> float:
    f = [x for x in v if math.isfinite(x)]
    return sum(f) / len(f) if f else math.nan


def score(a: Any) -> int:
    import fidelity as T
    import fidelity_report as R
    from ratelab.report import fidelity as F

    out = Path(a.out)
    if not out.is_dir():
        raise T.Bad(f"error: --out: no such folder: {out}")
    real_all = load_real(Path(a.real), a.real_contender, R.GAP_METRICS)
    goals, gaps = [], []
    lines = [f"Score of `{a.sim}` in {out} against `{a.real_contender}` in {_shown(Path(a.real), T.ROOT)} "
             "(means over runs; real range in brackets).", "",
             "| case | split | util % sim / real | p95 ms sim / real | freezes sim / real [range] | goal | why not |",
             "|---|---|---|---|---|---|---|"]
    for case in T.select(a.cases):
        real = real_all.get(case.name)
        m = R.measured_case(out, case) if real else None
        sim_runs = m.runs.get(a.sim, []) if m else []
        if not real or not sim_runs:
            continue
        sim = R.by_metric(sim_runs)
        met, why = F.goal(sim, real)
        goals.append((case, met, why))
        gaps.append((case, R.mean_gaps(sim, real)))
        rf = [x for x in real["freezes"] if math.isfinite(x)]
        rng = f"[{min(rf):g}..{max(rf):g}]" if rf else ""
        lines.append(f"| {case.name} | {case.split} | {_mean(sim['utilization']):.1f} / {_mean(real['utilization']):.1f} | "
                     f"{_mean(sim['queue_p95_ms']):.0f} / {_mean(real['queue_p95_ms']):.0f} | "
                     f"{_mean(sim['freezes']):.2f} / {_mean(real['freezes']):.2f} {rng} | "
                     f"{'—' if met is None else ('pass' if met else 'fail')} | {why if met is not True else ''} |")
    if not goals:
        raise T.Bad(f"error: no case has both {a.sim} runs in {out} and {a.real_contender} runs in {a.real}")
    judged = [g for g in goals if g[1] is not None]
    passed = sum(1 for g in judged if g[1])
    lines += ["", f"Goal met on {passed} of {len(judged)} cases.", R.gaps_md(gaps, goals)]
    text = "\n".join(lines)
    if a.md:
        Path(a.md).write_text(text)
    print(text)
    return 0
