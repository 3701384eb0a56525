//! The media sender's unit tests (endpoint/sender.rs): what the controller is told.

use super::*;
use crate::controller::{SentPacket, TransportFeedback};
use std::sync::{Arc, Mutex};

/// Records the sizes the controller is told, and asks for a fixed 1 Mbit/s.
struct Sizes(Arc<Mutex<Vec<i64>>>);
impl Controller for Sizes {
    fn on_start(&mut self, _: Time, _: Constraints) -> Update { Update { target_rate: Some(Bitrate::from_kbps(1000)), ..Update::default() } }
    fn on_packet_sent(&mut self, p: &SentPacket) -> Update { self.0.lock().unwrap().push(p.size.get()); Update::default() }
    fn on_feedback(&mut self, _: &TransportFeedback) -> Update { Update::default() }
}

/// With `media.srtp_tag_bytes` the wire carries every byte and the controller is told the
/// size less the tag, packet by packet (libwebrtc records the size before SRTP appends it).
#[test]
fn the_controller_counts_each_packet_without_its_srtp_tag() {
    for tag in [0, 10] {
        let v = serde_json::json!({"name": "t", "duration_s": 2, "link": {"capacity_kbps": 2000},
            "flows": [{"kind": "media", "controller": "gcc", "media": {"fps": 15, "header_bytes": 64, "srtp_tag_bytes": tag}}]});
        let sc = crate::scenario::Scenario::from_json(&v.to_string()).unwrap();
        let cx = crate::controller::BuildContext::new(1);
        let fc = &sc.flows[0];
        let mut s = crate::sim::build::build_media_flow(fc, "flows[0]", &fc.controller, &fc.params, &cx, 1, 0).unwrap().sender;
        let told = Arc::new(Mutex::new(Vec::new()));
        s.set_controller(Box::new(Sizes(told.clone())));
        s.start(Time::ZERO);
        let mut wire = Vec::new();
        while let Some(t) = s.poll_timeout().filter(|&t| t < Time::from_ms(2000)) {
            s.handle_timeout(t);
            while let Some(x) = s.poll_transmit() { wire.push(x.size.get()); }
        }
        assert!(wire.len() > 100, "{} packets", wire.len());
        let expected: Vec<i64> = wire.iter().map(|w| w - tag).collect();
        assert_eq!(*told.lock().unwrap(), expected, "tag {tag}");
    }
}

/// Records the send times the controller is told.
struct SendTimes(Arc<Mutex<Vec<i64>>>);
impl Controller for SendTimes {
    fn on_start(&mut self, _: Time, _: Constraints) -> Update { Update { target_rate: Some(Bitrate::from_kbps(3000)), ..Update::default() } }
    fn on_packet_sent(&mut self, p: &SentPacket) -> Update { self.0.lock().unwrap().push(p.send_time.as_us()); Update::default() }
    fn on_feedback(&mut self, _: &TransportFeedback) -> Update { Update::default() }
}

/// With `media.send_time_resolution_ms` and `media.burst_spacing_us` the controller is told
/// each burst's packets `spacing` apart, rounded down to whole milliseconds; the wire keeps
/// the release instant.
#[test]
fn the_controller_is_told_send_times_as_libwebrtc_records_them() {
    let run = |media: serde_json::Value| {
        let v = serde_json::json!({"name": "t", "duration_s": 2, "link": {"capacity_kbps": 5000},
            "flows": [{"kind": "media", "controller": "gcc", "media": media}]});
        let sc = crate::scenario::Scenario::from_json(&v.to_string()).unwrap();
        let cx = crate::controller::BuildContext::new(1);
        let fc = &sc.flows[0];
        let mut s = crate::sim::build::build_media_flow(fc, "flows[0]", &fc.controller, &fc.params, &cx, 1, 0).unwrap().sender;
        let told = Arc::new(Mutex::new(Vec::new()));
        s.set_controller(Box::new(SendTimes(told.clone())));
        s.start(Time::ZERO);
        let mut wire = Vec::new();
        while let Some(t) = s.poll_timeout().filter(|&t| t < Time::from_ms(2000)) {
            s.handle_timeout(t);
            while let Some(x) = s.poll_transmit() { wire.push(x.send_time.as_us()); }
        }
        let told = told.lock().unwrap().clone();
        (wire, told)
    };
    let (wire0, told0) = run(serde_json::json!({"fps": 15, "pacer_burst_ms": 40}));
    assert_eq!(told0, wire0, "exact by default");
    let (wire, told) = run(serde_json::json!({"fps": 15, "pacer_burst_ms": 40, "send_time_resolution_ms": 1, "burst_spacing_us": 40}));
    assert_eq!(wire, wire0, "the wire is unchanged");
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
