"""Golden summaries: the simulator's results, bit for bit, for every built-in scenario and every
built-in controller (issue 16: speed work must not change any result it does not mean to).

Each case runs a built-in scenario (shortened to at most ``CAP_S`` simulated seconds, packet log
off) and compares, exactly, every number of ``Simulation.summary()`` and a SHA-256 of every
column of the time series against ``data/golden_summary.json``. Floats are compared as Python
floats read back from JSON, which round-trips f64 exactly.

A change that is *meant* to change results regenerates the file, and the diff of the file is then
part of the change to review:

    RATELAB_BLESS=1 pytest -q tests/python/test_golden_summary.py

(the test then writes the file and fails, so that a blessed run is never mistaken for a pass).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from ratelab.native import runnable_controller_names
from ratelab.scenario import builtin_names, load_scenario

GOLDEN = Path(__file__).parent / "data" / "golden_summary.json"
CAP_S = 40.0
SEED = 3
# Controllers that need a user file (a model or a Python class) have no built-in default to run.
NEEDS_FILE = {"onnx"}


def cases() -> list[tuple[str, str | None]]:
    """Every built-in scenario as written, and every built-in controller on RFC 8867 5.1 and on
    the three-flow bench case (multi-flow interactions)."""
    out: list[tuple[str, str | None]] = [(s, None) for s in builtin_names()]
    for c in sorted(set(runnable_controller_names()) - NEEDS_FILE):
        out += [("rmcat-5.1", c), ("bench-three", c)]
    return out


def digest(column) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(column, dtype=np.float64)).tobytes()).hexdigest()[:16]


def run_case(core, scenario: str, controller: str | None) -> dict:
    sc = load_scenario(scenario, ["metrics.packet_log=false"])
    if sc.duration_s > CAP_S:
        sc = sc.with_overrides([f"duration_s={CAP_S:g}"])
    sim = core.Simulation(sc.to_json(), seed=SEED, controller=controller)
    sim.run()
    series = sim.take_series()
    return {"summary": sim.summary(), "series": {k: digest(v) for k, v in sorted(series.items())},
            "series_rows": int(len(series["t_s"]))}


def differences(want, got, path: str = "") -> list[str]:
    """Paths where two JSON-like values differ (NaN equals NaN; floats compared exactly)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}.{k}: missing" for k in want.keys() - got.keys()]
        out += [f"{path}.{k}: new" for k in got.keys() - want.keys()]
        for k in sorted(want.keys() & got.keys()):
            out += differences(want[k], got[k], f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items, now {len(got)}"]
        return [d for i, (a, b) in enumerate(zip(want, got)) for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(want, float) and isinstance(got, float) and math.isnan(want) and math.isnan(got):
        return []
    return [] if want == got and type(want) is type(got) else [f"{path}: {want!r} -> {got!r}"]


def key(scenario: str, controller: str | None) -> str:
    return f"{scenario} / {controller or 'as written'}"


def test_every_result_equals_the_golden_file(core):
    got = {key(s, c): run_case(core, s, c) for s, c in cases()}
    # through JSON, so that both sides have the same types (tuples, None for NaN, ...)
    got = json.loads(json.dumps(got, sort_keys=True))
    if os.environ.get("RATELAB_BLESS"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.fail(f"RATELAB_BLESS: wrote {len(got)} cases to {GOLDEN}; review its diff, then run without RATELAB_BLESS")
    want = json.loads(GOLDEN.read_text())
    diffs = [f"{k}{d}" for k in sorted(want.keys() | got.keys())
             for d in (differences(want[k], got[k]) if k in want and k in got else [": case missing" if k in want else ": new case"])]
    assert not diffs, (f"{len(diffs)} results differ from {GOLDEN.name} (regenerate with RATELAB_BLESS=1 only if the "
                       "change is meant to change them):\n" + "\n".join(diffs[:60]))


def test_the_comparison_catches_a_changed_number():
    """The check above can fail: one ulp in one nested number is a difference."""
    a = {"flows": [{"owd_ms_p95": 71.551, "label": "media0"}], "events": 8744}
    b = json.loads(json.dumps(a))
    assert differences(a, b) == []
    b["flows"][0]["owd_ms_p95"] = math.nextafter(71.551, 100.0)
    assert differences(a, b) == [".flows[0].owd_ms_p95: 71.551 -> 71.55100000000002"]
    b = json.loads(json.dumps(a)); b["events"] = 8744.0
    assert differences(a, b) == [".events: 8744 -> 8744.0"]
