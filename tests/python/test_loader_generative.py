"""Generative test of the loader (hypothesis): random scenario TOML documents, random ``--set``
keys and values, random plan files, through the real command line (in-process) and core.

Every case must end with exit 0, or exit 2 and exactly one ``error: ...`` line on stderr, within
a few seconds; an exception escaping ``main`` (a traceback for the user) fails the test.
``RATELAB_HYPOTHESIS_EXAMPLES`` sets the number of cases per test (CI: 200; docs/reliability.md
records a longer local run).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from conftest import require

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ratelab import cli as cli_mod  # noqa: E402
from ratelab.cli import app as cli_app  # noqa: E402

EXAMPLES = int(os.environ.get("RATELAB_HYPOTHESIS_EXAMPLES", "200"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=10_000, derandomize=True, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

#: Field paths of the schema (and a few near misses) for mutations and --set keys.
PATHS = [
    "name", "description", "duration_s", "link", "link.capacity_kbps", "link.steps", "link.steps[0]", "link.trace",
    "link.trace_format", "link.trace_scale", "link.trace_loop", "link.mahimahi_bin_ms", "link.queue", "link.queue.ms",
    "link.queue.bytes", "link.queue.packets", "link.queue.rate_kbps", "link.loss", "link.loss_start_s",
    "link.loss_after_queue", "link.gilbert_elliott", "link.gilbert_elliott.p_good_to_bad", "link.delay_ms",
    "reverse_link", "reverse_link.capacity_kbps", "reverse_link.queue.packets", "flows", "flows[0]", "flows[1]",
    "flows[0].kind", "flows[0].direction", "flows[0].controller", "flows[0].params", "flows[0].params.profile",
    "flows[0].start_s", "flows[0].stop_s", "flows[0].one_way_delay_ms", "flows[0].return_delay_ms", "flows[0].count",
    "flows[0].label", "flows[0].media", "flows[0].media.fps", "flows[0].media.min_kbps", "flows[0].media.max_kbps",
    "flows[0].media.start_kbps", "flows[0].media.max_payload_bytes", "flows[0].media.keyframe_interval_s",
    "flows[0].media.quality_model", "flows[0].feedback.mode", "flows[0].feedback.interval_ms", "flows[0].pauses",
    "flows[0].tcp", "flows[0].tcp.mss_bytes", "flows[0].on_off", "metrics", "metrics.series_interval_ms",
    "metrics.packet_log", "flows[5].start_s", "link.nope", "flows.x", "flows[0].media.fpz", "", ".", "a..b", "flows[-1]",
]

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 0.5, 1e12, 1e-300, 2**31, 2**63, 600, 100000]),
)
plausible = st.one_of(st.floats(min_value=0, max_value=2000), st.integers(min_value=0, max_value=2000))
scalars = st.one_of(plausible, plausible, numbers, st.booleans(), st.text(max_size=12),
                    st.sampled_from(["gcc", "media", "tcp", "reverse", "auto", "twcc", "per-packet", "newreno"]))
keys = st.one_of(st.sampled_from(["kind", "ms", "capacity_kbps", "controller", "x", "count"]), st.text(max_size=8))
values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(keys, c, max_size=4)),
                      max_leaves=8)


def toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")) if not math.isfinite(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{toml_key(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_doc(d: dict) -> str:
    return "".join(f"{toml_key(k)} = {toml_value(v)}\n" for k, v in d.items())


def base_scenario() -> dict:
    return {"name": "gen", "duration_s": 1.0, "link": {"capacity_kbps": 1000, "queue": {"ms": 300}},
            "flows": [{"kind": "media", "media": {"min_kbps": 150, "max_kbps": 1500, "start_kbps": 300}},
                      {"kind": "tcp", "start_s": 0.5}]}


def _set(doc: dict, path: str, value) -> None:
    """Best-effort structural mutation (junk paths just add junk keys)."""
    parts = [p for p in re.sub(r"\[(\d+)\]", r".\1", path).split(".") if p]
    node = doc
    for p in parts[:-1]:
        if isinstance(node, list) and p.isdigit() and int(p) < len(node):
            node = node[int(p)]
        elif isinstance(node, dict):
            node = node.setdefault(p, {}) if not isinstance(node.get(p), (dict, list)) else node[p]
        else:
            return
        if not isinstance(node, (dict, list)):
            return
    if parts and isinstance(node, dict):
        node[parts[-1]] = value


def bounded(path: str, value):
    """Keep valid-but-long work out of the test (the run itself is not under test here): a valid
    duration becomes ≤ 2 s, a valid flow count ≤ 3, a valid rate ≤ 5 Mbit/s."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return value
    if path.endswith("duration_s"):
        return min(value, 2.0)
    if path.endswith("count"):
        return min(value, 3)
    if path.endswith("_kbps") or path.endswith("steps[0]"):
        return min(value, 5000)
    return value


def run_cli(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    # The report and plots are not the loader: skip them to keep each case cheap.
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
            mock.patch.object(cli_app, "finish", lambda *a, **k: None):
        rc = cli_mod.main(args)
    return rc, err.getvalue()


def check_outcome(rc: int, err: str) -> None:
    hypothesis.event(f"exit {rc}")  # shown by pytest --hypothesis-show-statistics
    assert rc in (0, 2), (rc, err)
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err


#: A field value: mostly a plausible number (so that a fair share of cases is valid and runs), else anything.
field_values = st.one_of(plausible, plausible, plausible, values)
sets = st.lists(st.tuples(st.sampled_from(PATHS), field_values), max_size=2)
raw_sets = st.one_of(st.just([]), st.just([]), st.just([]), st.lists(st.text(max_size=30), max_size=2))
#: Mostly documents built from the schema, sometimes arbitrary text.
garbage_text = st.one_of(st.none(), st.none(), st.none(), st.none(), st.text(max_size=200))


@SETTINGS
@given(mutations=st.lists(st.tuples(st.sampled_from(PATHS), field_values), max_size=3), overrides=sets, raw=raw_sets,
       garbage=garbage_text)
def test_random_scenarios_and_overrides_end_cleanly(core, mutations, overrides, raw, garbage):
    doc = base_scenario()
    for path, value in mutations:
        _set(doc, path, bounded(path, value))
    text = garbage if garbage is not None else toml_doc(doc)
    args = [f"{path}={toml_value(bounded(path, v))}" for path, v in overrides] + raw
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "s.toml"
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
        cmd = ["run", str(f), "-q", "--no-packets", "--out", str(Path(tmp) / "out")]
        for a in args:
            cmd += ["--set", a]
        check_outcome(*run_cli(cmd))


PLAN_KEYS = ["name", "description", "controllers", "scenarios", "traces", "trace_duration_s", "seeds", "set",
             "packets", "grid", "params", "exclude", "include", "out", "bogus"]
plan_values = st.one_of(values, st.sampled_from([["gcc"], "all", ["rmcat-5.1"], ["cellular"], 3, [1, 2], ["duration_s=1"],
                                                 {"link.loss": [0, 0.1]}, {"gcc": {"profile": ["m84"]}},
                                                 [{"controller": "gcc"}]]))


@SETTINGS
@given(changes=st.dictionaries(st.sampled_from(PLAN_KEYS), plan_values, max_size=3), garbage=garbage_text)
@example(changes={"name": ["gcc"], "scenarios": 3}, garbage=None)  # found by a local run: a traceback before the fix
@example(changes={"packets": "yes", "out": 5}, garbage=None)
def test_random_plans_end_cleanly(core, changes, garbage):
    plan = {"name": "gen", "controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "set": ["duration_s=1"], **changes}
    # Valid but large work is bounded as for scenarios (the dry run validates every run).
    if isinstance(plan.get("seeds"), int) and not isinstance(plan.get("seeds"), bool) and plan["seeds"] > 3:
        plan["seeds"] = 3
    if isinstance(plan.get("seeds"), list):
        plan["seeds"] = plan["seeds"][:3]
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "plan.toml"
        f.write_text(garbage if garbage is not None else toml_doc(plan), encoding="utf-8", errors="surrogatepass")
        check_outcome(*run_cli(["sweep", str(f), "--dry-run", "--out", str(Path(tmp) / "out")]))
