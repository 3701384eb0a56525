"""Every numeric option of every command answers any value (issue #23): exit 0, or exit 2 with one
``error: ...`` line that names the option; never a traceback, never a hang.

The catalogue is not written here: it is found by walking the ``ratelab`` click tree, so an option
added later is drawn without editing this file, and :func:`test_catalogue_is_complete` fails when a
command appears (it then needs its minimal arguments in :data:`COMMANDS`) or vanishes. Each case
runs the real command in-process with the least it needs to start (a tiny scenario, a short
``--duration``, an address nobody answers); only the long work after the checks is replaced by a
stub that stops the command (:class:`Reached`), never a check.

Whether a value must be accepted comes from the option's declared range (``Number.admits``, the
core's ``scenario_limits()`` for flags that set a scenario field): outside it the command must
refuse naming the option; inside it the command must not refuse it. ``RATELAB_HYPOTHESIS_EXAMPLES``
sets the number of random cases (default 150; docs/reliability.md records a longer local run).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import click
import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ratelab import cli as cli_mod
from ratelab.cli import app as cli_app
from ratelab.cli.options import Number

EXAMPLES = int(os.environ.get("RATELAB_HYPOTHESIS_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
#: Longest a case may take (the real-time commands run ≤ 0.3 s here; a hang fails the case).
CASE_LIMIT_S = 30

#: The commands issue #23 lists, plus the two without numbers at the time (list) or outside its
#: list (demo, which takes --seed).
ISSUE_COMMANDS = {"run", "sweep", "leaderboard", "bench", "live run", "live send", "live recv", "emulate",
                  "reproduce", "train r3net", "query", "tradeoff"}

TINY_SCENARIO = """name = "tiny"
duration_s = 0.3
[link]
capacity_kbps = 1000
queue = { ms = 300 }
[[flows]]
kind = "media"
controller = "gcc"
"""
TINY_PLAN = """name = "tiny"
controllers = ["gcc"]
scenarios = ["rmcat-5.1"]
set = ["duration_s=1"]
"""


class Reached(Exception):
    """Raised by a stub of a command's long work: every check before it has passed."""


def reached(*_a, **_k):
    raise Reached


@dataclass
class Command:
    """The least a command needs to start: arguments (``{tmp}`` is a fresh folder), the long work
    stubbed out, and what a run with valid numbers may still end with (exit 2, a message that
    does not come from the option)."""

    args: list[str]
    stubs: list[tuple[str, str]] = field(default_factory=list)
    expected_failure: str = r"^$"
    #: Options whose valid values are waited out in real time: a valid value becomes 0.25 s.
    real_time: set[str] = field(default_factory=set)


COMMANDS: dict[str, Command] = {
    "run": Command(["run", "{tmp}/s.toml", "-q", "--no-packets", "--out", "{tmp}/out"],
                   [("ratelab.cli.app.finish", "noop")]),
    "live run": Command(["live", "run", "{tmp}/s.toml", "-q", "--no-packets", "--out", "{tmp}/out"],
                        [("ratelab.cli.app.finish", "noop")]),
    "live send": Command(["live", "send", "--to", "127.0.0.1:9", "--duration", "0.25", "--timeout", "0.25"],
                         expected_failure=r"peer fell silent|no feedback",
                         real_time={"--duration", "--timeout"}),
    "live recv": Command(["live", "recv", "--listen", "127.0.0.1:0", "--timeout", "0.25"],
                         expected_failure=r"^error: live recv: no RTP packet arrived",
                         real_time={"--timeout", "--duration"}),
    "emulate": Command(["emulate", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--capacity-kbps", "1000",
                        "--duration", "0.25"], real_time={"--duration"}),
    "bench": Command(["bench", "-s", "{tmp}/s.toml", "--repeat", "1"], [("ratelab.cli.commands.run_scenario", "reached")]),
    "demo": Command(["demo", "--out", "{tmp}/out", "-c", "gcc"], [("ratelab.cli.commands.run_scenario", "reached")]),
    "reproduce": Command(["reproduce", "dcrc", "--quick", "--out", "{tmp}/out"], [("ratelab.reproduce.reproduce", "reached")]),
    "sweep": Command(["sweep", "{tmp}/plan.toml", "--dry-run", "--out", "{tmp}/out"]),
    "leaderboard": Command(["leaderboard", "-c", "gcc", "--out", "{tmp}/out"],
                           [("ratelab.campaign.sweep.plan_specs", "reached")]),
    "train r3net": Command(["train", "r3net", "--out", "{tmp}/out"], [("ratelab.rl.train.Trainer", "reached")]),
    "query": Command(["query", "{tmp}/no-campaign", "select 1"], expected_failure=r"^error: .*no-campaign"),
    "tradeoff": Command(["tradeoff", "{tmp}/no-campaign"], expected_failure=r"^error: .*no-campaign"),
    "list": Command(["list"]),
}


def walk(cmd: click.Command, path: tuple[str, ...] = ()):
    """(name, command) of every leaf command under ``cmd``, groups included."""
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            yield from walk(sub, path + (name,))
    else:
        yield " ".join(path), cmd


NUMERIC = (click.types.IntParamType, click.types.FloatParamType, Number)


def catalogue() -> dict[str, list[click.Option]]:
    """Every command and its numeric options (as the click tree declares them)."""
    return {name: [p for p in cmd.params if isinstance(p, click.Option) and not p.is_flag and isinstance(p.type, NUMERIC)]
            for name, cmd in walk(cli_app.cli)}


CATALOGUE = catalogue()
CASES = [(name, opt) for name, opts in CATALOGUE.items() for opt in opts]


def test_catalogue_is_complete():
    assert set(CATALOGUE) == set(COMMANDS), "a command without minimal arguments here, or one that vanished"
    assert ISSUE_COMMANDS <= set(CATALOGUE)
    # Every command with a number is drawn; the count is what docs/reliability.md reports.
    assert len(CASES) >= 50
    assert {name for name, _ in CASES} >= ISSUE_COMMANDS - {"query", "tradeoff"}


def test_every_numeric_option_declares_its_range():
    """A bare ``type=float`` takes NaN, infinity and 1e300: every number goes through Number."""
    loose = [f"{name} {opt.opts[-1]}" for name, opt in CASES if not isinstance(opt.type, Number)]
    assert loose == []


def admitted(opt: click.Option, text: str) -> bool:
    """Whether ``text`` is a value the option's declared range accepts (the oracle)."""
    t: Number = opt.type
    try:
        v = int(text.strip(), 10) if t.integer else float(text.strip())
    except ValueError:
        return False
    return t.range().admits(v)


def run_case(name: str, opt: click.Option, text: str) -> tuple[int, str, bool]:
    """Run command ``name`` with ``opt`` set to ``text``; (exit code, stderr, valid)."""
    spec = COMMANDS[name]
    valid = admitted(opt, text)
    if valid and opt.opts[0] in spec.real_time:
        text = "0.25"
    long = next((o for o in opt.opts if o.startswith("--")), opt.opts[0])
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "s.toml").write_text(TINY_SCENARIO)
        Path(tmp, "plan.toml").write_text(TINY_PLAN)
        args = [a.replace("{tmp}", tmp) for a in spec.args] + [f"{long}={text}"]
        err = io.StringIO()
        with contextlib.ExitStack() as stack:
            for target, what in spec.stubs:
                stack.enter_context(mock.patch(target, reached if what == "reached" else (lambda *a, **k: None)))
            stack.enter_context(contextlib.redirect_stderr(err))
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            stack.enter_context(_time_limit(CASE_LIMIT_S))
            try:
                rc = cli_mod.main(args)
            except Reached:
                rc = 0
    return rc, err.getvalue(), valid


@contextlib.contextmanager
def _time_limit(seconds: int):
    def hang(*_):
        raise TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check(name: str, opt: click.Option, text: str) -> None:
    rc, err, valid = run_case(name, opt, text)
    lines = err.strip().splitlines()
    where = f"ratelab {name} {opt.opts[-1]}={text!r}: exit {rc}, stderr {err!r}"
    assert "Traceback" not in err, where
    if not valid:
        assert rc == 2, where
        assert len(lines) == 1 and lines[0].startswith("error: "), where
        assert any(o in lines[0] for o in opt.opts), where
        return
    if rc == 2:  # a valid number: only what the command's minimal arguments end with, or a relation
        assert len(lines) == 1 and lines[0].startswith("error: "), where
        assert re.search(COMMANDS[name].expected_failure, lines[0]) or any(o in lines[0] for o in opt.opts), where
    else:
        assert rc == 0, where


#: Values every option is tried with (besides the random draws).
FIXED = ["-1", "0", "1", "0.5", "1e12", "nan", "inf", "-inf", "abc", "", "1e400"]


@pytest.mark.parametrize("name,opt", CASES, ids=[f"{n}:{o.opts[-1]}" for n, o in CASES])
def test_fixed_values(core, name, opt):
    for text in FIXED:
        check(name, opt, text)


def _number_text(v) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return repr(v) if isinstance(v, float) else str(v)


def values_for(opt: click.Option):
    """Anything, and often a number inside the option's range (so that the run goes on)."""
    r = opt.type.range()
    inside = (st.integers(int(math.ceil(r.lo)), int(min(r.hi, 2**63 - 1))) if opt.type.integer
              else st.floats(r.lo, r.hi, exclude_min=r.lo_open, allow_nan=False))
    return st.one_of(
        inside.map(_number_text), inside.map(_number_text),
        st.floats(allow_nan=True, allow_infinity=True).map(_number_text),
        st.integers(-(2**70), 2**70).map(str),
        st.sampled_from(["-0", "1e-300", "1e308", "NaN", "Infinity", "0x10", "1_000", "5e", "--", "१२", " 7 "]),
        st.text(max_size=12),
    )


cases = st.sampled_from(CASES).flatmap(lambda c: st.tuples(st.just(c), values_for(c[1])))


@SETTINGS
@given(case=cases)
def test_random_values(core, case):
    (name, opt), text = case
    hypothesis.event("in range" if admitted(opt, text) else "refused")  # pytest --hypothesis-show-statistics
    check(name, opt, text)


#: Issue #23's table: the exact line each answers.
ISSUE_TABLE = [
    (["emulate", "--capacity-kbps", "-5"], "error: --capacity-kbps: -5 is out of range: must be in (0, 100000000] kbit/s"),
    (["emulate", "--capacity-kbps", "1e12"], "error: --capacity-kbps: 1e12 is out of range: must be in (0, 100000000] kbit/s"),
    (["emulate", "--capacity-kbps", "1000", "--loss", "2"], "error: --loss: 2 is out of range: must be in [0, 1]"),
    (["emulate", "--capacity-kbps", "1000", "--delay-ms", "-1"], "error: --delay-ms: -1 is out of range: must be in [0, 10000] ms"),
    (["emulate", "--capacity-kbps", "1000", "--delay-ms", "1e12"], "error: --delay-ms: 1e12 is out of range: must be in [0, 10000] ms"),
    (["emulate", "--capacity-kbps", "1000", "--queue-ms", "0"], "error: --queue-ms: 0 is out of range: must be in (0, 600000] ms"),
    (["emulate", "--capacity-kbps", "1000", "--queue-packets", "-3"],
     "error: --queue-packets: -3 is out of range: must be an integer in [0, 10000000] packets"),
    (["emulate", "--capacity-kbps", "1000", "--duration", "-1"],
     "error: --duration: -1 is out of range: must be in [0, 604800] s (0: until Ctrl-C)"),
    (["emulate", "--capacity-kbps", "nan"], "error: --capacity-kbps: nan is out of range: must be in (0, 100000000] kbit/s"),
    (["emulate", "--capacity-kbps", "fast"], "error: --capacity-kbps: 'fast' is not a number"),
]


@pytest.mark.parametrize("extra,line", ISSUE_TABLE, ids=[" ".join(a[1:]) for a, _ in ISSUE_TABLE])
def test_issue_table(cli, extra, line):
    # A short --duration first: were a value let through, the emulator would stop soon and exit 0.
    r = cli(extra[0], "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--duration", "0.2", *extra[1:], timeout=60)
    assert (r.returncode, r.stderr.strip()) == (2, line)


def test_recv_timeout_is_refused_not_waited(cli):
    r = cli("live", "recv", "--listen", "127.0.0.1:0", "--timeout", "-1", timeout=60)
    assert (r.returncode, r.stderr.strip()) == (2, "error: --timeout: -1 is out of range: must be in (0, 86400] s")


def test_flag_ranges_are_the_scenario_fields():
    """The emulator's flags refuse what the scenario loader refuses for the same field."""
    want = {"--capacity-kbps": "link.capacity_kbps", "--loss": "link.loss", "--queue-ms": "link.queue.ms",
            "--queue-packets": "link.queue.packets", "--delay-ms": "flows[*].one_way_delay_ms"}
    opts = {o.opts[0]: o for o in CATALOGUE["emulate"]}
    for flag, fieldname in want.items():
        assert opts[flag].type.limit == fieldname


def test_unbindable_address_is_one_line(cli):
    """Found while writing these tests: an address that cannot be bound was an OSError traceback."""
    r = cli("live", "recv", "--listen", "192.0.2.1:5004", "--timeout", "0.2", timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: live recv: cannot bind 192.0.2.1:5004"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unknown_env_config_key_is_one_line(cli, tmp_path):
    """Found likewise: a key the environment does not know was the core's error as a traceback."""
    r = cli("train", "r3net", "--env-config", '{"bogus": 1}', "--steps", "1", "--out", str(tmp_path / "t"), timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error: --env-config: bogus: unknown field `bogus`"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
