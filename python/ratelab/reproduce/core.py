"""Shared core of ``ratelab reproduce``: jobs, the process pool, statistics over seeds, claims
and the Markdown report.

A reproduction is a list of :class:`Job` s (one ``_core.Simulation`` each: one scenario, one seed,
packet log off). Jobs run in a process pool; each worker returns a small :class:`RunData` (the
simulator's summary plus per-flow series binned to ``bin_s``), never the raw logs. Every job is a
pure function of its scenario and seed, so the numbers do not depend on how many workers ran them
or in which order they finished; results are always put back in job order.

A paper module (``lcc.py``, ``iris.py``, ``dcrc.py``) provides ``jobs(seeds, quick)`` and
``report(results, ctx)``: the latter computes the paper's metrics per run, aggregates them over
seeds into :class:`Stat` (mean ± sample standard deviation), states each claim of the paper as a
:class:`Claim` (paper value, ours, verdict) and writes Markdown sections and figures through
:class:`ReportContext`.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ratelab._version import __version__
from ratelab.errors import InputError
from ratelab.run.results import write_text_atomic
from ratelab.run.runner import progress_bar
from ratelab.scenario import Scenario

# --- jobs and runs -----------------------------------------------------------------------------


@dataclass
class Job:
    """One simulation of a reproduction: ``scenario`` (a core JSON document) run with ``seed``.

    ``experiment`` / ``case`` / ``variant`` name what the paper varies (e.g. ``"table1"``,
    ``"loss 5 %"``, ``"lcc"``); runs that differ only in the seed are aggregated together.
    """

    experiment: str
    case: str
    variant: str
    seed: int
    scenario: dict[str, Any]
    #: Width of the series bins returned to the parent (seconds).
    bin_s: float = 1.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.experiment, self.case, self.variant)

    @property
    def duration_s(self) -> float:
        return float(self.scenario.get("duration_s", 0.0))

    def cost(self) -> float:
        """Rough simulation cost (packets): duration × peak capacity; orders the pool's queue."""
        link = self.scenario.get("link", {})
        cap = link.get("capacity_kbps")
        if cap is None and link.get("steps"):
            cap = max(k for _, k in link["steps"])
        return self.duration_s * float(cap or 1000.0) * max(1, len(self.scenario.get("flows", [])))

    def document(self) -> str:
        """The JSON handed to the core, with the packet log switched off."""
        doc = dict(self.scenario)
        doc["metrics"] = {**doc.get("metrics", {}), "packet_log": False}
        return json.dumps(doc, allow_nan=False)


@dataclass
class RunData:
    """What one job returns: the core's summary and the per-flow series in bins of ``bin_s``.

    ``t`` holds the end time of each bin; ``flows[id]`` maps ``recv_kbps``, ``send_kbps``,
    ``target_kbps``, ``owd_ms`` to arrays aligned with ``t`` (NaN where the flow had no row or no
    sample in a bin); ``capacity_kbps`` and ``queue_ms`` are the link's.
    """

    experiment: str
    case: str
    variant: str
    seed: int
    summary: dict[str, Any]
    t: np.ndarray
    flows: dict[int, dict[str, np.ndarray]]
    capacity_kbps: np.ndarray
    queue_ms: np.ndarray
    wall_s: float = 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.experiment, self.case, self.variant)

    def flow_summary(self, i: int = 0) -> dict[str, Any]:
        return self.summary["flows"][i]

    def flow_ids(self, kind: str | None = None) -> list[int]:
        return [int(f["id"]) for f in self.summary["flows"] if kind is None or f.get("kind") == kind]

    def window(self, flow: int, column: str, t0: float, t1: float) -> np.ndarray:
        """Finite values of ``column`` of ``flow`` in the bins ending in (t0, t1]."""
        s = self.flows.get(flow)
        if s is None:
            return np.array([])
        m = (self.t > t0 + 1e-9) & (self.t <= t1 + 1e-9)
        v = s[column][m]
        return v[np.isfinite(v)]

    def window_mean(self, flow: int, column: str, t0: float, t1: float) -> float:
        v = self.window(flow, column, t0, t1)
        return float(v.mean()) if len(v) else math.nan

    def rebinned(self, bin_s: float) -> "RunData":
        """The same run with its series averaged into coarser bins (a whole multiple of the current)."""
        step = self.t[1] - self.t[0] if len(self.t) > 1 else bin_s
        k = max(1, int(round(bin_s / step)))
        n = len(self.t) // k * k

        def avg(v: np.ndarray) -> np.ndarray:
            w = v[:n].reshape(-1, k)
            ok = np.isfinite(w)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(ok.any(axis=1), np.where(ok, w, 0.0).sum(axis=1) / ok.sum(axis=1), np.nan)

        flows = {f: {c: avg(v) for c, v in s.items()} for f, s in self.flows.items()}
        return RunData(self.experiment, self.case, self.variant, self.seed, self.summary, self.t[:n][k - 1::k], flows,
                       avg(self.capacity_kbps), avg(self.queue_ms), self.wall_s)

    def same_numbers(self, other: "RunData") -> bool:
        """Bit-identical results (the wall time aside)."""
        if (self.key, self.seed, self.summary) != (other.key, other.seed, other.summary):
            return False
        if not (_arr_eq(self.t, other.t) and _arr_eq(self.capacity_kbps, other.capacity_kbps)
                and _arr_eq(self.queue_ms, other.queue_ms)) or self.flows.keys() != other.flows.keys():
            return False
        return all(s.keys() == other.flows[f].keys() and all(_arr_eq(s[c], other.flows[f][c]) for c in s)
                   for f, s in self.flows.items())


def _arr_eq(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


SERIES_COLUMNS = ("recv_kbps", "send_kbps", "target_kbps", "owd_ms")


def run_job(job: Job) -> RunData:
    """Run one job in this process (the pool's worker function)."""
    from ratelab.native import core, core_errors
    from ratelab.errors import from_core

    mod = core()
    t0 = time.perf_counter()
    try:
        sim = mod.Simulation(job.document(), seed=job.seed)
    except core_errors() as exc:
        raise from_core(exc, f"{job.experiment}/{job.case}/{job.variant}") from None
    sim.run()
    summary = sim.summary()
    series = sim.take_series()
    wall = time.perf_counter() - t0
    interval_s = float(job.scenario.get("metrics", {}).get("series_interval_ms", 25.0)) / 1e3
    t, flows, cap, queue = bin_series(series, job.bin_s, float(sim.duration_s), interval_s)
    return RunData(job.experiment, job.case, job.variant, job.seed, _plain(summary), t, flows, cap, queue, wall)


def bin_series(series: dict[str, np.ndarray], bin_s: float, duration_s: float,
               interval_s: float = 0.025) -> tuple[np.ndarray, dict[int, dict[str, np.ndarray]], np.ndarray, np.ndarray]:
    """Average the core's series (one row per flow per ``interval_s``) into bins of ``bin_s``.

    A row at time t covers (t − interval, t] and falls into the bin containing that interval's
    midpoint; each bin's value is the mean of the flow's finite values in it (rates are therefore
    rates over the part of the bin the flow was active).
    """
    nb = max(1, int(math.ceil(duration_s / bin_s - 1e-9)))
    t_end = np.arange(1, nb + 1) * bin_s
    ts = np.asarray(series.get("t_s", []), dtype=float)
    idx = np.clip(np.floor((ts - interval_s / 2) / bin_s).astype(np.int64), 0, nb - 1) if len(ts) else np.zeros(0, np.int64)
    fl = np.asarray(series.get("flow", []))

    def mean_by_bin(values: np.ndarray, sel: np.ndarray | slice) -> np.ndarray:
        v = np.asarray(values, dtype=float)[sel]
        i = idx[sel]
        ok = np.isfinite(v)
        total = np.bincount(i[ok], weights=v[ok], minlength=nb)
        count = np.bincount(i[ok], minlength=nb)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)

    flows: dict[int, dict[str, np.ndarray]] = {}
    for fid in np.unique(fl):
        sel = fl == fid
        flows[int(fid)] = {c: mean_by_bin(series[c], sel) for c in SERIES_COLUMNS if c in series}
    every = slice(None)
    cap = mean_by_bin(series["capacity_kbps"], every) if "capacity_kbps" in series else np.full(nb, np.nan)
    queue = mean_by_bin(series["queue_ms"], every) if "queue_ms" in series else np.full(nb, np.nan)
    return t_end, flows, cap, queue


def _plain(v: Any) -> Any:
    """Summary as plain Python (numpy scalars → numbers) so that equality and pickling are exact."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and callable(v.item):
        return v.item()
    return v


ProgressFn = Callable[[str, float], None]


def run_jobs(jobs: Sequence[Job], n_jobs: int = 1, progress: ProgressFn | None = None) -> list[RunData]:
    """Run every job, ``n_jobs`` at a time in worker processes (in this process if 1).

    Returns the results in job order, whatever the completion order. ``progress`` is called with
    (description, simulated seconds) after each finished job.
    """
    progress = progress or (lambda _d, _s: None)
    out: list[RunData | None] = [None] * len(jobs)
    if n_jobs <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            out[i] = run_job(job)
            progress(_describe(job), job.duration_s)
        return [r for r in out if r is not None]
    import multiprocessing as mp

    # Largest first, so that the last job to finish is a short one. Workers are started as the
    # campaign engine starts them (forkserver on Linux: clean of the parent's threads, e.g. the
    # progress bar's).
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].cost())
    method = "forkserver" if sys.platform.startswith("linux") else "spawn"
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=mp.get_context(method)) as pool:
        pending = {pool.submit(run_job, jobs[i]): i for i in order}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    i = pending.pop(fut)
                    out[i] = fut.result()
                    progress(_describe(jobs[i]), jobs[i].duration_s)
        except BaseException:
            for fut in pending:
                fut.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return [r for r in out if r is not None]


def _describe(job: Job) -> str:
    return f"{job.experiment} · {job.case} · {job.variant} · seed {job.seed}"


# --- statistics over seeds ---------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation (n − 1 in the denominator) of the finite values;
    ``std`` is 0 for a single value and NaN (like ``mean``) for none."""

    mean: float
    std: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> "Stat":
        v = np.asarray([float(x) for x in values], dtype=float)
        v = v[np.isfinite(v)]
        if len(v) == 0:
            return cls(math.nan, math.nan, 0)
        return cls(float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0, int(len(v)))

    @property
    def ok(self) -> bool:
        return self.n > 0 and math.isfinite(self.mean)

    def fmt(self, digits: int = 1, scale: float = 1.0, unit: str = "") -> str:
        """``"82.4 ± 1.3"`` (times ``scale``); ``"–"`` without data."""
        if not self.ok:
            return "–"
        u = f" {unit}" if unit else ""
        return f"{self.mean * scale:.{digits}f} ± {self.std * scale:.{digits}f}{u}"

    def pct(self, digits: int = 1) -> str:
        return self.fmt(digits, 100.0, "%")


class Results:
    """All runs of a reproduction, grouped by (experiment, case, variant)."""

    def __init__(self, runs: Sequence[RunData]):
        self.all = list(runs)
        self._by: dict[tuple[str, str, str], list[RunData]] = {}
        for r in self.all:
            self._by.setdefault(r.key, []).append(r)

    def runs(self, experiment: str, case: str, variant: str) -> list[RunData]:
        return self._by.get((experiment, case, variant), [])

    def stat(self, experiment: str, case: str, variant: str, metric: Callable[[RunData], float]) -> Stat:
        """``metric`` per run (seed), aggregated over the seeds."""
        return Stat.of(metric(r) for r in self.runs(experiment, case, variant))

    def cases(self, experiment: str) -> list[str]:
        return list(dict.fromkeys(r.case for r in self.all if r.experiment == experiment))

    def variants(self, experiment: str) -> list[str]:
        return list(dict.fromkeys(r.variant for r in self.all if r.experiment == experiment))

    @property
    def wall_s(self) -> float:
        return sum(r.wall_s for r in self.all)


# --- claims and the report ---------------------------------------------------------------------


@dataclass
class Claim:
    """One number or statement of the paper against ours.

    ``holds`` is True/False for a checkable claim and None for a number reported for comparison
    only (no claim attached to it).
    """

    section: str
    what: str
    paper: str
    ours: str
    holds: bool | None
    note: str = ""
    #: Short identifier for the report's own logic (e.g. which explanation to print).
    key: str = ""

    @property
    def verdict(self) -> str:
        return {True: "holds", False: "**does not hold**", None: "–"}[self.holds]


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` is one letter per column (l/r/c), default: first left."""
    headers = list(headers)
    align = align or ("l" + "r" * (len(headers) - 1))
    sep = {"l": "---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |",
             "|" + "|".join(sep[a] for a in align) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)


def _cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def claims_table(claims: Sequence[Claim]) -> str:
    """Claim, the paper's value, ours and the verdict (one experiment's table)."""
    rows = [[c.what + (f" — {c.note}" if c.note else ""), c.paper, c.ours, c.verdict] for c in claims]
    return md_table(["claim / number", "paper", "ours (mean ± std over seeds)", "verdict"], rows, "lllc")


def glance_table(claims: Sequence[Claim]) -> str:
    """Every checkable claim with its verdict (the numbers are in the experiments' tables)."""
    rows = [[c.section, c.what, c.verdict] for c in claims if c.holds is not None]
    return md_table(["experiment", "claim", "verdict"], rows, "llc")


class ReportContext:
    """Collects claims, sections and figures while a paper module writes its report."""

    def __init__(self, paper: str, out_dir: Path, seeds: Sequence[int], quick: bool):
        self.paper = paper
        self.out_dir = Path(out_dir)
        self.fig_dir = self.out_dir / paper
        self.seeds = list(seeds)
        self.quick = quick
        self.claims: list[Claim] = []
        self.parts: list[str] = []
        self.figures: list[Path] = []

    # writing
    def h2(self, title: str) -> None:
        self.parts.append(f"## {title}")

    def h3(self, title: str) -> None:
        self.parts.append(f"### {title}")

    def text(self, *paragraphs: str) -> None:
        self.parts.extend(p.strip() for p in paragraphs if p and p.strip())

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> None:
        self.parts.append(md_table(headers, rows, align))

    def claim(self, section: str, what: str, paper: str, ours: str, holds: bool | None, note: str = "",
              key: str = "") -> Claim:
        c = Claim(section, what, paper, ours, holds, note, key)
        self.claims.append(c)
        return c

    def failed(self, key: str) -> bool:
        """Whether a claim with this key, or under it (``key:…``), does not hold."""
        return any(c.holds is False and _under(c.key, key) for c in self.claims)

    def held(self, key: str) -> bool:
        """Whether a claim with this key, or under it (``key:…``), holds."""
        return any(c.holds is True and _under(c.key, key) for c in self.claims)

    def claims_of(self, section: str) -> list[Claim]:
        return [c for c in self.claims if c.section == section]

    def put_claims(self, section: str) -> None:
        """The claims table of one experiment (the claims recorded for ``section`` so far)."""
        cl = self.claims_of(section)
        if cl:
            self.parts.append(claims_table(cl))

    def figure(self, fig: Any, name: str, caption: str) -> None:
        """Save a matplotlib Figure as ``<out>/<paper>/<name>.png`` and embed it."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.fig_dir.mkdir(parents=True, exist_ok=True)
        path = self.fig_dir / f"{name}.png"
        tmp = path.with_name(path.name + ".part")
        FigureCanvasAgg(fig)
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
        os.replace(tmp, path)
        self.figures.append(path)
        self.parts.append(f"![{caption}]({self.paper}/{path.name})\n\n*{caption}*")

    def markdown(self, title: str, command: str, intro: str, results: Results, wall_s: float, n_jobs: int) -> str:
        checked = [c for c in self.claims if c.holds is not None]
        held = sum(1 for c in checked if c.holds)
        runs = len(results.all)
        head = [
            f"# {title}",
            f"```sh\n{command}\n```",
            f"Generated by `ratelab reproduce` (ratelab {__version__}, Python {platform.python_version()}, "
            f"{platform.machine()}). Seeds {_seed_list(self.seeds)}; every number is the mean ± sample "
            f"standard deviation (n − 1) over the seeds, each seed one independent simulation "
            f"(random loss, encoder noise and controller randomness drawn from it). {runs} simulations, "
            f"{results.wall_s:.0f} s of simulator time on {n_jobs} worker process{'es' if n_jobs != 1 else ''} "
            f"({wall_s:.0f} s wall); the numbers do not depend on `--workers`."
            + (" **Quick mode**: shortened runs and fewer cases; not the committed reproduction." if self.quick else ""),
            intro.strip(),
            "## Claims at a glance",
            f"{held} of {len(checked)} checkable claims hold. Each experiment's section below gives the "
            "paper's value and ours for every claim, plus numbers reported for comparison without a claim "
            "(verdict “–”), and explains the differences at the end.",
            glance_table(self.claims),
        ]
        return "\n\n".join([*head, *self.parts]).rstrip() + "\n"


def _under(key: str, prefix: str) -> bool:
    prefix = prefix.rstrip(":")
    return key == prefix or key.startswith(prefix + ":")


def _seed_list(seeds: Sequence[int]) -> str:
    s = list(seeds)
    if len(s) > 2 and s == list(range(s[0], s[0] + len(s))):
        return f"{s[0]}–{s[-1]}"
    return ", ".join(map(str, s))


# --- scenario helpers --------------------------------------------------------------------------


def defaults_text(controller: str) -> str:
    """``key = value`` list of a controller's default parameters as the core reports them (what ran)."""
    from ratelab.native import core

    for c in core().controllers():
        if c["name"] == controller:
            return ", ".join(f"`{k}` = {_literal(v)}" for k, v in sorted((c.get("defaults") or {}).items()))
    return "(unknown controller)"


def _literal(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "unset"
    return f'"{v}"' if isinstance(v, str) else repr(v)


def scenario(name: str, duration_s: float, link: dict[str, Any], flows: list[dict[str, Any]],
             description: str = "", series_interval_ms: float = 25.0) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "duration_s": duration_s, "link": link, "flows": flows,
                           "metrics": {"packet_log": False, "series_interval_ms": series_interval_ms}}
    if description:
        doc["description"] = description
    return doc


def validate(jobs: Sequence[Job]) -> None:
    """Ask the core to check every distinct scenario before the first run (InputError if bad)."""
    seen: set[str] = set()
    for job in jobs:
        doc = job.document()
        if doc in seen:
            continue
        seen.add(doc)
        Scenario(json.loads(doc), f"reproduce {job.experiment}/{job.case}/{job.variant}").validate()


# --- the command -------------------------------------------------------------------------------


@dataclass
class Outcome:
    path: Path
    claims: list[Claim]
    figures: list[Path]
    runs: int
    wall_s: float


@dataclass
class PaperSpec:
    """What a paper module exports (see the module docstring)."""

    name: str
    title: str
    default_seeds: int
    jobs: Callable[[Sequence[int], bool], list[Job]]
    report: Callable[[Results, ReportContext], str]
    extra: dict[str, Any] = field(default_factory=dict)


def reproduce(paper: PaperSpec, seeds: Sequence[int], n_jobs: int, quick: bool, out_dir: str | Path,
              command: str, progress: bool | ProgressFn = False) -> Outcome:
    """Run a paper's experiments and write ``<out_dir>/<paper>.md`` with its figures."""
    if not seeds:
        raise InputError("--seeds", "", "need at least one seed")
    jobs = paper.jobs(list(seeds), quick)
    validate(jobs)
    t0 = time.perf_counter()
    if progress is True:
        with _progress(sum(j.duration_s for j in jobs), len(jobs)) as cb:
            runs = run_jobs(jobs, n_jobs, cb)
    else:
        runs = run_jobs(jobs, n_jobs, progress or None)
    wall = time.perf_counter() - t0
    results = Results(runs)
    ctx = ReportContext(paper.name, Path(out_dir), seeds, quick)
    intro = paper.report(results, ctx)
    text = ctx.markdown(paper.title, command, intro, results, wall, n_jobs)
    path = Path(out_dir) / f"{paper.name}.md"
    write_text_atomic(path, text)
    return Outcome(path, ctx.claims, ctx.figures, len(runs), wall)


class _progress:
    """The runner's rich progress bar (simulated seconds); plain lines when not on a terminal."""

    def __init__(self, total_s: float, n: int):
        self.total_s, self.n = total_s, n
        self._cm = progress_bar(total_s)

    def __enter__(self) -> ProgressFn:
        bar = self._cm.__enter__()
        done = {"jobs": 0, "next": 0.1}
        plain = not sys.stderr.isatty()

        def advance(desc: str, sim_s: float) -> None:
            bar(desc, sim_s)
            done["jobs"] += 1
            if plain and (done["jobs"] / self.n >= done["next"] or done["jobs"] == self.n):
                print(f"reproduce: {done['jobs']}/{self.n} runs ({desc})", file=sys.stderr, flush=True)
                while done["next"] <= done["jobs"] / self.n:
                    done["next"] += 0.1

        return advance

    def __exit__(self, *exc: Any) -> None:
        self._cm.__exit__(*exc)
