//! Independent checks of the wire formats, by decoders no one here wrote:
//!
//! * pion/rtcp (Go, `tools/pion-check`): decodes our TWCC, RFC 8888 and REMB packets to the
//!   same fields, its re-encoding parses back to the same values, and packets pion builds parse
//!   with our parsers.
//! * tshark (Wireshark's RTP/RTCP dissectors): a capture of a live run decodes with zero
//!   malformed packets, and the transport-wide feedback fields are what we sent.
//!
//! Each test prints `SKIPPED: <why>` and passes when its tool is missing (`.ci/run` installs
//! both where it can); set `RATELAB_REQUIRE_INTEROP=1` to make a missing tool a failure.

use ratelab_core::feedback::generator::FeedbackReport;
use ratelab_core::wire::remb::Remb;
use ratelab_core::wire::rfc8888::{CcfbEncoder, CcfbReport};
use ratelab_core::wire::twcc::{Status, TwccEncoder, TwccFeedback};
use ratelab_core::wire::{parse_rtcp, RtcpPacket};
use ratelab_core::Time;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn skip(why: &str) {
    if std::env::var("RATELAB_REQUIRE_INTEROP").is_ok_and(|v| v == "1") { panic!("required interop tool missing: {why}"); }
    eprintln!("SKIPPED: {why}");
}

fn repo_root() -> PathBuf { Path::new(env!("CARGO_MANIFEST_DIR")).join("../..") }

fn hex(b: &[u8]) -> String { b.iter().map(|x| format!("{x:02x}")).collect() }
fn unhex(s: &str) -> Vec<u8> { (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect() }

/// Build tools/pion-check; None (after printing why) if Go or the module is unavailable.
fn pion_check() -> Option<PathBuf> {
    if Command::new("go").arg("version").output().is_err() { skip("`go` is not installed (pion/rtcp round trip)"); return None; }
    let out = std::env::temp_dir().join(format!("ratelab-pion-check-{}", std::process::id()));
    let r = Command::new("go").args(["build", "-o"]).arg(&out).arg(".").current_dir(repo_root().join("tools/pion-check")).output().ok()?;
    if !r.status.success() {
        skip(&format!("cannot build tools/pion-check (module download?): {}", String::from_utf8_lossy(&r.stderr).lines().last().unwrap_or("")));
        return None;
    }
    Some(out)
}

fn run_with_input(bin: &Path, arg: &str, input: &str) -> Vec<serde_json::Value> {
    let mut child = Command::new(bin).arg(arg).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("run pion-check");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Realistic feedback with everything the format has: a wrap, losses, runs, small, large and
/// negative deltas, and an RFC 8888 over-range arrival.
fn our_packets() -> (Vec<TwccFeedback>, Vec<CcfbReport>, Remb) {
    let base = 65_500u64;
    let mut arrivals: Vec<Option<Time>> = (0..400).map(|i| (i % 9 != 4).then(|| Time::from_us(5_000_000 + i * 1_300))).collect();
    for a in arrivals.iter_mut().take(120).skip(100) { *a = None; } // a run of 20 losses
    arrivals[50] = Some(Time::from_us(5_000_000 - 40_000)); // reordered: negative delta
    arrivals[200] = Some(Time::from_us(5_000_000 + 400 * 1_300 + 300_000)); // large delta
    let report = FeedbackReport { report_time: Time::from_secs_f64(6.0), base_seq: base, arrivals };
    let mut enc = TwccEncoder::new(0x1111, 0x2222);
    enc.max_len = 300; // several packets
    let twcc = enc.encode(&report);
    let mut cc = CcfbEncoder::new(0x3333, 0x2222);
    cc.epoch_offset_us = 3_900_000_000_000_000;
    let mut old = report.clone();
    old.arrivals[0] = Some(Time::from_us(6_000_000 - 9_000_000)); // 9 s before the report: over-range
    let ccfb = cc.encode(&old);
    (twcc, ccfb, Remb { sender_ssrc: 0x4444, bitrate_bps: 1_234_567, ssrcs: vec![0x2222] })
}

#[test]
fn pion_rtcp_round_trip() {
    let Some(bin) = pion_check() else { return };
    let (twcc, ccfb, remb) = our_packets();
    let mut lines = String::new();
    let mut ours: Vec<Vec<u8>> = Vec::new();
    for p in &twcc { let mut b = Vec::new(); p.write(&mut b).unwrap(); ours.push(b); }
    for p in &ccfb { let mut b = Vec::new(); p.write(&mut b).unwrap(); ours.push(b); }
    let mut b = Vec::new();
    remb.write(&mut b).unwrap();
    ours.push(b);
    for b in &ours { lines.push_str(&hex(b)); lines.push('\n'); }
    let decoded = run_with_input(&bin, "decode", &lines);
    assert_eq!(decoded.len(), ours.len());
    let (mut n_twcc, mut n_ccfb, mut n_remb) = (0, 0, 0);
    for (bytes, d) in ours.iter().zip(&decoded) {
        assert!(d.get("error").is_none(), "pion rejected {}: {d}", hex(bytes));
        let p = &d["packets"][0];
        let remarshal = unhex(p["remarshal"].as_str().expect("pion re-marshals"));
        match &parse_rtcp(bytes).unwrap()[0] {
            RtcpPacket::Twcc(fb) => {
                n_twcc += 1;
                assert_eq!(p["kind"], "twcc");
                assert_eq!(p["base_seq"], fb.base_seq);
                assert_eq!(p["count"], fb.statuses.len());
                assert_eq!(p["ref_time"], fb.reference_time);
                assert_eq!(p["fb_count"], fb.fb_pkt_count);
                let deltas: Vec<i64> = fb.statuses.iter().filter_map(|s| s.delta_ticks()).map(|t| t * 250).collect();
                let theirs: Vec<i64> = p["deltas_us"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
                assert_eq!(theirs, deltas);
                assert_eq!(TwccFeedback::parse(&remarshal).unwrap(), *fb, "pion's re-encoding parses to the same feedback");
            }
            RtcpPacket::Ccfb(r) => {
                n_ccfb += 1;
                assert_eq!(p["kind"], "ccfb");
                assert_eq!(p["rts"], r.report_timestamp);
                let blk = &p["blocks"][0];
                assert_eq!(blk["begin_seq"], r.blocks[0].begin_seq);
                let metrics: Vec<(bool, u64, u64)> = blk["metrics"].as_array().unwrap().iter()
                    .map(|m| (m[0].as_bool().unwrap(), m[1].as_u64().unwrap(), m[2].as_u64().unwrap())).collect();
                let mine: Vec<(bool, u64, u64)> = r.blocks[0].metrics.iter().map(|m| (m.received, m.ecn as u64, m.ato as u64)).collect();
                assert_eq!(metrics, mine);
                assert_eq!(CcfbReport::parse(&remarshal).unwrap(), *r);
            }
            RtcpPacket::Remb(m) => {
                n_remb += 1;
                assert_eq!(p["kind"], "remb");
                assert_eq!(p["bitrate"].as_f64().unwrap() as u64, m.bitrate_bps);
                assert_eq!(Remb::parse(&remarshal).unwrap(), *m);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(n_twcc >= 2 && n_ccfb >= 1 && n_remb == 1, "{n_twcc} {n_ccfb} {n_remb}");
    // The over-range arrival reached pion as 0x1FFE.
    assert!(decoded.iter().any(|d| d["packets"][0]["blocks"][0]["metrics"][0][2] == 0x1FFE));

    // Packets pion builds, parsed by us.
    let built = run_with_input(&bin, "build", "");
    let bytes: Vec<Vec<u8>> = built.iter().map(|d| unhex(d["hex"].as_str().unwrap())).collect();
    let RtcpPacket::Twcc(t) = &parse_rtcp(&bytes[0]).unwrap()[0] else { panic!("pion TWCC") };
    assert_eq!((t.base_seq, t.reference_time, t.fb_pkt_count), (65_534, 258, 7));
    assert_eq!(t.statuses, vec![Status::Small(4), Status::NotReceived, Status::Large(-8)]);
    let RtcpPacket::Ccfb(c) = &parse_rtcp(&bytes[1]).unwrap()[0] else { panic!("pion CCFB") };
    assert_eq!((c.blocks[0].begin_seq, c.blocks[0].metrics.len(), c.report_timestamp), (65_535, 3, 0x18000));
    assert_eq!(c.blocks[0].metrics[2].ato, 0x1FFE);
    let RtcpPacket::Remb(r) = &parse_rtcp(&bytes[2]).unwrap()[0] else { panic!("pion REMB") };
    assert_eq!(r.bitrate_bps, 1_000_000);
    let _ = std::fs::remove_file(bin);
}

fn tshark_fields(cap: &str, decode: &[String], filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r", cap]);
    for d in decode { cmd.args(["-d", d]); }
    cmd.args(["-Y", filter, "-T", "fields", "-E", "separator=|"]);
    for f in fields { cmd.args(["-e", f]); }
    let out = cmd.output().expect("run tshark");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split('|').map(str::to_string).collect()).collect()
}

#[test]
fn tshark_decodes_a_live_capture_without_malformed_packets() {
    if Command::new("tshark").arg("--version").output().is_err() { skip("`tshark` is not installed (apt-get install tshark)"); return; }
    use ratelab_live::receiver::FeedbackFormat;
    use ratelab_live::run::{live_run, LiveRunOptions};
    for (format, fmt) in [(FeedbackFormat::Twcc, 15), (FeedbackFormat::Rfc8888, 11)] {
        let sc = ratelab_core::scenario::Scenario::from_json(&serde_json::json!({
            "name": "cap", "duration_s": 3,
            "link": {"capacity_kbps": 800, "queue": {"ms": 200}, "loss": 0.02},
            "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 10}]
        }).to_string()).unwrap();
        let cap = std::env::temp_dir().join(format!("ratelab-cap-{}-{fmt}.pcap", std::process::id())).to_string_lossy().to_string();
        let r = live_run(&sc, &LiveRunOptions { format, capture: Some(cap.clone()), ..Default::default() }).unwrap();
        let e = &r.details.emulator;
        assert!(e.capture_error.is_none(), "{:?}", e.capture_error);
        let sender_port = e.client.as_ref().unwrap().rsplit(':').next().unwrap().to_string();
        let recv_port = e.forward_addr.rsplit(':').next().unwrap().to_string();
        let decode = vec![format!("udp.port=={sender_port},rtp"), format!("udp.port=={recv_port},rtcp")];
        let all = tshark_fields(&cap, &decode, "frame", &["frame.number"]);
        assert_eq!(all.len() as u64, e.captured);
        let bad = tshark_fields(&cap, &decode, "_ws.malformed || _ws.expert.severity >= 8388608 || rtcp.rtpfb.transportcc_bad", &["frame.number", "_ws.expert.message"]);
        assert!(bad.is_empty(), "{format:?}: tshark flags {} packets, e.g. {:?}", bad.len(), bad.first());
        // RTP: every sender packet decodes as RTP v2 with our SSRC and the one-byte extension.
        let rtp = tshark_fields(&cap, &decode, "rtp", &["rtp.ssrc", "rtp.ext.profile", "rtp.ext.rfc5285.id"]);
        assert_eq!(rtp.len() as u64, r.details.flows[0].sender.packets_sent);
        assert!(rtp.iter().all(|f| f[0] == "0x5241544c" && f[1] == "0xbede" && f[2] == "5"), "{:?}", rtp.first());
        // RTCP: the feedback packets are RTPFB with our FMT; TWCC fields decode.
        let fb = tshark_fields(&cap, &decode, &format!("rtcp.rtpfb.fmt == {fmt}"), &["frame.number"]);
        assert!(fb.len() as u64 >= r.details.flows[0].receiver.feedback_packets - 2, "{} of {}", fb.len(), r.details.flows[0].receiver.feedback_packets);
        if fmt == 15 {
            let tcc = tshark_fields(&cap, &decode, "rtcp.rtpfb.transportcc.baseseq", &["rtcp.rtpfb.transportcc.baseseq", "rtcp.rtpfb.transportcc.statuscount"]);
            assert!(!tcc.is_empty());
            // the first report starts at the first packet (seq 0, unless the first few were lost)
            assert!(tcc[0][0].parse::<u64>().unwrap() < 5, "{:?}", tcc[0]);
            let total: u64 = tcc.iter().map(|f| f[1].parse::<u64>().unwrap()).sum();
            assert!(total + 50 >= r.details.flows[0].sender.packets_sent, "{total} statuses for {} packets", r.details.flows[0].sender.packets_sent);
        }
        let _ = std::fs::remove_file(&cap);
    }
}
