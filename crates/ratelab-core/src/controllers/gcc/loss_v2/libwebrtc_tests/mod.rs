//! libwebrtc's `loss_based_bwe_v2_test.cc` (branch-heads/7871, commit
//! 1f975dfd761af6e5d76d28333191973b258d82a8), every case with the same inputs and
//! expectations. Each case configures the estimator with the same `WebRTC-Bwe-LossBasedBweV2`
//! field-trial string as libwebrtc's, parsed by [`trial`] into [`LossV2Config`]. libwebrtc's
//! `while (state != X)` loops are bounded here (a hang would be a failure).
//!
//! This file is the fixture (`LossBasedBweV2Test`'s helpers); the cases follow libwebrtc's
//! order in [`setup_and_increase`] (first 26) and [`bounds_and_states`] (last 26).

mod bounds_and_states;
mod setup_and_increase;

use super::*;
use crate::controller::SentPacket;
use crate::units::{Bytes, Duration};

const OBSERVATION_DURATION_LOWER_BOUND: Duration = Duration::from_ms(250);
const DELAYED_INCREASE_WINDOW: Duration = Duration::from_ms(300);
const PACKET_SIZE: i64 = 15_000;
const MAX_LOOPS: usize = 1000;

fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }
fn ms(v: i64) -> Duration { Duration::from_ms(v) }
fn at(d: Duration) -> Time { Time::ZERO + d }
/// `k × kObservationDurationLowerBound` after zero.
fn obs(k: i64) -> Time { at(OBSERVATION_DURATION_LOWER_BOUND * k) }
const INF: Bitrate = Bitrate::INFINITY;

/// The parameters of a `WebRTC-Bwe-LossBasedBweV2/…/` field trial (the part between the
/// slashes) applied to libwebrtc's defaults. Unknown keys fail the test.
fn trial(s: &str) -> LossV2Config {
    let mut c = LossV2Config::default();
    for item in s.split(',').filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once(':').unwrap_or_else(|| panic!("no value in {item:?}"));
        let f = || v.parse::<f64>().unwrap_or_else(|_| panic!("{k}: not a number: {v}"));
        let b = || v.parse::<bool>().unwrap_or_else(|_| panic!("{k}: not a bool: {v}"));
        let rate = || Bitrate::from_bps_f64(v.strip_suffix("kbps").map(|x| x.parse::<f64>().unwrap() * 1000.0).unwrap_or_else(|| v.strip_suffix("bps").unwrap().parse().unwrap()));
        let dur = || Duration::from_ms_f64(v.strip_suffix("ms").map(|x| x.parse::<f64>().unwrap()).unwrap_or_else(|| v.strip_suffix('s').unwrap().parse::<f64>().unwrap() * 1000.0));
        match k {
            "Enabled" => c.enabled = b(),
            "BwRampupUpperBoundFactor" => c.bw_rampup_upper_bound_factor = f(),
            "BwRampupUpperBoundInHoldFactor" => c.bw_rampup_upper_bound_in_hold_factor = f(),
            "BwRampupUpperBoundHoldThreshold" => c.bw_rampup_upper_bound_hold_threshold = f(),
            "BwRampupAccelMaxFactor" => c.rampup_acceleration_max_factor = f(),
            "BwRampupAccelMaxoutTime" => c.rampup_acceleration_maxout_time = dur(),
            "CandidateFactors" => c.candidate_factors = v.split('|').map(|x| x.parse().unwrap()).collect(),
            "HigherBwBiasFactor" => c.higher_bandwidth_bias_factor = f(),
            "HigherLogBwBiasFactor" => c.higher_log_bandwidth_bias_factor = f(),
            "InherentLossLowerBound" => c.inherent_loss_lower_bound = f(),
            "LossThresholdOfHighBandwidthPreference" => c.loss_threshold_of_high_bandwidth_preference = f(),
            "BandwidthPreferenceSmoothingFactor" => c.bandwidth_preference_smoothing_factor = f(),
            "InherentLossUpperBoundBwBalance" => c.inherent_loss_upper_bound_bandwidth_balance = rate(),
            "InherentLossUpperBoundOffset" => c.inherent_loss_upper_bound_offset = f(),
            "InitialInherentLossEstimate" => c.initial_inherent_loss_estimate = f(),
            "NewtonIterations" => c.newton_iterations = v.parse().unwrap(),
            "NewtonStepSize" => c.newton_step_size = f(),
            "AckedRateCandidate" => c.append_acknowledged_rate_candidate = b(),
            "DelayBasedCandidate" => c.append_delay_based_estimate_candidate = b(),
            "UpperBoundCandidateInAlr" => c.append_upper_bound_candidate_in_alr = b(),
            "ObservationDurationLowerBound" => c.observation_duration_lower_bound = dur(),
            "ObservationWindowSize" => c.observation_window_size = v.parse().unwrap(),
            "SendingRateSmoothingFactor" => c.sending_rate_smoothing_factor = f(),
            "InstantUpperBoundTemporalWeightFactor" => c.instant_upper_bound_temporal_weight_factor = f(),
            "InstantUpperBoundBwBalance" => c.instant_upper_bound_bandwidth_balance = rate(),
            "InstantUpperBoundLossOffset" => c.instant_upper_bound_loss_offset = f(),
            "TemporalWeightFactor" => c.temporal_weight_factor = f(),
            "BwBackoffLowerBoundFactor" => c.bandwidth_backoff_lower_bound_factor = f(),
            "MaxIncreaseFactor" => c.max_increase_factor = f(),
            "DelayedIncreaseWindow" => c.delayed_increase_window = dur(),
            "NotIncreaseIfInherentLossLessThanAverageLoss" => c.not_increase_if_inherent_loss_less_than_average_loss = b(),
            "NotUseAckedRateInAlr" => c.not_use_acked_rate_in_alr = b(),
            "UseInStartPhase" => c.use_in_start_phase = b(),
            "MinNumObservations" => c.min_num_observations = v.parse().unwrap(),
            "LowerBoundByAckedRateFactor" => c.lower_bound_by_acked_rate_factor = f(),
            "HoldDurationFactor" => c.hold_duration_factor = f(),
            "UseByteLossRate" => c.use_byte_loss_rate = b(),
            "PaddingDuration" => c.padding_duration = dur(),
            "BoundBestCandidate" => c.bound_best_candidate = b(),
            "MedianSendingRateFactor" => c.median_sending_rate_factor = f(),
            _ => panic!("unknown LossBasedBweV2 key {k}"),
        }
    }
    c
}

/// The fixture's `Config(enabled, valid)`.
fn config(enabled: bool, valid: bool) -> LossV2Config {
    trial(&format!(
        "Enabled:{enabled},BwRampupUpperBoundFactor:{},CandidateFactors:1.1|1.0|0.95,HigherBwBiasFactor:0.01,\
         InherentLossLowerBound:0.001,InherentLossUpperBoundBwBalance:14kbps,InherentLossUpperBoundOffset:0.9,\
         InitialInherentLossEstimate:0.01,NewtonIterations:2,NewtonStepSize:0.4,ObservationWindowSize:15,\
         SendingRateSmoothingFactor:0.01,InstantUpperBoundTemporalWeightFactor:0.97,InstantUpperBoundBwBalance:90kbps,\
         InstantUpperBoundLossOffset:0.1,TemporalWeightFactor:0.98,MinNumObservations:1,\
         ObservationDurationLowerBound:250ms,MaxIncreaseFactor:1.500000,DelayedIncreaseWindow:300ms",
        if valid { "1.2" } else { "0.0" }
    ))
}

/// The fixture's `ShortObservationConfig(custom)`.
fn short(custom: &str) -> LossV2Config { trial(&format!("MinNumObservations:1,ObservationWindowSize:2,{custom}")) }

fn bwe(cfg: LossV2Config) -> LossBasedBweV2 { LossBasedBweV2::new(cfg) }

/// A fresh estimator set to `start` (`SetBandwidthEstimate`) and a packet factory.
fn setup(cfg: LossV2Config, start: Bitrate) -> (LossBasedBweV2, Packets) {
    let mut e = bwe(cfg);
    e.set_bandwidth_estimate(start);
    (e, Packets::default())
}

/// The common start of the loss-limited cases: `setup(cfg, start)`, optional min/max bitrate,
/// the acked rate, then one feedback at 0 with both packets lost.
fn after_full_loss(cfg: LossV2Config, start: Bitrate, min_max: Option<(Bitrate, Bitrate)>, acked: Bitrate, delay_based: Bitrate, in_alr: bool) -> (LossBasedBweV2, Packets) {
    let (mut e, mut p) = setup(cfg, start);
    if let Some((min, max)) = min_max {
        e.set_min_max_bitrate(min, max);
    }
    e.set_acknowledged_bitrate(acked);
    e.update(&p.loss_100p(Time::ZERO, 2), delay_based, in_alr);
    (e, p)
}

fn estimate(e: &LossBasedBweV2) -> Bitrate { e.result().0 }
fn state(e: &LossBasedBweV2) -> LossV2State { e.result().1 }

/// The fixture's packet-result factories; sequence numbers continue across calls.
#[derive(Default)]
struct Packets {
    seq: u64,
}

impl Packets {
    fn packet(&mut self, send: Time, recv: Option<Time>, size: i64) -> PacketResult {
        let seq = self.seq;
        self.seq += 1;
        packet(seq, send, recv, size)
    }

    /// Two received packets sent 250 ms apart.
    fn received(&mut self, t0: Time) -> Vec<PacketResult> {
        let d = OBSERVATION_DURATION_LOWER_BOUND;
        vec![self.packet(t0, Some(t0 + d), PACKET_SIZE), self.packet(t0 + d, Some(t0 + d * 2), PACKET_SIZE)]
    }

    /// Ten packets 250 ms apart, the last one (of `lost_size` bytes) lost.
    fn loss_10p(&mut self, t0: Time, lost_size: i64) -> Vec<PacketResult> {
        let d = OBSERVATION_DURATION_LOWER_BOUND;
        (0..10).map(|i| if i < 9 { self.packet(t0 + d * i, Some(t0 + d * (i + 1)), PACKET_SIZE) } else { self.packet(t0 + d * i, None, lost_size) }).collect()
    }

    /// Two packets 250 ms apart, the second lost.
    fn loss_50p(&mut self, t0: Time) -> Vec<PacketResult> {
        let d = OBSERVATION_DURATION_LOWER_BOUND;
        vec![self.packet(t0, Some(t0 + d), PACKET_SIZE), self.packet(t0 + d, None, PACKET_SIZE)]
    }

    /// `n` lost packets: n − 1 sent 10 ms apart from `t0`, the last at `t0 + 250 ms`.
    fn loss_100p(&mut self, t0: Time, n: i64) -> Vec<PacketResult> {
        let mut v: Vec<_> = (0..n - 1).map(|i| self.packet(t0 + ms(i * 10), None, PACKET_SIZE)).collect();
        v.push(self.packet(t0 + OBSERVATION_DURATION_LOWER_BOUND, None, PACKET_SIZE));
        v
    }
}

fn packet(seq: u64, send: Time, recv: Option<Time>, size: i64) -> PacketResult {
    PacketResult {
        sent: SentPacket { seq, size: Bytes::new(size), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
        recv_time: recv,
    }
}

/// Feed `received(obs(k))` for k = first, first + 1, … until `until` holds; returns the next k.
fn feed_received_until(e: &mut LossBasedBweV2, p: &mut Packets, first: i64, delay_based: Bitrate, in_alr: bool, until: impl Fn(&LossBasedBweV2) -> bool) -> i64 {
    for k in first..first + MAX_LOOPS as i64 {
        if until(e) {
            return k;
        }
        e.update(&p.received(obs(k)), delay_based, in_alr);
    }
    panic!("condition not reached after {MAX_LOOPS} feedbacks");
}

