use super::*;
use crate::controller::SentPacket;

#[test]
fn windowed_filters() {
    let mut mx = WindowedFilter::max(Duration::from_ms(100));
    let mut mn = WindowedFilter::min(Duration::from_ms(100));
    for (t, v) in [(0, 5), (10, 3), (20, 8), (130, 1)] {
        mx.update(Time::from_ms(t), v);
        mn.update(Time::from_ms(t), v);
    }
    // at 130 ms the window is (30, 130]: only 1 remains... plus 8 from 20 ms is expired
    assert_eq!(mx.get(), Some(1));
    assert_eq!(mn.get(), Some(1));
    mx.update(Time::from_ms(140), 4);
    assert_eq!(mx.get(), Some(4));
}

#[test]
fn rate_meter() {
    let mut m = RateMeter::new(Duration::from_ms(100));
    for i in 0..10 { m.add(Time::from_ms(i * 10), Bytes::new(1250)); }
    // 12500 B in 100 ms = 1 Mbit/s
    assert_eq!(m.rate(Time::from_ms(99)), Bitrate::from_kbps(1000));
    assert_eq!(m.rate(Time::from_ms(250)), Bitrate::ZERO);
}

#[test]
fn next_epoch_boundary_hand_computed() {
    let (t0, e) = (Time::from_ms(100), Duration::from_ms(50));
    // on a boundary: the next one, strictly after
    assert_eq!(next_epoch_boundary(t0, e, Time::from_ms(100)), Time::from_ms(150));
    assert_eq!(next_epoch_boundary(t0, e, Time::from_ms(150)), Time::from_ms(200));
    // 1 µs before a boundary: that boundary
    assert_eq!(next_epoch_boundary(t0, e, Time::from_us(149_999)), Time::from_ms(150));
    // a tick 110 ms late (260 ms = 100 + 3·50 + 10): the boundaries at 150–250 are skipped
    assert_eq!(next_epoch_boundary(t0, e, Time::from_ms(260)), Time::from_ms(300));
    // an odd epoch: t0 = 7 µs, ε = 3 µs, now = 20 µs → ⌊13/3⌋ + 1 = 5 → 7 + 15 = 22 µs
    assert_eq!(next_epoch_boundary(Time::from_us(7), Duration::from_us(3), Time::from_us(20)), Time::from_us(22));
    // a zero epoch counts as 1 µs; an extreme `now` saturates instead of overflowing
    assert_eq!(next_epoch_boundary(t0, Duration::ZERO, Time::from_ms(100)), Time::from_us(100_001));
    assert_eq!(next_epoch_boundary(Time::ZERO, e, Time::from_us(i64::MAX)), Time::from_us(i64::MAX));
}

#[test]
fn rtt_flavours_hand_computed() {
    let sp = |seq, t| SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_ms(t), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
    let fb = TransportFeedback {
        feedback_time: Time::from_ms(200),
        report_time: Some(Time::from_ms(150)),
        packets: vec![
            PacketResult { sent: sp(0, 0), recv_time: Some(Time::from_ms(60)) },
            PacketResult { sent: sp(1, 40), recv_time: Some(Time::from_ms(110)) },
            PacketResult { sent: sp(2, 50), recv_time: None },
        ],
        ..Default::default()
    };
    let r = feedback_rtt(&fb).unwrap();
    assert_eq!(r.naive_min, Duration::from_ms(160));
    assert_eq!(r.naive_max, Duration::from_ms(200));
    // p0: 200 − (110 − 60) = 150; p1: 160 − 0 = 160 → 150
    assert_eq!(r.propagation, Duration::from_ms(150));
    // newest p1: 160 − (150 − 110) = 120
    assert_eq!(r.exact, Some(Duration::from_ms(120)));
    // per packet: exact p0 = 200 − 0 − (150 − 60) = 110, p1 = 120; lost p2 has none
    let mx = max_recv_time(&fb).unwrap();
    assert_eq!(packet_rtt(&fb, &fb.packets[0], mx), Some(Duration::from_ms(110)));
    assert_eq!(packet_rtt(&fb, &fb.packets[1], mx), Some(Duration::from_ms(120)));
    assert_eq!(packet_rtt(&fb, &fb.packets[2], mx), None);
    // without the report time: hold against the newest arrival (p0: 200 − 50 = 150)
    let fb2 = TransportFeedback { report_time: None, ..fb.clone() };
    assert_eq!(packet_rtt(&fb2, &fb2.packets[0], mx), Some(Duration::from_ms(150)));
    assert_eq!(packet_rtt(&fb2, &fb2.packets[1], mx), Some(Duration::from_ms(160)));
}

fn sent(seq: u64, t_ms: i64, size: i64, in_flight: i64) -> SentPacket {
    SentPacket { seq, size: Bytes::new(size), send_time: Time::from_ms(t_ms), probe_cluster: None, is_padding: false, data_in_flight: Bytes::new(in_flight) }
}

#[test]
fn sampler_hand_computed_samples() {
    // 1000-byte packets every 10 ms (800 kbit/s) from t = 0; packet 0 opens an empty pipe.
    let mut s = BandwidthSampler::new();
    for i in 0..6 { s.on_packet_sent(&sent(i, 10 * i as i64, 1000, 1000 * (i as i64 + 1))); }
    // Packet 0 acked at 100 ms: A_0 point is its own send (t=0, ack clock 0), send rate
    // "infinite" (sent at the A_0 instant), ack rate = 1000 B / 100 ms = 80 kbit/s.
    let a = s.on_packet_acked(Time::from_ms(100), 0).unwrap();
    assert_eq!(a.send_rate, None);
    assert_eq!(a.ack_rate, Bitrate::from_kbps(80));
    assert_eq!(a.bandwidth, Bitrate::from_kbps(80));
    assert_eq!(a.rtt, Duration::from_ms(100));
    // Packet 1 (sent at 10 ms, snapshot: last acked = A_0 at t=0, total_sent_at_last_acked =
    // 1000): send rate = (2000 − 1000) B / 10 ms = 800 kbit/s; ack rate = (2000 − 0) B /
    // (110 − 0) ms = 145.45 kbit/s.
    let b = s.on_packet_acked(Time::from_ms(110), 1).unwrap();
    assert_eq!(b.send_rate, Some(Bitrate::from_kbps(800)));
    assert_eq!(b.ack_rate, Bitrate::from_bps(145_454));
    assert_eq!(b.bandwidth, b.ack_rate);
    // Packets 2 and 3 in one feedback at 150 ms (shared ack time).
    s.on_packet_sent(&sent(6, 120, 1000, 5000)); // sent after packets 0, 1 were acked
    let fb = TransportFeedback {
        feedback_time: Time::from_ms(150),
        packets: vec![
            crate::controller::PacketResult { sent: sent(2, 20, 1000, 3000), recv_time: Some(Time::from_ms(60)) },
            crate::controller::PacketResult { sent: sent(3, 30, 1000, 4000), recv_time: None },
            crate::controller::PacketResult { sent: sent(4, 40, 1000, 5000), recv_time: Some(Time::from_ms(80)) },
        ],
        ..Default::default()
    };
    let v = s.on_feedback(&fb, AckClock::FeedbackArrival);
    assert_eq!(v.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![2, 4]);
    // packet 2: send (3000 − 1000) / 20 ms = 800 kbit/s; ack: acked now 3000, at send 0,
    // over 150 ms → 160 kbit/s.
    assert_eq!(v[0].send_rate, Some(Bitrate::from_kbps(800)));
    assert_eq!(v[0].ack_rate, Bitrate::from_kbps(160));
    // packet 4: acked now 4000 (3 was lost), at send 0 → 4000 B / 150 ms = 213.33 kbit/s.
    assert_eq!(v[1].ack_rate, Bitrate::from_bps(213_333));
    assert_eq!(v[1].rtt, Duration::from_ms(110));
    // packet 6, sent at 120 ms after packet 1 was acked at 110 ms (sent at 10 ms,
    // total_sent then 2000): send = (7000 − 2000) B / 110 ms; ack at 200 ms:
    // (5000 − 2000) B / (200 − 110) ms = 266.67 kbit/s.
    let c = s.on_packet_acked(Time::from_ms(200), 6).unwrap();
    assert_eq!(c.send_rate, Some(Bitrate::from_bps(363_636)));
    assert_eq!(c.ack_rate, Bitrate::from_bps(266_666));
    assert_eq!(c.bandwidth, c.ack_rate);
    // unknown / already acked / lost packets give nothing
    assert!(s.on_packet_acked(Time::from_ms(210), 3).is_none());
    assert!(s.on_packet_acked(Time::from_ms(210), 6).is_none());
    assert_eq!(s.total_acked(), Bytes::new(5000));
    s.remove_obsolete(6);
    assert_eq!(s.tracked(), 0, "packet 5 was never reported and is obsolete");
}

#[test]
fn sampler_receive_clock_and_app_limited() {
    let mut s = BandwidthSampler::new();
    s.on_packet_sent(&sent(0, 0, 1250, 1250));
    s.on_app_limited();
    s.on_packet_sent(&sent(1, 10, 1250, 2500));
    s.on_packet_sent(&sent(2, 20, 1250, 3750));
    let fb = TransportFeedback {
        feedback_time: Time::from_ms(100),
        packets: vec![
            crate::controller::PacketResult { sent: sent(0, 0, 1250, 1250), recv_time: Some(Time::from_ms(30)) },
            crate::controller::PacketResult { sent: sent(1, 10, 1250, 2500), recv_time: Some(Time::from_ms(40)) },
        ],
        ..Default::default()
    };
    let v = s.on_feedback(&fb, AckClock::ReceiveTime);
    // packet 0: ack 1250 B over 30 ms (A_0 at 0) = 333.33 kbit/s, OWD 30 ms, not app-limited
    assert_eq!(v[0].ack_rate, Bitrate::from_bps(333_333));
    assert_eq!(v[0].rtt, Duration::from_ms(30));
    assert!(!v[0].is_app_limited);
    // packet 1 was sent in the app-limited phase (which ends once a packet after seq 0 is acked)
    assert!(v[1].is_app_limited);
    assert!(!s.is_app_limited());
    // 2500 B acked since the A_0 snapshot, over 40 ms = 500 kbit/s; send 1250 B / 10 ms = 1 Mbit/s
    assert_eq!(v[1].ack_rate, Bitrate::from_kbps(500));
    assert_eq!(v[1].bandwidth, Bitrate::from_kbps(500));
}

#[test]
fn round_counter_and_round_filter() {
    let mut r = RoundCounter::new();
    for s in 0..5 { r.on_packet_sent(s); }
    assert!(r.on_ack(0), "first ack starts round 1");
    assert_eq!(r.count(), 1);
    assert!(!r.on_ack(3), "packets sent before the round started do not end it");
    r.on_packet_sent(5);
    assert!(!r.on_ack(4));
    assert!(r.on_ack(5));
    assert_eq!(r.count(), 2);
    let mut f = RoundWindowedFilter::max(10);
    f.update(1, 100);
    f.update(5, 50);
    assert_eq!(f.get(), Some(100));
    f.update(11, 40); // round 1 still inside (11 − 1 = 10)
    assert_eq!(f.get(), Some(100));
    f.update(12, 30); // round 1 expires, 50 (round 5) remains
    assert_eq!(f.get(), Some(50));
    f.reset_to(12, 7);
    assert_eq!(f.get(), Some(7));
}

#[test]
fn quantile_floor_eq5() {
    let mut v: Vec<Duration> = [40, 10, 30, 20, 50, 60, 70, 80].iter().map(|&x| Duration::from_ms(x)).collect();
    // n = 8, a/b = 1/4 → index 2 of the sorted list = 30 ms
    assert_eq!(quantile_floor(&mut v, 1, 4), Some(Duration::from_ms(30)));
    assert_eq!(quantile_floor(&mut v, 1, 2), Some(Duration::from_ms(50)));
    assert_eq!(quantile_floor(&mut v, 4, 4), Some(Duration::from_ms(80)));
    assert_eq!(quantile_floor(&mut [], 1, 4), None);
}
