"""Run a scenario with one or several controllers and stream the results to disk.

The simulator runs in chunks of simulated time: between chunks Python handles Ctrl-C, advances the
progress bar and drains the per-packet log and time series into Parquet, so memory stays bounded
whatever the run length. Every file is written under a temporary name and moved into place only
when complete, so an interrupted run never leaves a half-written file behind.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ratelab.errors import InputError, from_core
from ratelab.run.result import Interrupted, RunResult, ScenarioRun  # noqa: F401  (the drivers' results, re-exported)
from ratelab.run.sinks import ParquetSink, join_chunks  # noqa: F401
from ratelab.native import controller_names, core, core_errors
from ratelab.scenario import Scenario, load_scenario

#: Simulated seconds per call into the simulator (Ctrl-C latency is one chunk).
CHUNK_S = 5.0

#: Contenders that are real stacks, not controllers of the simulator: ``-c chromium`` runs the
#: scenario in real time as a Chromium call through the emulator (:mod:`ratelab.browser`);
#: ``-p chromium.KEY=VALUE`` are its options (codec, resolution, content, field trials, ...).
REAL_TIME_STACKS = ("chromium",)

#: Called with (description, simulated seconds just completed).
ProgressFn = Callable[[str, float], None]


def run_scenario(
    scenario: Scenario | str | Path,
    controllers: Sequence[str] | None = None,
    *,
    seed: int = 1,
    out_dir: str | Path | None = None,
    packets: bool = True,
    overrides: Iterable[str] = (),
    progress: bool | ProgressFn = False,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> ScenarioRun:
    """Run ``scenario`` once per controller (or once as written when ``controllers`` is empty).

    ``params``: ``{controller: {key: value}}``, what ``-p NAME.KEY=VALUE`` gives; each reaches
    the media flows that run that controller (unknown keys are errors naming the known ones).
    With ``out_dir``, each run gets ``out_dir/<controller>/{packets,series}.parquet``; the summary
    and report are written by :mod:`ratelab.run.results` and :mod:`ratelab.report.run_report`. ``progress`` is a
    callback or True for a rich progress bar on stderr. Raises :class:`InputError` for bad input
    (before any run starts) and :class:`Interrupted` on Ctrl-C.
    """
    sc, contenders = prepare_runs(scenario, controllers, overrides, packets, params)
    out = Path(out_dir) if out_dir is not None else None
    with contextlib.ExitStack() as stack:
        if progress is True:
            on_progress = stack.enter_context(progress_bar(sc.duration_s * len(contenders)))
        else:
            on_progress = progress or no_progress

        def simulate(c: Contender, run_dir: Path | None) -> RunResult:
            if c.controller in REAL_TIME_STACKS:
                return run_real_time(c, seed, run_dir, on_progress)
            return run_one(c.scenario, c.scenario.to_json(), None, c.label, c.name, seed, run_dir, on_progress)

        return run_each(sc, contenders, seed=seed, out=out, title=sc.name, run=simulate)


@dataclass(frozen=True)
class Contender:
    """One run of a scenario: its label (the controller given with -c, or the scenario's own
    controllers joined by '+'), its unique name (the run's folder) and the scenario as this run
    sees it (every media flow on the contender's controller, with its parameters)."""

    label: str
    name: str
    controller: str | None
    scenario: Scenario
    #: A real-time stack's options (``-p chromium.codec=...``); controllers get theirs in the scenario.
    options: Mapping[str, Any] = field(default_factory=dict)


def prepare_runs(scenario: Scenario | str | Path, controllers: Sequence[str] | None, overrides: Iterable[str],
                 packets: bool, params: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[Scenario, list[Contender]]:
    """The scenario with ``overrides`` (and without the packet log unless ``packets``), and the
    runs to make of it; all bad input (a parameter that would not arrive included) is reported
    here, before the first run starts. Shared by every driver."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario, overrides)
    if isinstance(scenario, Scenario) and overrides:
        sc = sc.with_overrides(overrides)
    if not packets:
        sc = sc.with_overrides(["metrics.packet_log=false"])
    check_controllers(controllers or ())
    params = dict(params or {})
    running = list(controllers) if controllers else sc.media_controllers()
    for name in params:
        if name not in running:
            raise InputError("-p", name, f"no flow of this run uses controller {name} (controllers: {', '.join(running) or 'none'})")
    contenders: list[Contender] = []
    for choice in (list(controllers) if controllers else [None]):
        label = choice or "+".join(sc.media_controllers()) or "scenario"
        name = unique_name(label, [c.name for c in contenders])
        if choice in REAL_TIME_STACKS:  # the stack runs the scenario as written, with its own sender
            sc.validate()
            options = dict(params.get(choice, {}))
            real_time_options(choice, options)  # bad options: refused before anything runs
            contenders.append(Contender(label, name, choice, sc, options))
            continue
        own = sc.with_controller(choice, params.get(choice)) if choice is not None else sc.with_params(params)
        own.validate()
        contenders.append(Contender(label, name, choice, own))
    return sc, contenders


def real_time_options(name: str, options: Mapping[str, Any]):
    """The options object of real-time stack ``name`` (checked)."""
    from ratelab.browser.run import BrowserOptions

    return BrowserOptions.from_params(options, name)


def run_real_time(c: Contender, seed: int, run_dir: Path | None, on_progress: ProgressFn,
                  metadata: dict[str, str] | None = None) -> RunResult:
    """One run of a real-time stack (``-c chromium``): ``duration_s`` of wall-clock time."""
    from ratelab.browser.run import run_browser

    result = run_browser(c.scenario, seed=seed, out_dir=run_dir, options=real_time_options(c.controller or "", c.options),
                         name=c.name, metadata=metadata)
    on_progress(f"{c.scenario.name} · {c.label}", c.scenario.duration_s)
    return result


def run_each(sc: Scenario, contenders: Sequence[Contender], *, seed: int, out: Path | None, title: str,
             run: Callable[[Contender, Path | None], RunResult]) -> ScenarioRun:
    """The loop every driver shares: ``run(contender, folder)`` for each contender in turn, into
    ``out/<name>/``; on Ctrl-C :class:`Interrupted` carries the runs that finished."""
    result = ScenarioRun(sc, seed, out_dir=out, title=title)
    try:
        for c in contenders:
            result.runs.append(run(c, out / folder_name(c.name) if out is not None else None))
    except KeyboardInterrupt:
        result.interrupted = True
        raise Interrupted(result) from None
    except InputError as exc:  # e.g. a browser that crashed: the runs before it are kept
        exc.partial = result  # type: ignore[attr-defined]
        raise
    return result


def no_progress(_desc: str, _sim_s: float) -> None:
    pass


def check_controllers(names: Iterable[str]) -> None:
    """Every name is a built-in controller or a Python controller that can be found
    (``file.py:Class``, ``module:Class``, an entry point); else one :class:`InputError` line."""
    names = [n for n in names if n not in REAL_TIME_STACKS]
    if not names:
        return
    from ratelab.byo.loader import check_name

    known = controller_names()
    for n in names:
        check_name(n, known)


def run_one(sc: Scenario, doc: str, controller: str | None, label: str, name: str, seed: int,
             run_dir: Path | None, on_progress: ProgressFn, metadata: dict[str, str] | None = None,
             chunk_s: float | None = None) -> RunResult:
    mod = core()
    desc = f"{sc.name} · {label}"
    sinks: dict[str, ParquetSink] = {}
    wall = 0.0
    cpu = 0.0
    try:
        # Inside the try: a Ctrl-C right after mkdir must not leave an empty run folder.
        if run_dir is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            sinks["series"] = ParquetSink(run_dir / "series.parquet", metadata)
            if sc.data.get("metrics", {}).get("packet_log", True):
                sinks["packets"] = ParquetSink(run_dir / "packets.parquet", metadata)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            sim = mod.Simulation(doc, seed=seed, controller=controller)
        except core_errors() as exc:
            raise from_core(exc, sc.source) from None
        duration = float(sim.duration_s)
        done = False
        while not done:
            before = float(sim.now_s)
            done = bool(sim.run(min(before + (chunk_s or CHUNK_S), duration)))
            packets, series = sim.take_packets(), sim.take_series()
            now = float(sim.now_s)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            if not done and now <= before:
                raise RuntimeError(f"simulator made no progress at t={now} s")
            if "packets" in sinks:
                sinks["packets"].write(packets)
            if "series" in sinks:
                sinks["series"].write(series)
            on_progress(desc, now - before)
            t0, c0 = time.perf_counter(), time.process_time()
        summary = sim.summary()
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        for s in sinks.values():
            s.commit()
    except BaseException:
        for s in sinks.values():
            s.abort()
        if run_dir is not None:
            with contextlib.suppress(OSError):
                run_dir.rmdir()  # only if empty: leave no trace of a run that did not finish
        raise
    result = RunResult.from_summary(summary, name=name, controller=controller or label, wall=wall, duration=duration,
                                    dir=run_dir)
    result.cpu_seconds = cpu
    return result


def folder_name(name: str) -> str:
    """A run's folder under ``--out``: the controller's name without path separators (a Python
    controller's name may be ``path/to/my_cc.py:MyCC``)."""
    return "".join("_" if c in "/\\" else c for c in name).lstrip(".") or "run"


def unique_name(name: str, taken: list[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"


#: Seconds between plain progress lines when stderr is not a terminal (a log file, CI).
PROGRESS_EVERY_S = 10.0


@contextlib.contextmanager
def progress_bar(total_s: float, *, enabled: bool | None = None) -> Iterator[ProgressFn]:
    """Progress on stderr counting simulated seconds: a rich bar on a terminal; elsewhere a
    plain line with the ETA every :data:`PROGRESS_EVERY_S` seconds (environment variable
    ``RATELAB_PROGRESS_EVERY_S`` overrides it), so a long run in a log or CI is not silent.
    ``enabled=False`` silences it (``-q``)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    if enabled is False:
        yield no_progress
        return
    if not console.is_terminal:
        yield _plain_progress(total_s)
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False,
    ) as bar:
        task = bar.add_task("simulating", total=max(total_s, 1e-9))

        def advance(desc: str, sim_s: float) -> None:
            bar.update(task, advance=sim_s, description=desc)

        yield advance


def _plain_progress(total_s: float) -> ProgressFn:
    import sys

    try:
        every = float(os.environ.get("RATELAB_PROGRESS_EVERY_S", PROGRESS_EVERY_S))
    except ValueError:
        every = PROGRESS_EVERY_S
    start = time.monotonic()
    state = {"done": 0.0, "last": start}

    def advance(desc: str, sim_s: float) -> None:
        state["done"] += sim_s
        now = time.monotonic()
        if now - state["last"] < every or state["done"] >= total_s:
            return
        state["last"] = now
        elapsed = now - start
        frac = min(state["done"] / total_s, 1.0) if total_s > 0 else 1.0
        eta = elapsed * (1 - frac) / frac if frac > 0 else float("inf")
        print(f"progress: {desc}: {frac:.0%} of {total_s:g} simulated s, {clock(elapsed)} elapsed, ETA {clock(eta)}",
              file=sys.stderr, flush=True)

    return advance


def clock(seconds: float) -> str:
    """``H:MM:SS`` (``?`` when unknown)."""
    if not (seconds >= 0 and seconds < 1e9):
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
