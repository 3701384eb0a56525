"""The ``ratelab`` command line: run, list, bench, demo, reproduce, sweep, leaderboard, query, live, emulate.

Exit codes: 0 ok, 2 bad input, 130 interrupted (Ctrl-C; 128 + SIGINT, as a shell reports it). Bad input of any kind is reported as one
line ``error: <file>: <field>: <what is wrong>`` on stderr, never as a traceback.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Sequence

import click

from . import __version__
from .errors import InputError, one_line
from .live import register as _register_live
from .runner import Interrupted, ScenarioRun, check_controllers, progress_bar, run_scenario
from .campaign import MAX_DURATION_S
from .scenario import builtin_descriptions, load_scenario

#: The demo: (built-in scenario, overrides, title, folder).
DEMO_SCENARIOS: list[tuple[str, list[str], str, str]] = [
    ("rmcat-5.1", [], "RMCAT 5.1: variable capacity, one flow", "rmcat-5.1"),
    ("rmcat-5.6", [], "RMCAT 5.6: media against long-lived TCP", "rmcat-5.6"),
    ("lcc-loss", ["link.loss=0.05"], "LCC loss case: 1 Mbit/s with 5 % random loss", "lcc-loss-5pct"),
    ("trace-fcc-amazon", [], "Real trace: FCC broadband (Pensieve set)", "trace-fcc-amazon"),
]
BENCH_SCENARIOS = ["bench-single", "bench-three", "bench-tcp", "bench-two-way"]
#: Controllers the demo leaves out: `fixed` does no congestion control, nothing to compare.
DEMO_EXCLUDED = {"fixed"}

#: Exit status after Ctrl-C: 128 + SIGINT, what a shell reports for a process killed by it, so
#: that scripts and CI notice (finished runs are kept all the same).
EXIT_INTERRUPTED = 130

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
set_option = click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                          help="Override a scenario field by dotted path, e.g. link.loss=0.05 or flows[0].start_s=10 (value is a TOML literal). Repeatable.")
seed_option = click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True, help="Random seed (same seed, same results).")


#: ``--debug``: print the traceback of a failing Python controller after its one-line error.
_DEBUG = {"on": False}


@click.group(context_settings=CONTEXT, invoke_without_command=True)
@click.version_option(__version__, "-V", "--version", prog_name="ratelab")
@click.option("--debug", is_flag=True, help="On an error in a Python controller, also print its traceback.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """ratelab: compare congestion controllers for real-time video on a simulated bottleneck."""
    _DEBUG["on"] = debug
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def scenario_run_options(out_default: str):
    """SCENARIO, -c, --seed, --out and --set: the arguments `run` and `live run` share."""
    options = [
        click.argument("scenario"),
        click.option("-c", "--controller", "controllers", multiple=True, metavar="NAME",
                     help="Controller for every media flow; repeat to compare several. Default: as in the scenario."),
        seed_option,
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help=f"Output folder.  [default: {out_default}]"),
        set_option,
    ]

    def wrap(f):
        for option in reversed(options):
            f = option(f)
        return f

    return wrap


def finish_runs(out: Path, run, report: Path | None = None) -> None:
    """Call ``run()`` (a :class:`ScenarioRun`), then write its summaries, plots and report
    (``report``, default ``out/report.html``) — also those of the runs done before a Ctrl-C,
    which is then re-raised."""
    report = report or out / "report.html"
    try:
        res = run()
    except Interrupted as exc:
        if exc.result.runs:
            _finish([exc.result], report)
        raise
    _finish([res], report)


@cli.command()
@scenario_run_options("results/<scenario>")
@click.option("--no-packets", is_flag=True, help="Do not keep the per-packet log (faster, smaller).")
@click.option("--model", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="ONNX policy for r3net (default: the shipped model); makes every media flow r3net unless -c says otherwise.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="HTML page to write: one controller, the run's page (rates, delays, loss and freezes over time, "
                   "flows); several, the comparison (Pareto plot, tables, small multiples).  [default: <out>/report.html]")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
def run(scenario: str, controllers: tuple[str, ...], seed: int, out: Path | None, overrides: tuple[str, ...],
        no_packets: bool, model: Path | None, report: Path | None, quiet: bool) -> None:
    """Run SCENARIO (a TOML file or a built-in name) and write summary.json, Parquet, plots and report.html."""
    sc = load_scenario(scenario, overrides)
    if model is not None:
        sc = sc.with_overrides(model_overrides(sc, model))
    out = out or Path("results") / sc.name
    finish_runs(out, lambda: run_scenario(sc, controllers or None, seed=seed, out_dir=out, packets=not no_packets,
                                          progress=not quiet), report)


def model_overrides(sc, model: Path) -> list[str]:
    """``--model PATH``: every media flow runs r3net with that ONNX file."""
    path = str(model.resolve())
    if "'" in path or "\n" in path:
        raise InputError("--model", "", f"path {path!r} contains a quote or newline")
    out = []
    for i, f in enumerate(sc.data.get("flows", [])):
        if f.get("kind") == "media":
            out += [f'flows[{i}].controller="r3net"', f"flows[{i}].params={{model='{path}'}}"]
    return out


@cli.group(context_settings=CONTEXT)
def train() -> None:
    """Train learned controllers (needs the rl extra: pip install 'ratelab[rl]')."""


@train.command("r3net", context_settings={**CONTEXT, "ignore_unknown_options": True, "allow_extra_args": True,
                                          "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def train_r3net(args: tuple[str, ...]) -> None:
    """Train R3Net with PPO (options: --steps N --envs N --out DIR --resume ...; --help lists all)."""
    try:
        from .rl import train as rl_train
    except ImportError as exc:
        raise InputError("ratelab train r3net", "", f"needs the rl extra ({exc}); install with pip install 'ratelab[rl]'") from None
    rc = rl_train.main(list(args))
    if rc:
        raise click.exceptions.Exit(rc)


@cli.command("list")
def list_cmd() -> None:
    """List controllers (built-in and registered Python ones) and built-in scenarios, one per line."""
    from .native import core

    descriptions = builtin_descriptions()
    width = max(map(len, descriptions), default=0)
    from .byo.loader import describe, registered

    controllers = core().controllers()
    builtin = {c["name"] for c in controllers}
    # Python controllers registered in the entry-point group `ratelab.controllers`.
    controllers += [{"name": n, "summary": describe(n)} for n in sorted(registered()) if n not in builtin]
    width = max([width, *(len(c["name"]) for c in controllers)])
    for c in controllers:
        click.echo(f"controller  {c['name']:<{width}}  {c.get('summary', '')}")
    for name, desc in descriptions.items():
        click.echo(f"scenario    {name:<{width}}  {desc}")


@cli.command()
@click.option("-s", "--scenario", "scenarios", multiple=True, metavar="SCENARIO",
              help=f"Scenario to time; repeatable.  [default: {', '.join(BENCH_SCENARIOS)}]")
@click.option("-c", "--controller", "controllers", multiple=True, metavar="NAME",
              help="Time with this controller on every media flow (built-in or Python); repeatable.  [default: as in the scenario]")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Runs per scenario; the fastest counts.")
@seed_option
@click.option("--markdown", is_flag=True, help="Print a Markdown table (for docs/benchmarks.md).")
def bench(scenarios: tuple[str, ...], controllers: tuple[str, ...], repeat: int, seed: int, markdown: bool) -> None:
    """Time the simulator: simulated packets per wall second and simulated seconds per wall second."""
    loaded = [load_scenario(s, ["metrics.packet_log=false"]) for s in (scenarios or BENCH_SCENARIOS)]
    check_controllers(controllers)
    choices: list[str | None] = list(controllers) or [None]
    for sc in loaded:
        for c in choices:
            sc.validate(c)
    rows = []
    with progress_bar(sum(sc.duration_s for sc in loaded) * repeat * len(choices)) as cb:
        for sc in loaded:
            for c in choices:
                runs = (run_scenario(sc, [c] if c else None, seed=seed, progress=cb).runs[0] for _ in range(repeat))
                rows.append((sc, min(runs, key=lambda r: r.wall_seconds)))
    headers = ["scenario", "flows", "simulated (s)", "wall (s)", "packets", "packets / wall s", "sim speed"]
    if controllers:
        headers.insert(1, "controller")
    table = [
        [sc.name, *([r.controller] if controllers else []), str(len(r.flows)), f"{r.duration_s:g}", f"{r.wall_seconds:.3f}",
         f"{r.packets:,}", f"{r.packets / r.wall_seconds:,.0f}" if r.wall_seconds else "–", f"{r.sim_speed:,.0f}×"]
        for sc, r in rows
    ]
    if markdown:
        command = " ".join(["ratelab bench", *(f"-s {s}" for s in scenarios), *(f"-c {c}" for c in controllers),
                            f"--repeat {repeat}", "--markdown"])
        click.echo(f"`{command}` — ratelab {__version__}, "
                   f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; packet log off; one core.\n")
        click.echo("| " + " | ".join(headers) + " |")
        left = 2 if controllers else 1
        click.echo("|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|")
        for row in table:
            click.echo("| " + " | ".join(row) + " |")
        return
    from rich.table import Table

    t = Table(title="ratelab bench (packet log off)")
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right")
    for row in table:
        t.add_row(*row)
    _console().print(t)


@cli.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("ratelab-demo"), show_default=True,
              help="Output folder.")
@click.option("-c", "--controller", "controllers", multiple=True, metavar="NAME",
              help="Controllers to compare.  [default: every controller but fixed]")
@seed_option
@set_option
@click.option("--no-packets", is_flag=True, help="Do not keep the per-packet logs.")
def demo(out: Path, controllers: tuple[str, ...], seed: int, overrides: tuple[str, ...], no_packets: bool) -> None:
    """Compare every controller on a few built-in scenarios (incl. a real trace) and write one report.html."""
    from .native import runnable_controller_names

    names = list(controllers) or [n for n in runnable_controller_names() if n not in DEMO_EXCLUDED]
    check_controllers(names)
    plan = []
    for name, extra, title, folder in DEMO_SCENARIOS:
        sc = load_scenario(name, [*extra, *overrides])
        sc.validate()
        plan.append((sc, title, folder))
    done: list[ScenarioRun] = []
    report = out / "report.html"
    try:
        with progress_bar(sum(sc.duration_s for sc, _, _ in plan) * len(names)) as cb:
            for sc, title, folder in plan:
                try:
                    res = run_scenario(sc, names, seed=seed, out_dir=out / folder, packets=not no_packets, progress=cb)
                except Interrupted as exc:
                    exc.result.title = title
                    if exc.result.runs:
                        done.append(exc.result)
                    raise
                res.title = title
                done.append(res)
    except Interrupted:
        if done:
            _finish(done, report, title="ratelab demo (interrupted)")
        raise
    _finish(done, report, title="ratelab demo")


@cli.command()
@click.argument("paper", type=click.Choice(["lcc", "iris", "dcrc", "cross", "r3net"]))
@click.option("--seeds", type=click.IntRange(min=1), default=None, metavar="N",
              help="Seeds 1..N per experiment.  [default: the paper's own: lcc 10, iris 5, dcrc 10, cross 10]")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Simulations run in parallel (worker processes).  [default: all cores]")
@click.option("--quick", is_flag=True, help="Shorter runs and fewer cases (a smoke test, not the reproduction).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("docs/reproductions"),
              show_default=True, help="Folder for <paper>.md and its figures <paper>/*.png.")
@click.option("--duration", type=click.FloatRange(0, MAX_DURATION_S, min_open=True), default=120.0, show_default=True,
              help="r3net only: seconds per trace run.")
@click.option("--model", type=click.Path(dir_okay=False, exists=True), default=None, help="r3net only: ONNX model (default: shipped).")
def reproduce(paper: str, seeds: int | None, jobs: int | None, quick: bool, out: Path, duration: float, model: str | None) -> None:
    """Run PAPER's experiments (several seeds, in parallel) and write <out>/PAPER.md: paper vs ours, claim by claim."""
    if paper == "r3net":
        # Paper 004 Table 1 over the held-out test traces (ratelab.rl.reproduce; needs no torch).
        from .rl import reproduce as rep

        out.mkdir(parents=True, exist_ok=True)
        args = ["--duration", str(30.0 if quick else duration), "--seed", str(seeds or 1), "--out", str(out / "r3net.md")]
        rep.main(args + (["--model", model] if model else []))
        return
    from .reproduce import paper as paper_spec, reproduce as run_reproduction

    spec = paper_spec(paper)
    n_seeds = seeds or spec.default_seeds
    from .engines import default_workers

    n_jobs = jobs or default_workers()
    command = f"ratelab reproduce {paper} --seeds {n_seeds} --jobs {n_jobs}" + (" --quick" if quick else "")
    if out != Path("docs/reproductions"):
        command += f" --out {out}"
    outcome = run_reproduction(spec, list(range(1, n_seeds + 1)), n_jobs, quick, out, command, progress=True)
    checked = [c for c in outcome.claims if c.holds is not None]
    console = _console()
    console.print(f"{paper}: {sum(1 for c in checked if c.holds)} of {len(checked)} claims hold "
                  f"({outcome.runs} simulations, {outcome.wall_s:.0f} s)", highlight=False)
    for c in checked:
        mark = "holds" if c.holds else "DOES NOT HOLD"
        console.print(f"  [{mark}] {c.section}: {c.what}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"report:  {outcome.path}", highlight=False, soft_wrap=True)


def _finish(results: Sequence[ScenarioRun], report_path: Path, *, title: str | None = None) -> None:
    """Write summaries, plots and the report; print the summary table and where things are."""
    from .report import write_report
    from .results import write_summary

    written = [write_summary(r) for r in results if r.out_dir is not None]
    write_report(results, report_path, title=title or f"ratelab: {results[0].title or results[0].scenario.name}")
    console = _console()
    for res in results:
        console.print(summary_table(res))
    for p in written:
        console.print(f"summary: {p}", highlight=False, soft_wrap=True)
    console.print(f"report:  {report_path}", highlight=False, soft_wrap=True)


def summary_table(res: ScenarioRun):
    """The per-flow table printed after a run. With a reverse bottleneck (RFC 8867 5.3) the link
    utilization reads ``forward / reverse`` and each flow's label says which way its data went."""
    from rich.table import Table

    from .page import fmt

    two_way = any(run.reverse_link is not None for run in res.runs)
    t = Table(title=f"{res.title or res.scenario.name} (seed {res.seed}, {res.scenario.duration_s:g} s)"
              + (" — interrupted" if res.interrupted else ""))
    cols = [("controller", "left"), ("link util. fwd / rev" if two_way else "link util.", "right"), ("flow", "left"),
            ("throughput kbit/s", "right"), ("utilization", "right"),
            ("OWD mean ms", "right"), ("OWD p95 ms", "right"), ("loss", "right"), ("freeze ratio", "right")]
    for name, justify in cols:
        t.add_column(name, justify=justify)
    for run in res.runs:
        util = fmt(run.link.get("utilization"), "pct")
        if run.reverse_link is not None:
            util += " / " + fmt(run.reverse_link.get("utilization"), "pct")
        for i, f in enumerate(run.flows):
            t.add_row(
                run.name if i == 0 else "",
                util if i == 0 else "",
                _flow_name(f, two_way),
                fmt(f.get("throughput_kbps"), "{:.0f}"), fmt(f.get("utilization"), "pct"),
                fmt(f.get("owd_ms_mean"), "{:.1f}"), fmt(f.get("owd_ms_p95"), "{:.1f}"),
                fmt(f.get("loss_rate"), "pct"), fmt(f.get("freeze_ratio"), "pct"),
                end_section=i == len(run.flows) - 1,
            )
    return t


def _flow_name(f: dict, two_way: bool = False) -> str:
    """The flow's label, with ``tcp`` for TCP flows and, in a two-way scenario, ``fwd``/``rev``."""
    label = str(f.get("label", f.get("id", "")))
    tags = ["tcp"] if f.get("kind") == "tcp" and "tcp" not in label else []
    if two_way:
        tags.append("rev" if f.get("direction") == "reverse" else "fwd")
    return f"{label} ({', '.join(tags)})" if tags else label


def _console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)


# `ratelab live run|send|recv` and `ratelab emulate` (python/ratelab/live.py).
_register_live(cli)
# `ratelab sweep`, `leaderboard`, `query`, `tradeoff` (python/ratelab/cli_campaign.py).
from . import cli_campaign  # noqa: E402,F401  (registers its commands on `cli`)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ratelab`` script; returns the exit code."""
    # Arrow's default allocator (mimalloc) keeps freed pages of the Parquet row groups: a long
    # run's RSS then creeps up with its length. The system allocator returns them (measured in
    # docs/reliability.md); a user's own setting wins. Read by pyarrow when first imported.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="ratelab", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except InputError as exc:
        click.echo(exc.line(), err=True)
        tb = getattr(exc, "traceback_text", "")
        if tb and _DEBUG["on"]:
            click.echo(tb.rstrip("\n"), err=True)
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        click.echo("error: " + one_line(exc.format_message()), err=True)
        return 2
    except (Interrupted, KeyboardInterrupt, click.exceptions.Abort):
        click.echo("interrupted: finished runs were kept", err=True)
        return EXIT_INTERRUPTED
    except OSError as exc:
        if exc.filename is None:
            raise
        click.echo(f"error: {exc.filename}: {exc.strerror or exc}", err=True)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
