"""The link emulator of a browser call, behind one small interface (the only module that knows
which emulator runs).

:func:`start` returns a handle with ``local_addr()``, ``drain_packets()`` and ``stop()``:

* with ``ratelab._core.emulator_start`` (a background emulator with explicit routes, several
  flows and both directions), that;
* otherwise, the standalone ``ratelab._core.emulate`` (one forward route, the sender given as its
  only client) in a child Python process with a fixed ``duration_s``; SIGINT stops it early and
  it still prints its statistics. Its per-packet record is the pcap it captures: arrivals only
  (no queuing delay, delivery or drop per packet), read when it stops.

Packet records (``drain_packets``) are columns: ``route``, ``leg`` (0: sender → receiver, 1: the
return), ``arrival_s`` (seconds since the emulator started), ``size`` (bytes with IP/UDP
headers, as the emulator counts them), ``queue_ms``, ``delivered_s`` (NaN: dropped or unknown),
``dropped``, ``rtp_ssrc`` / ``rtp_seq`` / ``rtp_pt`` (RTP packets; -1 otherwise).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ratelab.errors import InputError, from_core
from ratelab.native import core, core_errors

#: IP + UDP header bytes the emulator adds to each datagram's size (payload.rs IP_UDP_OVERHEAD).
IP_UDP = 28
PACKET_COLUMNS = ("route", "leg", "arrival_s", "size", "queue_ms", "delivered_s", "dropped", "rtp_ssrc", "rtp_seq", "rtp_pt")


def start(listen_ip: str, routes: list[dict[str, Any]], options: dict[str, Any], source: str = "scenario"):
    """Start relaying ``routes`` (``sender``, ``receiver``, ``direction``, ``data_delay_ms``,
    ``return_delay_ms``) over the links of ``options`` (EmulatorOptions); bound on ``listen_ip``.
    ``source``: the scenario's name for error lines."""
    mod = core()
    if hasattr(mod, "emulator_start"):
        return _Native(mod, listen_ip, routes, options, source)
    return _Standalone(listen_ip, routes, options, source)


def rtp_fields(payload: bytes) -> tuple[int, int, int]:
    """(ssrc, seq, payload type) of an RTP packet, (-1, -1, -1) for anything else: STUN (first
    byte 0-3), DTLS (20-63), RTCP (payload type 192-223 with the marker bit, RFC 5761)."""
    if len(payload) < 12 or payload[0] >> 6 != 2:
        return -1, -1, -1
    pt = payload[1] & 0x7F
    if 64 <= pt <= 95:
        return -1, -1, -1
    seq, ssrc = struct.unpack_from("!H", payload, 2)[0], struct.unpack_from("!I", payload, 8)[0]
    return ssrc, seq, pt


def read_pcap(path: Path, t0_unix: float, routes: list[tuple[tuple[str, int], tuple[str, int]]]) -> dict[str, np.ndarray]:
    """The emulator's capture (LINKTYPE_IPV4, little-endian, µs) as packet-record columns;
    datagrams from nobody's sender or receiver are left out."""
    data = Path(path).read_bytes() if Path(path).is_file() else b""
    rows: list[tuple] = []
    who: dict[tuple[str, int], tuple[int, int]] = {}
    for i, (s, r) in enumerate(routes):
        who[s] = (i, 0)
        who[r] = (i, 1)
    off = 24
    while off + 16 <= len(data):
        sec, usec, incl, _orig = struct.unpack_from("<IIII", data, off)
        pkt = data[off + 16: off + 16 + incl]
        off += 16 + incl
        if len(pkt) < 28:
            continue
        src = (socket.inet_ntoa(pkt[12:16]), struct.unpack_from("!H", pkt, 20)[0])
        if src not in who:
            continue
        route, leg = who[src]
        ssrc, seq, pt = rtp_fields(pkt[28:])
        rows.append((route, leg, sec + usec / 1e6 - t0_unix, len(pkt), ssrc, seq, pt))
    n = len(rows)
    cols = list(zip(*rows)) if rows else [()] * 7
    return {
        "route": np.array(cols[0], dtype=np.uint32), "leg": np.array(cols[1], dtype=np.uint8),
        "arrival_s": np.array(cols[2], dtype=np.float64), "size": np.array(cols[3], dtype=np.uint32),
        "queue_ms": np.full(n, np.nan), "delivered_s": np.full(n, np.nan), "dropped": np.zeros(n, dtype=bool),
        "rtp_ssrc": np.array(cols[4], dtype=np.int64), "rtp_seq": np.array(cols[5], dtype=np.int32),
        "rtp_pt": np.array(cols[6], dtype=np.int16),
    }


def empty_packets() -> dict[str, np.ndarray]:
    return read_pcap(Path("/nonexistent"), 0.0, [])


def _udp_port_bound(port: int) -> bool:
    """Whether some socket holds UDP ``port`` (/proc/net/udp; looking does not take it, as a
    test bind would for an instant)."""
    try:
        lines = Path("/proc/net/udp").read_text().splitlines()[1:]
    except OSError:
        return True  # cannot tell: go on (ICE retries its checks anyway)
    return any(int(line.split()[1].rsplit(":", 1)[1], 16) == port for line in lines if len(line.split()) > 1)


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


class _Native:
    """``ratelab._core.emulator_start``: explicit routes, per-packet records while it runs."""

    has_packet_record = True

    def __init__(self, mod, listen_ip: str, routes: list[dict[str, Any]], options: dict[str, Any], source: str):
        self.t0_unix = time.time()
        try:
            self._h = mod.emulator_start(f"{listen_ip}:0", json.dumps(routes), json.dumps(options))
        except core_errors() as exc:
            raise from_core(exc, source) from None
        self._addr = str(self._h.local_addr())  # still known once stopped (provenance)
        #: Records the handle counted but did not keep (its buffer cap): reported in provenance.
        self.discarded = 0

    def local_addr(self) -> str:
        return self._addr

    def drain_packets(self) -> dict[str, np.ndarray]:
        """The handle's record since the last drain (``packets``: numpy columns route,
        arrival_s, size, queue_ms, delivered_s, ssrc, seq and the list ``fate``, "" when
        delivered), in this module's column names."""
        got = self._h.drain_packets()
        cols = got["packets"]
        self.discarded += int(got["discarded"])
        fate = cols["fate"]
        n = len(fate)
        out = {k: np.asarray(cols[k]) for k in ("route", "arrival_s", "size", "queue_ms", "delivered_s")}
        out["leg"] = np.zeros(n, dtype=np.uint8)  # the handle records the data legs
        # dropped by the link (queue, random, overflow); "in_flight" at stop is not a drop
        out["dropped"] = np.array([f not in ("", "in_flight") for f in fate], dtype=bool)
        out["rtp_ssrc"], out["rtp_seq"] = np.asarray(cols["ssrc"]), np.asarray(cols["seq"])
        out["rtp_pt"] = np.full(n, -1)  # not recorded by the handle
        return out

    def stop(self) -> dict[str, Any]:
        return dict(self._h.stop())


#: The child process of the standalone emulator: runs it, prints its statistics as JSON.
#: SIGINT gets Python's handler even when the parent ignores it (a suite run in the background).
_CHILD = ("import json, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); import ratelab._core as c; "
          "print(json.dumps(c.emulate(sys.argv[1], sys.argv[2], sys.argv[3])))")


class _Standalone:
    """``ratelab._core.emulate`` in a child process: one forward route, fixed duration."""

    has_packet_record = False

    def __init__(self, listen_ip: str, routes: list[dict[str, Any]], options: dict[str, Any], source: str):
        if len(routes) != 1 or routes[0].get("direction", "forward") != "forward":
            raise InputError(source, "flows", "this build's emulator relays one forward flow; a browser call with several flows "
                             "or a reverse flow needs `ratelab._core.emulator_start`")
        r = routes[0]
        self._routes = [(_addr(r["sender"]), _addr(r["receiver"]))]
        self._dir = Path(tempfile.mkdtemp(prefix="ratelab-emu-"))
        self._pcap = self._dir / "emulator.pcap"
        # Delays: the route's, as the standalone emulator's forward/reverse delays (the link's own
        # delay_ms is part of data_delay_ms already).
        opts = dict(options)
        opts["link"] = {**opts["link"], "delay_ms": 0.0}
        opts.update(forward_delay_ms=r["data_delay_ms"], reverse_delay_ms=r["return_delay_ms"], client=r["sender"],
                    capture=str(self._pcap))
        if opts.get("reverse_link") is not None:
            opts["reverse_link"] = {**opts["reverse_link"], "delay_ms": 0.0}
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # a free port (the child binds it next)
            s.bind((listen_ip, 0))
            self._listen = f"{listen_ip}:{s.getsockname()[1]}"
        env = dict(os.environ)
        pkg_parent = str(Path(sys.modules["ratelab"].__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([pkg_parent] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self.t0_unix = time.time()
        self._proc = subprocess.Popen([sys.executable, "-c", _CHILD, self._listen, r["receiver"], json.dumps(opts)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self._stats: dict[str, Any] | None = None
        self._wait_bound(listen_ip, int(self._listen.rsplit(":", 1)[1]))

    def _wait_bound(self, ip: str, port: int, timeout_s: float = 15.0) -> None:
        """Until the child holds the port (it imports the extension first), or says why not."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self._proc.poll() is not None:
                _out, err = self._proc.communicate()
                raise InputError("emulator", "", (err.strip().splitlines() or ["the emulator exited"])[-1])
            if _udp_port_bound(port):
                return
            time.sleep(0.05)
        self.stop()
        raise InputError("emulator", "", f"the emulator did not bind {ip}:{port} within {timeout_s:g} s")

    def local_addr(self) -> str:
        return self._listen

    def drain_packets(self) -> dict[str, np.ndarray]:
        """Nothing while it runs; the whole capture once stopped."""
        if self._stats is None:
            return empty_packets()
        out = read_pcap(self._pcap, self.t0_unix, self._routes)
        with contextlib.suppress(OSError):
            self._pcap.unlink()
            self._dir.rmdir()
        return out

    def stop(self) -> dict[str, Any]:
        if self._stats is not None:
            return self._stats
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(signal.SIGINT)
        try:
            out, err = self._proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            out, err = self._proc.communicate()
        try:
            self._stats = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise InputError("emulator", "", "the emulator ended without statistics: "
                             + ((err or "").strip().splitlines() or ["no output"])[-1]) from None
        return self._stats
