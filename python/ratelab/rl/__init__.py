"""Reinforcement learning for bandwidth estimation: the R3Net environment, model and trainer.

Importing this package registers ``ratelab/BandwidthEstimation-v0`` with gymnasium (needs the
``rl`` extra: ``pip install 'ratelab[rl]'``). The environment itself needs only gymnasium and
numpy; the model and trainer need torch; the parity test needs onnx and onnxruntime.
"""

from __future__ import annotations

ENV_ID = "ratelab/BandwidthEstimation-v0"


def register_env() -> None:
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(
            id=ENV_ID,
            entry_point="ratelab.rl.env:BandwidthEstimationEnv",
            vector_entry_point="ratelab.rl.env:BandwidthEstimationVectorEnv",
        )


try:
    register_env()
except ImportError:  # gymnasium not installed: the rest of ratelab works without it
    pass
