"""R3Net (paper 004, spec 10.2): a small recurrent actor-critic and its ONNX export.

``obs(4) → Linear 64 → LeakyReLU(0.01) → GRU(64)`` is the shared trunk; the actor head
``Linear 64→32 → LeakyReLU → Linear 32→1 → sigmoid`` gives the mean μ ∈ (0, 1) of a Gaussian policy
with a state-independent learned std (``softplus(θ)``); the critic head has the same shape without
the sigmoid. Layer sizes are the spec's reconstruction (the paper's Figure 1 is not available).

The ONNX file is a *single step*: inputs ``obs [1, 4]`` and ``h [1, 1, 64]``; outputs
``action_mean [1, 1]``, ``value [1, 1]``, ``action_std [1, 1]`` (the Gaussian policy's std, a
constant) and ``h_out [1, 1, 64]``. It is written node by node
with ``onnx.helper`` (standard operators Gemm, LeakyRelu, Unsqueeze, GRU, Squeeze, Sigmoid) so
that its operator set does not depend on the PyTorch exporter version; ``ratelab-core`` runs it
with tract-onnx (``controllers/r3net/policy.rs``) and the tests check tract and onnxruntime
against this module step by step.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

OBS_DIM = 4
LEAKY_SLOPE = 0.01  # paper 004 §2.3


def softplus_inv(y: float) -> float:
    return math.log(math.expm1(y))


class R3Net(nn.Module):
    def __init__(self, hidden: int = 64, head: int = 32, init_std: float = 0.05, init_action: float | None = 0.1):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Linear(OBS_DIM, hidden)
        self.gru = nn.GRU(hidden, hidden)  # (seq, batch, feature)
        self.actor = nn.Sequential(nn.Linear(hidden, head), nn.LeakyReLU(LEAKY_SLOPE), nn.Linear(head, 1))
        self.critic = nn.Sequential(nn.Linear(hidden, head), nn.LeakyReLU(LEAKY_SLOPE), nn.Linear(head, 1))
        # DeepRL style std = softplus(θ); initialised to `init_std` (spec 10.2 suggests ~0.05–0.1
        # rather than DeepRL's 0.693 because actions live in (0, 1)).
        self.std_param = nn.Parameter(torch.tensor([softplus_inv(init_std)], dtype=torch.float32))
        if init_action is not None:
            # Start near a moderate rate (0.1 → 0.8 Mbit/s with the linear mapping) instead of
            # σ(0) = 0.5 → 4 Mbit/s, which floods most links: small last-layer weights, bias = logit.
            with torch.no_grad():
                self.actor[2].weight.mul_(0.01)
                self.actor[2].bias.fill_(math.log(init_action / (1.0 - init_action)))

    def initial_state(self, batch: int) -> torch.Tensor:
        return torch.zeros(1, batch, self.hidden)

    def std(self) -> torch.Tensor:
        return nn.functional.softplus(self.std_param)

    def forward(self, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor | None = None):
        """obs [T, B, 4], h [1, B, H] → (μ [T, B], value [T, B], h_T [1, B, H]).

        ``starts [T, B]`` (bool/0-1) marks steps that begin a new episode: the GRU state is
        zeroed before them, so a sequence may span an episode boundary.
        """
        x = nn.functional.leaky_relu(self.embed(obs), LEAKY_SLOPE)
        if starts is None or not bool(starts[1:].any()):
            if starts is not None:
                h = h * (1.0 - starts[0].float())[None, :, None]
            out, h = self.gru(x, h)
        else:
            cuts = [0] + [t for t in range(1, obs.shape[0]) if bool(starts[t].any())] + [obs.shape[0]]
            outs = []
            for a, b in zip(cuts[:-1], cuts[1:]):
                h = h * (1.0 - starts[a].float())[None, :, None]
                o, h = self.gru(x[a:b], h)
                outs.append(o)
            out = torch.cat(outs, 0)
        mu = torch.sigmoid(self.actor(out)).squeeze(-1)
        v = self.critic(out).squeeze(-1)
        return mu, v, h

    def step_numpy(self, obs: np.ndarray, h: np.ndarray) -> tuple[float, float, np.ndarray]:
        """One deterministic step on numpy arrays shaped like the ONNX model's inputs."""
        with torch.no_grad():
            mu, v, h2 = self(torch.as_tensor(obs, dtype=torch.float32)[None], torch.as_tensor(h, dtype=torch.float32))
        return float(mu[0, 0]), float(v[0, 0]), h2.numpy()


def _gru_onnx_weights(gru: nn.GRU) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PyTorch gate order (r, z, n) → ONNX (z, r, h); biases [Wb; Rb]."""
    def reorder(w: torch.Tensor) -> np.ndarray:
        r, z, n = w.detach().numpy().reshape(3, -1, *w.shape[1:])
        return np.concatenate([z, r, n], 0)

    w = reorder(gru.weight_ih_l0)[None]
    r = reorder(gru.weight_hh_l0)[None]
    b = np.concatenate([reorder(gru.bias_ih_l0), reorder(gru.bias_hh_l0)])[None]
    return w.astype(np.float32), r.astype(np.float32), b.astype(np.float32)


# ONNX metadata keys for the action mapping a policy was trained with; the core's r3net controller
# reads them (Rust `controllers::r3net::TrainedMapping`) so that a model file runs with its mapping.
META_MAPPING, META_MAX_KBPS, META_LOG_MIN_KBPS = "ratelab.r3net.mapping", "ratelab.r3net.max_kbps", "ratelab.r3net.log_min_kbps"


def mapping_metadata(env_config: dict[str, Any]) -> dict[str, str]:
    """The metadata entries recording the action mapping of an environment configuration."""
    return {META_MAPPING: str(env_config["mapping"]), META_MAX_KBPS: repr(float(env_config["max_kbps"])),
            META_LOG_MIN_KBPS: repr(float(env_config["log_min_kbps"]))}


def model_mapping(path) -> dict[str, Any]:
    """``{"mapping", "max_kbps", "log_min_kbps"}`` an exported model records (explicit keys, else the
    trainer's ``config`` JSON; missing parts are absent) — for evaluating it in the right environment."""
    import onnx

    props = {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}
    out: dict[str, Any] = {}
    try:
        cfg = json.loads(props.get("config", "{}"))
    except ValueError:
        cfg = {}
    env = cfg.get("env_config") or {}
    if META_MAPPING in props or "mapping" in cfg:
        out["mapping"] = props.get(META_MAPPING, cfg.get("mapping"))
    for key, meta in (("max_kbps", META_MAX_KBPS), ("log_min_kbps", META_LOG_MIN_KBPS)):
        if meta in props:
            out[key] = float(props[meta])
        elif key in env:
            out[key] = float(env[key])
    return out


def to_onnx_model(net: R3Net, meta: dict[str, str] | None = None):
    """Build the single-step ONNX model (an ``onnx.ModelProto``) from the network's weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H = net.hidden
    inits = []

    def init(name: str, arr) -> str:
        a = arr.detach().numpy() if isinstance(arr, torch.Tensor) else np.asarray(arr)
        inits.append(numpy_helper.from_array(np.ascontiguousarray(a), name))
        return name

    def linear(x: str, lin: nn.Linear, name: str) -> tuple[str, helper.NodeProto]:
        w = init(f"{name}.weight", lin.weight.float())
        b = init(f"{name}.bias", lin.bias.float())
        return f"{name}.out", helper.make_node("Gemm", [x, w, b], [f"{name}.out"], transB=1, name=name)

    nodes = []
    x, n = linear("obs", net.embed, "embed"); nodes.append(n)
    nodes.append(helper.make_node("LeakyRelu", [x], ["trunk.act"], alpha=LEAKY_SLOPE))
    axes0 = init("axes0", np.array([0], dtype=np.int64))
    nodes.append(helper.make_node("Unsqueeze", ["trunk.act", axes0], ["gru.x"]))
    W, R, B = _gru_onnx_weights(net.gru)
    nodes.append(helper.make_node("GRU", ["gru.x", init("gru.W", W), init("gru.R", R), init("gru.B", B), "", "h"],
                                  ["gru.Y", "h_out"], hidden_size=H, linear_before_reset=1))
    nodes.append(helper.make_node("Squeeze", ["h_out", axes0], ["feat"]))
    for head, out in ((net.actor, "actor.pre"), (net.critic, "value")):
        prefix = "actor" if head is net.actor else "critic"
        y, n = linear("feat", head[0], f"{prefix}.0"); nodes.append(n)
        nodes.append(helper.make_node("LeakyRelu", [y], [f"{prefix}.act"], alpha=LEAKY_SLOPE))
        y2, n = linear(f"{prefix}.act", head[2], f"{prefix}.2"); nodes.append(n)
        nodes.append(helper.make_node("Identity", [y2], [out]))
    nodes.append(helper.make_node("Sigmoid", ["actor.pre"], ["action_mean"]))
    std = init("std", net.std().detach().reshape(1, 1).float())
    nodes.append(helper.make_node("Identity", [std], ["action_std"]))
    graph = helper.make_graph(
        nodes, "r3net",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, OBS_DIM]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 1, H])],
        [helper.make_tensor_value_info("action_mean", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("value", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("action_std", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 1, H])],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ratelab", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    for k, v in (meta or {}).items():
        model.metadata_props.add(key=k, value=str(v))
    onnx.checker.check_model(model)
    return model


def export_onnx(net: R3Net, path: str | Path, meta: dict[str, str] | None = None) -> Path:
    import onnx

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(to_onnx_model(net, meta), str(path))
    return path
