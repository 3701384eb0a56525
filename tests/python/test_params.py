"""Parameters that always arrive (issue 21): ``-p NAME.KEY=VALUE`` for built-in, Python and
ONNX controllers alike, on every command that runs controllers; a setting the user typed never
vanishes silently, and an unknown key names the controller and the keys it knows."""

from __future__ import annotations

import json

import pytest

import ratelab
from ratelab.errors import InputError
from ratelab.scenario import load_scenario, parse_params

USER_CODE = '''
import ratelab

class Fixed(ratelab.Controller):
    """Asks for `kbps` from the first tick on."""
    def __init__(self, kbps=300.0):
        self.kbps = kbps
    def on_tick(self, now_s):
        return self.kbps * 1000.0
'''


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    d = tmp_path / "user"
    d.mkdir()
    (d / "my_cc.py").write_text(USER_CODE)
    monkeypatch.chdir(d)
    return d


def short():
    return load_scenario("rmcat-5.1", ["duration_s=3", "metrics.packet_log=false"])


# --- parsing ---------------------------------------------------------------------------------

def test_parse_params_splits_at_the_controller_name():
    got = parse_params(["gcc.profile=\"m84\"", "my_cc.py:Fixed.kbps=450", "gcc.loss_v2.enabled=true"],
                       ["gcc", "my_cc.py:Fixed"])
    assert got == {"gcc": {"profile": "m84", "loss_v2": {"enabled": True}}, "my_cc.py:Fixed": {"kbps": 450}}


@pytest.mark.parametrize("item, words", [
    ("gcc.profile", "expected NAME.KEY=VALUE"),
    ("bbr.x=1", "names no controller of this run (controllers: gcc)"),
    ("gcc.=1", "names no controller"),
    ("gcc.a b=1", "KEY is not a valid parameter name"),
])
def test_parse_params_refuses_what_cannot_arrive(item, words):
    with pytest.raises(InputError) as e:
        parse_params([item], ["gcc"])
    assert e.value.line().startswith("error: -p: ") and words in e.value.line() and "\n" not in e.value.line()


# --- they arrive -------------------------------------------------------------------------------

def test_python_controller_gets_its_parameter(core, user_dir, tmp_path):
    res = ratelab.run_scenario(short(), ["my_cc.py:Fixed"], params={"my_cc.py:Fixed": {"kbps": 450.0}},
                               out_dir=tmp_path / "o")
    import pyarrow.parquet as pq

    target = pq.read_table(res.runs[0].dir / "series.parquet").column("target_kbps").to_pylist()
    assert target[-1] == pytest.approx(450.0)


def test_each_contender_gets_only_its_own_parameters(core, user_dir, tmp_path):
    """`-c gcc -c my_cc.py:Fixed -p my_cc.py:Fixed.kbps=…`: gcc runs as without -p."""
    plain = ratelab.run_scenario(short(), ["gcc"], seed=3)
    both = ratelab.run_scenario(short(), ["gcc", "my_cc.py:Fixed"], seed=3, params={"my_cc.py:Fixed": {"kbps": 450.0}})
    assert both.runs[0].flows == plain.runs[0].flows


def test_set_on_a_replaced_controllers_params_is_refused(core, user_dir):
    """The fault of issue 21: `-c my_cc.py:Fixed --set flows[0].params.kbps=…` on a gcc flow
    silently dropped kbps. Now it is an error saying how to give it."""
    sc = short().with_overrides(["flows[0].params.kbps=450"])
    with pytest.raises(InputError) as e:
        ratelab.run_scenario(sc, ["my_cc.py:Fixed"])
    assert "-p 'my_cc.py:Fixed.kbps=VALUE'" in e.value.line() and "flows[0] runs gcc" in e.value.line()


def test_set_on_the_flows_own_controller_still_works(core, user_dir):
    sc = short().with_overrides(['flows[0].controller="my_cc.py:Fixed"', "flows[0].params.kbps=450.0"])
    res = ratelab.run_scenario(sc, ["my_cc.py:Fixed"])
    assert res.runs[0].flows[0]["throughput_kbps"] > 0


@pytest.mark.parametrize("name, key, words", [
    ("gcc", "no_such", "unknown parameter of gcc (known: "),
    ("my_cc.py:Fixed", "kbsp", "unknown parameter of my_cc.py:Fixed (known: kbps)"),
])
def test_unknown_key_names_controller_and_known_keys(core, user_dir, name, key, words):
    with pytest.raises(InputError) as e:
        ratelab.run_scenario(short(), [name], params={name: {key: 1}})
    assert words in e.value.line() and key in e.value.line()
    if name == "gcc":
        assert "profile" in e.value.line()


def test_a_parameter_for_a_controller_not_run_is_refused(core):
    with pytest.raises(InputError) as e:
        ratelab.run_scenario(short(), ["gcc"], params={"nada": {"x": 1}})
    assert "no flow of this run uses controller nada" in e.value.line()


def test_without_c_the_parameter_reaches_the_scenarios_own_controller(core):
    with pytest.raises(InputError) as e:  # the flows run gcc: the key reaches gcc's parser
        ratelab.run_scenario(short(), params={"gcc": {"no_such": 1}})
    assert "unknown parameter of gcc" in e.value.line()


# --- every command takes -p --------------------------------------------------------------------

def test_cli_run_and_bench_take_p(core, cli, user_dir, tmp_path):
    r = cli("run", "rmcat-5.1", "-c", "my_cc.py:Fixed", "-p", "my_cc.py:Fixed.kbps=450.0", "--set", "duration_s=3",
            "--no-packets", "-q", "--out", str(tmp_path / "r"), cwd=user_dir)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["runs"][0]["flows"][0]["throughput_kbps"] < 500
    r = cli("run", "rmcat-5.1", "-c", "gcc", "-p", "gcc.no_such=1", "--set", "duration_s=1", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "unknown parameter of gcc" in r.stderr
    r = cli("bench", "-s", "lcc-loss", "-c", "gcc", "-p", "gcc.no_such=1", "--repeat", "1")
    assert r.returncode == 2 and "unknown parameter of gcc" in r.stderr, r.stderr


def test_cli_sweep_takes_p_on_top_of_the_plan(core, cli, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "p"\ncontrollers = ["gcc"]\nscenarios = ["lcc-loss"]\nseeds = 1\nset = ["duration_s=2"]\n')
    r = cli("sweep", str(plan), "--out", str(tmp_path / "c"), "-p", "gcc.no_such=1", "-q")
    assert r.returncode == 0, r.stderr  # the run fails, the sweep goes on and says so
    assert "unknown parameter of gcc" in r.stderr + r.stdout
    r = cli("sweep", str(plan), "--out", str(tmp_path / "c"), "-p", "nada.x=1", "--dry-run")
    assert r.returncode == 2 and "names no controller" in r.stderr


def test_live_commands_take_p(cli):
    for args in (["live", "run", "rmcat-5.1", "-c", "gcc", "-p", "nada.x=1"],
                 ["live", "send", "--to", "127.0.0.1:9", "-c", "gcc", "-p", "nada.x=1", "--duration", "0.1"]):
        r = cli(*args)
        assert r.returncode == 2 and "names no controller" in r.stderr, (args, r.stderr)
