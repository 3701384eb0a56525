"""Live mode from Python: `ratelab live run|send|recv`, `ratelab emulate` (real time, loopback).

Each test that needs the extension runs a few seconds of wall clock.
"""

from __future__ import annotations

import json
import threading

import pyarrow.parquet as pq
import pytest

from ratelab.run import live
from ratelab.errors import InputError
from ratelab.run.results import write_summary
from ratelab.scenario import load_scenario


def test_live_run_writes_the_same_outputs_as_run(core, tmp_path):
    sc = load_scenario("rmcat-5.1", ["duration_s=4"])
    res = live.run_live(sc, ["gcc"], out_dir=tmp_path, seed=3)
    summary = json.loads(write_summary(res).read_text())
    assert summary["scenario"] == "rmcat-5.1" and summary["seed"] == 3
    run = summary["runs"][0]
    assert run["controller"] == "gcc"
    flow = run["flows"][0]
    # 4 s at 150 kbit/s start on a 1 Mbit/s link: GCC ramps up, nothing is lost.
    assert flow["packets_sent"] > 50 and flow["packets_received"] > 0.95 * flow["packets_sent"]
    assert 0.05 < run["link"]["utilization"] < 1.0
    assert 50 < flow["owd_ms_mean"] < 200  # 50 ms propagation + queue
    series = pq.read_table(tmp_path / "gcc" / "series.parquet").to_pydict()
    assert len(series["t_s"]) > 100 and max(series["target_kbps"]) > 150
    packets = pq.read_table(tmp_path / "gcc" / "packets.parquet")
    assert packets.num_rows == flow["packets_sent"]
    details = json.loads((tmp_path / "gcc" / "live.json").read_text())
    assert details["flows"][0]["sender"]["end_reason"] == "duration"
    assert details["flows"][0]["sender"]["feedback_packets"] > 10
    assert details["emulator"]["forward"]["delivered_packets"] >= flow["packets_received"]


def test_live_rejects_what_it_cannot_run():
    with pytest.raises(InputError) as e:
        live.run_live(load_scenario("rmcat-5.6", ["duration_s=2"]))
    assert e.value.field == "flows[1].kind" and "simulator only" in e.value.message
    with pytest.raises(InputError):
        live.run_live(load_scenario("rmcat-5.1"), feedback="quic")
    with pytest.raises(InputError):
        live.link_document(None, None, 0.0, None, None, 0.0)


def test_live_run_applies_the_route_changes_of_handover(core, tmp_path):
    # handover shortened to 4 s: Wi-Fi (10 Mbit/s) -> LTE (2 Mbit/s) at 2 s -> Wi-Fi at 3 s.
    sc = load_scenario("handover", ["duration_s=4", "route_changes[0].at_s=2", "route_changes[1].at_s=3"])
    res = live.run_live(sc, ["gcc"], out_dir=tmp_path)
    run = json.loads(write_summary(res).read_text())["runs"][0]
    assert run["link"]["capacity_kbps_mean"] == pytest.approx((10000 * 2 + 2000 + 10000) / 4, rel=1e-3)
    told = json.loads((tmp_path / "gcc" / "live.json").read_text())["flows"][0]["sender"]["route_changes_told_s"]
    assert len(told) == 2 and 2.0 <= told[0] < 2.1 and 3.0 <= told[1] < 3.1, told
    series = pq.read_table(tmp_path / "gcc" / "series.parquet").to_pydict()
    cap = dict(zip(series["t_s"], series["capacity_kbps"]))
    assert cap[1.5] == 10000 and cap[2.5] == 2000 and cap[3.5] == 10000


def test_live_run_bad_route_change_is_one_line(cli):
    from test_cli import assert_bad_input
    assert_bad_input(cli("live", "run", "handover", "--set", "route_changes[1].at_s=10"), field="route_changes[1].at_s", words="time order")


def test_send_through_emulator_to_receiver(core):
    """Three separate components, as on three hosts: sender → emulator → receiver."""
    results: dict[str, dict] = {}
    emu_opts = {"link": live.link_document(None, 800.0, 0.0, 200.0, None, 0.0), "forward_delay_ms": 20.0,
                "reverse_delay_ms": 20.0, "duration_s": 6.0}
    recv_t = threading.Thread(target=lambda: results.__setitem__("recv", live.recv(
        "127.0.0.1:47914", live.flow_document("gcc"), {"first_packet_timeout_s": 10, "silence_timeout_s": 3}, "127.0.0.1:47916")))
    emu_t = threading.Thread(target=lambda: results.__setitem__("emu", live.emulate("127.0.0.1:47916", "127.0.0.1:47914", emu_opts)))
    recv_t.start()
    emu_t.start()
    sent = live.send("127.0.0.1:47916", live.flow_document("gcc"), {"duration_s": 3.0}, "127.0.0.1:0")
    recv_t.join(20)
    emu_t.join(20)
    rx, emu = results["recv"], results["emu"]
    assert sent["end_reason"] == "duration" and sent["feedback_packets"] > 10
    assert rx["end_reason"] == "bye" and rx["packets_received"] >= sent["packets_sent"] - 5
    assert emu["forward"]["arrived_packets"] >= sent["packets_sent"]
    assert emu["reverse"]["delivered_packets"] >= rx["feedback_packets"] - 2
    # OWD: 20 ms of emulated propagation plus queueing/transmission at 800 kbit/s
    assert 20 < rx["owd_ms_mean"] < 150


def test_cli_errors_are_one_line(cli, core):
    r = cli("emulate", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9")
    assert r.returncode == 2 and r.stderr.strip().startswith("error: ") and "--trace" in r.stderr
    r = cli("live", "send", "--to", "127.0.0.1:9", "--timeout", "0.5", "--duration", "3")
    assert r.returncode == 2 and "no feedback from 127.0.0.1:9" in r.stderr
    r = cli("live", "run", "rmcat-5.6")
    assert r.returncode == 2 and "flows[1].kind: TCP flows run in the simulator only" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("live", "run", "lcc-loss", "--set", "flows.0.media.fec=true")
    assert r.returncode == 2 and "flows[0].media.fec: live mode does not carry FEC packets yet" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_live_run_cli_runs_every_flow_with_the_controller_given(cli, core, tmp_path):
    """rmcat-5.2 (two media flows, count = 2) shortened to 12 s: `-c nada` replaces the
    controller of both flows, as `ratelab run -c` does; summary.json, the series and the packet
    log carry both flows with the simulator's labels and ids."""
    r = cli("live", "run", "rmcat-5.2", "--set", "duration_s=12", "-c", "nada", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    run = summary["runs"][0]
    flows = run["flows"]
    assert [f["label"] for f in flows] == ["media0", "media1"]
    assert [f["id"] for f in flows] == [0, 1]
    assert all(f["controller"] == "nada" for f in flows)
    for f in flows:
        # 12 s from 150 kbit/s on a 4 Mbit/s link: both ramp up, nearly nothing is lost.
        assert f["packets_sent"] > 100 and f["packets_received"] > 0.95 * f["packets_sent"], f
        assert f["throughput_kbps"] > 100, f
    assert 0.0 < run["link"]["jain_index"] <= 1.0
    series = pq.read_table(tmp_path / "nada" / "series.parquet").to_pydict()
    assert set(series["flow"]) == {0, 1}
    packets = pq.read_table(tmp_path / "nada" / "packets.parquet").to_pydict()
    for f in flows:
        assert sum(1 for x in packets["flow"] if x == f["id"]) == f["packets_sent"]
    details = json.loads((tmp_path / "nada" / "live.json").read_text())
    assert [d["label"] for d in details["flows"]] == ["media0", "media1"]
    assert len(details["emulator"]["routes"]) == 2
