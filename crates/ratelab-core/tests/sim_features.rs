//! Simulator features of the RMCAT suite: media pause/resume (RFC 8867 5.8) and on/off TCP
//! flows (RFC 8867 5.7). Conservation and determinism must still hold.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

fn in_flight(log: &ratelab_core::metrics::PacketLog) -> u64 {
    log.recv_s.iter().zip(&log.lost).filter(|(r, l)| r.is_nan() && !**l).count() as u64
}

fn paused_flow(pauses: serde_json::Value) -> Scenario {
    scenario(serde_json::json!({
        "name": "t", "duration_s": 12,
        "link": {"capacity_kbps": 2000, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": "fixed", "params": {"rate_kbps": 500}, "pauses": pauses,
                   "media": {"min_kbps": 10, "max_kbps": 10000, "start_kbps": 500, "frame_size_noise": 0.0}}]
    }))
}

#[test]
fn paused_media_sends_nothing_and_resumes_without_a_freeze() {
    let mut sim = build_simulation(&paused_flow(serde_json::json!([[4, 8]])), 1, None).unwrap();
    sim.run_to_end();
    let s = sim.summary();
    let log = sim.take_packets();
    let sent_in = |a: f64, b: f64| log.send_s.iter().filter(|&&t| t >= a && t < b).count();
    // The pacer drains what was queued at 4 s within a frame or two; then silence until 8 s.
    assert!(sent_in(3.0, 4.0) > 30);
    assert_eq!(sent_in(4.1, 8.0), 0);
    assert!(sent_in(8.0, 9.0) > 30, "media resumes");
    let f = &s.flows[0];
    assert_eq!(f.freeze_count, Some(0), "an intended pause is no freeze");
    assert_eq!(f.packets_sent, f.packets_received + f.packets_lost + in_flight(&log));
    // ≈ 8 of 12 s at 500 kbit/s of payload (throughput is over the whole active time).
    let expected = 500.0 * 8.0 / 12.0;
    assert!((f.throughput_kbps - expected).abs() < 0.12 * expected, "{}", f.throughput_kbps);

    // Without the pause the same flow sends throughout.
    let mut sim = build_simulation(&paused_flow(serde_json::json!([])), 1, None).unwrap();
    sim.run_to_end();
    let log = sim.take_packets();
    assert!(log.send_s.iter().filter(|&&t| (4.1..8.0).contains(&t)).count() > 100);
}

#[test]
fn pauses_are_validated() {
    let bad = |pauses: serde_json::Value, kind: &str| {
        let v = serde_json::json!({"name": "t", "duration_s": 10, "link": {"capacity_kbps": 1000},
                                   "flows": [{"kind": kind, "pauses": pauses}]});
        Scenario::from_json(&v.to_string()).unwrap_err().field
    };
    assert_eq!(bad(serde_json::json!([[5, 4]]), "media"), "flows[0].pauses[0]");
    assert_eq!(bad(serde_json::json!([[1, 4], [3, 6]]), "media"), "flows[0].pauses[1]");
    assert_eq!(bad(serde_json::json!([[1, 4]]), "tcp"), "flows[0].pauses");
}

fn on_off(initially_on: bool, off_mean_s: f64) -> Scenario {
    scenario(serde_json::json!({
        "name": "t", "duration_s": 30,
        "link": {"capacity_kbps": 2000, "queue": {"ms": 300}},
        "flows": [{"kind": "tcp", "tcp": {"mss_bytes": 1000}, "one_way_delay_ms": 25,
                   "on_off": {"file_bytes": 50000, "off_mean_s": off_mean_s, "initially_on": initially_on}}]
    }))
}

/// Sorted distinct segment numbers (seq / mss) in a packet log, and idle gaps ≥ `gap` seconds.
fn segments_and_gaps(log: &ratelab_core::metrics::PacketLog, gap: f64) -> (Vec<u64>, usize) {
    let mut segs: Vec<u64> = log.seq.iter().map(|s| s / 1000).collect();
    segs.sort_unstable();
    segs.dedup();
    let mut t: Vec<f64> = log.send_s.clone();
    t.sort_by(f64::total_cmp);
    let gaps = t.windows(2).filter(|w| w[1] - w[0] >= gap).count();
    (segs, gaps)
}

#[test]
fn on_off_tcp_sends_whole_files_separated_by_idle_times() {
    let mut sim = build_simulation(&on_off(true, 1.0), 5, None).unwrap();
    sim.run_to_end();
    let s = sim.summary();
    let log = sim.take_packets();
    let f = &s.flows[0];
    assert_eq!(f.packets_sent, f.packets_received + f.packets_lost + in_flight(&log));
    let (segs, gaps) = segments_and_gaps(&log, 0.15);
    // Segments are numbered without holes: files append to one stream.
    assert_eq!(segs, (0..segs.len() as u64).collect::<Vec<_>>());
    let files = segs.len().div_ceil(50);
    // A 50 kB file takes ≈ 0.3 s at 2 Mbit/s: with 1 s mean OFF, 30 s hold about 20 files.
    assert!((8..=40).contains(&files), "{files} files");
    // Exponential OFF times: P(OFF > 0.15 s) ≈ 0.86, so most files are separated by a visible gap.
    assert!(gaps >= files / 2, "{gaps} idle gaps for {files} files");
    // Far below a greedy flow on the same link.
    assert!(s.link.utilization < 0.6, "{}", s.link.utilization);

    // Deterministic per seed; the OFF times depend on the seed.
    let run = |seed| {
        let mut sim = build_simulation(&on_off(true, 1.0), seed, None).unwrap();
        sim.run_to_end();
        sim.take_packets().send_s.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn on_off_tcp_can_start_idle_and_rejects_max_bytes() {
    let mut sim = build_simulation(&on_off(false, 2.0), 1, None).unwrap();
    sim.run_to_end();
    let log = sim.take_packets();
    let first = log.send_s.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(first > 0.0, "first packet at {first}");
    let mut v = serde_json::json!({"name": "t", "duration_s": 10, "link": {"capacity_kbps": 1000},
        "flows": [{"kind": "tcp", "tcp": {"max_bytes": 1000}, "on_off": {"file_bytes": 1000, "off_mean_s": 1}}]});
    let sc = Scenario::from_json(&v.to_string()).unwrap();
    assert_eq!(build_simulation(&sc, 1, None).err().unwrap().field, "flows[0].tcp.max_bytes");
    v["flows"][0]["kind"] = serde_json::json!("media");
    assert_eq!(Scenario::from_json(&v.to_string()).unwrap_err().field, "flows[0].on_off");
}

/// Random loss at the exit of the bottleneck (ns-3 `RateErrorModel` on the receiving device,
/// spec 5.9) wastes link capacity; at the entrance it does not. A 2 Mbit/s constant sender on a
/// 1 Mbit/s link with 50 % loss: at the entrance 1 Mbit/s survives and fills the link (≈ 1000
/// kbit/s received, the rest overflows the queue); at the exit the link carries 1 Mbit/s of
/// which half is lost (≈ 500 kbit/s received).
#[test]
fn loss_after_queue_wastes_capacity() {
    let run = |after: bool| {
        let sc = scenario(serde_json::json!({
            "name": "t", "duration_s": 20,
            "link": {"capacity_kbps": 1000, "queue": {"ms": 100}, "loss": 0.5, "loss_after_queue": after},
            "flows": [{"kind": "media", "controller": "fixed", "params": {"rate_kbps": 2000, "pacing_factor": 1.0},
                       "one_way_delay_ms": 20, "media": {"min_kbps": 10, "max_kbps": 10000, "start_kbps": 2000,
                       "frame_size_noise": 0.0, "encoder_lag_ms": 0.0, "encoder_pause": false}}]
        }));
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        sim.run_to_end();
        let s = sim.summary();
        (s.link.utilization, s.link.random_drops, s.link.queue_drops)
    };
    let (u_in, rand_in, queue_in) = run(false);
    let (u_out, rand_out, queue_out) = run(true);
    assert!((u_in - 1.0).abs() < 0.05, "entrance: utilization {u_in}");
    assert!((u_out - 0.5).abs() < 0.05, "exit: utilization {u_out}");
    assert!(queue_in > 0 && rand_in > 0 && queue_out > rand_out / 2, "{rand_in} {queue_in} {rand_out} {queue_out}");
}

/// `feedback.report_time = false` withholds the report's generation time, as TWCC on the wire
/// does. Copa takes it out of its RTT samples when it has it, so the same run goes differently;
/// GCC never uses it (one-way delay gradients), so its run is bit-identical.
#[test]
fn withholding_the_report_time_reaches_the_controller() {
    let run = |controller: &str, with: bool| {
        let sc = scenario(serde_json::json!({
            "name": "rt", "duration_s": 30, "link": {"capacity_kbps": 1500, "queue": {"ms": 300}},
            "flows": [{"kind": "media", "controller": controller, "feedback": {"interval_ms": 100, "report_time": with}}]
        }));
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        sim.run_to_end();
        sim.summary()
    };
    assert_ne!(run("copa", true).flows, run("copa", false).flows);
    assert_eq!(run("gcc", true).flows, run("gcc", false).flows);
}

fn with_audio(audio: Option<f64>) -> Scenario {
    let mut media = serde_json::json!({"min_kbps": 100, "max_kbps": 4000, "start_kbps": 500});
    if let Some(a) = audio { media["audio_kbps"] = serde_json::json!(a); }
    scenario(serde_json::json!({
        "name": "t", "duration_s": 10,
        "link": {"capacity_kbps": 1500, "queue": {"ms": 200}, "loss": 0.01},
        "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 30, "media": media}]
    }))
}

#[test]
fn audio_off_is_the_old_media_flow_and_on_adds_one_packet_per_20_ms() {
    let run = |sc: &Scenario| {
        let mut sim = build_simulation(sc, 4, None).unwrap();
        sim.run_to_end();
        (sim.take_packets(), sim.take_series().target_kbps, sim.summary().flows[0].packets_sent)
    };
    // audio_kbps = 0 (explicit) is the default: bit-identical logs.
    let (p0, t0, _) = run(&with_audio(None));
    let (p1, t1, _) = run(&with_audio(Some(0.0)));
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(); // NaN (not received) == NaN
    assert_eq!((&p0.seq, bits(&p0.send_s), bits(&p0.recv_s), &p0.size), (&p1.seq, bits(&p1.send_s), bits(&p1.recv_s), &p1.size));
    assert_eq!(t0, t1);
    // 32 kbit/s in 20-ms frames: 80 B payload + 40 B header, 50 packets per second.
    let (p, _, sent) = run(&with_audio(Some(32.0)));
    // (A video packet of exactly 120 B is possible but rare: the counts allow a few.)
    let mut audio: Vec<f64> = (0..p.size.len()).filter(|&i| p.size[i] == 120).map(|i| p.send_s[i]).collect();
    audio.sort_by(f64::total_cmp);
    assert!((500..=505).contains(&audio.len()), "{} audio packets in 10 s", audio.len());
    let on_grid = audio.windows(2).filter(|w| (w[1] - w[0] - 0.020).abs() < 1e-9).count();
    assert!(on_grid >= 495, "unpaced, every 20 ms: {on_grid}");
    assert_eq!(sent as usize, p.seq.len());
    // Audio carries transport-wide sequence numbers: the flow's sequence space has no holes.
    let mut seqs = p.seq.clone();
    seqs.sort_unstable();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
}

#[test]
fn audio_is_validated() {
    let mut v = serde_json::json!({"name": "t", "duration_s": 1, "link": {"capacity_kbps": 1000},
                                   "flows": [{"kind": "media", "media": {"audio_kbps": -1}}]});
    let err = Scenario::from_json(&v.to_string()).err().expect("negative audio rate");
    assert_eq!(err.field, "flows[0].media.audio_kbps");
    v["flows"][0]["media"] = serde_json::json!({"audio_kbps": 32, "audio_frame_ms": 1});
    let err = Scenario::from_json(&v.to_string()).err().expect("1-ms frames");
    assert_eq!(err.field, "flows[0].media.audio_frame_ms");
}

/// The series' frame columns: `fps` counts the frames the encoder produced in each interval
/// (none during a pause), `width`/`height` are NaN where the resolution is not modelled; with a
/// frame floor the summary counts the encoder's drops and every capture is either encoded or
/// dropped.
#[test]
fn series_reports_the_encoders_frame_rate_and_picture() {
    let mut sim = build_simulation(&paused_flow(serde_json::json!([[4, 8]])), 1, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let mean_fps = |a: f64, b: f64| {
        let v: Vec<f64> = s.t_s.iter().zip(&s.fps).filter(|(t, _)| **t > a && **t <= b).map(|(_, f)| *f).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!((mean_fps(1.0, 4.0) - 30.0).abs() < 1.0, "{}", mean_fps(1.0, 4.0));
    assert_eq!(mean_fps(4.1, 8.0), 0.0, "paused: no frames");
    assert!(s.width.iter().chain(&s.height).all(|w| w.is_nan()));
    assert_eq!(sim.summary().flows[0].frames_dropped_by_encoder, None);

    // 100 kbit/s at 15 frames/s is ~6.7 kbit a frame, under a 27 kbit floor at 640x360.
    let floored = scenario(serde_json::json!({
        "name": "t", "duration_s": 12,
        "link": {"capacity_kbps": 2000, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": "fixed", "params": {"rate_kbps": 100},
                   "media": {"min_kbps": 10, "max_kbps": 10000, "start_kbps": 100, "fps": 15, "frame_floor_kbit": 27}}]
    }));
    let mut sim = build_simulation(&floored, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let dropped = sim.summary().flows[0].frames_dropped_by_encoder.expect("a floor counts its drops");
    let iv = s.t_s[1] - s.t_s[0];
    let encoded: f64 = s.fps.iter().map(|f| f * iv).sum();
    assert!(dropped > 60, "{dropped}");
    assert!((encoded + dropped as f64 - 12.0 * 15.0).abs() <= 2.0, "{encoded} + {dropped}");
    assert!(s.width.iter().all(|&w| w == 640.0) && s.height.iter().all(|&h| h == 360.0));
}
