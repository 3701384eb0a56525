//! The sender models calibrated against Chromium (docs/fidelity.md, calibration log): today's
//! libwebrtc burst pacer builds the standing queue a real call has at its bottleneck, and key
//! frames on request (not every 10 s) remove the freezes the periodic ones caused at 15 frames/s.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use ratelab_core::sim::summary::FlowSummary;

/// gcc on a constant 1.5 Mbit/s link, 50 ms one way, 300 ms queue, 15 frames/s, 40 s (the
/// fidelity study's `const-1500k` case).
fn run(pacer_burst_ms: f64, keyframe_interval_s: f64, seed: u64) -> FlowSummary {
    let v = serde_json::json!({
        "name": "const-1500k", "duration_s": 40,
        "link": {"capacity_kbps": 1500, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 50,
                   "media": {"fps": 15, "pacer_burst_ms": pacer_burst_ms, "keyframe_interval_s": keyframe_interval_s}}],
        "metrics": {"packet_log": false}
    });
    let sc = Scenario::from_json(&v.to_string()).expect("valid scenario");
    let mut sim = build_simulation(&sc, seed, None).unwrap();
    sim.run_to_end();
    sim.summary().flows.remove(0)
}

#[test]
fn the_burst_pacer_builds_a_standing_queue_of_about_its_burst() {
    // Chromium's mean queuing delay on this link: 23 ms; the pre-2023 pacer's: 2-5 ms.
    for seed in 1..=3 {
        let smooth = run(0.0, 100.0, seed).queue_delay_ms_mean.unwrap();
        let bursty = run(40.0, 100.0, seed).queue_delay_ms_mean.unwrap();
        assert!(smooth < 8.0, "seed {seed}: pre-2023 pacer mean queue {smooth} ms");
        assert!((12.0..40.0).contains(&bursty), "seed {seed}: burst pacer mean queue {bursty} ms");
    }
}

#[test]
fn periodic_key_frames_freeze_a_15_fps_call_and_key_frames_on_request_do_not() {
    // A 10 s key frame (4 × a frame) takes longer than the freeze threshold (~222 ms at
    // 15 frames/s) to cross: one freeze per key frame after the first (3 in 40 s).
    let periodic = run(40.0, 10.0, 1).freeze_count.unwrap();
    let on_request = run(40.0, 100.0, 1).freeze_count.unwrap();
    assert!(periodic >= 2, "periodic key frames: {periodic} freezes");
    assert_eq!(on_request, 0);
}

/// Mean wire rate / target over 10-40 s, gcc on a constant 500 kbit/s link at 15 frames/s, with
/// the packets' real header (`header_bytes`) and optionally libwebrtc's expected overhead.
fn wire_share(header: u32, expected: Option<f64>, seed: u64) -> f64 {
    let mut media = serde_json::json!({"fps": 15, "pacer_burst_ms": 40, "keyframe_interval_s": 200, "header_bytes": header});
    if let Some(e) = expected { media["expected_overhead_bytes"] = e.into(); }
    let v = serde_json::json!({
        "name": "const-500k", "duration_s": 40, "link": {"capacity_kbps": 500, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 50, "media": media}],
        "metrics": {"packet_log": false}
    });
    let mut sim = build_simulation(&Scenario::from_json(&v.to_string()).unwrap(), seed, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let (mut send, mut target) = (0.0, 0.0);
    for i in 0..s.len() {
        if s.t_s[i] >= 10.0 { send += s.send_kbps[i]; target += s.target_kbps[i]; }
    }
    send / target
}

#[test]
fn an_expected_overhead_above_the_real_headers_leaves_part_of_the_target_unsent() {
    // Chromium at 500 kbit/s: wire / estimate 0.945-0.953 over three calls (docs/fidelity.md,
    // round 4). Measured headers alone send about the whole target; libwebrtc's larger expected
    // overhead (its RTP header with every extension at its largest) leaves the difference unsent.
    for seed in 1..=3 {
        let measured = wire_share(65, None, seed);
        let expected = wire_share(65, Some(90.0), seed);
        eprintln!("seed {seed}: wire/target measured headers {measured:.3}, expected overhead {expected:.3}");
        assert!(measured > 0.97, "seed {seed}: {measured}");
        // 60-70 packets/s × 25 B more than the headers carry ≈ 3 % of 480 kbit/s
        assert!((0.02..0.05).contains(&(measured - expected)), "seed {seed}: {measured} → {expected}");
    }
}
