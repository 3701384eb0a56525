"""Numeric command-line options, checked against ranges declared once.

A flag that sets what a scenario field sets (``emulate --capacity-kbps`` is ``link.capacity_kbps``)
takes that field's range from the core (``scenario/limits.rs``, through
``_core.scenario_limits()``), so a flag and a scenario refuse the same values with the same words;
a flag without a scenario twin (a timeout, a count of workers) declares an explicit
:class:`~ratelab.campaign.plan.Range` here. Every value that is not a finite number in range —
NaN, infinity, ``abc``, an empty string — is one line naming the flag (exit 2), before any work.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import click

from ratelab.campaign.plan import PLAN_LIMITS, Range
from ratelab.errors import one_line

__all__ = ["Number", "OptionError", "scenario_range", "SEED", "TIMEOUT_S", "WORKERS", "REPEATS", "SEEDS"]

#: Random seeds: any unsigned 63-bit integer (the core's RNG seeds are u64; plans use the same range).
SEED = PLAN_LIMITS["seeds[*]"]
#: Seeds 1..N of a campaign or reproduction (as a plan's `seeds = N`).
SEEDS = PLAN_LIMITS["seeds"]
#: Parallel worker processes: more than a thousand on one machine is a typo.
WORKERS = Range(1, 1024, integer=True)
#: Repetitions of one timing (bench): a typo beyond ten thousand.
REPEATS = Range(1, 10_000, integer=True)
#: Waiting for a peer: a day at most (a value beyond is a typo, not a plan).
TIMEOUT_S = Range(0, 86_400, "s", lo_open=True)


class OptionError(click.BadParameter):
    """A bad flag value, printed as ``--flag: <what is wrong>`` (the scenario loader's words with
    the flag in place of the field path; the flag's first long name where it has several)."""

    def format_message(self) -> str:
        names = list(getattr(self.param, "opts", None) or [])
        name = next((n for n in names if n.startswith("--")), names[0] if names else "")
        return one_line(f"{name}: {self.message}" if name else self.message)


@functools.lru_cache(maxsize=None)
def scenario_range(field: str) -> tuple[Range, str]:
    """The core's declared range of scenario ``field`` (a pattern of ``scenario/limits.rs``, e.g.
    ``flows[*].media.max_kbps``) and its text as scenario errors show it."""
    from ratelab.native import core

    for row in core().scenario_limits():
        if row["field"] == field:
            unit = "" if row["unit"] == "probability" else row["unit"]
            return Range(row["min"], row["max"], unit, lo_open=row["min_exclusive"]), row["range"]
    raise KeyError(f"no scenario limit for {field!r} (crates/ratelab-core/src/scenario/limits.rs)")


class Number(click.ParamType):
    """A finite number (an integer if ``integer``) in a range: an explicit :class:`Range`, or the
    range of the scenario field named by a string. ``zero`` admits 0 even where the field's
    range excludes it, saying what 0 means (e.g. ``until Ctrl-C``)."""

    def __init__(self, limit: Range | str, *, integer: bool | None = None, zero: str | None = None):
        self.limit = limit
        self.integer = limit.integer if isinstance(limit, Range) and integer is None else bool(integer)
        self.zero = zero
        self.name = "integer" if self.integer else "number"

    def range(self) -> Range:
        """The accepted range (resolved on first use: the core is not loaded to print --help)."""
        r = self.limit if isinstance(self.limit, Range) else scenario_range(self.limit)[0]
        if self.zero and r.lo == 0:
            r = Range(0, r.hi, r.unit, lo_open=False, integer=r.integer)
        return Range(r.lo, r.hi, r.unit, r.lo_open, self.integer)

    def range_text(self) -> str:
        if isinstance(self.limit, str) and not self.zero:
            return scenario_range(self.limit)[1]
        r = self.range()
        text = f"{'(' if r.lo_open else '['}{_num(r.lo)}, {_num(r.hi)}]{' ' + r.unit if r.unit else ''}"
        return f"{text} (0: {self.zero})" if self.zero else text

    def admits(self, value: Any) -> bool:
        """Whether the value (already a number) is accepted: what :meth:`convert` checks."""
        return self.range().admits(value)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            value = self._parse(str(value), param, ctx)
        elif self.integer and isinstance(value, float):
            if not value.is_integer():
                self.fail_with(f"{_num(value)} is not an integer", param, ctx)
            value = int(value)
        if not self.admits(value):
            kind = "an integer" if self.integer else ""
            self.fail_with(f"{_num(value)} is out of range: must be {kind + ' ' if kind else ''}in {self.range_text()}",
                           param, ctx)
        return value

    def _parse(self, text: str, param, ctx) -> int | float:
        try:
            return int(text.strip(), 10) if self.integer else float(text.strip())
        except ValueError:
            what = "an integer" if self.integer else "a number"
            self.fail_with(f"{text!r} is not {what}", param, ctx)

    def fail_with(self, message: str, param, ctx):
        raise OptionError(message, ctx=ctx, param=param)

    def __repr__(self) -> str:
        return f"Number({self.limit!r})"


def _num(v: float) -> str:
    """A number as the core's messages write it: -5, 0.5, 100000000, 1e12, nan, inf."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if v == 2**63 - 1:
        return "2^63 - 1"
    if float(v).is_integer():
        if abs(v) < 1e9:
            return str(int(v))
        mantissa, exp = f"{float(v):e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exp)}"
    return repr(float(v))

