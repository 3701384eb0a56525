"""The public API of Python controllers: the Rust ``Controller`` and ``ReceiverEstimator``
interfaces (``crates/ratelab-core/src/controller.rs``) as Python classes.

The simulator (and the live sender) calls a method only if the class defines it; each call holds
the GIL for its own duration only. Times are seconds (float), rates bit/s, sizes bytes. Per-packet
data arrives as numpy columns, never as one Python object per packet (``on_packet_sent`` is the
one exception, and it is called only when the class defines it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # numpy is a hard dependency, but importing it is not needed to define the API
    import numpy as np


@dataclass(frozen=True, slots=True)
class Constraints:
    """The application's rate limits (``media.min_kbps`` / ``max_kbps`` / ``start_kbps``)."""

    min_bps: float
    max_bps: float
    start_bps: float


@dataclass(frozen=True, slots=True)
class Feedback:
    """One transport-wide feedback (TWCC / RFC 8888) matched against the send history.

    Columns (numpy arrays, one entry per reported packet, sorted by sequence number):
    ``seq`` (int64), ``size`` (bytes, int64), ``send_time_s`` (float64), ``arrival_time_s``
    (float64, NaN for a packet reported lost), ``probe_id`` (int64, -1 outside probes),
    ``is_padding`` (bool).
    """

    #: When the feedback reached the sender.
    time_s: float
    #: When the receiver generated it (its clock), if the format carries it (RFC 8888), else None.
    report_time_s: float | None
    #: Bytes in flight before / after this feedback was applied.
    prior_in_flight: int
    in_flight: int
    seq: "np.ndarray"
    size: "np.ndarray"
    send_time_s: "np.ndarray"
    arrival_time_s: "np.ndarray"
    probe_id: "np.ndarray"
    is_padding: "np.ndarray"

    @property
    def received(self) -> "np.ndarray":
        """Boolean mask of the packets that arrived."""
        import numpy as np

        return ~np.isnan(self.arrival_time_s)

    def __len__(self) -> int:
        return len(self.seq)


@dataclass(frozen=True, slots=True)
class SentPacket:
    """A packet the pacer just released (``on_packet_sent``, only if the class defines it)."""

    seq: int
    size: int
    send_time_s: float
    probe_id: int
    is_padding: bool
    #: Bytes in flight right after this packet (this one included).
    in_flight: int


@dataclass(frozen=True, slots=True)
class ReceivedPackets:
    """The packets a receiver-side estimator saw since its previous tick, as numpy columns:
    ``seq`` (int64), ``size`` (bytes, int64), ``send_time_s`` (sender timestamp carried in the
    packet), ``arrival_time_s`` (float64); ``rtt_s``: the newest round-trip time known at the
    receiver (NaN before the first packet)."""

    seq: "np.ndarray"
    size: "np.ndarray"
    send_time_s: "np.ndarray"
    arrival_time_s: "np.ndarray"
    rtt_s: float

    def __len__(self) -> int:
        return len(self.seq)


@dataclass(slots=True)
class Probe:
    """A probe cluster: send at ``rate_bps`` for at least ``min_packets`` and ``min_duration_s``.
    ``id`` is assigned by ratelab when left None; feedback reports it in ``probe_id``."""

    rate_bps: float
    min_packets: int = 5
    min_duration_s: float = 0.015
    id: int | None = None


@dataclass(slots=True)
class Update:
    """What the controller asks of the sender; ``None`` keeps the previous value.

    A method may also return None (nothing changes), a number (the rate in bit/s: target and
    pacing) or a dict with these keys. Rates must be finite and ≥ 0 (a NaN, negative or non-numeric value stops
    the run with an error naming the controller and the event); the target is clamped to the
    flow's ``[min_bps, max_bps]`` as for built-in controllers. ``cwnd_bytes = math.inf`` removes
    the window.
    """

    target_bps: float | None = None
    pacing_bps: float | None = None
    padding_bps: float | None = None
    cwnd_bytes: float | None = None
    probes: list[Probe] = field(default_factory=list)


class Controller:
    """Base class of a sender-side controller (subclassing is optional: any class with the same
    methods works). Constructor keyword arguments are the controller's parameters (scenario
    ``params`` / ``--set flows[0].params.x=…``); an unknown one is an error.

    Override what you need; methods left as they are here are never called.
    """

    #: Interval of ``on_tick`` (seconds), as the Rust ``tick_interval()``.
    tick_interval_s: ClassVar[float] = 0.025
    side: ClassVar[str] = "sender"
    #: A ``numpy.random.Generator`` seeded from the run seed and the flow (set before on_start).
    rng: Any = None

    def on_start(self, now_s: float, constraints: Constraints) -> Update | dict | float | None:
        """The flow starts: return the initial rates (default: the start rate)."""
        return Update(target_bps=constraints.start_bps, pacing_bps=constraints.start_bps)

    def on_feedback(self, feedback: Feedback) -> Update | dict | float | None:
        return None

    def on_tick(self, now_s: float) -> Update | dict | float | None:
        return None

    def on_packet_sent(self, packet: SentPacket) -> Update | dict | float | None:
        return None

    def on_rtt_update(self, now_s: float, rtt_s: float) -> Update | dict | float | None:
        return None

    def on_remote_estimate(self, now_s: float, rate_bps: float) -> Update | dict | float | None:
        return None

    def on_sender_queue(self, now_s: float, queue_bytes: int) -> Update | dict | float | None:
        return None

    def on_constraints(self, now_s: float, constraints: Constraints) -> Update | dict | float | None:
        return None

    def on_route_change(self, now_s: float, constraints: Constraints) -> Update | dict | float | None:
        """The network route changed (a scenario's ``[[route_changes]]``; libwebrtc's
        ``OnNetworkRouteChange``): what was learned about the old path may be wrong now."""
        return None


class ReceiverEstimator:
    """Base class of a receiver-side estimator (the REMB path, as the built-in ``r3net``):
    every ``tick_interval_s`` it gets the packets received since its previous tick and returns
    a rate in bit/s (or None: no report). The rate reaches the sender after the flow's return
    delay, where the target becomes that rate and pacing ``pacing_factor`` × it."""

    tick_interval_s: ClassVar[float] = 0.05
    #: Pacing rate / target rate at the sender.
    pacing_factor: ClassVar[float] = 1.1
    side: ClassVar[str] = "receiver"
    rng: Any = None

    def on_tick(self, now_s: float, packets: ReceivedPackets) -> float | None:
        raise NotImplementedError


#: Methods the simulator calls on a sender-side controller when the class defines them.
SENDER_EVENTS = ("on_start", "on_feedback", "on_tick", "on_packet_sent", "on_rtt_update", "on_remote_estimate",
                 "on_sender_queue", "on_constraints", "on_route_change")
