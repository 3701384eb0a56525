//! AIMD rate controller, send-side mode (spec 2.6, libwebrtc `aimd_rate_control.cc`).
//!
//! State machine Hold / Increase / Decrease driven by the detector hypothesis; multiplicative
//! increase (8 %/s) until a link-capacity estimate (2.6.1) exists, then the "near max" additive
//! increase of about one average packet per response time; decrease to β·R̂ (β = 0.85).

use super::link_capacity::LinkCapacityEstimator;
use super::trendline::BandwidthUsage;
use crate::units::{Bitrate, Duration, Time};

/// Spec 2.6 / 2.15 constants.
const BETA: f64 = 0.85;
const MULT_INCREASE_PER_S: f64 = 1.08;
const MIN_MULT_INCREASE: Bitrate = Bitrate::from_kbps(1);
const ADDITIONAL_BACKOFF: Bitrate = Bitrate::from_kbps(5);
const THROUGHPUT_LIMIT_OFFSET: Bitrate = Bitrate::from_kbps(10);
const FRAMES_PER_SECOND: f64 = 30.0;
const PACKET_SIZE_BYTES: f64 = 1200.0;
const RESPONSE_TIME_OFFSET: Duration = Duration::from_ms(100);
const MIN_INCREASE_BPS_PER_S: f64 = 4000.0;
const DEFAULT_RTT: Duration = Duration::from_ms(200);
const INITIALIZATION_TIME: Duration = Duration::from_secs(5);
const MIN_REDUCTION_INTERVAL: Duration = Duration::from_ms(10);
const MAX_REDUCTION_INTERVAL: Duration = Duration::from_ms(200);
/// Absolute floor (libwebrtc `kCongestionControllerMinBitrate`).
pub const MIN_BITRATE_FLOOR: Bitrate = Bitrate::from_kbps(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateControlState {
    Hold,
    Increase,
    Decrease,
}

impl RateControlState {
    pub fn as_f64(self) -> f64 {
        match self {
            RateControlState::Hold => 0.0,
            RateControlState::Increase => 1.0,
            RateControlState::Decrease => -1.0,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct AimdConfig {
    /// Subtract 5 kbit/s from decreased rates (current libwebrtc; off in the M84 profile, 2.13).
    pub subtract_additional_backoff: bool,
    /// Response time `2·(rtt + 100 ms)` (adaptive-threshold trial, on by default) instead of `rtt + 100 ms`.
    pub double_response_time: bool,
    /// `WebRTC-DontIncreaseDelayBasedBweInAlr` (off by default): hold the estimate in ALR.
    pub no_increase_in_alr: bool,
    /// `WebRTC-Bwe-EstimateBoundedIncrease` (on by default): a network-state estimate's upper
    /// bound caps the estimate...
    pub estimate_bounded_increase: bool,
    /// ...but never below the current estimate (`c_upper`, on by default).
    pub current_as_min_upper_bound: bool,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            subtract_additional_backoff: true,
            double_response_time: true,
            no_increase_in_alr: false,
            estimate_bounded_increase: true,
            current_as_min_upper_bound: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct AimdRateControl {
    cfg: AimdConfig,
    min_bitrate: Bitrate,
    current: Bitrate,
    latest_throughput: Bitrate,
    capacity: LinkCapacityEstimator,
    state: RateControlState,
    time_last_change: Option<Time>,
    time_first_throughput: Option<Time>,
    initialized: bool,
    rtt: Duration,
    in_alr: bool,
    /// Network-state estimate bounds (`NetworkStateEstimate::link_capacity_lower/upper`).
    network_lower: Option<Bitrate>,
    network_upper: Option<Bitrate>,
    /// Size of the last decrease, for the expected bandwidth period.
    last_decrease: Option<Bitrate>,
}

impl AimdRateControl {
    pub fn new(cfg: AimdConfig) -> Self {
        AimdRateControl {
            cfg,
            min_bitrate: MIN_BITRATE_FLOOR,
            current: Bitrate::from_kbps(30_000),
            latest_throughput: Bitrate::from_kbps(30_000),
            capacity: LinkCapacityEstimator::default(),
            state: RateControlState::Hold,
            time_last_change: None,
            time_first_throughput: None,
            initialized: false,
            rtt: DEFAULT_RTT,
            in_alr: false,
            network_lower: None,
            network_upper: None,
            last_decrease: None,
        }
    }

    pub fn set_start_bitrate(&mut self, start: Bitrate) {
        self.current = start.max(self.min_bitrate);
        self.latest_throughput = self.current;
        self.initialized = true;
    }

    /// Only the minimum binds AIMD (libwebrtc's `SetMinBitrate`); the maximum is applied by
    /// the send-side estimator, so the delay-based estimate may exceed it.
    pub fn set_min(&mut self, min: Bitrate) {
        self.min_bitrate = min.max(MIN_BITRATE_FLOOR);
        self.current = self.current.max(self.min_bitrate);
    }

    pub fn set_in_alr(&mut self, in_alr: bool) { self.in_alr = in_alr; }

    /// A network-state estimate's capacity bounds (`SetNetworkStateEstimate`).
    pub fn set_network_state_estimate(&mut self, lower: Option<Bitrate>, upper: Option<Bitrate>) {
        self.network_lower = lower.filter(|r| r.is_finite());
        self.network_upper = upper.filter(|r| r.is_finite());
    }

    pub fn set_rtt(&mut self, rtt: Duration) {
        if rtt > Duration::ZERO && rtt.is_finite() {
            self.rtt = rtt;
        }
    }

    pub fn rtt(&self) -> Duration { self.rtt }
    pub fn valid_estimate(&self) -> bool { self.initialized }
    pub fn latest_estimate(&self) -> Bitrate { self.current }
    pub fn state(&self) -> RateControlState { self.state }
    pub fn capacity(&self) -> &LinkCapacityEstimator { &self.capacity }

    /// Rate limit on decreases (2.6): a new decrease only after `clamp(rtt, 10, 200 ms)` or when
    /// the throughput fell below half the estimate.
    pub fn time_to_reduce_further(&self, now: Time, throughput: Bitrate) -> bool {
        let interval = self.rtt.clamp(MIN_REDUCTION_INTERVAL, MAX_REDUCTION_INTERVAL);
        match self.time_last_change {
            None => return true,
            Some(t) if now - t >= interval => return true,
            _ => {}
        }
        if self.valid_estimate() {
            return throughput < self.current / 2;
        }
        false
    }

    /// Before any acknowledged rate exists: halve at most every reduction interval
    /// (`clamp(rtt, 10, 200 ms)`, i.e. 200 ms with the default RTT), as spec 2.6 states.
    /// (Reading: the throughput shortcut of [`Self::time_to_reduce_further`] is not applied
    /// here, otherwise every overusing feedback would halve the rate.)
    pub fn initial_time_to_reduce_further(&self, now: Time) -> bool {
        // libwebrtc passes `LatestEstimate()/2 − 1 bps` as the throughput, which is always
        // below half the estimate: once valid, every overusing feedback may halve.
        self.valid_estimate() && self.time_to_reduce_further(now, self.current / 2 - Bitrate::from_bps(1))
    }

    /// Set the estimate directly (probe result, initial halving).
    pub fn set_estimate(&mut self, rate: Bitrate, now: Time) {
        self.initialized = true;
        self.current = self.clamp(rate);
        self.time_last_change = Some(now);
    }

    /// One detector update (2.6). `acked` is the acknowledged throughput, if known.
    pub fn update(&mut self, usage: BandwidthUsage, acked: Option<Bitrate>, now: Time) -> Bitrate {
        if !self.initialized {
            // Without a start bitrate, adopt R̂ after 5 s of throughput samples.
            match self.time_first_throughput {
                None => {
                    if acked.is_some() {
                        self.time_first_throughput = Some(now);
                    }
                }
                Some(t0) => {
                    if let (true, Some(r)) = (now - t0 > INITIALIZATION_TIME, acked) {
                        self.current = self.clamp(r);
                        self.initialized = true;
                    }
                }
            }
        }
        self.change_bitrate(usage, acked, now);
        self.current
    }

    fn change_bitrate(&mut self, usage: BandwidthUsage, acked: Option<Bitrate>, now: Time) {
        let throughput = acked.unwrap_or(self.latest_throughput);
        if let Some(a) = acked {
            self.latest_throughput = a;
        }
        if !self.initialized && usage != BandwidthUsage::Overusing {
            return;
        }
        self.change_state(usage, now);
        let mut new_bitrate: Option<Bitrate> = None;
        match self.state {
            RateControlState::Hold => {}
            RateControlState::Increase => {
                if throughput > self.capacity.upper_bound() {
                    self.capacity.reset();
                }
                let mut limit = throughput.scale(1.5) + THROUGHPUT_LIMIT_OFFSET;
                if self.cfg.no_increase_in_alr && self.in_alr {
                    limit = self.current;
                }
                if self.current < limit {
                    let increased = if self.capacity.has_estimate() {
                        self.current + self.additive_increase(now)
                    } else {
                        self.current + self.multiplicative_increase(now)
                    };
                    new_bitrate = Some(increased.min(limit));
                }
                self.time_last_change = Some(now);
            }
            RateControlState::Decrease => {
                let mut decreased = throughput.scale(BETA);
                if self.cfg.subtract_additional_backoff && decreased > ADDITIONAL_BACKOFF {
                    decreased -= ADDITIONAL_BACKOFF;
                }
                if decreased > self.current {
                    if let Some(c) = self.capacity.estimate() {
                        decreased = c.scale(BETA);
                    }
                }
                // Never increase while over-using.
                if decreased < self.current {
                    new_bitrate = Some(decreased);
                }
                if self.initialized && throughput < self.current {
                    self.last_decrease = Some(new_bitrate.map_or(Bitrate::ZERO, |n| self.current - n));
                }
                if throughput < self.capacity.lower_bound() {
                    self.capacity.reset();
                }
                self.initialized = true;
                self.capacity.on_overuse_detected(throughput);
                self.state = RateControlState::Hold;
                self.time_last_change = Some(now);
            }
        }
        self.current = self.clamp(new_bitrate.unwrap_or(self.current));
    }

    fn change_state(&mut self, usage: BandwidthUsage, now: Time) {
        match usage {
            BandwidthUsage::Normal => {
                if self.state == RateControlState::Hold {
                    self.time_last_change = Some(now);
                    self.state = RateControlState::Increase;
                }
            }
            BandwidthUsage::Overusing => self.state = RateControlState::Decrease,
            BandwidthUsage::Underusing => self.state = RateControlState::Hold,
        }
    }

    /// `max(A·(1.08^min(dt, 1 s) − 1), 1 kbit/s)`.
    fn multiplicative_increase(&self, now: Time) -> Bitrate {
        let alpha = match self.time_last_change {
            Some(t) => {
                let dt = (now - t).clamp(Duration::ZERO, Duration::from_secs(1)).as_secs_f64();
                MULT_INCREASE_PER_S.powf(dt)
            }
            None => MULT_INCREASE_PER_S,
        };
        self.current.scale(alpha - 1.0).max(MIN_MULT_INCREASE)
    }

    /// `v_near_max · dt` (2.6).
    fn additive_increase(&self, now: Time) -> Bitrate {
        let dt = match self.time_last_change {
            Some(t) => (now - t).max(Duration::ZERO).as_secs_f64(),
            None => 0.0,
        };
        Bitrate::from_bps_f64(self.near_max_increase_bps_per_s() * dt)
    }

    /// About one average packet per response time, at least 4 kbit/s per second (2.6). Whole
    /// bytes and bit/s as libwebrtc's unit arithmetic (frame interval 33 333 µs).
    pub fn near_max_increase_bps_per_s(&self) -> f64 {
        let frame_us = 1_000_000 / FRAMES_PER_SECOND as i64;
        let frame_bytes = (self.current.bps().saturating_mul(frame_us) + 4_000_000) / 8_000_000;
        let packets_per_frame = (frame_bytes as f64 / PACKET_SIZE_BYTES).ceil().max(1.0);
        let avg_packet_bytes = (frame_bytes as f64 / packets_per_frame).round() as i64;
        let mut response = self.rtt + RESPONSE_TIME_OFFSET;
        if self.cfg.double_response_time {
            response = response * 2;
        }
        let v = (avg_packet_bytes * 8_000_000 / response.as_us().max(1)) as f64;
        v.max(MIN_INCREASE_BPS_PER_S)
    }

    /// Time to recover the last decrease at the near-max rate, 2…50 s; 3 s before any
    /// decrease (`GetExpectedBandwidthPeriod`).
    pub fn expected_bandwidth_period(&self) -> Duration {
        let Some(d) = self.last_decrease else { return Duration::from_secs(3) };
        let secs = d.bps_f64() / self.near_max_increase_bps_per_s();
        Duration::from_secs_f64(secs.min(1e6)).clamp(Duration::from_secs(2), Duration::from_secs(50))
    }

    /// libwebrtc `ClampBitrate`: the network-state estimate's bounds, then the minimum (no
    /// maximum).
    fn clamp(&self, r: Bitrate) -> Bitrate {
        let mut r = r;
        if let (true, Some(up)) = (self.cfg.estimate_bounded_increase, self.network_upper) {
            let upper = if self.cfg.current_as_min_upper_bound { up.max(self.current) } else { up };
            r = r.min(upper);
        }
        if let Some(lo) = self.network_lower {
            if r < self.current {
                r = self.current.min(r.max(lo.scale(BETA)));
            }
        }
        r.max(self.min_bitrate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Time { Time::from_ms(v) }
    fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }

    fn aimd(subtract: bool) -> AimdRateControl {
        let mut a = AimdRateControl::new(AimdConfig { subtract_additional_backoff: subtract, ..AimdConfig::default() });
        a.set_min(kbps(5));
        a.set_start_bitrate(kbps(1000));
        a
    }

    #[test]
    fn decrease_to_085_of_acked() {
        let mut a = aimd(true);
        let r = a.update(BandwidthUsage::Overusing, Some(kbps(500)), ms(1000));
        assert_eq!(r, kbps(420)); // 0.85·500 − 5
        assert_eq!(a.state(), RateControlState::Hold);
        assert!(a.capacity().has_estimate());
        let mut a = aimd(false);
        assert_eq!(a.update(BandwidthUsage::Overusing, Some(kbps(500)), ms(1000)), kbps(425));
        // Overuse never increases: acked above the estimate keeps A.
        let mut a = aimd(false);
        assert_eq!(a.update(BandwidthUsage::Overusing, Some(kbps(2000)), ms(1000)), kbps(1000));
    }

    #[test]
    fn multiplicative_increase_is_eight_percent_per_second() {
        let mut a = aimd(true);
        // First Normal: Hold -> Increase, dt = 0 -> +1 kbit/s minimum step.
        assert_eq!(a.update(BandwidthUsage::Normal, Some(kbps(3000)), ms(0)), kbps(1001));
        for k in 1..=10 {
            a.update(BandwidthUsage::Normal, Some(kbps(3000)), ms(100 * k));
        }
        // 1001·1.08 (in ten 100 ms steps) = 1081.08 kbit/s.
        let r = a.latest_estimate().kbps_f64();
        assert!((r - 1001.0 * 1.08).abs() < 1.0, "{r}");
    }

    #[test]
    fn increase_limited_to_one_and_a_half_acked() {
        let mut a = aimd(true);
        a.update(BandwidthUsage::Normal, Some(kbps(500)), ms(0));
        // limit = 1.5·500 + 10 = 760 < 1000: no change (already above).
        assert_eq!(a.latest_estimate(), kbps(1000));
        let mut a = aimd(true);
        a.set_start_bitrate(kbps(700));
        a.update(BandwidthUsage::Normal, Some(kbps(500)), ms(0));
        for k in 1..50 {
            a.update(BandwidthUsage::Normal, Some(kbps(500)), ms(1000 * k));
        }
        assert_eq!(a.latest_estimate(), kbps(760));
    }

    #[test]
    fn additive_increase_near_max_by_hand() {
        let mut a = aimd(false);
        // rtt 200 ms, A = 1000 kbit/s: frame 1 Mbit/s × 33 333 µs = 4166.6 → 4167 B, 4 packets
        // of 1041.75 → 1042 B, response 2·(200 + 100) = 600 ms: v = 1042·8/0.6 = 13 893 bit/s².
        assert_eq!(a.near_max_increase_bps_per_s(), 13_893.0);
        // Low rates use the 4 kbit/s/s floor.
        a.set_start_bitrate(kbps(50));
        assert_eq!(a.near_max_increase_bps_per_s(), 4000.0);
        // After an overuse a capacity estimate exists -> additive increase.
        let mut a = aimd(false);
        a.update(BandwidthUsage::Overusing, Some(kbps(1000)), ms(0)); // -> 850, Hold
        a.update(BandwidthUsage::Normal, Some(kbps(900)), ms(100)); // Hold -> Increase, dt = 0
        let before = a.latest_estimate();
        a.update(BandwidthUsage::Normal, Some(kbps(900)), ms(1100));
        let v = AimdRateControl { current: before, ..a.clone() }.near_max_increase_bps_per_s();
        let got = (a.latest_estimate() - before).bps_f64();
        assert!((got - v).abs() <= 1.0, "got {got} want {v}");
    }

    #[test]
    fn reduction_interval_and_initial_halving() {
        let mut a = aimd(true);
        a.set_rtt(Duration::from_ms(50));
        a.update(BandwidthUsage::Overusing, Some(kbps(1000)), ms(0));
        assert!(!a.time_to_reduce_further(ms(40), kbps(800)));
        assert!(a.time_to_reduce_further(ms(50), kbps(800)));
        // Throughput below half the estimate: immediately.
        assert!(a.time_to_reduce_further(ms(1), kbps(100)));
        // Initial halving: libwebrtc hands `estimate/2 − 1 bps` as the throughput, so it is
        // allowed on every overusing feedback once the estimate is valid.
        let mut a = aimd(true);
        assert!(a.initial_time_to_reduce_further(ms(0)));
        a.set_estimate(a.latest_estimate() / 2, ms(0));
        assert!(a.initial_time_to_reduce_further(ms(1)));
        assert!(!AimdRateControl::new(AimdConfig::default()).initial_time_to_reduce_further(ms(0)), "not before a valid estimate");
    }

    #[test]
    fn uninitialized_adopts_throughput_after_five_seconds() {
        let mut a = AimdRateControl::new(AimdConfig::default());
        a.update(BandwidthUsage::Normal, Some(kbps(700)), ms(0));
        assert!(!a.valid_estimate());
        a.update(BandwidthUsage::Normal, Some(kbps(700)), ms(5001));
        assert!(a.valid_estimate());
        assert!(a.latest_estimate() >= kbps(700));
    }
}
