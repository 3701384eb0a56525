"""The ``ratelab`` command group and what its commands share: the group itself, the options
`run` and `live run` have in common, and how a finished run is written and printed.

The commands live beside this module by concept (`commands.py`: run, list, bench, demo,
reproduce, train; `campaign.py`: sweep, leaderboard, query, tradeoff; `live.py`: live, emulate)
and register on :data:`cli` when :mod:`ratelab.cli` imports them; nothing here imports them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import click

from ratelab._version import __version__
from ratelab.cli.options import SEED, Number
from ratelab.errors import InputError
from ratelab.run.runner import Interrupted, ScenarioRun

#: Exit status after Ctrl-C: 128 + SIGINT, what a shell reports for a process killed by it, so
#: that scripts and CI notice (finished runs are kept all the same).
EXIT_INTERRUPTED = 130

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
set_option = click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                          help="Override a scenario field by dotted path, e.g. link.loss=0.05 or flows[0].start_s=10 (value is a TOML literal). Repeatable.")
param_option = click.option("-p", "--param", "params", multiple=True, metavar="NAME.KEY=VALUE",
                            help="A parameter of controller NAME (built-in, Python or onnx; the value is a TOML literal), "
                                 "e.g. -p gcc.profile='\"m84\"'. An unknown key is an error. Repeatable.")
quiet_option = click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
seed_option = click.option("--seed", type=Number(SEED), default=1, show_default=True, help="Random seed (same seed, same results).")


#: ``--debug``: print the traceback of a failing Python controller after its one-line error.
DEBUG = {"on": False}


@click.group(context_settings=CONTEXT, invoke_without_command=True)
@click.version_option(__version__, "-V", "--version", prog_name="ratelab")
@click.option("--debug", is_flag=True, help="On an error in a Python controller, also print its traceback.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """ratelab: compare congestion controllers for real-time video on a simulated bottleneck."""
    DEBUG["on"] = debug
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def scenario_run_options(out_default: str):
    """SCENARIO, -c, -p, --seed, --out, --set and -q: the arguments `run` and `live run` share."""
    options = [
        click.argument("scenario"),
        click.option("-c", "--controller", "controllers", multiple=True, metavar="NAME",
                     help="Controller for every media flow; repeat to compare several. Default: as in the scenario."),
        param_option,
        seed_option,
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help=f"Output folder.  [default: {out_default}]"),
        set_option,
        quiet_option,
    ]

    def wrap(f):
        for option in reversed(options):
            f = option(f)
        return f

    return wrap


def controller_params(params: Sequence[str], controllers: Sequence[str], sc=None) -> dict:
    """``-p NAME.KEY=VALUE`` options as ``{NAME: {KEY: VALUE}}``; NAME is one of ``controllers``
    (or, without -c, of the scenario's own)."""
    from ratelab.scenario import parse_params

    if not params:
        return {}
    names = list(controllers) or (sc.media_controllers() if sc is not None else [])
    return parse_params(params, names)


def finish_runs(out: Path, run, report: Path | None = None) -> None:
    """Call ``run()`` (a :class:`ScenarioRun`), then write its summaries, plots and report
    (``report``, default ``out/report.html``) — also those of the runs done before a Ctrl-C,
    which is then re-raised."""
    report = report or out / "report.html"
    try:
        res = run()
    except Interrupted as exc:
        if exc.result.runs:
            finish([exc.result], report)
        raise
    except InputError as exc:  # a run failed mid-way (a browser crash): keep those that finished
        partial = getattr(exc, "partial", None)
        if partial is not None and partial.runs:
            finish([partial], report)
        raise
    finish([res], report)

def finish(results: Sequence[ScenarioRun], report_path: Path, *, title: str | None = None) -> None:
    """Write summaries, plots and the report; print the summary table and where things are."""
    from ratelab.report.run_report import write_report
    from ratelab.run.results import write_summary

    written = [write_summary(r) for r in results if r.out_dir is not None]
    write_report(results, report_path, title=title or f"ratelab: {results[0].title or results[0].scenario.name}")
    console = make_console()
    for res in results:
        console.print(summary_table(res))
        for run in res.runs:
            for f in run.flows:
                if f.get("cpu_limited"):
                    console.print(f"warning: {run.name} / {f.get('label', '')}: the browser was CPU-limited for "
                                  f"{100 * float(f.get('cpu_limited_fraction') or 0):.0f} % of the call: its numbers "
                                  "measure this machine, not the network", highlight=False, soft_wrap=True)
    for p in written:
        console.print(f"summary: {p}", highlight=False, soft_wrap=True)
    console.print(f"report:  {report_path}", highlight=False, soft_wrap=True)


def summary_table(res: ScenarioRun):
    """The per-flow table printed after a run. With a reverse bottleneck (RFC 8867 5.3) the link
    utilization reads ``forward / reverse`` and each flow's label says which way its data went."""
    from rich.table import Table

    from ratelab.report.page import fmt

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


def make_console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)
