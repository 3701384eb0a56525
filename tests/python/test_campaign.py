"""Campaign plans (expansion, filters), the results store (atomic runs, provenance, failures,
resume after kill -9), DuckDB queries and the engines (process pool, Ray on a local instance)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ratelab.campaign import RunSpec, expand_plan, load_plan, trace_files
from ratelab.errors import InputError

KNOWN = ["gcc", "fixed", "oracle"]

TINY = """
name = "tiny"
duration_s = 3
[link]
capacity_kbps = 1000
queue = { ms = 300 }
[[flows]]
kind = "media"
controller = "gcc"
media = { min_kbps = 100, max_kbps = 2000, start_kbps = 300 }
"""


def plan(data: dict, name: str = "t"):
    return load_plan(name, data={"name": name, **data})


def write_plan(tmp_path: Path, body: str, scenario: str = TINY) -> Path:
    (tmp_path / "tiny.toml").write_text(scenario)
    p = tmp_path / "plan.toml"
    p.write_text(textwrap.dedent(body))
    return p


# --- plan expansion -------------------------------------------------------------------------

def test_grid_is_the_product_of_controllers_scenarios_values_and_seeds():
    p = plan({"controllers": ["gcc", "oracle"], "scenarios": ["rmcat-5.1", "lcc-loss"], "seeds": 3,
              "grid": {"link.loss": [0, 0.02]}})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert len(runs) == 2 * 2 * 2 * 3
    assert len({r.run_id for r in runs}) == len(runs)
    r = next(r for r in runs if r.controller == "oracle" and r.scenario == "lcc-loss~link.loss_0.02" and r.seed == 2)
    assert r.run_id == "controller=oracle/scenario=lcc-loss~link.loss_0.02/seed=2"
    assert r.scenario_doc["link"]["loss"] == 0.02
    # the controller is applied to every media flow of the resolved document
    assert all(f["controller"] == "oracle" for f in r.scenario_doc["flows"] if f["kind"] == "media")
    assert r.grid == {"link.loss": 0.02}


def test_all_controllers_leaves_out_fixed_and_params_make_variants():
    p = plan({"controllers": "all", "scenarios": ["rmcat-5.1"], "params": {"gcc": {"profile": ["current", "m84"]}}})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert sorted(r.controller for r in runs) == ["gcc~profile_current", "gcc~profile_m84", "oracle"]
    m84 = next(r for r in runs if r.controller == "gcc~profile_m84")
    assert m84.controller_params == {"profile": "m84"}
    assert m84.scenario_doc["flows"][0]["params"] == {"profile": "m84"}


def test_filters_exclude_and_include_with_globs():
    base = {"controllers": ["gcc", "oracle", "fixed"], "scenarios": ["rmcat-5.1", "rmcat-5.6", "lcc-loss"], "seeds": [1, 2]}
    runs = expand_plan(plan({**base, "exclude": [{"controller": "fixed", "scenario": "rmcat-*"}]}), known_controllers=KNOWN)
    assert len(runs) == 3 * 3 * 2 - 2 * 2
    assert not any(r.controller == "fixed" and r.scenario.startswith("rmcat") for r in runs)
    runs = expand_plan(plan({**base, "include": [{"seed": 2, "scenario": "lcc-*"}]}), known_controllers=KNOWN)
    assert [(r.controller, r.seed) for r in runs] == [("gcc", 2), ("oracle", 2), ("fixed", 2)]


def test_scenario_variants_and_sets():
    p = plan({"controllers": ["gcc"], "scenarios": ["rmcat-5.6", {"scenario": "rmcat-5.6", "label": "q1000", "set": ["link.queue.ms=1000"]}],
              "set": ["duration_s=7"]})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert [r.scenario for r in runs] == ["rmcat-5.6", "q1000"]
    assert runs[1].scenario_doc["link"]["queue"]["ms"] == 1000 and runs[0].scenario_doc["link"]["queue"]["ms"] == 300
    assert all(r.scenario_doc["duration_s"] == 7 for r in runs)


def test_trace_sets_make_one_scenario_per_trace():
    cellular = trace_files("cellular")
    assert cellular and all("opennetlab-WIRED" not in f.name and "trace_" not in f.name for f in cellular)
    p = plan({"controllers": ["gcc"], "traces": ["cellular"], "trace_duration_s": 20})
    runs = expand_plan(p, known_controllers=KNOWN)
    assert len(runs) == len(cellular)
    r = runs[0]
    assert Path(r.scenario_doc["link"]["trace"]).is_file() and r.scenario_doc["duration_s"] == 20
    assert r.scenario_doc["link"]["queue"]["rate_kbps"] > 0


@pytest.mark.parametrize("data, field", [
    ({"controllers": ["nope"], "scenarios": ["rmcat-5.1"]}, "controllers"),
    ({"controllers": ["gcc"]}, "scenarios"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "seeds": 0}, "seeds"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "grid": {"link.loss": 0.1}}, "grid.link.loss"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1", "rmcat-5.1"]}, "scenarios"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "frobnicate": 1}, "frobnicate"),
    ({"controllers": ["gcc"], "scenarios": ["rmcat-5.1"], "params": {"oracle": {"x": 1}}}, "params.oracle"),
])
def test_bad_plans_name_the_field(data, field):
    with pytest.raises(InputError) as e:
        expand_plan(plan(data), known_controllers=KNOWN)
    assert e.value.field == field


def test_builtin_rmcat_plan_covers_rfc8867_and_8869():
    runs = expand_plan(load_plan("rmcat"), known_controllers=KNOWN)
    names = {r.scenario_name for r in runs}
    for case in ("5.1", "5.2", "5.3", "5.4", "5.5", "5.6", "5.7", "5.8"):
        assert f"rmcat-{case}" in names, case
    assert any(n.startswith("rmcat-8869") for n in names)
    assert {r.seed for r in runs} == {1, 2, 3}
    assert {r.controller for r in runs} == {"gcc", "oracle"}
