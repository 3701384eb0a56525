"""ratelab: a lab for congestion control of real-time video.

A deterministic simulator written in Rust (``ratelab._core``) with a Python front end for
scenarios, results, plots and reports::

    import ratelab
    res = ratelab.run_scenario("rmcat-5.1", controllers=["gcc"], out_dir="out")
    print(res.runs[0].flows[0]["throughput_kbps"])
"""

from __future__ import annotations


from ratelab._version import __version__
from ratelab.byo import (  # noqa: E402
    Constraints,
    Controller,
    ControllerError,
    Feedback,
    Probe,
    ReceivedPackets,
    ReceiverEstimator,
    SentPacket,
    Update,
)
from ratelab.errors import InputError  # noqa: E402
from ratelab.gym_registration import register_when_gymnasium_loads  # noqa: E402
from ratelab.run.runner import Interrupted, RunResult, ScenarioRun, run_scenario  # noqa: E402
from ratelab.scenario import Scenario, builtin_names, load_scenario  # noqa: E402

# `gymnasium.make("ratelab/BandwidthEstimation-v0")` works after `import ratelab`, without
# importing gymnasium (seconds) or torch here: the id is registered when gymnasium is loaded.
register_when_gymnasium_loads()

__all__ = [
    "__version__",
    "Constraints",
    "Controller",
    "ControllerError",
    "Feedback",
    "Probe",
    "ReceivedPackets",
    "ReceiverEstimator",
    "SentPacket",
    "Update",
    "InputError",
    "Interrupted",
    "RunResult",
    "Scenario",
    "ScenarioRun",
    "builtin_names",
    "load_scenario",
    "run_scenario",
]
