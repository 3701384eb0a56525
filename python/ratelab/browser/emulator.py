"""The link emulator of a browser call, behind one small interface (the only module that knows
which emulator runs): :func:`start` returns a handle on ``ratelab._core.emulator_start`` (a
background emulator with explicit routes, several flows and both directions) with
``local_addr()``, ``drain_packets()`` and ``stop()``.

Packet records (``drain_packets``) are columns: ``route``, ``leg`` (0: sender → receiver, 1: the
return), ``arrival_s`` (seconds since the emulator started), ``size`` (bytes with IP/UDP
headers, as the emulator counts them), ``queue_ms``, ``delivered_s`` (NaN: dropped or unknown),
``dropped``, ``rtp_ssrc`` / ``rtp_seq`` / ``rtp_pt`` / ``rtp_marker`` / ``rtp_ts`` (the RTP
header's fields, clear under SRTP; -1 for datagrams that are not RTP).
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from ratelab.errors import from_core
from ratelab.native import core, core_errors

#: IP + UDP header bytes the emulator adds to each datagram's size (payload.rs IP_UDP_OVERHEAD).
IP_UDP = 28
PACKET_COLUMNS = ("route", "leg", "arrival_s", "size", "queue_ms", "delivered_s", "dropped", "rtp_ssrc", "rtp_seq", "rtp_pt",
                  "rtp_marker", "rtp_ts")


def start(listen_ip: str, routes: list[dict[str, Any]], options: dict[str, Any], source: str = "scenario"):
    """Start relaying ``routes`` (``sender``, ``receiver``, ``direction``, ``data_delay_ms``,
    ``return_delay_ms``) over the links of ``options`` (EmulatorOptions); bound on ``listen_ip``.
    ``source``: the scenario's name for error lines."""
    return _Native(core(), listen_ip, routes, options, source)


def split_address(text: str) -> tuple[str, int]:
    """("host", port) of "host:port" or "[v6]:port"."""
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def empty_packets() -> dict[str, np.ndarray]:
    """A packet record with no rows, in this module's column types."""
    types = {"route": np.uint32, "leg": np.uint8, "arrival_s": np.float64, "size": np.uint32, "queue_ms": np.float64,
             "delivered_s": np.float64, "dropped": bool, "rtp_ssrc": np.int64, "rtp_seq": np.int32, "rtp_pt": np.int16,
             "rtp_marker": np.int8, "rtp_ts": np.int64}
    return {k: np.zeros(0, dtype=types[k]) for k in PACKET_COLUMNS}


class _Native:
    """``ratelab._core.emulator_start``: explicit routes, per-packet records while it runs."""

    def __init__(self, mod, listen_ip: str, routes: list[dict[str, Any]], options: dict[str, Any], source: str):
        self.t0_unix = time.time()
        try:
            self._h = mod.emulator_start(f"{listen_ip}:0", json.dumps(routes), json.dumps(options))
        except core_errors() as exc:
            raise from_core(exc, source) from None
        self._addr = str(self._h.local_addr())  # still known once stopped (provenance)
        #: Records the handle counted but did not keep (its buffer cap): reported in provenance.
        self.discarded = 0
        #: When the first media datagram arrived (s on the emulator's clock; with
        #: ``align_media_s``), as of the last drain.
        self.media_start_s: float | None = None
        #: The run's time 0 on the emulator's clock (the harness sets it; records are moved by it).
        self.origin_s = 0.0

    def local_addr(self) -> str:
        return self._addr

    def drain_packets(self) -> dict[str, np.ndarray]:
        """The handle's record since the last drain (``packets``: numpy columns route,
        arrival_s, size, queue_ms, delivered_s, ssrc, seq, pt, marker, timestamp and the list ``fate``, "" when
        delivered), in this module's column names."""
        got = self._h.drain_packets()
        cols = got["packets"]
        self.discarded += int(got["discarded"])
        if got.get("media_start_s") is not None:
            self.media_start_s = float(got["media_start_s"])
        fate = cols["fate"]
        n = len(fate)
        out = {k: np.asarray(cols[k]) for k in ("route", "arrival_s", "size", "queue_ms", "delivered_s")}
        out["leg"] = np.zeros(n, dtype=np.uint8)  # the handle records the data legs
        # dropped by the link (queue, random, overflow); "in_flight" at stop is not a drop
        out["dropped"] = np.array([f not in ("", "in_flight") for f in fate], dtype=bool)
        for k, name in (("ssrc", "rtp_ssrc"), ("seq", "rtp_seq"), ("pt", "rtp_pt"), ("marker", "rtp_marker"), ("timestamp", "rtp_ts")):
            out[name] = np.asarray(cols[k])
        return out

    def stop(self) -> dict[str, Any]:
        return dict(self._h.stop())
