"""Bring your own controller: Python controllers run wherever a built-in one runs
(docs/bring-your-own.md). ``api`` holds the classes a user writes against; ``loader`` finds a
controller by name (``file.py:Class``, ``module:Class``, entry point ``ratelab.controllers``)."""

from ratelab.byo.api import Constraints, Controller, Feedback, Probe, ReceivedPackets, ReceiverEstimator, SentPacket, Update
from ratelab.byo.loader import ENTRY_POINT_GROUP, ControllerError, SpecError, is_python_spec, registered, resolve

__all__ = [
    "ENTRY_POINT_GROUP", "Constraints", "Controller", "ControllerError", "Feedback", "Probe", "ReceivedPackets",
    "ReceiverEstimator", "SentPacket", "SpecError", "Update", "is_python_spec", "registered", "resolve",
]
