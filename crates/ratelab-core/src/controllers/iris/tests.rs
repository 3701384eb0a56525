use super::*;
use crate::controller::Controller;
use crate::controllers::testkit::scripted_epoch;

#[test]
fn tanh_step_hand_computed() {
    // x = 1000 pkt/s, rtt − T = 20 ms → U = 1000·0.02 − 10 = 10 packets;
    // d = −3·tanh(10/100) = −3·0.0996680 = −0.299004 ms
    let d = expected_rtt_change(1000.0, 0.020, 10.0, 100.0, 3.0);
    assert!((d + 0.299004).abs() < 1e-6, "{d}");
    // below the target the expected change is positive: x = 200, q = 10 ms → U = −8
    let d = expected_rtt_change(200.0, 0.010, 10.0, 100.0, 3.0);
    assert!((d - 3.0 * (0.08f64).tanh()).abs() < 1e-12, "{d}");
    // saturation: far above the target the step is bounded by δ
    let d = expected_rtt_change(20_000.0, 1.0, 10.0, 100.0, 3.0);
    assert!((d + 3.0).abs() < 1e-9, "{d}");
}

#[test]
fn eq12_receive_rate() {
    // 50 packets of 1250 B (500 kbit) acked over 40 ms → 12.5 Mbit/s
    let r = receive_rate(50 * 1250, Time::from_ms(1000), Time::from_ms(1040)).unwrap();
    assert_eq!(r, Bitrate::from_kbps(12_500));
    assert!(receive_rate(1000, Time::from_ms(5), Time::from_ms(5)).is_none());
}

#[test]
fn least_squares_k_hand_computed() {
    // u = 0, 1, 2, 3; v = 1, 3, 4, 8: ū = 1.5, v̄ = 4, Suu = 5, Suv = 1.5·(-3)·(-1)... by hand:
    // (−1.5)(−3) + (−0.5)(−1) + (0.5)(0) + (1.5)(4) = 4.5 + 0.5 + 0 + 6 = 11 → k = 2.2,
    // b = 4 − 2.2·1.5 = 0.7. Residuals: 0.3, 0.1, −1.1, 0.7 → SSE = 0.09+0.01+1.21+0.49 = 1.8,
    // s² = 0.9, se(k) = sqrt(0.9/5) = 0.424264, t = 5.18545.
    let f = fit_line([(0.0, 1.0), (1.0, 3.0), (2.0, 4.0), (3.0, 8.0)]).unwrap();
    assert!((f.k - 2.2).abs() < 1e-12 && (f.b - 0.7).abs() < 1e-12, "{f:?}");
    assert!((f.t_stat - 5.18545).abs() < 1e-4, "{f:?}");
    assert!(fit_line([(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none(), "no spread in u");
    assert!(fit_line([(1.0, 1.0), (2.0, 2.0)]).is_none(), "too few points");
}

#[test]
fn median_odd_even() {
    assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
    assert_eq!(median(&mut []), None);
}

/// Drive an Iris instance with scripted packets: `per_epoch` packets of 1200 B every epoch,
/// each received `owd(epoch)` after sending, acknowledged per packet after 20 ms.
struct Script { iris: Iris, now: Time, seq: u64, rate: Bitrate, target: Option<Bitrate> }
impl Script {
    fn new(cfg: IrisConfig) -> Self {
        let mut iris = Iris::new(cfg).unwrap();
        let c = Constraints { min_rate: Bitrate::from_kbps(10), max_rate: Bitrate::from_kbps(100_000), start_rate: Bitrate::from_kbps(300) };
        let u = iris.on_start(Time::ZERO, c);
        // x is the pacing rate (pacing factor 1); the encoder target is x · payload/wire
        Script { iris, now: Time::ZERO, seq: 0, rate: u.pacing_rate.unwrap(), target: u.target_rate }
    }
    /// One 50 ms epoch: send `n` packets evenly, deliver each after `owd` (or lose it).
    fn epoch(&mut self, n: u32, owd_ms: f64, lose: &[u32]) {
        let u = scripted_epoch(&mut self.iris, self.now, &mut self.seq, n, owd_ms, 20.0, lose);
        self.now += Duration::from_ms(50);
        if let Some(r) = u.pacing_rate { self.rate = r; }
        self.target = u.target_rate.or(self.target);
    }
}

#[test]
fn cold_start_doubles_from_100_kbps_and_exits_on_loss() {
    let mut s = Script::new(IrisConfig::default());
    assert_eq!(s.rate, Bitrate::from_kbps(100));
    let mut rates = vec![s.rate.kbps_f64()];
    for _ in 0..4 {
        s.epoch(10, 30.0, &[]);
        rates.push(s.rate.kbps_f64());
    }
    assert_eq!(rates, vec![100.0, 200.0, 400.0, 800.0, 1600.0]);
    assert!(s.iris.in_cold_start());
    s.epoch(10, 30.0, &[3]);
    assert!(!s.iris.in_cold_start(), "a lossy epoch ends cold start");
    // the next rate comes from Eq. 7, not from doubling
    assert!(s.rate.kbps_f64() < 3200.0, "{}", s.rate);
}

#[test]
fn cold_start_exits_when_rtt_rises_above_t_plus_2_delta() {
    let mut s = Script::new(IrisConfig::default());
    for _ in 0..3 { s.epoch(10, 30.0, &[]); }
    assert!(s.iris.in_cold_start());
    s.epoch(10, 37.0, &[]); // rtt 57 ms > T 50 ms + 6 ms
    assert!(!s.iris.in_cold_start());
}

/// Steady state by hand. Epoch statistics: 10 packets of 1200 B per 50 ms → x = 200 pkt/s
/// = 1.92 Mbit/s; per-packet ACKs 50 ms apart epoch to epoch → r = 1.92 Mbit/s; RTT 70 ms
/// vs T = 50 ms (cold-start minimum) → U = 200·0.020 − 10 = −6, d = −3·tanh(−0.06)
/// = 0.179784 ms; prior k = 1000·0.05/200 = 0.25 ms per pkt/s → x = 200 + 0.719136 pkt/s
/// = 1 926 904 bit/s.
#[test]
fn steady_step_with_prior_k_hand_computed() {
    let mut s = Script::new(IrisConfig::default());
    s.epoch(10, 30.0, &[]);
    s.epoch(10, 30.0, &[]);
    s.epoch(10, 30.0, &[4]); // exit cold start (pairs have Δrtt = 0: no valid fit)
    assert!(!s.iris.in_cold_start());
    assert_eq!(s.iris.k_source(), KSource::Prior);
    s.epoch(10, 50.0, &[]);
    s.epoch(10, 50.0, &[]);
    let st = s.iris.latest().unwrap();
    assert!((st.x_bps - 1_920_000.0).abs() < 1.0, "{st:?}");
    assert!((st.r_bps.unwrap() - 1_920_000.0).abs() < 1.0, "{st:?}");
    assert!((st.rtt_ms.unwrap() - 70.0).abs() < 1e-9, "{st:?}");
    let want = (200.0 + 0.179784 / 0.25) * 9600.0;
    assert!((s.rate.bps_f64() - want).abs() < 2.0, "{} vs {want}", s.rate.bps_f64());
}

/// With `header_bytes` 40 the encoder gets x · payload/wire: packets of 1200 B → 1160/1200;
/// with the default 0 it gets x.
#[test]
fn encoder_target_leaves_out_the_headers() {
    let mut s = Script::new(IrisConfig { header_bytes: 40.0, ..IrisConfig::default() });
    assert_eq!(s.target, Some(Bitrate::from_kbps(100)), "no packet seen yet: fraction 1");
    for _ in 0..30 { s.epoch(10, 30.0, &[]); } // 300 packets: the EWMA has converged
    let want = s.rate.bps_f64() * 1160.0 / 1200.0;
    let got = s.target.unwrap().bps_f64();
    assert!((got - want).abs() < 1e-3 * want, "{got} vs {want}");
    let mut plain = Script::new(IrisConfig::default());
    for _ in 0..5 { plain.epoch(10, 30.0, &[]); }
    assert_eq!(plain.target, Some(plain.rate));
}

#[test]
fn k_is_learned_from_the_pairs() {
    // Synthetic link: Δrtt = 0.05·(x − r) exactly (ms, pkt/s) with varying x − r.
    let mut iris = Iris::new(IrisConfig::default()).unwrap();
    let c = Constraints { min_rate: Bitrate::from_kbps(10), max_rate: Bitrate::from_kbps(100_000), start_rate: Bitrate::from_kbps(300) };
    iris.on_start(Time::ZERO, c);
    for i in 0..40 {
        let t = Time::from_ms(100 * i);
        let u = ((i * 7) % 11) as f64 - 5.0;
        iris.pairs.push_back((t, u, 0.05 * u + 0.01 * (((i * 3) % 5) as f64 - 2.0)));
    }
    iris.refit(Time::from_ms(4000), None);
    let k = iris.k().unwrap();
    assert!((k - 0.05).abs() < 0.005, "{k}");
    assert_eq!(iris.k_source(), KSource::Fitted);
    // a negative slope is rejected: k stays
    let mut neg = Iris::new(IrisConfig::default()).unwrap();
    neg.on_start(Time::ZERO, c);
    for i in 0..20 { neg.pairs.push_back((Time::from_ms(i), i as f64, -(i as f64))); }
    neg.refit(Time::from_ms(30), None);
    assert!(neg.k().is_none());
}

#[test]
fn batched_feedback_reconstructs_per_packet_ack_times() {
    let iris = Iris::new(IrisConfig::default()).unwrap();
    let fb = TransportFeedback { feedback_time: Time::from_ms(200), report_time: Some(Time::from_ms(170)), ..Default::default() };
    // received at 120 ms, report left at 170 and arrived at 200: a per-packet ACK would
    // have arrived at 120 + 30 = 150 ms
    assert_eq!(iris.ack_time(&fb, Time::from_ms(120)), Time::from_ms(150));
    let naive = Iris::new(IrisConfig { ack_timing: AckTiming::FeedbackArrival, ..IrisConfig::default() }).unwrap();
    assert_eq!(naive.ack_time(&fb, Time::from_ms(120)), Time::from_ms(200));
}
