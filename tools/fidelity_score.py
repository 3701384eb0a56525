"""``tools/fidelity.py score``: a simulator variant judged against real runs recorded in a
``runs.csv`` (the committed docs/fidelity/aligned/runs.csv holds the metrics of the Chromium
calls the goal is judged on, docs/fidelity/full/runs.csv those before round 12's alignment),
so a calibration round needs neither the real runs' folders nor hours of real time: run the
variant (``tools/fidelity.py run --contender sim-gcc --model ...``), then score it.

    PYTHONPATH=python python3 tools/fidelity.py score --out /tmp/variant \\
        --real docs/fidelity/aligned/runs.csv [--md /tmp/variant.md]

It prints item 4's goal per case (the same rule as ``report``: python/ratelab/report/fidelity.py
``goal``) and the median gaps per split. What it cannot give without the real series: the
target-rate error over time (``report``'s MARE column).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to the repository when it is inside it (the Markdown is committed)."""
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def score(a: Any) -> int:
    import fidelity as T
    import fidelity_report as R
    from ratelab.report import fidelity as F

    out = Path(a.out)
    if not out.is_dir():
        raise T.Bad(f"error: --out: no such folder: {out}")
    kept = R.kept_runs(Path(a.real), "--real", need=R.GAP_METRICS)
    real_all = {case: R.by_metric(runs) for (case, c), runs in kept.items() if c == a.real_contender}
    if not real_all:
        raise T.Bad(f"error: --real: {a.real} has no run of contender '{a.real_contender}'")
    goals, gaps, per_case = [], [], []
    lines = [f"Score of `{a.sim}` in {out} against `{a.real_contender}` in {_shown(Path(a.real), T.ROOT)} "
             "(means over runs; real range in brackets).", "",
             "| case | split | util % sim / real | p95 ms sim / real | freezes sim / real [range] | goal | why not |",
             "|---|---|---|---|---|---|---|"]
    mean = lambda v: F.spread(v)[0]  # noqa: E731
    for case in T.select(a.cases):
        real = real_all.get(case.name)
        m = R.measured_case(out, case) if real else None
        sim_runs = m.runs.get(a.sim, []) if m else []
        if not real or not sim_runs:
            continue
        sim = R.by_metric(sim_runs)
        met, why = F.goal(sim, real)
        goals.append((case, met, why))
        per_case.append(({lo.meta["rep"]: lo for lo in sim_runs}, real))
        gaps.append((case, R.mean_gaps(sim, real)))
        rf = [x for x in real["freezes"] if math.isfinite(x)]
        rng = f"[{min(rf):g}..{max(rf):g}]" if rf else ""
        lines.append(f"| {case.name} | {case.split} | {mean(sim['utilization']):.1f} / {mean(real['utilization']):.1f} | "
                     f"{mean(sim['queue_p95_ms']):.0f} / {mean(real['queue_p95_ms']):.0f} | "
                     f"{mean(sim['freezes']):.2f} / {mean(real['freezes']):.2f} {rng} | "
                     f"{'—' if met is None else ('pass' if met else 'fail')} | {why if met is not True else ''} |")
    if not goals:
        raise T.Bad(f"error: no case has both {a.sim} runs in {out} and {a.real_contender} runs in {a.real}")
    judged = [g for g in goals if g[1] is not None]
    passed = sum(1 for g in judged if g[1])
    lines += ["", f"Goal met on {passed} of {len(judged)} cases.", R.gaps_md(gaps, goals)]
    if a.subsets:
        lines += ["", subsets_md(per_case, a.subsets)]
    text = "\n".join(lines)
    if a.md:
        Path(a.md).write_text(text)
    print(text)
    return 0


def subsets_md(per_case: list[tuple[dict[str, Any], dict[str, list[float]]]], k: int, most: int = 500) -> str:
    """The goal count over choices of ``k`` of the variant's seeds: the same seeds (by name,
    among those every case ran) in every case, every choice when there are at most ``most``,
    else ``most`` drawn with a fixed seed."""
    import itertools
    import random

    import fidelity as T
    import fidelity_report as R
    from ratelab.report import fidelity as F

    seeds = sorted(set.intersection(*(set(runs) for runs, _ in per_case)))
    n = len(seeds)
    if k > n:
        raise T.Bad(f"error: --subsets {k}: the variant has only {n} seeds run in every case")
    if math.comb(n, k) <= most:
        picks = list(itertools.combinations(seeds, k))
    else:
        rng, seen = random.Random(20), set()
        while len(seen) < most:
            seen.add(tuple(sorted(rng.sample(seeds, k))))
        picks = sorted(seen)
    counts = []
    for pick in picks:
        met = [F.goal(R.by_metric([runs[rep] for rep in pick]), real)[0] for runs, real in per_case]
        counts.append(sum(1 for m in met if m))
    counts.sort()
    q = lambda f: counts[min(len(counts) - 1, int(f * len(counts)))]  # noqa: E731
    return (f"Over {len(picks)} choice{'' if len(picks) == 1 else 's'} of {k} of the {n} seeds: goal met on {counts[0]} to {counts[-1]} cases "
            f"(median {q(0.5)}, middle half {q(0.25)} to {q(0.75)}).")
