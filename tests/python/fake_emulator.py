"""A stand-in for ``ratelab._core.emulator_start`` in pure Python, for the browser tests: a UDP
relay with explicit routes and each route's delays, no bottleneck (infinite capacity, no queue,
no loss). It records every datagram as the native emulator's ``drain_packets`` does."""

from __future__ import annotations

import heapq
import json
import socket
import struct
import threading
import time

import numpy as np



def rtp_fields(payload: bytes) -> tuple[int, int, int, int, int]:
    """(ssrc, seq, payload type, marker, timestamp) of an RTP packet, all -1 for anything else:
    STUN (first byte 0-3), DTLS (20-63), RTCP (payload type 192-223 with the marker bit, RFC 5761)."""
    if len(payload) < 12 or payload[0] >> 6 != 2:
        return -1, -1, -1, -1, -1
    pt = payload[1] & 0x7F
    if 64 <= pt <= 95:
        return -1, -1, -1, -1, -1
    return (struct.unpack_from("!I", payload, 8)[0], struct.unpack_from("!H", payload, 2)[0], pt, payload[1] >> 7,
            struct.unpack_from("!I", payload, 4)[0])


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


class Handle:
    def __init__(self, listen: str, routes_json: str, options_json: str):
        self.routes = json.loads(routes_json)
        #: ``align_media_s``: report when the first media datagram came (the stand-in has no schedule to move).
        self.align = json.loads(options_json).get("align_media_s") is not None
        self.media_start: float | None = None
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(_addr(listen))
        self.sock.settimeout(0.002)
        self.who = {}
        for i, r in enumerate(self.routes):
            self.who[_addr(r["sender"])] = (i, 0)
            self.who[_addr(r["receiver"])] = (i, 1)
        self.t0 = time.monotonic()
        self.rows: list[list] = []
        self.taken = 0
        self.foreign = 0
        self._all: list[dict] = []
        self.foreign_src: set[tuple[str, int]] = set()
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run, daemon=True)
        self._th.start()

    def local_addr(self) -> str:
        h, p = self.sock.getsockname()
        return f"{h}:{p}"

    def _run(self) -> None:
        due: list[tuple[float, int, bytes, tuple[str, int]]] = []
        while not self._stop.is_set():
            try:
                data, src = self.sock.recvfrom(65536)
            except socket.timeout:
                data = None
            now = time.monotonic() - self.t0
            if data is not None:
                if src not in self.who:
                    self.foreign += 1
                    self.foreign_src.add(src)
                else:
                    i, leg = self.who[src]
                    r = self.routes[i]
                    dst = _addr(r["receiver"] if leg == 0 else r["sender"])
                    delay = (r["data_delay_ms"] if leg == 0 else r["return_delay_ms"]) / 1e3
                    fields = rtp_fields(data)
                    if self.align and self.media_start is None and leg == 0 and fields[0] >= 0:
                        self.media_start = now
                    self.rows.append([i, leg, now, len(data) + 28, 0.0, now + delay, False, *fields])
                    heapq.heappush(due, (now + delay, len(self.rows), data, dst))
            while due and due[0][0] <= time.monotonic() - self.t0:
                _, _, d, dst = heapq.heappop(due)
                self.sock.sendto(d, dst)

    def drain_packets(self) -> dict:
        """As ``ratelab._core.EmulatorHandle.drain_packets``: the data legs' records as numpy
        columns (``ssrc``/``seq`` -1 where not RTP) plus ``fate`` ("" delivered, else why not)."""
        flat = self._drain_flat()
        data = flat["leg"] == 0
        packets = {k: flat[k][data] for k in ("route", "arrival_s", "size", "queue_ms", "delivered_s")}
        for k, col in (("ssrc", "rtp_ssrc"), ("seq", "rtp_seq"), ("pt", "rtp_pt"), ("marker", "rtp_marker"), ("timestamp", "rtp_ts")):
            packets[k] = flat[col][data]
        packets["fate"] = ["queue" if d else "" for d in flat["dropped"][data]]
        return {"packets": packets, "links": {}, "discarded": 0, "media_start_s": self.media_start}

    def _drain_flat(self) -> dict[str, np.ndarray]:
        rows, self.rows = self.rows, []
        cols = list(zip(*rows)) if rows else [()] * 12
        names = ("route", "leg", "arrival_s", "size", "queue_ms", "delivered_s", "dropped", "rtp_ssrc", "rtp_seq", "rtp_pt",
                 "rtp_marker", "rtp_ts")
        types = (np.uint32, np.uint8, float, np.uint32, float, float, bool, np.int64, np.int32, np.int16, np.int8, np.int64)
        self.taken += len(rows)
        out = {n: np.array(c, dtype=t) for n, c, t in zip(names, cols, types)}
        self._all.append(out)
        return out

    def stop(self) -> dict:
        self._stop.set()
        self._th.join()
        self.sock.close()
        # Statistics over everything; what was not drained yet stays for drain_packets.
        rest, keep = self._drain_flat(), self.rows
        self._all.pop()
        self.rows = [list(r) for r in zip(*rest.values())] + keep
        parts = self._all + [rest]
        rec = {k: np.concatenate([p[k] for p in parts]) for k in rest}

        def leg_stats(m) -> dict:
            d = (rec["delivered_s"][m] - rec["arrival_s"][m]) * 1e3
            q = {"n": int(m.sum()), "mean": float(d.mean()) if m.any() else 0.0, "p50": float(np.median(d)) if m.any() else 0.0,
                 "p95": float(np.quantile(d, 0.95)) if m.any() else 0.0}
            return {"arrived_packets": int(m.sum()), "arrived_bytes": int(rec["size"][m].sum()), "delivered_packets": int(m.sum()),
                    "delivered_bytes": int(rec["size"][m].sum()), "random_drops": 0, "queue_drops": 0, "overflow_drops": 0,
                    "delay_ms": q, "queue_delay_ms": {"n": int(m.sum()), "mean": 0.0, "p50": 0.0, "p95": 0.0}}
        routes = [{"sender": r["sender"], "receiver": r["receiver"], "direction": r["direction"],
                   "data": leg_stats((rec["route"] == i) & (rec["leg"] == 0)),
                   "feedback": leg_stats((rec["route"] == i) & (rec["leg"] == 1))} for i, r in enumerate(self.routes)]
        self.record = rec
        return {"end_reason": "stopped", "foreign_datagrams": self.foreign, "routes": routes,
                "forward": leg_stats(np.zeros(len(rec["route"]), dtype=bool)), "reverse": leg_stats(np.zeros(len(rec["route"]), dtype=bool)),
                "capacity_kbps_mean": None}


class FakeCore:
    """Module-like: only ``emulator_start`` (and no error classes)."""

    ConfigError = type("ConfigError", (Exception,), {})
    handles: list[Handle] = []

    @classmethod
    def emulator_start(cls, listen: str, routes_json: str, options_json: str) -> Handle:
        h = Handle(listen, routes_json, options_json)
        cls.handles.append(h)
        return h
