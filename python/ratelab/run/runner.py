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
from ratelab.native import controller_names, core, core_errors
from ratelab.scenario import Scenario, load_scenario

#: Simulated seconds per call into the simulator (Ctrl-C latency is one chunk).
CHUNK_S = 5.0
#: Rows buffered before a Parquet row group is written (bounds memory, keeps row groups large).
FLUSH_ROWS = 1 << 16

#: Called with (description, simulated seconds just completed).
ProgressFn = Callable[[str, float], None]


@dataclass
class RunResult:
    """One simulation: a scenario with one controller choice."""

    name: str
    #: Controller given with -c, or the scenario's own media controllers joined by '+'.
    controller: str
    wall_seconds: float
    sim_speed: float
    link: dict[str, Any]
    flows: list[dict[str, Any]]
    duration_s: float
    #: Folder with this run's Parquet files and plots (None when nothing was written).
    dir: Path | None = None
    #: The reverse bottleneck's summary (same keys as ``link``), or None for a one-way scenario
    #: (RFC 8867 5.3: a scenario with a ``[reverse_link]``).
    reverse_link: dict[str, Any] | None = None
    #: CPU seconds of the simulation calls alone (as ``wall_seconds``; campaign overhead figures).
    cpu_seconds: float = 0.0

    @classmethod
    def from_summary(cls, summary: dict[str, Any], *, name: str, controller: str, wall: float, duration: float,
                     dir: Path | None) -> "RunResult":
        """A run from the core's (or the live driver's) summary dict."""
        reverse = summary.get("reverse_link")
        return cls(
            name=name,
            controller=controller,
            wall_seconds=wall,
            sim_speed=duration / wall if wall > 0 else float("inf"),
            link=dict(summary.get("link", {})),
            flows=[dict(f) for f in summary.get("flows", [])],
            duration_s=duration,
            dir=dir,
            reverse_link=dict(reverse) if reverse is not None else None,
        )

    @property
    def packets(self) -> int:
        """Packets the simulation sent (all flows), for speed figures."""
        return int(sum(f.get("packets_sent", 0) or 0 for f in self.flows))

    @property
    def series_path(self) -> Path | None:
        p = self.dir / "series.parquet" if self.dir else None
        return p if p and p.is_file() else None

    def to_summary(self) -> dict[str, Any]:
        out = {
            "controller": self.controller,
            "wall_seconds": self.wall_seconds,
            "sim_speed": self.sim_speed,
            "link": self.link,
        }
        if self.reverse_link is not None:  # one-way runs keep the keys they always had
            out["reverse_link"] = self.reverse_link
        out["flows"] = self.flows
        return out


@dataclass
class ScenarioRun:
    """All runs of one scenario (one per controller), in order."""

    scenario: Scenario
    seed: int
    runs: list[RunResult] = field(default_factory=list)
    out_dir: Path | None = None
    interrupted: bool = False
    #: Label in reports (defaults to the scenario name; the demo adds e.g. "5 % loss").
    title: str = ""


class Interrupted(Exception):
    """Ctrl-C during a run; ``result`` holds the runs that finished before it."""

    def __init__(self, result: ScenarioRun):
        super().__init__("interrupted")
        self.result = result


def _join_chunks(chunks: list[dict[str, Any]]):
    """One Arrow table from column chunks: numpy columns become chunked Arrow columns without a
    copy (same values and types as a table per chunk, and one row group when written; a
    concatenation copied every column once more, ~1 ms per campaign run); anything else goes
    through Arrow."""
    import numpy as np
    import pyarrow as pa

    keys = list(chunks[0])
    if all(list(c) == keys and all(isinstance(v, np.ndarray) for v in c.values()) for c in chunks):
        return pa.table({k: pa.chunked_array([pa.array(c[k]) for c in chunks]) for k in keys})
    return pa.concat_tables([pa.table(c) for c in chunks])


class ParquetSink:
    """Appends column batches to a Parquet file, written under a temporary name until commit."""

    def __init__(self, path: Path, metadata: dict[str, str] | None = None):
        self.path = path
        #: Key/value pairs stored in the Parquet file's metadata (provenance).
        self.metadata = metadata
        self.tmp = path.with_name(path.name + ".part")
        self._writer = None
        self._batches: list[Any] = []
        self._rows = 0
        self._last: dict[str, Any] | None = None
        self._committed = False

    def write(self, columns: dict[str, Any]) -> None:
        self._last = columns
        n = len(next(iter(columns.values()), ()))
        if n == 0:
            return
        # The chunks are kept as given and joined once per row group (_flush): one Arrow table
        # per flush instead of one per simulated chunk (a campaign run has dozens of chunks).
        self._batches.append(columns)
        self._rows += n
        if self._rows >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow.parquet as pq

        if not self._batches:
            return
        table = _join_chunks(self._batches)
        if self.metadata:
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **self.metadata})
        if self._writer is None:
            # No dictionary pages: the columns are floats and counters that rarely repeat; dictionary
            # encoding made series files larger and their writing ~1.8x slower (docs/scale.md).
            self._writer = pq.ParquetWriter(self.tmp, table.schema, compression="zstd", use_dictionary=False)
        self._writer.write_table(table)
        self._batches, self._rows = [], 0

    def commit(self) -> None:
        import pyarrow as pa

        self._flush()
        if self._writer is None:
            if self._last is None:
                return
            # No rows at all: still write the (empty) table so readers find the columns.
            import pyarrow.parquet as pq

            table = pa.table(self._last)
            if self.metadata:
                table = table.replace_schema_metadata(self.metadata)
            pq.write_table(table, self.tmp)
        else:
            self._writer.close()
            self._writer = None
        os.replace(self.tmp, self.path)
        self._committed = True

    def abort(self) -> None:
        """Discard the file, also when already committed (a run interrupted between the commits
        of its files must not leave one of them behind)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        with contextlib.suppress(FileNotFoundError):
            self.tmp.unlink()
        if self._committed:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


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
        own = sc.with_controller(choice, params.get(choice)) if choice is not None else sc.with_params(params)
        own.validate()
        contenders.append(Contender(label, name, choice, own))
    return sc, contenders


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
    return result


def no_progress(_desc: str, _sim_s: float) -> None:
    pass


def check_controllers(names: Iterable[str]) -> None:
    """Every name is a built-in controller or a Python controller that can be found
    (``file.py:Class``, ``module:Class``, an entry point); else one :class:`InputError` line."""
    names = list(names)
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
