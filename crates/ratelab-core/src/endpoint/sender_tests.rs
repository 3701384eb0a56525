//! The media sender's unit tests (endpoint/sender.rs): what the controller is told.

use super::*;
use crate::controller::{SentPacket, TransportFeedback};
use std::sync::{Arc, Mutex};

/// Asks for a fixed rate and records, for every packet the controller is told of, what `read`
/// takes from it.
struct Told { rate: Bitrate, read: fn(&SentPacket) -> i64, seen: Arc<Mutex<Vec<i64>>> }
impl Controller for Told {
    fn on_start(&mut self, _: Time, _: Constraints) -> Update { Update { target_rate: Some(self.rate), ..Update::default() } }
    fn on_packet_sent(&mut self, p: &SentPacket) -> Update { self.seen.lock().unwrap().push((self.read)(p)); Update::default() }
    fn on_feedback(&mut self, _: &TransportFeedback) -> Update { Update::default() }
}

/// Run a gcc flow's sender with `media` for 2 s behind `Told`: each packet on the wire (its
/// size and send time), and what the controller was told of each.
fn run_told(media: serde_json::Value, kbps: i64, read: fn(&SentPacket) -> i64) -> (Vec<Transmit>, Vec<i64>) {
    let v = serde_json::json!({"name": "t", "duration_s": 2, "link": {"capacity_kbps": 5000},
        "flows": [{"kind": "media", "controller": "gcc", "media": media}]});
    let sc = crate::scenario::Scenario::from_json(&v.to_string()).unwrap();
    let cx = crate::controller::BuildContext::new(1);
    let fc = &sc.flows[0];
    let mut s = crate::sim::build::build_media_flow(fc, "flows[0]", &fc.controller, &fc.params, &cx, 1, 0).unwrap().sender;
    let seen = Arc::new(Mutex::new(Vec::new()));
    s.set_controller(Box::new(Told { rate: Bitrate::from_kbps(kbps), read, seen: seen.clone() }));
    s.start(Time::ZERO);
    let mut wire = Vec::new();
    while let Some(t) = s.poll_timeout().filter(|&t| t < Time::from_ms(2000)) {
        s.handle_timeout(t);
        while let Some(x) = s.poll_transmit() { wire.push(x); }
    }
    let seen = seen.lock().unwrap().clone();
    (wire, seen)
}

/// With `media.srtp_tag_bytes` the wire carries every byte and the controller is told the
/// size less the tag, packet by packet (libwebrtc records the size before SRTP appends it).
#[test]
fn the_controller_counts_each_packet_without_its_srtp_tag() {
    for tag in [0, 10] {
        let (wire, told) = run_told(serde_json::json!({"fps": 15, "header_bytes": 64, "srtp_tag_bytes": tag}), 1000, |p| p.size.get());
        assert!(wire.len() > 100, "{} packets", wire.len());
        let expected: Vec<i64> = wire.iter().map(|w| w.size.get() - tag).collect();
        assert_eq!(told, expected, "tag {tag}");
    }
}

/// With `media.send_time_resolution_ms` and `media.burst_spacing_us` the controller is told
/// each burst's packets `spacing` apart, rounded down to whole milliseconds; the wire keeps
/// the release instant.
#[test]
fn the_controller_is_told_send_times_as_libwebrtc_records_them() {
    let at = |wire: &[Transmit]| wire.iter().map(|w| w.send_time.as_us()).collect::<Vec<_>>();
    let send_time = |p: &SentPacket| p.send_time.as_us();
    let (wire0, told0) = run_told(serde_json::json!({"fps": 15, "pacer_burst_ms": 40}), 3000, send_time);
    assert_eq!(told0, at(&wire0), "exact by default");
    let clocked = serde_json::json!({"fps": 15, "pacer_burst_ms": 40, "send_time_resolution_ms": 1, "burst_spacing_us": 40});
    let (wire, told) = run_told(clocked, 3000, send_time);
    let wire = at(&wire);
    assert_eq!(wire, at(&wire0), "the wire is unchanged");
    let mut k = 0;
    for i in 0..wire.len() {
        k = if i > 0 && wire[i] == wire[i - 1] { k + 1 } else { 0 };
        assert_eq!(told[i], (wire[i] + 40 * k).div_euclid(1000) * 1000, "packet {i}");
    }
    assert!(wire.windows(2).filter(|w| w[0] == w[1]).count() > 100, "bursts of several packets");
}

#[test]
fn expected_overhead_by_hand() {
    let (packet, per_packet) = (Bytes::new(1200 + 65), Bytes::new(90));
    // 690 kbit/s at 15 frames/s: 5750-byte frames, 5 packets each, 75 packets/s × 90 B × 8
    assert_eq!(expected_overhead_rate(Bitrate::from_kbps(690), 15.0, packet, per_packet), Bitrate::from_bps(54_000));
    // 4 Mbit/s: 33 333-byte frames, 27 packets, 405 packets/s
    assert_eq!(expected_overhead_rate(Bitrate::from_kbps(4000), 15.0, packet, per_packet), Bitrate::from_bps(291_600));
    // a frame rate under 1 counts as 1 frame/s (a 12 500-byte frame: 10 packets); nothing to
    // send costs nothing
    assert_eq!(expected_overhead_rate(Bitrate::from_kbps(100), 0.0, packet, per_packet), Bitrate::from_bps(10 * 720));
    assert_eq!(expected_overhead_rate(Bitrate::ZERO, 15.0, packet, per_packet), Bitrate::ZERO);
}
