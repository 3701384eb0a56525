"""The campaign commands of ``ratelab``: sweep, leaderboard, query, tradeoff (registered on the
command group of cli.py when it is imported)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ratelab.campaign.plan import MAX_DURATION_S, Range
from ratelab.cli.app import CONTEXT, cli, make_console, param_option
from ratelab.cli.options import SEEDS, WORKERS, Number
from ratelab.errors import InputError, one_line
from ratelab.run.runner import check_controllers


def execution_options(command):
    """How a campaign's runs execute, shared by `sweep` and `leaderboard`: where Ray tasks put
    their files, how many runs at once, and the line per finished run."""
    for option in reversed([
        click.option("--ray-files", type=click.Choice(["object-store", "shared"]), default="object-store", show_default=True,
                     help="Ray: object-store returns each run's files to this machine (nodes need no shared disk); "
                          "shared: tasks write into --out themselves (every node must mount it at the same path)."),
        click.option("-j", "--workers", type=Number(WORKERS), default=None, help="Parallel runs.  [default: all cores]"),
        click.option("-q", "--quiet", is_flag=True, help="No line per finished run."),
    ]):
        command = option(command)
    return command


@cli.command()
@click.argument("plan", required=False)
@click.option("--out", default=None, metavar="DIR|URI",
              help="Parent folder of the campaign folder, or a pyarrow.fs URI (s3://bucket/prefix, gs://..., "
                   "file:///...).  [default: the plan's `out`, else results]")
@click.option("--dry-run", is_flag=True, help="Print the number of runs (and how many are done) without running.")
@click.option("--status", "show_status", is_flag=True, help="Show done / failed / pending runs of the campaign.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local: a process pool on this machine; ray: Ray tasks (pip install 'ratelab[ray]').")
@click.option("--address", default=None, metavar="ADDR", help="Ray cluster address (auto, ray://HOST:10001, HOST:6379); default: start a local Ray.")
@param_option
@execution_options
def sweep(plan: str | None, out: str | None, dry_run: bool, show_status: bool, engine: str, address: str | None,
          params: tuple[str, ...], ray_files: str, workers: int | None, quiet: bool) -> int:
    """Run a campaign PLAN (a plan TOML file or a built-in plan such as `rmcat`): every controller ×
    scenario × parameter value × seed, one hive-style Parquet folder per run. Rerunning resumes."""
    from ratelab.campaign.plan import builtin_plans, load_plan, with_params
    from ratelab.campaign.sweep import campaign_root, campaign_status, local_root, plan_specs, run_sweep

    if plan is None:
        raise click.UsageError(f"missing PLAN (a plan file or one of: {', '.join(builtin_plans())})")
    p = with_params(load_plan(plan), params)
    root = campaign_root(p, out)
    specs = plan_specs(p)
    if dry_run or show_status:
        st = campaign_status(root, specs)
        if dry_run:
            click.echo(f"{len(specs)} runs in campaign '{p.name}' ({root}): "
                       f"{len(st['done'])} done, {len(st['failed'])} failed, {len(st['pending'])} to run")
            _validate_specs(specs)
            return 0
        click.echo(f"campaign {p.name} ({root})")
        click.echo(f"done {len(st['done'])}  failed {len(st['failed'])}  pending {len(st['pending'])}  total {len(specs)}")
        from ratelab.campaign.store import failures

        failed = set(st["failed"])
        for f in failures(local_root(root)):
            if f.get("run_id") in failed:
                click.echo(f"failed  {f['run_id']}: {f.get('error', '')}")
        return 0
    interactive = sys.stderr.isatty()
    eta = _eta_clock()

    def on_run(summary: dict, res) -> None:
        if quiet:
            return
        n = res.skipped + res.done + res.failed + res.lost
        st = summary.get("status")
        extra = f"{summary.get('wall_s', 0):.1f} s" if st == "done" else summary.get("error", "")
        click.echo(f"[{n}/{res.total}] {st:<6} {summary['run_id']}  {extra}  ETA {eta(res)}", err=True)
        if interactive:
            sys.stderr.flush()

    res = run_sweep(p, root, engine=engine, workers=workers, address=address, ray_files=ray_files, on_run=on_run, specs=specs)
    click.echo(f"campaign {p.name}: {res.total} runs; ran {res.executed} in {res.wall_s:.1f} s "
               f"({res.runs_per_s:.2f} runs/s), {res.skipped} already done; "
               f"done {res.done + res.skipped}, failed {res.failed}, pending {res.lost + res.total - res.skipped - res.executed - res.lost}")
    for run_id, err in res.errors[:20]:
        click.echo(f"failed  {run_id}: {err}", err=True)
    for run_id, why in res.lost_runs[:20]:
        click.echo(f"lost    {run_id}: {why} (pending: the next sweep runs it)", err=True)
    click.echo(f"results: {root}")
    return 0


@cli.command()
@click.option("--traces", "traces", default=None, metavar="DIR",
              help="Folder (or glob) of trace files.  [default: the traces shipped with ratelab]")
@click.option("-c", "--controller", "controllers", multiple=True, metavar="NAME",
              help="Controllers to rank.  [default: every controller but fixed]")
@click.option("--seeds", type=Number(SEEDS), default=3, show_default=True, help="Seeds per trace (1..N).")
@click.option("--duration", type=Number(Range(1, MAX_DURATION_S, "s")), default=60, show_default=True,
              help="Simulated seconds per run (traces loop).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True,
              help="Parent folder of the campaign folder `leaderboard/`.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="HTML file.  [default: <out>/leaderboard/leaderboard.html]")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--address", default=None, metavar="ADDR", help="Ray cluster address (with --engine ray).")
@param_option
@execution_options
def leaderboard(traces: str | None, controllers: tuple[str, ...], seeds: int, duration: float, out: Path, report: Path | None,
                engine: str, address: str | None, params: tuple[str, ...], ray_files: str, workers: int | None, quiet: bool) -> int:
    """Every controller over every real trace × seeds, ranked in one self-contained HTML page."""
    from ratelab.report.leaderboard import leaderboard_plan, write_leaderboard
    from ratelab.scenario import TRACE_DIR
    from ratelab.campaign.sweep import campaign_root, plan_specs, run_sweep

    check_controllers(controllers)
    from ratelab.campaign.plan import with_params

    p = with_params(leaderboard_plan(traces or TRACE_DIR, controllers, seeds, duration), params)
    root = campaign_root(p, out)
    specs = plan_specs(p)

    eta = _eta_clock()

    def on_run(summary: dict, res) -> None:
        if not quiet:
            n = res.skipped + res.done + res.failed + res.lost
            click.echo(f"[{n}/{res.total}] {summary.get('status'):<6} {summary['run_id']}  ETA {eta(res)}", err=True)

    res = run_sweep(p, root, engine=engine, workers=workers, address=address, ray_files=ray_files, on_run=on_run, specs=specs)
    path = write_leaderboard(root, report or root / "leaderboard.html")
    click.echo(f"leaderboard: {res.total} runs ({res.skipped} already done, ran {res.executed} in {res.wall_s:.1f} s, "
               f"failed {res.failed}); campaign {root}")
    click.echo(f"report:  {path}")
    return 0


def _eta_clock():
    """A function of a sweep's counts giving the time left (H:MM:SS) at the rate so far."""
    import time

    from ratelab.run.runner import clock

    t0 = time.monotonic()

    def eta(res) -> str:
        executed = res.done + res.failed + res.lost
        left = res.total - res.skipped - executed
        return clock((time.monotonic() - t0) / executed * left) if executed else "?"

    return eta


def _validate_specs(specs) -> None:
    """--dry-run: check each distinct scenario document once; report the invalid ones."""
    import json

    from ratelab.errors import InputError
    from ratelab.scenario import Scenario

    seen: dict[str, str | None] = {}
    bad = 0
    for s in specs:
        key = json.dumps(s.scenario_doc, sort_keys=True, default=str)
        if key not in seen:
            try:
                Scenario(s.scenario_doc, s.scenario).validate()
                seen[key] = None
            except InputError as exc:
                seen[key] = exc.line()
        if seen[key]:
            bad += 1
            click.echo(f"invalid {s.run_id}: {seen[key]}")
    if bad:
        click.echo(f"{bad} runs would fail on invalid input")


@cli.command()
@click.argument("campaign")
@click.argument("sql")
@click.option("--out", default="results", show_default=True, metavar="DIR|URI",
              help="Parent folder (or pyarrow.fs URI) where CAMPAIGN is looked up (unless CAMPAIGN is a folder or URI itself).")
@click.option("--format", "fmt_", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def query(campaign: str, sql: str, out: str, fmt_: str) -> None:
    """Run SQL (DuckDB) over a campaign's Parquet files: views flows, runs, series, packets, failures.

    SQL is the query text, or the name of a file ending in .sql that holds it
    (e.g. tools/rmcat_table.sql)."""
    from ratelab.campaign.remote import find_campaign
    from ratelab.campaign.store import connect

    if sql.strip().lower().endswith(".sql") and "\n" not in sql:
        path = Path(sql.strip())
        try:
            sql = path.read_text()
        except OSError as exc:
            raise InputError("query", str(path), f"cannot read the SQL file ({exc.strerror or exc})") from None
    root = find_campaign(campaign, out)
    import duckdb

    from ratelab.campaign.summary import views_named

    con = connect(root, views_named(sql))  # series/packets views only when the SQL names them
    try:
        rel = con.execute(sql)
        cols = [d[0] for d in rel.description] if rel.description else []
        rows = rel.fetchall() if cols else []
    except duckdb.Error as exc:
        raise InputError("query", "", one_line(str(exc))) from None
    finally:
        con.close()
    if fmt_ == "csv":
        import csv

        w = csv.writer(sys.stdout)
        w.writerow(cols)
        w.writerows(rows)
        return
    if fmt_ == "json":
        import json

        from ratelab.run.results import strict_json

        click.echo(json.dumps([strict_json(dict(zip(cols, r))) for r in rows], default=str))
        return
    from rich.table import Table

    t = Table()
    for c in cols:
        t.add_column(c)
    for r in rows:
        t.add_row(*(_cell(v) for v in r))
    make_console().print(t)


@cli.command()
@click.argument("campaign")
@click.option("--out", default="results", show_default=True, metavar="DIR|URI",
              help="Parent folder (or pyarrow.fs URI) where CAMPAIGN is looked up (unless CAMPAIGN is a folder or URI itself).")
@click.option("--split", "splits", type=click.Choice(["all", "train", "test"]), multiple=True,
              help="Traces to average over (traces/split.csv); repeat for several tables.  [default: all, train, test]")
@click.option("--reference", default="oracle", show_default=True, help="Controller whose p95 the others are compared to.")
@click.option("--format", "fmt_", type=click.Choice(["markdown", "csv", "json"]), default="markdown", show_default=True)
@click.option("--per-run", is_flag=True, help="Print one row per run (controller, trace, seed, the trace's split) instead; --split train|test keeps those runs only.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the Pareto plot (utilization against p95, one panel per split) to this PNG.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the campaign's HTML page (the leaderboard page: this summary against the oracle, "
                   "Pareto plots, CDFs, ranking, per-trace panels) to this file.")
def tradeoff(campaign: str, out: str, splits: tuple[str, ...], reference: str, fmt_: str, per_run: bool,
             plot_path: Path | None, report_path: Path | None) -> None:
    """Utilization of min(capacity, media max) and p95 queuing delay per controller of a trace
    campaign (e.g. `ratelab sweep real`), as means over traces and seeds, against the oracle."""
    import json

    from ratelab.run.results import strict_json
    from ratelab.report.tradeoff import markdown, plot, run_rows, summarize, trace_splits

    from ratelab.campaign.remote import find_campaign

    root = find_campaign(campaign, out)
    if not (root / "plan.json").is_file():
        raise InputError(campaign, "", f"no plan.json in the campaign folder {root}")
    if plot_path is not None and plot_path.suffix.lower() != ".png":
        raise InputError("--plot", str(plot_path), "the plot is written as PNG: give a file name ending in .png")
    if report_path is not None and report_path.suffix.lower() not in (".html", ".htm"):
        raise InputError("--report", str(report_path), "the page is written as HTML: give a file name ending in .html")
    rows = run_rows(root)
    of = trace_splits(rows)
    summaries = {sp: summarize(rows, sp, of, reference=reference) for sp in (splits or ("all", "train", "test"))}
    if per_run:
        # Each run with its trace's split; --split keeps only those splits' runs (default: all).
        keep = set(splits) if splits and "all" not in splits else {"train", "test"}
        tables = {"runs": [{**r, "split": of[r["scenario"]]} for r in rows if of[r["scenario"]] in keep]}
    else:
        tables = summaries
    if plot_path is not None:
        plot_path.parent.mkdir(parents=True, exist_ok=True)
        plot(summaries, plot_path)
    if report_path is not None:
        from ratelab.report.leaderboard import write_leaderboard

        report_path.parent.mkdir(parents=True, exist_ok=True)
        write_leaderboard(root, report_path, title=f"ratelab campaign {root.name}", tradeoff_rows=rows)
        click.echo(f"report: {report_path}", err=True)
    if fmt_ == "json":
        click.echo(json.dumps({k: [strict_json(r) for r in v] for k, v in tables.items()}))
        return
    for name, table in tables.items():
        if fmt_ == "csv" or per_run:
            import csv

            w = csv.writer(sys.stdout)
            cols = list(table[0]) if table else []
            w.writerow(["split", *cols] if not per_run else cols)
            for r in table:
                w.writerow(([name] if not per_run else []) + [r[c] for c in cols])
            continue
        click.echo(f"\n{name} traces\n")
        click.echo(markdown(table, reference))
    if plot_path is not None and fmt_ == "markdown" and not per_run:
        click.echo(f"\n![Pareto plot: utilization against p95 queuing delay, {reference} as reference]({plot_path})")


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)
