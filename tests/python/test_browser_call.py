"""The browser contender (``ratelab.browser``): the pieces against hand-computed values, then a
few short real calls through the emulator (skipped without Chromium and Playwright; each one
is real time, so they are few and short: CI has 2 cores)."""

from __future__ import annotations

import json
import math
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from conftest import restore_default_sigint
from ratelab.browser import BrowserOptions, run_browser
from ratelab.browser import chromium, emulator, metrics
from ratelab.browser.call import BypassError, check_through, host_candidate
from ratelab.browser.run import expand_flows
from ratelab.errors import InputError
from ratelab.scenario import Scenario, load_scenario

SIM_SERIES = ("t_s", "flow", "target_kbps", "encoder_kbps", "pacing_kbps", "send_kbps", "recv_kbps", "owd_ms",
              "capacity_kbps", "queue_ms", "cwnd_bytes", "lost_packets", "freezes", "fps", "width", "height")
SIM_FLOW_KEYS = ("id", "label", "kind", "direction", "controller", "start_s", "stop_s", "throughput_kbps", "utilization",
                 "owd_ms_mean", "owd_ms_p50", "owd_ms_p95", "queue_delay_ms_mean", "queue_delay_ms_p95", "loss_rate",
                 "freeze_count", "freeze_ratio", "frame_delay_ms_mean", "frames_rendered", "psnr_db_mean", "packets_sent",
                 "packets_received", "packets_lost", "bytes_sent", "bytes_received", "return_packets_sent",
                 "return_packets_lost", "return_bytes_sent", "return_loss_rate")


def scenario(duration_s: float = 8.0, **link) -> Scenario:
    data = {"name": "browser-test", "duration_s": duration_s,
            "link": {"capacity_kbps": 1000, "queue": {"ms": 300}, **link},
            "flows": [{"kind": "media", "one_way_delay_ms": 25}]}
    return Scenario(data, source="browser-test.toml")


# --- pieces, no browser ------------------------------------------------------------------


def test_missing_browser_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("RATELAB_CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(InputError) as e:
        run_browser(scenario(), out_dir=tmp_path / "chromium")
    line = e.value.line()
    assert "\n" not in line and "/nonexistent/chromium" in line and "apt-get install chromium" in line
    assert not (tmp_path / "chromium").exists()


def test_missing_playwright_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    with pytest.raises(InputError) as e:
        chromium.playwright_module()
    assert "pip install 'ratelab[browser]'" in e.value.line() and "\n" not in e.value.line()


def test_field_trials_flag():
    assert chromium.field_trials_flag({"WebRTC-A": "Enabled", "WebRTC-B": "g1"}) == ["--force-fieldtrials=WebRTC-A/Enabled/WebRTC-B/g1/"]
    assert chromium.field_trials_flag("WebRTC-A/Enabled") == ["--force-fieldtrials=WebRTC-A/Enabled/"]
    assert chromium.field_trials_flag(None) == []
    with pytest.raises(InputError):
        chromium.field_trials_flag({"WebRTC-A": "x/y"})


def test_bad_options_are_named():
    for kw, field in (({"codec": "H265"}, "codec"), ({"complexity": 1.5}, "complexity"), ({"fps": 0}, "fps"),
                      ({"stats_interval_ms": 500}, "stats_interval_ms"), ({"fec": "no"}, "fec"), ({"rtx": 1}, "rtx")):
        with pytest.raises(InputError) as e:
            BrowserOptions(**kw).check()
        assert e.value.field == field


def test_bypass_check():
    emu = ("192.0.2.2", 40000)
    through = {"sender": {"remote": {"ip": "192.0.2.2", "port": 40000, "type": "host"}},
               # Chromium hides a peer-reflexive candidate's address: the port decides.
               "receiver": {"remote": {"ip": None, "port": 40000, "type": "prflx"}}}
    check_through(through, emu)
    direct = dict(through, sender={"remote": {"ip": "192.0.2.2", "port": 38554, "type": "host"}})
    with pytest.raises(BypassError, match="sender's selected pair goes to 192.0.2.2:38554"):
        check_through(direct, emu)
    with pytest.raises(BypassError, match="receiver has no selected candidate pair"):
        check_through(dict(through, receiver=None), emu)
    # A host candidate without an address is not the emulator.
    with pytest.raises(BypassError):
        check_through(dict(through, receiver={"remote": {"ip": None, "port": 40000, "type": "host"}}), emu)


def test_host_candidate_prefers_ipv4_udp_loopback_first():
    c = [{"ip": "fd00::2", "port": 1, "protocol": "udp", "type": "host"},
         {"ip": "192.0.2.2", "port": 2, "protocol": "udp", "type": "host"},
         {"ip": "127.0.0.1", "port": 3, "protocol": "udp", "type": "host"}]
    assert host_candidate(c, "sender")["port"] == 3
    assert host_candidate(c[:2], "sender")["port"] == 2
    with pytest.raises(InputError, match="no IPv4 UDP host candidate"):
        host_candidate(c[:1], "sender")


def test_route_changes_are_refused_for_a_browser_call_not_dropped():
    sc = load_scenario("handover")
    with pytest.raises(InputError, match="route_changes"):
        expand_flows(sc, "chromium")


def test_expand_flows_like_the_simulator():
    sc = Scenario({"name": "x", "duration_s": 30, "link": {"capacity_kbps": 1000, "delay_ms": 10},
                   "reverse_link": {"capacity_kbps": 500, "delay_ms": 4},
                   "flows": [{"kind": "media", "count": 2, "label": "a", "one_way_delay_ms": 20, "stop_s": 40},
                             {"kind": "media", "direction": "reverse", "one_way_delay_ms": 5, "return_delay_ms": 7, "start_s": 3}]},
                  source="x.toml")
    f = expand_flows(sc, "chromium")
    assert [x["label"] for x in f] == ["a0", "a1", "media2"]
    assert (f[0]["data_delay_ms"], f[0]["return_delay_ms"], f[0]["stop_s"]) == (30.0, 24.0, 30.0)
    assert (f[2]["direction"], f[2]["data_delay_ms"], f[2]["return_delay_ms"], f[2]["start_s"]) == ("reverse", 9.0, 17.0, 3.0)
    with pytest.raises(InputError, match="TCP flows"):
        expand_flows(Scenario({"name": "t", "flows": [{"kind": "tcp"}]}, source="t.toml"), "chromium")


def test_fake_emulator_reads_rtp_fields():
    """The test stand-in tells RTP from RTCP, STUN and DTLS as the native emulator does."""
    from fake_emulator import rtp_fields
    rtp = bytes([0x80, 0x60]) + struct.pack("!HII", 513, 90000, 0xDEADBEEF)
    assert rtp_fields(rtp) == (0xDEADBEEF, 513, 0x60, 0, 90000)
    assert rtp_fields(bytes([0x80, 0xE0]) + rtp[2:])[2:4] == (0x60, 1)  # the marker bit
    rtcp_sr = bytes([0x80, 200]) + bytes(10)
    stun = bytes([0x00, 0x01]) + bytes(18)
    dtls = bytes([22, 0xFE, 0xFD]) + bytes(10)
    assert rtp_fields(rtcp_sr) == rtp_fields(stun) == rtp_fields(dtls) == (-1,) * 5


def sample(t_ms, sent, spk, recv, rpk, **kw):
    s = {"flow": 0, "t_ms": t_ms, "spair": {"bytesSent": sent, "packetsSent": spk, "availableOutgoingBitrate": 800_000},
         "rpair": {"bytesReceived": recv, "packetsReceived": rpk}, "out": {"bytesSent": sent, "targetBitrate": 700_000},
         "in": {"freezeCount": 0, "packetsLost": 0}}
    for k, v in kw.items():
        s[k].update(v)
    return s


def test_series_rates_are_wire_rates_over_each_interval():
    # t0 = 1000 s; samples at 1.25 s and 1.5 s after it; the flow starts at 1.0 s.
    ss = [sample(1_001_250, 25_000, 20, 20_000, 16), sample(1_001_500, 50_000, 40, 40_000, 32)]
    cols = metrics.series(ss, 0, 1000.0, 1.0, lambda t: 1000.0, None, 0)
    assert np.allclose(cols["t_s"], [1.25, 1.5])
    # (25000 + 28 * 20) bytes in 0.25 s = 817.92 kbit/s; then the same again.
    assert np.allclose(cols["send_kbps"], [817.92, 817.92])
    assert np.allclose(cols["recv_kbps"], [(20_000 + 28 * 16) * 8 / 0.25 / 1e3] * 2)
    assert np.allclose(cols["target_kbps"], 800.0) and np.allclose(cols["encoder_target_kbps"], 700.0)
    assert np.all(np.isnan(cols["owd_ms"])) and np.allclose(cols["capacity_kbps"], 1000.0)
    assert set(SIM_SERIES) <= set(cols)


def test_series_delay_and_loss_from_a_full_packet_record():
    ss = [sample(1_000_500, 1000, 1, 1000, 1), sample(1_001_000, 2000, 2, 1000, 1)]
    rec = {"route": np.array([0, 0, 0, 1], dtype=np.uint32), "leg": np.array([0, 0, 0, 0], dtype=np.uint8),
           "arrival_s": np.array([0.1, 0.6, 0.7, 0.2]), "size": np.array([100, 100, 100, 100], dtype=np.uint32),
           "queue_ms": np.array([5.0, 12.0, np.nan, 1.0]), "delivered_s": np.array([0.15, 0.68, np.nan, 0.3]),
           "dropped": np.array([False, False, True, False])}
    cols = metrics.series(ss, 0, 1000.0, 0.0, None, rec, 0)
    assert np.allclose(cols["owd_ms"], [50.0, 80.0])  # 0.15-0.1; 0.68-0.6 (route 1 is another flow)
    assert np.allclose(cols["queue_ms"], [5.0, 12.0])
    assert list(cols["lost_packets"]) == [0.0, 1.0]
    assert np.all(np.isnan(cols["capacity_kbps"]))


def test_capacity_of_steps_and_its_mean():
    cap = metrics.capacity_fn({"steps": [[0, 1000], [2, 3000]]})
    assert (cap(0.0), cap(1.999), cap(2.0), cap(9.0)) == (1000.0, 1000.0, 3000.0, 3000.0)
    assert metrics.mean_capacity(cap, 0.0, 4.0, math.nan) == pytest.approx(2000.0, abs=1.0)
    assert metrics.capacity_fn({"trace": "x.csv"}) is None
    assert metrics.mean_capacity(None, 0, 1, 1234.0) == 1234.0


def test_flow_summary_keys_counts_and_cpu_flag():
    info = {"id": 0, "label": "media0", "kind": "media", "direction": "forward", "controller": "chromium", "start_s": 0.0, "stop_s": 10.0}
    last = sample(0, 100_000, 100, 90_000, 90, out={"qualityLimitationDurations": {"none": 9.0, "cpu": 1.0, "bandwidth": 0.0}, "framesEncoded": 250},
                  **{"in": {"freezeCount": 2, "totalFreezesDuration": 0.5, "framesDecoded": 290}})
    route = {"data": {"queue_drops": 3, "random_drops": 1, "delay_ms": {"n": 5, "mean": 60.0, "p50": 55.0, "p95": 90.0},
                      "queue_delay_ms": {"n": 5, "mean": 10.0, "p95": 30.0}},
             "feedback": {"arrived_packets": 50, "queue_drops": 1, "arrived_bytes": 4000}}
    f = metrics.flow_summary(info, last, route, 1000.0, two_way=True)
    assert set(SIM_FLOW_KEYS) <= set(f)
    assert f["bytes_received"] == 90_000 + 28 * 90 and f["packets_sent"] == 100
    assert f["throughput_kbps"] == pytest.approx((90_000 + 28 * 90) * 8 / 10 / 1e3)
    assert f["utilization"] == pytest.approx(f["throughput_kbps"] / 1000.0)
    assert f["packets_lost"] == 4 and f["loss_rate"] == pytest.approx(4 / 94)
    assert (f["owd_ms_p95"], f["queue_delay_ms_mean"]) == (90.0, 10.0)
    assert (f["freeze_count"], f["freeze_ratio"], f["frames_rendered"]) == (2, 0.05, 290)
    assert (f["return_packets_sent"], f["return_packets_lost"], f["return_loss_rate"]) == (50, 1, 0.02)
    assert f["cpu_limited_fraction"] == pytest.approx(0.1) and f["cpu_limited"] is True
    assert f["encoded_fps"] == 25.0 and f["frames_encoded"] == 250
    last["source"] = {"frames": 280}
    assert metrics.flow_summary(info, last, route, 1000.0, two_way=False)["source_fps"] == 28.0
    last["out"]["qualityLimitationDurations"] = {"none": 99.0, "cpu": 1.0}
    assert metrics.flow_summary(info, last, route, 1000.0, two_way=False)["cpu_limited"] is False


def test_jain_over_time():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    a = (0.0, 3.0, t, np.array([0, 100, 200, 300.0]))
    b = (0.0, 3.0, t, np.array([0, 300, 600, 900.0]))
    # Rates 100 and 300 each second: (400^2) / (2 * (100^2 + 300^2)) = 0.8.
    assert metrics.jain_over_time([a, b], 3.0) == pytest.approx(0.8)
    assert metrics.jain_over_time([a], 3.0) == 1.0


# --- real calls --------------------------------------------------------------------------


def _have_browser() -> str | None:
    try:
        chromium.executable()
        chromium.playwright_module()
    except InputError as exc:
        return exc.line()
    try:
        import ratelab._core  # noqa: F401
    except ImportError as exc:
        return f"ratelab._core is not built ({exc})"
    return None


def needs_browser(test):
    """Real calls need Chromium and Playwright: skipped on a developer machine without them, a
    failure under CI (``CI`` set, as .ci/run does), which installs both."""
    missing = _have_browser()
    if missing is None:
        return test
    if os.environ.get("CI"):
        def fail(*_a, **_k):
            pytest.fail(f"the browser contender cannot run under CI: {missing}", pytrace=False)
        fail.__name__ = test.__name__
        return fail
    return pytest.mark.skip(reason=missing)(test)
SMALL = dict(width=320, height=180, fps=15)


@needs_browser
def test_real_call_goes_through_the_emulator_and_counts_agree(tmp_path):
    run_dir = tmp_path / "chromium"
    res = run_browser(scenario(8.0), out_dir=run_dir, options=BrowserOptions(**SMALL, complexity=1.0, max_kbps=800, codec="VP9"))
    f = res.flows[0]
    assert f["codec"] == "VP9"  # setCodecPreferences took
    prov = json.loads((run_dir / "browser.json").read_text())
    stats = prov["emulator"]["stats"]
    data = stats["routes"][0]["data"]
    # Through the emulator: both selected pairs have its port as their remote candidate.
    emu_port = int(prov["emulator"]["listen"].rsplit(":", 1)[1])
    pairs = prov["flows"][0]["selected_pair"]
    assert pairs["sender"]["remote"]["port"] == pairs["receiver"]["remote"]["port"] == emu_port
    assert prov["flows"][0]["selected_pair"]["receiver"]["remote"]["type"] == "prflx"
    # The link starts with the media (align_media): the run's clock counts from the first RTP
    # datagram, which came after ICE and DTLS.
    assert 0.0 < stats["media_start_s"] == prov["emulator"]["time_origin_s"] < 5.0
    import pyarrow.parquet as pq
    assert pq.read_table(run_dir / "packets.parquet").column("send_s").to_numpy().min() == pytest.approx(0.0, abs=1e-9)
    # The browser's counts (its candidate pairs) against the emulator's: the emulator also saw
    # the STUN checks and DTLS handshake the pairs do not count, and RTCP sent after the last sample.
    assert f["packets_sent"] > 300
    assert 0 <= data["arrived_packets"] - f["packets_sent"] <= 0.03 * f["packets_sent"] + 30
    assert 0 <= data["arrived_bytes"] - f["bytes_sent"] <= 0.03 * f["bytes_sent"] + 30 * 1500
    assert 0 <= data["delivered_packets"] - f["packets_received"] <= 0.03 * f["packets_received"] + 30
    assert f["packets_lost"] == data["queue_drops"] + data["random_drops"] + data["overflow_drops"]
    # What the receiver got can be no more than what the emulator delivered, nor what was sent.
    assert f["bytes_received"] <= min(data["delivered_bytes"], f["bytes_sent"])
    assert res.link["capacity_kbps_mean"] == 1000.0
    assert 0.2 < f["utilization"] < 1.0
    assert f["owd_ms_p50"] >= 25.0 and f["frames_rendered"] > 0 and f["frame_width"] == 320
    assert 0 < f["encoded_fps"] <= f["source_fps"] <= 15.5
    # Outputs: the simulator's series columns (and the browser's), the emulator's RTP packets.
    import pyarrow.parquet as pq
    s = pq.read_table(run_dir / "series.parquet")
    assert set(SIM_SERIES) <= set(s.column_names) and {"quality_limitation", "rtt_ms", "fps"} <= set(s.column_names)
    t = s.column("t_s").to_numpy()
    assert len(t) >= 20 and np.all(np.diff(t) > 0) and np.max(np.diff(t)) <= 0.5
    p = pq.read_table(run_dir / "packets.parquet")
    assert 0.9 * f["packets_sent"] <= p.num_rows <= data["arrived_packets"]
    assert prov["browser"]["version"].startswith("Chromium") and "--disable-features=WebRtcHideLocalIpsWithMdns" in prov["browser"]["flags"]
    meta = json.loads(s.schema.metadata[b"ratelab.browser"])
    assert meta["version"] == prov["browser"]["version"] and meta["options"]["codec"] == "VP9"


@needs_browser
def test_a_bypass_is_an_error_and_leaves_nothing(tmp_path):
    with pytest.raises(BypassError, match="media bypassed the emulator: the sender's selected pair goes to"):
        run_browser(scenario(4.0), out_dir=tmp_path / "chromium", options=BrowserOptions(**SMALL, test_bypass=True))
    assert not (tmp_path / "chromium").exists()


@needs_browser
def test_a_browser_crash_is_one_line_and_leaves_nothing(tmp_path):
    with pytest.raises(InputError) as e:
        run_browser(scenario(6.0), out_dir=tmp_path / "chromium", options=BrowserOptions(**SMALL, test_crash_after_s=2.0))
    assert "crashed or closed mid-run" in e.value.line() and "\n" not in e.value.line()
    assert not (tmp_path / "chromium").exists()


@needs_browser
def test_ctrl_c_exits_130_and_leaves_nothing(tmp_path):
    """Ctrl-C at a terminal reaches the whole process group (Python, Playwright's driver, the
    browser, the emulator): the run stops, files are not left half-written."""
    script = textwrap.dedent(f"""
        import sys
        from ratelab.browser import BrowserOptions, run_browser
        from ratelab.run.runner import Interrupted
        from ratelab.scenario import Scenario
        sc = Scenario({{"name": "t", "duration_s": 30, "link": {{"capacity_kbps": 1000}}, "flows": [{{"kind": "media"}}]}}, source="t")
        try:
            run_browser(sc, out_dir={str(tmp_path / "chromium")!r}, options=BrowserOptions(width=320, height=180, fps=15))
        except Interrupted:
            print("interrupted: finished runs were kept", file=sys.stderr)
            sys.exit(130)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=restore_default_sigint)
    time.sleep(6.0)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not (tmp_path / "chromium").exists()
    # Nothing of the session is left running (browser, driver, emulator).
    time.sleep(1.0)
    left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert left == []


@needs_browser
def test_several_flows_both_ways_through_an_emulator_with_routes(tmp_path, monkeypatch):
    """Against a stand-in for the routed emulator (``emulator_start``; tests/python/fake_emulator.py:
    delays only): every flow of the scenario, forward and reverse, is its own call through it, and
    the per-packet record fills the delay columns."""
    from fake_emulator import FakeCore

    monkeypatch.setattr(emulator, "core", lambda: FakeCore)
    sc = Scenario({"name": "two-way", "duration_s": 6.0,
                   "link": {"capacity_kbps": 2000, "delay_ms": 5}, "reverse_link": {"capacity_kbps": 2000, "delay_ms": 5},
                   "flows": [{"kind": "media", "one_way_delay_ms": 20},
                             {"kind": "media", "one_way_delay_ms": 20, "stop_s": 4.0},
                             {"kind": "media", "direction": "reverse", "one_way_delay_ms": 10, "start_s": 1.5}]},
                  source="two-way.toml")
    run_dir = tmp_path / "chromium"
    res = run_browser(sc, out_dir=run_dir, options=BrowserOptions(width=160, height=90, fps=10, max_kbps=300))
    stats = FakeCore.handles[-1]
    prov = json.loads((run_dir / "browser.json").read_text())
    port = int(prov["emulator"]["listen"].rsplit(":", 1)[1])
    assert [f["label"] for f in res.flows] == ["media0", "media1", "media2"]
    assert [f["direction"] for f in res.flows] == ["forward", "forward", "reverse"]
    assert res.reverse_link is not None
    # Datagrams from no route: only connectivity checks from the senders' other host candidates
    # (each sender pairs all of them with the emulator's address; those pairs just fail).
    others = {(c["ip"], c["port"]) for pf in prov["flows"] for c in pf["candidates"]["sender"]}
    assert stats.foreign_src <= others
    for f, pf, route in zip(res.flows, prov["flows"], prov["emulator"]["stats"]["routes"]):
        assert pf["selected_pair"]["sender"]["remote"]["port"] == pf["selected_pair"]["receiver"]["remote"]["port"] == port
        assert f["packets_sent"] > 20
        assert 0 <= route["data"]["arrived_packets"] - f["packets_sent"] <= 0.05 * f["packets_sent"] + 30
        assert route["feedback"]["arrived_packets"] > 0  # RTCP came back through it too
        assert f["return_packets_sent"] == route["feedback"]["arrived_packets"]
    import pyarrow.parquet as pq
    s = pq.read_table(run_dir / "series.parquet")
    flow, owd, t = s.column("flow").to_numpy(), s.column("owd_ms").to_numpy(), s.column("t_s").to_numpy()
    # Each flow runs in its own window (start_s, stop_s).
    assert t[flow == 0].max() > 5.5 and t[flow == 1].max() < 4.3 and t[flow == 2].min() > 1.5
    assert (res.flows[1]["stop_s"], res.flows[2]["start_s"]) == (4.0, 1.5)
    # One-way delay = the route's data delay (the stand-in delivers exactly on time): link 5 ms
    # + 20 (forward) or + 10 (reverse).
    for fid, want in ((0, 25.0), (1, 25.0), (2, 15.0)):
        assert np.nanmedian(owd[flow == fid]) == pytest.approx(want, abs=0.01), fid
    p = pq.read_table(run_dir / "packets.parquet")
    assert set(p.column("flow").to_numpy()) == {0, 1, 2}
    assert np.isfinite(p.column("recv_s").to_numpy()).all()


# --- as a contender on the command line ---------------------------------------------------------

@needs_browser
def test_cli_run_chromium_beside_gcc(cli, tmp_path):
    """`ratelab run SCENARIO -c chromium -c gcc`: both in summary.json, table and report."""
    out = tmp_path / "o"
    r = cli("run", "lcc-loss", "-c", "chromium", "-c", "gcc", "--set", "duration_s=6", "--set", "link.loss=0",
            "-p", "chromium.width=320", "-p", "chromium.height=180", "-p", "chromium.fps=15", "-q", "--out", str(out))
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert [x["controller"] for x in s["runs"]] == ["chromium", "gcc"]
    f = s["runs"][0]["flows"][0]
    assert f["packets_received"] > 50 and "cpu_limited" in f and f["frame_width"] == 320
    assert (out / "chromium" / "browser.json").is_file() and (out / "chromium" / "series.parquet").is_file()
    assert "chromium" in (out / "report.html").read_text() and "chromium" in r.stdout


def test_cli_chromium_options_are_checked_before_anything_runs(cli, tmp_path):
    r = cli("run", "lcc-loss", "-c", "gcc", "-c", "chromium", "-p", "chromium.resolution=720", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "unknown parameter of chromium (known: width, height" in r.stderr
    assert not (tmp_path / "o").exists()


@needs_browser
def test_cli_browser_crash_keeps_the_runs_before_it(cli, tmp_path):
    out = tmp_path / "o"
    r = cli("run", "lcc-loss", "-c", "gcc", "-c", "chromium", "--set", "duration_s=5", "-p", "chromium.width=320",
            "-p", "chromium.height=180", "-p", "chromium.test_crash_after_s=2.0", "-q", "--out", str(out))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "crashed" in r.stderr, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert [x["controller"] for x in s["runs"]] == ["gcc"] and not (out / "chromium").exists()


@needs_browser
def test_cli_sweep_with_chromium_runs_it_after_the_simulations(cli, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "real"\ncontrollers = ["chromium", "gcc"]\nscenarios = ["lcc-loss"]\nseeds = 1\n'
                    'set = ["duration_s=5", "link.loss=0"]\n[params.chromium]\nwidth = 320\nheight = 180\nfps = 15\n')
    r = cli("sweep", str(plan), "--out", str(tmp_path / "c"))
    assert r.returncode == 0 and "done 2, failed 0" in r.stdout, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("[")]
    assert "controller=gcc" in lines[0] and "controller=chromium" in lines[1]  # the real call last
    run = next((tmp_path / "c" / "real").glob("controller=chromium*/scenario=lcc-loss/seed=1"))
    assert (run / "browser.json").is_file() and (run / "flows.parquet").is_file()


def test_cli_sweep_refuses_bad_chromium_options_before_running(cli, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "real"\ncontrollers = ["chromium"]\nscenarios = ["lcc-loss"]\nseeds = 1\n'
                    '[params.chromium]\ncodec = "H265"\n')
    r = cli("sweep", str(plan), "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "unknown codec 'H265'" in r.stderr
