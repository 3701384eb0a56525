"""The background emulator of the browser harness (`_core.emulator_start`), with two plain UDP
sockets standing in for a sender and a receiver peer connection.

1 Mbit/s with room for 2 waiting packets and 10 ms of delay: a burst of 6 RTP datagrams of 1172
bytes (1200 on the wire, 9.6 ms each) leaves 3 delivered (1 in service, 2 waiting), 3 dropped.
"""

from __future__ import annotations

import json
import math
import socket
import struct

import pytest


def udp() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(0.3)
    return s


def recv_all(s: socket.socket) -> list[bytes]:
    out = []
    while True:
        try:
            out.append(s.recv(2048))
        except socket.timeout:
            return out


def rtp(ssrc: int, seq: int, size: int) -> bytes:
    return struct.pack("!BBHII", 0x80, 96, seq, 0, ssrc) + bytes(size - 12)


def addr(s: socket.socket) -> str:
    return "%s:%d" % s.getsockname()


def test_handle_relays_records_and_stops(core):
    sender, receiver = udp(), udp()
    routes = [{"sender": addr(sender), "receiver": addr(receiver)}]
    opts = {"link": {"capacity_kbps": 1000, "queue": {"packets": 2}, "delay_ms": 10}, "reverse_delay_ms": 5}
    h = core.emulator_start("127.0.0.1:0", json.dumps(routes), json.dumps(opts))
    try:
        host, port = h.local_addr().rsplit(":", 1)
        emu = (host, int(port))
        assert h.running()
        for seq in range(6):
            sender.sendto(rtp(0x1234, seq, 1172), emu)
        assert len(recv_all(receiver)) == 3
        receiver.sendto(b"feedback", emu)
        assert recv_all(sender) == [b"feedback"]
        d = h.drain_packets()
    finally:
        stats = h.stop()
    assert not h.running() and h.stop() == stats
    route = stats["routes"][0]
    assert route["data"]["delivered_packets"] == 3 and route["data"]["queue_drops"] == 3
    assert route["feedback"]["delivered_packets"] == 1
    p = d["packets"]
    assert sorted(p["fate"]) == ["", "", "", "queue", "queue", "queue"]
    assert sorted(p["seq"].tolist()) == list(range(6)) and set(p["ssrc"].tolist()) == {0x1234}
    assert set(p["size"].tolist()) == {1200} and set(p["route"].tolist()) == {0}
    for fate, a, q, t in zip(p["fate"], p["arrival_s"], p["queue_ms"], p["delivered_s"]):
        if fate == "":  # delivered queue + 9.6 ms + 10 ms after arrival, on the model's clock
            assert t - a == pytest.approx((q + 19.6) / 1e3, abs=2e-6)
        else:
            assert math.isnan(q) and math.isnan(t)
    assert d["discarded"] == 0 and len(d["links"]["t_s"]) > 0
    assert len(h.drain_packets()["packets"]["fate"]) == 0


def test_bad_routes_and_options_name_the_field(core):
    with pytest.raises(ValueError) as e:
        core.emulator_start("127.0.0.1:0", json.dumps([{"receiver": "127.0.0.1:9", "data_delay_ms": -1}]), "{}")
    assert e.value.field == "routes[0].data_delay_ms"
    with pytest.raises(ValueError) as e:
        core.emulator_start("127.0.0.1:0", json.dumps([{"receiver": "127.0.0.1:9"}]), json.dumps({"link": {"capacity_kbps": -5}}))
    assert e.value.field == "--capacity-kbps"


def test_handle_switches_the_route_at_its_time(core):
    # 1 Mbit/s + 10 ms, then from 0.3 s 4 Mbit/s + 100 ms: one datagram before, one after.
    sender, receiver = udp(), udp()
    routes = [{"sender": addr(sender), "receiver": addr(receiver)}]
    opts = {"link": {"capacity_kbps": 1000, "delay_ms": 10},
            "route_changes": [{"at_s": 0.3, "link": {"capacity_kbps": 4000, "delay_ms": 100}}]}
    h = core.emulator_start("127.0.0.1:0", json.dumps(routes), json.dumps(opts))
    try:
        host, port = h.local_addr().rsplit(":", 1)
        emu = (host, int(port))
        sender.sendto(rtp(1, 0, 1172), emu)
        assert len(recv_all(receiver)) == 1  # waits 0.3 s for more: past the change
        sender.sendto(rtp(1, 1, 1172), emu)
        assert len(recv_all(receiver)) == 1
        p = h.drain_packets()["packets"]
    finally:
        h.stop()
    assert p["arrival_s"][0] < 0.3 < p["arrival_s"][1]
    delay = [t - a for a, t in zip(p["arrival_s"], p["delivered_s"])]
    assert delay[0] == pytest.approx(0.0096 + 0.010, abs=2e-6)  # 1200 B at 1 Mbit/s + 10 ms
    assert delay[1] == pytest.approx(0.0024 + 0.100, abs=2e-6)  # at 4 Mbit/s + 100 ms


def test_bad_route_change_names_the_field(core):
    route = json.dumps([{"receiver": "127.0.0.1:9"}])
    for rc, field in (({"at_s": 1, "flows": [0], "link": {"capacity_kbps": 500}}, "route_changes[0].flows"),
                      ({"at_s": 1, "link": {"capacity_kbps": 500, "loss": 2}}, "route_changes[0].link.loss")):
        with pytest.raises(ValueError) as e:
            core.emulator_start("127.0.0.1:0", route, json.dumps({"route_changes": [rc]}))
        assert e.value.field == field


def test_aligned_links_start_with_the_first_media_datagram(core):
    # 1 Mbit/s for the schedule's first 0.5 s, then 4 Mbit/s. A DTLS-like datagram at ~0 s does
    # not start the schedule; the first RTP datagram, ~0.6 s later, does: it still meets 1 Mbit/s
    # (unaligned it would meet 4), and one sent ~0.6 s after it meets the step.
    import time

    sender, receiver = udp(), udp()
    routes = [{"sender": addr(sender), "receiver": addr(receiver)}]
    opts = {"link": {"steps": [[0.0, 1000], [0.5, 4000]], "delay_ms": 10}, "align_media_s": 0.0}
    h = core.emulator_start("127.0.0.1:0", json.dumps(routes), json.dumps(opts))
    try:
        host, port = h.local_addr().rsplit(":", 1)
        emu = (host, int(port))
        sender.sendto(bytes([22]) + bytes(1171), emu)  # a DTLS record's first byte
        assert len(recv_all(receiver)) == 1  # waits 0.3 s for more
        time.sleep(0.3)
        assert h.drain_packets()["media_start_s"] is None
        for seq in range(2):
            sender.sendto(rtp(1, seq, 1172), emu)
            assert len(recv_all(receiver)) == 1
            time.sleep(0.3)
        d = h.drain_packets()
    finally:
        stats = h.stop()
    p = d["packets"]
    assert d["media_start_s"] == pytest.approx(p["arrival_s"][0], abs=1e-6) and stats["media_start_s"] == d["media_start_s"]
    assert p["arrival_s"][0] > 0.5 and p["arrival_s"][1] - p["arrival_s"][0] > 0.5
    delay = [t - a for a, t in zip(p["arrival_s"], p["delivered_s"])]
    assert delay[0] == pytest.approx(0.0096 + 0.010, abs=2e-6)  # 1 Mbit/s: the schedule's start
    assert delay[1] == pytest.approx(0.0024 + 0.010, abs=2e-6)  # 4 Mbit/s from 0.5 s after the media
