"""The ``ratelab`` command line: run, list, bench, demo, reproduce, train, sweep, leaderboard,
query, tradeoff, live, emulate.

Exit codes: 0 ok, 2 bad input, 130 interrupted (Ctrl-C; 128 + SIGINT, as a shell reports it).
Bad input of any kind is reported as one line ``error: <file>: <field>: <what is wrong>`` on
stderr, never as a traceback.
"""

from __future__ import annotations

import os
from typing import Sequence

import click

from ratelab.cli import campaign, commands, live  # noqa: F401  (each registers its commands on `cli`)
from ratelab.cli.app import DEBUG, EXIT_INTERRUPTED, cli
from ratelab.errors import InputError, one_line
from ratelab.run.runner import Interrupted

__all__ = ["cli", "main"]


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
        if tb and DEBUG["on"]:
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
