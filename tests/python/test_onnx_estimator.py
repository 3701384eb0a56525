"""Bring-your-own ONNX estimators in the MMSys'24 convention (issue 12, section 2).

Each test exports its own model with torch (a stateless MLP 150→256→256→1 and an LSTM with the
challenge's input/output names), then checks the ``onnx`` controller's Rust inference (tract)
against onnxruntime, runs both closed loop, and checks the one-line errors. Needs the ``rl``
extra (torch); run with ``pytest -m rl``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import require

pytestmark = [pytest.mark.rl, pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::torch.jit.TracerWarning")]
torch = require("torch")
ort = require("onnxruntime")
_core = require("ratelab._core")

OBS = 150
HIDDEN = 32


class Mlp(torch.nn.Module):
    """Stateless ``obs [1, 150] → bps [1, 1]``: log-scaled features, two hidden layers, an
    estimate between 50 kbit/s and 3 Mbit/s (the last layer maps to bit/s, as the challenge asks)."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(OBS, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                       torch.nn.ReLU(), torch.nn.Linear(256, 1))

    def forward(self, obs):
        x = torch.sign(obs) * torch.log1p(torch.abs(obs))
        return 5e4 + 2.95e6 * torch.sigmoid(self.net(x))


class ChallengeLstm(torch.nn.Module):
    """The challenge's stateful signature (its torch_policy.py): ``(obs [1, 1, 150],
    hidden_states [1, H], cell_states [1, H]) → (output [1, 1, 2], state_out, cell_out)`` with
    the estimate in bit/s first."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(OBS, HIDDEN, num_layers=1, batch_first=True)
        self.fc = torch.nn.Linear(HIDDEN, 2)

    def forward(self, obs, h, c):
        x = torch.sign(obs) * torch.log1p(torch.abs(obs))
        y, (h, c) = self.lstm(x, (h.unsqueeze(0), c.unsqueeze(0)))
        out = self.fc(y)
        bps = 5e4 + 2.95e6 * torch.sigmoid(out[..., :1])
        return torch.cat([bps, torch.exp(out[..., 1:])], dim=-1), h.squeeze(0), c.squeeze(0)


def export_mlp(path: Path, module: torch.nn.Module | None = None, features: int = OBS) -> Path:
    torch.manual_seed(0)
    m = (module or Mlp()).eval()
    torch.onnx.export(m, (torch.zeros(1, features),), str(path), input_names=["obs"], output_names=["output"],
                      opset_version=17, dynamo=False)
    return path


def export_lstm(path: Path) -> Path:
    torch.manual_seed(1)
    m = ChallengeLstm().eval()
    args = (torch.zeros(1, 1, OBS), torch.zeros(1, HIDDEN), torch.zeros(1, HIDDEN))
    torch.onnx.export(m, args, str(path), opset_version=11, dynamo=False,
                      input_names=["obs", "hidden_states", "cell_states"], output_names=["output", "state_out", "cell_out"])
    return path


def observations(n: int, seed: int = 0) -> np.ndarray:
    """Plausible observations: rates in bit/s, counts, delays in ms, fractions."""
    rng = np.random.default_rng(seed)
    scale = np.repeat([1e6, 100, 1e5, 50, 100, 50, 2, 50, 10, 5, 0.1, 2, 1, 0.2, 0.1], 10)
    return (rng.random((n, OBS)) * scale).astype(np.float32)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("onnx")
    return {"mlp": export_mlp(d / "mlp.onnx"), "lstm": export_lstm(d / "lstm.onnx")}


def test_stateless_mlp_matches_onnxruntime(models):
    obs = observations(40)
    rust = _core.onnx_policy_steps(str(models["mlp"]), obs)
    sess = ort.InferenceSession(str(models["mlp"]), providers=["CPUExecutionProvider"])
    want = np.array([sess.run(None, {"obs": o[None, :]})[0].reshape(-1)[0] for o in obs], dtype=np.float64)
    assert rust.shape == (40,) and np.all(want > 5e4)
    np.testing.assert_allclose(rust, want, rtol=1e-5, atol=0)


def test_challenge_lstm_matches_onnxruntime_with_state_fed_back(models):
    obs = observations(60, seed=1)
    rust = _core.onnx_policy_steps(str(models["lstm"]), obs)
    sess = ort.InferenceSession(str(models["lstm"]), providers=["CPUExecutionProvider"])
    h = c = np.zeros((1, HIDDEN), np.float32)
    want = []
    for o in obs:
        out, h, c = sess.run(None, {"obs": o.reshape(1, 1, -1), "hidden_states": h, "cell_states": c})
        want.append(out[0, 0, 0])
    np.testing.assert_allclose(rust, np.array(want, np.float64), rtol=1e-5, atol=0)
    # the state matters: the same observation twice gives two different estimates
    twice = _core.onnx_policy_steps(str(models["lstm"]), np.repeat(obs[:1], 2, axis=0))
    assert twice[0] != twice[1]


def _scenario(controller: str, params: dict, audio_kbps: float = 0.0, duration_s: float = 8.0) -> str:
    return json.dumps({"name": "byo-onnx", "duration_s": duration_s, "link": {"capacity_kbps": 1500, "queue": {"ms": 200}},
                       "flows": [{"kind": "media", "controller": controller, "params": params, "one_way_delay_ms": 30,
                                  "media": {"min_kbps": 50, "max_kbps": 4000, "audio_kbps": audio_kbps}}]})


def _run(doc: str, seed: int = 1) -> dict:
    sim = _core.Simulation(doc, seed)
    sim.run()
    return sim.summary()["flows"][0]


@pytest.mark.parametrize("name", ["mlp", "lstm"])
def test_closed_loop_runs_and_is_reproducible(models, name):
    a = _run(_scenario("onnx", {"model": str(models[name])}, audio_kbps=32))
    b = _run(_scenario("onnx", {"model": str(models[name])}, audio_kbps=32))
    assert a == b
    assert a["controller"] == "onnx" and a["packets_received"] > 100
    # The sender follows the model's estimates (50 kbit/s … 3 Mbit/s), so something flows.
    assert 30 < a["throughput_kbps"] < 1600


def test_challenge_model_without_audio_stops_with_one_line_saying_how(cli, core, models, tmp_path):
    """A model of the challenge's stateful shape was trained on calls with the challenge's
    32 kbit/s audio; run on a flow without audio it degenerates (the published baseline: 13 %
    utilization on rmcat-5.1), so the run stops and says how to add the audio or opt out."""
    lstm = str(models["lstm"])
    with pytest.raises(_core.ConfigError) as e:
        _core.Simulation(_scenario("onnx", {"model": lstm}, audio_kbps=0.0), 1)
    assert "audio_kbps=32" in str(e.value) and "without_audio" in str(e.value)
    _run(_scenario("onnx", {"model": lstm, "without_audio": True}, duration_s=2))  # opted out: runs
    _run(_scenario("onnx", {"model": str(models["mlp"])}, duration_s=2))  # a stateless model: no claim about audio
    r = cli("run", "rmcat-5.1", "-c", "onnx", "-p", f"onnx.model={lstm}", "--set", "duration_s=2", "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--set flows.N.media.audio_kbps=32" in r.stderr
    r = cli("run", "rmcat-5.1", "-c", "onnx", "-p", f"onnx.model={lstm}", "--set", "duration_s=2", "--set",
            "flows.0.media.audio_kbps=32", "--no-packets", "-q", "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr


def test_onnx_with_an_r3net_model_runs_as_r3net(tmp_path):
    shipped = Path(__file__).resolve().parents[2] / "python" / "ratelab" / "models" / "r3net.onnx"
    a = _run(_scenario("onnx", {"model": str(shipped)}))
    b = _run(_scenario("r3net", {"model": str(shipped)}))
    key = lambda f: (f["packets_sent"], f["bytes_received"], f["packets_lost"])  # noqa: E731
    assert key(a) == key(b)


class NanModel(torch.nn.Module):
    def forward(self, obs):
        return obs.sum(dim=1, keepdim=True) * float("nan")


def test_bad_models_are_one_line_errors(cli, core, models, tmp_path):
    wrong = export_mlp(tmp_path / "wrong.onnx", torch.nn.Sequential(torch.nn.Linear(149, 1)), features=149)
    nan = export_mlp(tmp_path / "nan.onnx", NanModel())
    cases = {
        wrong: "does not hold the 150-value MMSys'24 observation",
        nan: "must be a finite bit rate",
        tmp_path / "missing.onnx": "cannot read",
    }
    for path, msg in cases.items():
        r = cli("run", "rmcat-5.1", "-c", "onnx", "-p", f"onnx.model={path}", "--set", "duration_s=2",
                "--out", str(tmp_path / "out"))
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "model" in lines[0] and msg in lines[0], r.stderr
        assert "Traceback" not in r.stderr
    r = cli("run", "rmcat-5.1", "-c", "onnx", "--set", "duration_s=2", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "required" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cli_run_and_sweep_with_a_model(cli, core, models, tmp_path):
    r = cli("run", "rmcat-5.1", "-c", "onnx", "-c", "gcc", "-p", f"onnx.model={models['mlp']}",
            "--set", "duration_s=6", "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [x["controller"] for x in s["runs"]] == ["onnx", "gcc"]
    assert s["runs"][0]["flows"][0]["packets_received"] > 50
    # A sweep: [params.onnx] sets the model for every onnx run; a bad model fails only its runs.
    plan = tmp_path / "plan.toml"
    plan.write_text(f'name = "byo"\ncontrollers = ["onnx", "gcc"]\nscenarios = ["rmcat-5.1"]\nseeds = 1\n'
                    f'set = ["duration_s=5", "flows.0.media.audio_kbps=32"]\n[params.onnx]\nmodel = ["{models["mlp"]}", "{tmp_path / "nope.onnx"}"]\n')
    r = cli("sweep", str(plan), "--out", str(tmp_path / "sweep"), "-j", "2", "-q")
    assert r.returncode == 0 and "failed 1" in r.stdout, r.stdout + r.stderr
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "sweep" / "byo" / "summary.parquet").to_pylist()
    assert sorted(x["controller_name"] for x in rows) == ["gcc", "onnx"]
    errors = list((tmp_path / "sweep" / "byo").rglob("error.json"))
    assert len(errors) == 1 and "cannot read" in errors[0].read_text()


def test_gym_env_mmsys24_observation(core):
    from ratelab.rl.env import BandwidthEstimationEnv

    env = BandwidthEstimationEnv(config={"duration_s": 3.0, "audio_kbps": 32.0, "tcp_prob": 0.0, "media_prob": 0.0},
                                 observation="mmsys24")
    assert env.observation_space.shape == (150,)
    assert env.steps_per_episode == 50  # 3 s of 60-ms steps
    obs, _ = env.reset(seed=4)
    assert obs.shape == (150,) and obs.dtype == np.float32
    for _ in range(20):
        obs, r, term, trunc, info = env.step(np.array([0.1], np.float32))
    rate, video, audio, probe = obs[0], obs[120], obs[130], obs[140]
    assert rate > 0 and obs[10] > 0  # receiving rate, received packets (short MI 0)
    assert video > 0 and audio > 0 and video + audio + probe <= 1.0 + 1e-6
    # the long MI 0 spans 600 ms: 10 short MIs worth of packets at most
    assert obs[15] >= obs[10]
    with pytest.raises(Exception, match="observation"):
        BandwidthEstimationEnv(observation="mmsys23")


def test_live_run_with_a_model_and_audio(core, models, tmp_path):
    """The model runs in the live receiver; its estimates reach the sender as RTCP REMB."""
    from ratelab.run import live
    from ratelab.run.results import write_summary
    from ratelab.scenario import load_scenario

    sc = load_scenario("rmcat-5.1", ["duration_s=4", "flows.0.media.audio_kbps=32"])
    res = live.run_live(sc, ["onnx"], out_dir=tmp_path, seed=3, params={"onnx": {"model": str(models["lstm"])}})
    summary = json.loads(write_summary(res).read_text())
    assert summary["runs"][0]["controller"] == "onnx"
    sender = json.loads((tmp_path / "onnx" / "live.json").read_text())["flows"][0]["sender"]
    assert sender["remb_packets"] > 20  # 4 s / 60 ms ≈ 66 estimates
    assert 150 <= sender["audio_packets"] <= 210  # 50 per second
