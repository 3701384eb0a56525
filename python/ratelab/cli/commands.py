"""The commands that run scenarios: run, list, bench, demo, reproduce, train."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import click

from ratelab._version import __version__
from ratelab.cli.options import REPEATS, SEEDS, WORKERS, Number
from ratelab.cli.app import CONTEXT, cli, controller_params, param_option, finish, finish_runs, make_console, quiet_option, scenario_run_options, seed_option, set_option
from ratelab.errors import InputError
from ratelab.rl.config import TRACE_SETS
from ratelab.run.runner import Interrupted, ScenarioRun, check_controllers, prepare_runs, progress_bar, run_scenario
from ratelab.scenario import builtin_descriptions, load_scenario, parse_params

#: The demo: (built-in scenario, overrides, title, folder).
DEMO_SCENARIOS: list[tuple[str, list[str], str, str]] = [
    ("rmcat-5.1", [], "RMCAT 5.1: variable capacity, one flow", "rmcat-5.1"),
    ("rmcat-5.6", [], "RMCAT 5.6: media against long-lived TCP", "rmcat-5.6"),
    ("lcc-loss", ["link.loss=0.05"], "LCC loss case: 1 Mbit/s with 5 % random loss", "lcc-loss-5pct"),
    ("trace-fcc-amazon", [], "Real trace: FCC broadband (Pensieve set)", "trace-fcc-amazon"),
    ("handover", [], "Handover: Wi-Fi 10 Mbit/s → LTE 2 Mbit/s → Wi-Fi, the sender told", "handover"),
]
BENCH_SCENARIOS = ["bench-single", "bench-three", "bench-tcp", "bench-two-way"]

@cli.command()
@scenario_run_options("results/<scenario>")
@click.option("--no-packets", is_flag=True, help="Do not keep the per-packet log (faster, smaller).")
@click.option("--model", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="ONNX policy for r3net (default: the shipped model); makes every media flow r3net unless -c says otherwise.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="HTML page to write: one controller, the run's page (rates, delays, loss and freezes over time, "
                   "flows); several, the comparison (Pareto plot, tables, small multiples).  [default: <out>/report.html]")
def run(scenario: str, controllers: tuple[str, ...], params: tuple[str, ...], seed: int, out: Path | None,
        overrides: tuple[str, ...], quiet: bool, no_packets: bool, model: Path | None, report: Path | None) -> None:
    """Run SCENARIO (a TOML file or a built-in name) and write summary.json, Parquet, plots and report.html."""
    sc = load_scenario(scenario, overrides)
    if model is not None:
        sc = sc.with_overrides(model_overrides(sc, model))
    out = out or Path("results") / sc.name
    by_controller = controller_params(params, controllers, sc)
    finish_runs(out, lambda: run_scenario(sc, controllers or None, seed=seed, out_dir=out, packets=not no_packets,
                                          progress=not quiet, params=by_controller), report)


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


def train_options(command):
    """One option per number of :class:`ratelab.rl.config.TrainConfig` (``--seq-len`` sets
    ``seq_len``), each checked against :data:`~ratelab.rl.config.TRAIN_LIMITS`."""
    import dataclasses

    from ratelab.rl.config import CLI_FIELDS, TRAIN_LIMITS, TrainConfig, flags

    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for name in reversed(CLI_FIELDS):
        command = click.option(*flags(name), name, type=Number(TRAIN_LIMITS[name]), default=defaults[name],
                               show_default=True)(command)
    return command


@train.command("r3net")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("out/r3net"), show_default=True,
              help="Folder for checkpoint.pt, scalars.csv, learning_curve.png and the ONNX snapshots.")
@click.option("--resume", is_flag=True, help="Continue from <out>/checkpoint.pt.")
@quiet_option
@train_options
@click.option("--traces", type=click.Choice(TRACE_SETS), default="train", show_default=True,
              help="Shipped trace split to train on (none: synthetic traces only).")
@click.option("--val-traces", type=click.Choice(TRACE_SETS), default="val", show_default=True,
              help="Trace split of the validation episodes.")
@click.option("--mapping", type=click.Choice(["linear", "log"]), default="linear", show_default=True)
@click.option("--env-config", default="{}", metavar="JSON", help="JSON overrides of the environment distribution.")
def train_r3net(out: Path, resume: bool, quiet: bool, env_config: str, **numbers) -> None:
    """Train R3Net with PPO (ratelab.rl.train); writes <out>/r3net.onnx and best.onnx."""
    import json

    from ratelab.rl.config import TrainConfig

    try:
        overrides = json.loads(env_config)
    except ValueError as exc:
        raise InputError("--env-config", "", f"not JSON ({exc})") from None
    if not isinstance(overrides, dict):
        raise InputError("--env-config", "", "expected a JSON object, e.g. '{\"loss_max\": 0.05}'")
    cfg = TrainConfig(**numbers, env_config=overrides)
    try:
        from ratelab.rl import train as rl_train
    except ImportError as exc:
        raise InputError("ratelab train r3net", "", f"needs the rl extra ({exc}); install with pip install 'ratelab[rl]'") from None
    from ratelab.errors import from_core
    from ratelab.native import core_errors

    try:  # the environment is built here: a bad --env-config key is the core's one-line error
        trainer = rl_train.Trainer(cfg, out, resume=resume, log=(lambda _line: None) if quiet else print)
    except core_errors() as exc:
        raise from_core(exc, "--env-config") from None
    onnx_path = trainer.train()
    click.echo(f"model: {onnx_path}")


@cli.command("list")
def list_cmd() -> None:
    """List controllers (built-in and registered Python ones) and built-in scenarios, one per line."""
    from ratelab.native import core

    descriptions = builtin_descriptions()
    width = max(map(len, descriptions), default=0)
    from ratelab.byo.loader import describe, registered

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
@param_option
@click.option("--repeat", type=Number(REPEATS), default=3, show_default=True, help="Runs per scenario; the fastest counts.")
@seed_option
@click.option("--markdown", is_flag=True, help="Print a Markdown table (for docs/benchmarks.md).")
@quiet_option
def bench(scenarios: tuple[str, ...], controllers: tuple[str, ...], params: tuple[str, ...], repeat: int, seed: int,
          markdown: bool, quiet: bool) -> None:
    """Time the simulator: simulated packets per wall second and simulated seconds per wall second."""
    loaded = [load_scenario(s, ["metrics.packet_log=false"]) for s in (scenarios or BENCH_SCENARIOS)]
    check_controllers(controllers)
    choices: list[str | None] = list(controllers) or [None]
    names = list(controllers) or sorted({c for sc in loaded for c in sc.media_controllers()})
    by_controller = parse_params(params, names)
    # (scenario, -c choice, the parameters of the controllers that run in it)
    cases = [(sc, c, {k: v for k, v in by_controller.items() if k in ([c] if c else sc.media_controllers())})
             for sc in loaded for c in choices]
    for sc, c, own in cases:  # all bad input before the first timing
        prepare_runs(sc, [c] if c else None, (), False, own)
    rows = []
    with progress_bar(sum(sc.duration_s for sc in loaded) * repeat * len(choices), enabled=not quiet) as cb:
        for sc, c, own in cases:
            runs = (run_scenario(sc, [c] if c else None, seed=seed, progress=cb, params=own).runs[0] for _ in range(repeat))
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
    make_console().print(t)


@cli.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("ratelab-demo"), show_default=True,
              help="Output folder.")
@click.option("-c", "--controller", "controllers", multiple=True, metavar="NAME",
              help="Controllers to compare.  [default: every controller but fixed]")
@seed_option
@set_option
@click.option("--no-packets", is_flag=True, help="Do not keep the per-packet logs.")
@quiet_option
def demo(out: Path, controllers: tuple[str, ...], seed: int, overrides: tuple[str, ...], no_packets: bool, quiet: bool) -> None:
    """Compare every controller on a few built-in scenarios (incl. a real trace) and write one report.html."""
    from ratelab.native import all_controller_names

    names = list(controllers) or all_controller_names()
    check_controllers(names)
    plan = []
    for name, extra, title, folder in DEMO_SCENARIOS:
        sc = load_scenario(name, [*extra, *overrides])
        sc.validate()
        plan.append((sc, title, folder))
    done: list[ScenarioRun] = []
    report = out / "report.html"
    try:
        with progress_bar(sum(sc.duration_s for sc, _, _ in plan) * len(names), enabled=not quiet) as cb:
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
            finish(done, report, title="ratelab demo (interrupted)")
        raise
    finish(done, report, title="ratelab demo")


@cli.command()
@click.argument("paper", type=click.Choice(["lcc", "iris", "dcrc", "cross", "r3net"]))
@click.option("--seeds", type=Number(SEEDS), default=None, metavar="N",
              help="Seeds 1..N per experiment.  [default: the paper's own: lcc 10, iris 5, dcrc 10, cross 10]")
@click.option("-j", "--workers", "--jobs", "jobs", type=Number(WORKERS), default=None, metavar="N",
              help="Simulations run in parallel (worker processes; --jobs is the old spelling).  [default: all cores]")
@click.option("--quick", is_flag=True, help="Shorter runs and fewer cases (a smoke test, not the reproduction).")
@quiet_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("docs/reproductions"),
              show_default=True, help="Folder for <paper>.md and its figures <paper>/*.png.")
@click.option("--duration", type=Number("duration_s"), default=120.0, show_default=True,
              help="r3net only: seconds per trace run.")
@click.option("--model", type=click.Path(dir_okay=False, exists=True), default=None, help="r3net only: ONNX model (default: shipped).")
def reproduce(paper: str, seeds: int | None, jobs: int | None, quick: bool, quiet: bool, out: Path, duration: float,
              model: str | None) -> None:
    """Run PAPER's experiments (several seeds, in parallel) and write <out>/PAPER.md: paper vs ours, claim by claim."""
    if paper == "r3net":
        # Paper 004 Table 1 over the held-out test traces (ratelab.rl.reproduce; needs no torch).
        from ratelab.rl import reproduce as rep

        out.mkdir(parents=True, exist_ok=True)
        args = ["--duration", str(30.0 if quick else duration), "--seed", str(seeds or 1), "--out", str(out / "r3net.md")]
        rep.main(args + (["--model", model] if model else []))
        return
    from ratelab.reproduce import paper as paper_spec, reproduce as run_reproduction

    spec = paper_spec(paper)
    n_seeds = seeds or spec.default_seeds
    from ratelab.campaign.engines import default_workers

    n_jobs = jobs or default_workers()
    command = f"ratelab reproduce {paper} --seeds {n_seeds} --workers {n_jobs}" + (" --quick" if quick else "")
    if out != Path("docs/reproductions"):
        command += f" --out {out}"
    outcome = run_reproduction(spec, list(range(1, n_seeds + 1)), n_jobs, quick, out, command, progress=not quiet)
    checked = [c for c in outcome.claims if c.holds is not None]
    console = make_console()
    console.print(f"{paper}: {sum(1 for c in checked if c.holds)} of {len(checked)} claims hold "
                  f"({outcome.runs} simulations, {outcome.wall_s:.0f} s)", highlight=False)
    for c in checked:
        mark = "holds" if c.holds else "DOES NOT HOLD"
        console.print(f"  [{mark}] {c.section}: {c.what}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"report:  {outcome.path}", highlight=False, soft_wrap=True)
