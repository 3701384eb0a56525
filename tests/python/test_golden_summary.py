"""Golden summaries: the simulator's results, bit for bit, for every built-in scenario and every
built-in controller (issue 16: speed work must not change any result it does not mean to).

Each case runs a built-in scenario (shortened to at most ``CAP_S`` simulated seconds, packet log
off) and compares, exactly, every number of ``Simulation.summary()`` and a SHA-256 of every
column of the time series against ``data/golden_summary.json``. Floats are compared as Python
floats read back from JSON, which round-trips f64 exactly.

One exception: controllers whose decisions come from a neural network run by tract-onnx
(``MODEL_CONTROLLERS``). tract picks its matrix kernels by the CPU's instruction set (AVX-512,
AVX2+FMA, ...), and the kernels sum in different orders, so the policy's outputs differ in the
last bits from one CPU to another and the closed loop carries that into the summary (by ~1e-6
relative between an AVX-512 and an AVX2 machine). Those cases are compared within
``MODEL_REL_TOL`` and without the series digests; on one machine they are still bit-identical
run to run (``test_model_cases_repeat_bit_for_bit``).

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
# Controllers run through tract-onnx: exact on one CPU, within this relative tolerance across CPUs.
MODEL_CONTROLLERS = {"r3net"}
MODEL_REL_TOL = 1e-3


def cases() -> list[tuple[str, str | None]]:
    """Every built-in scenario as written, and every built-in controller on RFC 8867 5.1 and on
    the three-flow bench case (multi-flow interactions)."""
    out: list[tuple[str, str | None]] = [(s, None) for s in builtin_names()]
    for c in sorted(runnable_controller_names()):
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


def differences(want, got, path: str = "", rel_tol: float = 0.0) -> list[str]:
    """Paths where two JSON-like values differ (NaN equals NaN; numbers compared exactly, or
    within ``rel_tol`` of each other when it is given)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}.{k}: missing" for k in want.keys() - got.keys()]
        out += [f"{path}.{k}: new" for k in got.keys() - want.keys()]
        for k in sorted(want.keys() & got.keys()):
            out += differences(want[k], got[k], f"{path}.{k}", rel_tol)
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items, now {len(got)}"]
        return [d for i, (a, b) in enumerate(zip(want, got)) for d in differences(a, b, f"{path}[{i}]", rel_tol)]
    if isinstance(want, float) and isinstance(got, float) and math.isnan(want) and math.isnan(got):
        return []
    numbers = (int, float)
    if (rel_tol and isinstance(want, numbers) and isinstance(got, numbers)
            and not isinstance(want, bool) and type(want) is type(got)):
        return [] if math.isclose(want, got, rel_tol=rel_tol, abs_tol=1e-9) else [f"{path}: {want!r} -> {got!r}"]
    return [] if want == got and type(want) is type(got) else [f"{path}: {want!r} -> {got!r}"]


def case_differences(k: str, want: dict, got: dict) -> list[str]:
    """A case's differences: exact, or for a model-driven controller within MODEL_REL_TOL and
    without the series digests (see the module's doc)."""
    if k.rsplit(" / ", 1)[-1] not in MODEL_CONTROLLERS:
        return differences(want, got)
    rows = differences(want.get("series_rows"), got.get("series_rows"), ".series_rows")
    return rows + differences(want["summary"], got["summary"], ".summary", rel_tol=MODEL_REL_TOL)


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
             for d in (case_differences(k, want[k], got[k]) if k in want and k in got else [": case missing" if k in want else ": new case"])]
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


def test_model_cases_are_compared_within_the_tolerance_only():
    """A model-driven case passes a last-bits difference and a changed series digest, and still
    fails on a change above MODEL_REL_TOL, on a changed count of series rows and on a label."""
    want = {"summary": {"flows": [{"owd_ms_mean": 69.6923732785697, "bytes_received": 4436654, "label": "media0"}]},
            "series": {"owd_ms": "13a16f879f8a3f03"}, "series_rows": 1599}
    got = json.loads(json.dumps(want))
    got["summary"]["flows"][0]["owd_ms_mean"] = 69.69240299589272
    got["summary"]["flows"][0]["bytes_received"] = 4436651
    got["series"]["owd_ms"] = "beba27a65b4e724a"
    assert case_differences("rmcat-5.1 / r3net", want, got) == []
    assert len(case_differences("rmcat-5.1 / gcc", want, got)) == 3
    moved = json.loads(json.dumps(got)); moved["summary"]["flows"][0]["owd_ms_mean"] = 69.6923732785697 * 1.002
    assert case_differences("rmcat-5.1 / r3net", want, moved) == [
        f".summary.flows[0].owd_ms_mean: 69.6923732785697 -> {69.6923732785697 * 1.002!r}"]
    rows = json.loads(json.dumps(got)); rows["series_rows"] = 1600
    assert case_differences("rmcat-5.1 / r3net", want, rows) == [".series_rows: 1599 -> 1600"]
    label = json.loads(json.dumps(got)); label["summary"]["flows"][0]["label"] = "media1"
    assert case_differences("rmcat-5.1 / r3net", want, label) == [".summary.flows[0].label: 'media0' -> 'media1'"]


@pytest.mark.parametrize("controller", sorted(MODEL_CONTROLLERS))
def test_model_cases_repeat_bit_for_bit(core, controller):
    """On one machine a model-driven controller's run is exact: two runs, every number and every
    series digest equal."""
    first = json.loads(json.dumps(run_case(core, "rmcat-5.1", controller)))
    again = json.loads(json.dumps(run_case(core, "rmcat-5.1", controller)))
    assert differences(first, again) == []
