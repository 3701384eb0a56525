//! Hand-computed checks of the pieces, and a few runs on synthetic feedback. libwebrtc's own
//! cases are in `libwebrtc_tests.rs`.

use super::likelihood::{loss_probability, ChannelParameters};
use super::observations::Observation;
use super::*;
use crate::controller::SentPacket;
use crate::units::{Bytes, Duration};

fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }

#[test]
fn loss_model_by_hand() {
    // ℓ = 0.1, B = 1 Mbit/s, x = 2 Mbit/s: 0.1 + 0.9·0.5 = 0.55.
    assert!((loss_probability(0.1, kbps(1000), kbps(2000)) - 0.55).abs() < 1e-12);
    assert!((loss_probability(0.1, kbps(1000), kbps(500)) - 0.1).abs() < 1e-12);
    assert_eq!(loss_probability(0.0, kbps(1000), kbps(500)), 1e-6);
    assert_eq!(loss_probability(1.0, kbps(1000), kbps(500)), 1.0 - 1e-6);
}

#[test]
fn inherent_loss_bounds_by_hand() {
    let v2 = LossBasedBweV2::new(LossV2Config::default());
    let c = |l, b| ChannelParameters { inherent_loss: l, bandwidth: kbps(b) };
    // B = 1 Mbit/s: upper = 0.05 + 100k/1M = 0.15.
    assert!((v2.feasible_inherent_loss(c(0.5, 1000)) - 0.15).abs() < 1e-12);
    assert_eq!(v2.feasible_inherent_loss(c(0.0, 1000)), 0.001);
    // B = 50 kbit/s: 0.05 + 2 > 1 -> upper bound 1.
    assert_eq!(v2.feasible_inherent_loss(c(2.0, 50)), 1.0);
    assert_eq!(v2.feasible_inherent_loss(c(0.5, 50)), 0.5);
    // B = 0: upper bound 1.
    assert_eq!(v2.feasible_inherent_loss(c(0.7, 0)), 0.7);
}

#[test]
fn bias_by_hand_uses_whole_kbps() {
    let v2 = LossBasedBweV2::new(LossV2Config::default());
    // No observations: L = 0. a1 = 0.0002·0.2/0.202, a2 = 0.02·0.2/0.202; 1000.4 kbit/s → 1000.
    let want = 0.0002 * 0.2 / 0.202 * 1000.0 + 0.02 * 0.2 / 0.202 * (1001.0f64).ln();
    assert!((v2.high_bandwidth_bias(Bitrate::from_bps(1_000_400)) - want).abs() < 1e-12);
    // 1000.5 kbit/s rounds up to 1001.
    let want = 0.0002 * 0.2 / 0.202 * 1001.0 + 0.02 * 0.2 / 0.202 * (1002.0f64).ln();
    assert!((v2.high_bandwidth_bias(Bitrate::from_bps(1_000_500)) - want).abs() < 1e-12);
}

#[test]
fn invalid_config_disables_and_names_the_rule() {
    let cfg = LossV2Config { newton_step_size: 0.0, ..LossV2Config::default() };
    assert_eq!(cfg.validate(), Err("LossBasedBweV2: Newton step size must be > 0".to_string()));
    let mut v2 = LossBasedBweV2::new(cfg);
    assert!(!v2.is_enabled());
    v2.update(&[], kbps(300), false);
    assert_eq!(v2.result(), (kbps(300), LossV2State::DelayBasedEstimate));
    assert!(LossV2Config::default().validate().is_ok());
}

/// Feed `secs` of feedback at `rate` (1000 B packets, 50 ms feedback) with loss fraction `loss`.
fn drive(v2: &mut LossBasedBweV2, seq: &mut u64, t0_ms: i64, secs: i64, rate_kbps: i64, loss: f64, delay_based: Bitrate) {
    let pkts_per_fb = (rate_kbps * 1000 / 8 / 1000 / 20).max(1);
    let mut buf = Vec::new();
    let mut lost_acc = 0.0;
    for f in 0..secs * 20 {
        buf.clear();
        for k in 0..pkts_per_fb {
            let send = Time::from_us((t0_ms + 50 * f) * 1000 + k * 50_000 / pkts_per_fb);
            lost_acc += loss;
            let lost = lost_acc >= 1.0;
            if lost {
                lost_acc -= 1.0;
            }
            *seq += 1;
            buf.push(PacketResult {
                sent: SentPacket { seq: *seq, size: Bytes::new(1000), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
                recv_time: if lost { None } else { Some(send + Duration::from_ms(30)) },
            });
        }
        v2.set_acknowledged_bitrate(Bitrate::from_kbps_f64(rate_kbps as f64 * (1.0 - loss)));
        v2.update(&buf, delay_based, false);
    }
}

#[test]
fn no_loss_follows_delay_based_estimate() {
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    v2.set_min_max_bitrate(kbps(30), kbps(10_000));
    let mut seq = 0;
    drive(&mut v2, &mut seq, 0, 3, 1000, 0.0, kbps(1200));
    assert!(v2.is_ready());
    assert_eq!(v2.result(), (kbps(1200), LossV2State::DelayBasedEstimate));
    assert_eq!(v2.average_loss(), 0.0);
    assert!(v2.inherent_loss() <= 0.001 + 1e-12, "{}", v2.inherent_loss());
}

#[test]
fn heavy_loss_is_bounded_by_the_acked_rate() {
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    v2.set_min_max_bitrate(kbps(30), kbps(10_000));
    let mut seq = 0;
    // 25 % loss at 2 Mbit/s: upper bound 100k/(0.25 − 0.05) = 500 kbit/s, but the acked rate
    // (1.5 Mbit/s) is the lower bound.
    drive(&mut v2, &mut seq, 0, 5, 2000, 0.25, kbps(3000));
    assert!((v2.average_loss() - 0.25).abs() < 0.02, "avg {}", v2.average_loss());
    assert_eq!(v2.result(), (kbps(1500), LossV2State::Decreasing));
}

#[test]
fn lost_then_received_is_not_counted_as_lost() {
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    let mk = |seq: u64, t: i64, recv: bool| PacketResult {
        sent: SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_ms(t), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
        recv_time: recv.then(|| Time::from_ms(t + 20)),
    };
    v2.update(&[mk(1, 0, true)], kbps(1000), false);
    v2.update(&[mk(2, 100, false)], kbps(1000), false);
    v2.update(&[mk(2, 100, true), mk(3, 300, true)], kbps(1000), false);
    assert_eq!(v2.num_observations, 1);
    let o = v2.observations[0];
    assert_eq!((o.num_packets, o.num_lost_packets, o.lost_size), (4, 0, Bytes::ZERO));
    // Packet 1 (its send time anchors the window), packet 2 twice and packet 3: 4000 B over
    // 300 ms of send time.
    assert_eq!(o.size, Bytes::new(4000));
    assert_eq!(o.sending_rate, Bitrate::from_bps(8 * 4000 * 1000 / 300));
}

#[test]
fn first_observation_is_anchored_at_the_first_send_time() {
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    let mk = |seq: u64, t: i64| PacketResult {
        sent: SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_ms(t), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
        recv_time: Some(Time::from_ms(t + 20)),
    };
    // One feedback spanning 0–260 ms of send time closes an observation by itself.
    v2.update(&[mk(1, 0), mk(2, 260)], kbps(1000), false);
    assert_eq!(v2.num_observations, 1);
    assert_eq!(v2.observations[0].sending_rate, Bitrate::from_bps(8 * 2000 * 1000 / 260));
}

#[test]
fn average_loss_drops_extremes_by_hand() {
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    // Four observations (newest last) of 1000 B at the same rate, losses 0, 10, 20, 50 %.
    for (i, loss) in [0, 100, 200, 500].into_iter().enumerate() {
        v2.observations[i] = Observation {
            id: Some(i as u64),
            num_packets: 1,
            num_lost_packets: 0,
            sending_rate: kbps(1000),
            size: Bytes::new(1000),
            lost_size: Bytes::new(loss),
        };
    }
    v2.num_observations = 4;
    // Weights (age 3..0): 0.729, 0.81, 0.9, 1. Drop 0 % (w .729) and 50 % (w 1):
    // (0.81·100 + 0.9·200)/(0.81·1000 + 0.9·1000) = 261/1710.
    assert!((v2.calculate_average_reported_loss_ratio() - 261.0 / 1710.0).abs() < 1e-12);
    // If the max-loss observation was sent at ≥ 2× the median rate, keep everything.
    v2.observations[3].sending_rate = kbps(3000);
    let all = (81.0 + 180.0 + 500.0) / (729.0 + 810.0 + 900.0 + 1000.0);
    assert!((v2.calculate_average_reported_loss_ratio() - all).abs() < 1e-12);
}

#[test]
fn hold_grows_on_each_decrease_entry_and_resets_when_delay_based() {
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    v2.set_min_max_bitrate(kbps(30), kbps(10_000));
    let mut seq = 0;
    drive(&mut v2, &mut seq, 0, 3, 1000, 0.0, kbps(1000));
    assert_eq!(v2.state(), LossV2State::DelayBasedEstimate);
    drive(&mut v2, &mut seq, 3000, 3, 1000, 0.3, kbps(1000));
    assert_eq!(v2.state(), LossV2State::Decreasing);
    // Each entry into Decreasing uses the current hold and doubles the next one.
    let d = v2.hold.duration.as_us() / 300_000;
    assert!(d >= 2 && (d as u64).is_power_of_two(), "hold {:?}", v2.hold.duration);
    drive(&mut v2, &mut seq, 6000, 10, 1000, 0.0, kbps(1000));
    assert_eq!(v2.state(), LossV2State::DelayBasedEstimate);
    assert_eq!(v2.hold.duration, Duration::from_ms(300));
}

#[test]
fn newton_step_by_hand_has_no_chain_factor() {
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    // One observation: 10 kB sent at 1 Mbit/s, 2 kB lost.
    v2.observations[0] = Observation {
        id: Some(0),
        num_packets: 10,
        num_lost_packets: 2,
        sending_rate: kbps(1000),
        size: Bytes::new(10_000),
        lost_size: Bytes::new(2000),
    };
    v2.num_observations = 1;
    let mut c = ChannelParameters { inherent_loss: 0.01, bandwidth: kbps(800) };
    v2.newtons_method_update(&mut c);
    // p = 0.01 + 0.99·(1000 − 800)/1000 = 0.208; one step of 0.75 on ℓ with
    // d1 = 2/p − 8/(1 − p), d2 = −(2/p² + 8/(1 − p)²), inside [0.001, 0.05 + 100/800].
    let p: f64 = 0.208;
    let (d1, d2) = (2.0 / p - 8.0 / (1.0 - p), -(2.0 / (p * p) + 8.0 / ((1.0 - p) * (1.0 - p))));
    let want = 0.01 - 0.75 * d1 / d2;
    assert!((c.inherent_loss - want).abs() < 1e-12, "{} vs {want}", c.inherent_loss);
    assert!((want - 0.003825).abs() < 1e-5);
}

#[test]
fn state_machine_runs_before_the_estimate_is_ready() {
    // Default MinNumObservations = 3: after one lossy observation the result is still the
    // delay-based estimate, but the state machine already decreased (libwebrtc does not wait).
    let mut v2 = LossBasedBweV2::new(LossV2Config::default());
    let lost = |seq: u64, t: i64| PacketResult {
        sent: SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_ms(t), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
        recv_time: None,
    };
    v2.set_acknowledged_bitrate(kbps(100));
    v2.update(&[lost(1, 0), lost(2, 300)], kbps(1000), false);
    assert!(!v2.is_ready());
    assert_eq!(v2.result(), (kbps(1000), LossV2State::DelayBasedEstimate));
    assert_eq!(v2.state(), LossV2State::Decreasing);
    // All lost: the acked-rate candidate (100 kbit/s) wins; it is under the instant upper bound
    // 100 kbit/s / (1 − 0.05) and equal to the acked-rate floor.
    assert_eq!(v2.result.bandwidth, kbps(100));
}

/// The objective's reuse of `ln p`, `ln(1 − p)` gives bit for bit the plain sum with both
/// logarithms computed per observation, for candidates below, between and above the observed
/// sending rates (so that `p` both repeats and changes along the window), in byte and packet units.
#[test]
fn objective_equals_the_plain_sum_bit_for_bit() {
    for use_byte_loss_rate in [true, false] {
        let mut v2 = LossBasedBweV2::new(LossV2Config { use_byte_loss_rate, ..LossV2Config::default() });
        v2.set_min_max_bitrate(kbps(30), kbps(10_000));
        let mut seq = 0;
        for (i, (rate, loss)) in [(800, 0.02), (1600, 0.1), (1200, 0.0), (2400, 0.2), (900, 0.05)].into_iter().enumerate() {
            drive(&mut v2, &mut seq, i as i64 * 1000, 1, rate, loss, kbps(1500));
        }
        assert!(v2.initialized_observations().count() >= 10);
        for (l, b) in [(0.001, 500), (0.05, 1000), (0.1, 1300), (0.02, 2000), (0.3, 5000), (0.001, 0)] {
            let c = ChannelParameters { inherent_loss: l, bandwidth: kbps(b) };
            let bias = v2.high_bandwidth_bias(c.bandwidth);
            let mut plain = 0.0;
            for (age, o) in v2.initialized_observations() {
                let p = loss_probability(c.inherent_loss, c.bandwidth, o.sending_rate);
                let w = v2.temporal_weights[age];
                let (lost, received, total) = if use_byte_loss_rate {
                    (o.lost_size.as_f64() / 1000.0, (o.size - o.lost_size).as_f64() / 1000.0, o.size.as_f64() / 1000.0)
                } else {
                    (o.num_lost_packets as f64, o.num_received_packets() as f64, o.num_packets as f64)
                };
                plain += w * (lost * p.ln() + received * (1.0 - p).ln());
                plain += w * bias * total;
            }
            assert_eq!(v2.objective(c).to_bits(), plain.to_bits(), "ℓ {l}, B {b} kbit/s");
        }
    }
}
