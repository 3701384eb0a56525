//! Probe controller (spec 2.8; libwebrtc `probe_controller.cc`): when to send probe clusters.
//!
//! * Initial exponential probing at 3× and 6× the start rate once the network is available,
//!   then "further" probes at 2× every estimate that exceeds 70 % of the last probe.
//! * A raised max bitrate is probed at once; a raised max *allocated* bitrate is probed in ALR
//!   (1× and 2× the allocation, limited to 2× the estimate, further probing if so limited);
//!   every probe is capped at 2× the max allocation when one is known.
//! * Repeated initial probing (3× every second for 5 s until an allocation is known), periodic
//!   ALR probing (2× every 5 s), network-state-estimate probing, rapid recovery after a large
//!   drop, `Reset` (route change).
//! * Probes are blocked while the delay detector over- or under-uses, while loss-limited, and at
//!   high RTT; loss-limited-but-increasing caps them at 1.5× the estimate.

use crate::units::{Bitrate, Duration, Time};

const MAX_WAITING_FOR_RESULT: Duration = Duration::from_secs(1);
/// Cap when no max bitrate is configured.
const DEFAULT_MAX_PROBING_BITRATE: Bitrate = Bitrate::from_kbps(5000);
/// Rapid recovery: a drop below 66 % of the previous estimate is a "large drop".
const BITRATE_DROP_THRESHOLD: f64 = 0.66;
const BITRATE_DROP_TIMEOUT: Duration = Duration::from_secs(5);
const PROBE_FRACTION_AFTER_DROP: f64 = 0.85;
const ALR_ENDED_TIMEOUT: Duration = Duration::from_secs(3);
const MIN_TIME_BETWEEN_ALR_PROBES: Duration = Duration::from_secs(5);
const PROBE_UNCERTAINTY: f64 = 0.05;

/// `ProbeControllerConfig` with libwebrtc's defaults (field-trial names in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeConfig {
    /// [p1] [p2]: initial exponential probes (p2 ≤ 0 or `None`: one probe).
    pub first_exponential_probe_scale: f64,
    pub second_exponential_probe_scale: Option<f64>,
    /// [step_size] [further_probe_threshold].
    pub further_exponential_probe_scale: f64,
    pub further_probe_threshold: f64,
    /// [abort_further]
    pub abort_further_probe_if_max_lower_than_current: bool,
    /// [initial_probing]: how long repeated initial probing lasts.
    pub repeated_initial_probing_time_period: Duration,
    pub initial_probe_duration: Duration,
    pub initial_min_probe_delta: Duration,
    /// [alr_interval] [alr_scale]
    pub alr_probing_interval: Duration,
    pub alr_probe_scale: f64,
    /// [network_state_interval]: `None` = infinite (off).
    pub network_state_estimate_probing_interval: Option<Duration>,
    /// [est_lower_than_network_ratio] [est_lower_than_network_interval]
    pub probe_if_estimate_lower_than_network_state_estimate_ratio: f64,
    pub estimate_lower_than_network_state_estimate_probing_interval: Option<Duration>,
    /// [network_state_scale] [network_state_probe_duration] [network_state_min_probe_delta]
    pub network_state_probe_scale: f64,
    pub network_state_probe_duration: Duration,
    pub network_state_min_probe_delta: Duration,
    /// [probe_max_allocation] [alloc_p1] [alloc_p2] [alloc_current_bwe_limit]
    pub probe_on_max_allocated_bitrate_change: bool,
    pub first_allocation_probe_scale: Option<f64>,
    pub second_allocation_probe_scale: Option<f64>,
    pub allocation_probe_limit_by_current_scale: f64,
    /// [min_probe_packets_sent] [min_probe_duration] [min_probe_delta]
    pub min_probe_packets_sent: u32,
    pub min_probe_duration: Duration,
    pub min_probe_delta: Duration,
    /// [loss_limited_scale]
    pub loss_limited_probe_scale: f64,
    /// [skip_if_est_larger_than_fraction_of_max] [skip_max_allocated_scale]
    pub skip_if_estimate_larger_than_fraction_of_max: f64,
    pub skip_probe_max_allocated_scale: f64,
    /// `WebRTC-BweRapidRecoveryExperiment`: drop probes also outside ALR.
    pub rapid_recovery_experiment: bool,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            first_exponential_probe_scale: 3.0,
            second_exponential_probe_scale: Some(6.0),
            further_exponential_probe_scale: 2.0,
            further_probe_threshold: 0.7,
            abort_further_probe_if_max_lower_than_current: false,
            repeated_initial_probing_time_period: Duration::from_secs(5),
            initial_probe_duration: Duration::from_ms(100),
            initial_min_probe_delta: Duration::from_ms(20),
            alr_probing_interval: Duration::from_secs(5),
            alr_probe_scale: 2.0,
            network_state_estimate_probing_interval: None,
            probe_if_estimate_lower_than_network_state_estimate_ratio: 0.0,
            estimate_lower_than_network_state_estimate_probing_interval: Some(Duration::from_secs(3)),
            network_state_probe_scale: 1.0,
            network_state_probe_duration: Duration::from_ms(15),
            network_state_min_probe_delta: Duration::from_ms(20),
            probe_on_max_allocated_bitrate_change: true,
            first_allocation_probe_scale: Some(1.0),
            second_allocation_probe_scale: Some(2.0),
            allocation_probe_limit_by_current_scale: 2.0,
            min_probe_packets_sent: 5,
            min_probe_duration: Duration::from_ms(15),
            min_probe_delta: Duration::from_ms(2),
            loss_limited_probe_scale: 1.5,
            skip_if_estimate_larger_than_fraction_of_max: 0.0,
            skip_probe_max_allocated_scale: 1.0,
            rapid_recovery_experiment: false,
        }
    }
}

/// Why the estimate is what it is (`BandwidthLimitedCause`); gates probing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitedCause {
    LossLimitedIncreasing,
    LossLimited,
    DelayLimited,
    DelayLimitedDelayIncreased,
    RttBackoff,
}

/// One requested cluster (`ProbeClusterConfig`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeRequest {
    pub id: u32,
    pub rate: Bitrate,
    pub target_duration: Duration,
    /// Minimum spacing of probe packets (the lab's pacer paces clusters by rate only).
    pub min_probe_delta: Duration,
    pub target_probe_count: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Init,
    WaitingForResult,
    Complete,
}

#[derive(Clone, Debug)]
pub struct ProbeController {
    cfg: ProbeConfig,
    network_available: bool,
    repeated_initial_probing: bool,
    periodic_alr_probing: bool,
    last_allowed_repeated_initial_probe: Option<Time>,
    cause: LimitedCause,
    state: State,
    min_bitrate_to_probe_further: Bitrate,
    time_last_probing_initiated: Time,
    estimated: Bitrate,
    /// `NetworkStateEstimate::link_capacity_upper` (`Bitrate::INFINITY` when unknown).
    network_estimate_upper: Option<Bitrate>,
    start_bitrate: Bitrate,
    max_bitrate: Bitrate,
    last_bwe_drop_probing_time: Time,
    alr_start: Option<Time>,
    alr_end: Option<Time>,
    time_of_last_large_drop: Time,
    bitrate_before_last_large_drop: Bitrate,
    max_total_allocated: Bitrate,
    next_id: u32,
}

impl ProbeController {
    pub fn new(cfg: ProbeConfig) -> Self {
        let mut p = ProbeController {
            cfg,
            network_available: false,
            repeated_initial_probing: false,
            periodic_alr_probing: false,
            last_allowed_repeated_initial_probe: None,
            cause: LimitedCause::DelayLimited,
            state: State::Init,
            min_bitrate_to_probe_further: Bitrate::INFINITY,
            time_last_probing_initiated: Time::ZERO,
            estimated: Bitrate::ZERO,
            network_estimate_upper: None,
            start_bitrate: Bitrate::ZERO,
            max_bitrate: Bitrate::INFINITY,
            last_bwe_drop_probing_time: Time::ZERO,
            alr_start: None,
            alr_end: None,
            time_of_last_large_drop: Time::ZERO,
            bitrate_before_last_large_drop: Bitrate::ZERO,
            max_total_allocated: Bitrate::ZERO,
            next_id: 1,
        };
        p.reset(Time::ZERO);
        p
    }

    pub fn enable_periodic_alr_probing(&mut self, on: bool) { self.periodic_alr_probing = on; }
    pub fn enable_repeated_initial_probing(&mut self, on: bool) { self.repeated_initial_probing = on; }
    pub fn set_alr_start_time(&mut self, t: Option<Time>) { self.alr_start = t; }
    pub fn set_alr_ended_time(&mut self, t: Time) { self.alr_end = Some(t); }
    /// A network-state estimate's upper link capacity (`None`: no estimate).
    pub fn set_network_state_estimate(&mut self, upper: Option<Bitrate>) { self.network_estimate_upper = upper; }

    /// `SetBitrates`: constraints. A zero `start` keeps the earlier one.
    pub fn set_bitrates(&mut self, min: Bitrate, start: Bitrate, max: Bitrate, now: Time) -> Vec<ProbeRequest> {
        if !start.is_zero() {
            self.start_bitrate = start;
            self.estimated = start;
        } else if self.start_bitrate.is_zero() {
            self.start_bitrate = min;
        }
        let old_max = self.max_bitrate;
        self.max_bitrate = if max.is_finite() { max } else { DEFAULT_MAX_PROBING_BITRATE };
        match self.state {
            State::Init if self.network_available => self.initiate_exponential_probing(now),
            State::Complete if !self.estimated.is_zero() && old_max < self.max_bitrate && self.estimated < self.max_bitrate => {
                self.initiate(now, vec![self.max_bitrate], false)
            }
            _ => Vec::new(),
        }
    }

    /// `OnMaxTotalAllocatedBitrate`: the sum of the encoders' max rates changed.
    pub fn on_max_total_allocated_bitrate(&mut self, total: Bitrate, now: Time) -> Vec<ProbeRequest> {
        let in_alr = self.alr_start.is_some();
        if self.cfg.probe_on_max_allocated_bitrate_change
            && self.state == State::Complete
            && total != self.max_total_allocated
            && self.estimated < self.max_bitrate
            && self.estimated < total
            && in_alr
        {
            self.max_total_allocated = total;
            let Some(first_scale) = self.cfg.first_allocation_probe_scale else { return Vec::new() };
            let mut first = total.scale(first_scale);
            let limit = self.estimated.scale(self.cfg.allocation_probe_limit_by_current_scale);
            let mut limited = limit < first;
            if limited {
                first = limit;
            }
            let mut probes = vec![first];
            if let (false, Some(s)) = (limited, self.cfg.second_allocation_probe_scale) {
                let mut second = total.scale(s);
                limited = limit < second;
                if limited {
                    second = limit;
                }
                if second > first {
                    probes.push(second);
                }
            }
            return self.initiate(now, probes, limited);
        }
        if !total.is_zero() {
            self.last_allowed_repeated_initial_probe = Some(now);
        }
        self.max_total_allocated = total;
        Vec::new()
    }

    /// `OnNetworkAvailability`.
    pub fn on_network_availability(&mut self, available: bool, now: Time) -> Vec<ProbeRequest> {
        self.network_available = available;
        if !available && self.state == State::WaitingForResult {
            self.update_state(State::Complete);
        }
        if available && self.state == State::Init && !self.start_bitrate.is_zero() {
            return self.initiate_exponential_probing(now);
        }
        Vec::new()
    }

    fn update_state(&mut self, s: State) {
        self.state = s;
        if s == State::Complete {
            self.min_bitrate_to_probe_further = Bitrate::INFINITY;
        }
    }

    fn initiate_exponential_probing(&mut self, now: Time) -> Vec<ProbeRequest> {
        let mut probes = vec![self.start_bitrate.scale(self.cfg.first_exponential_probe_scale)];
        if let Some(s) = self.cfg.second_exponential_probe_scale.filter(|s| *s > 0.0) {
            probes.push(self.start_bitrate.scale(s));
        }
        if self.repeated_initial_probing && self.max_total_allocated.is_zero() {
            self.last_allowed_repeated_initial_probe = Some(now + self.cfg.repeated_initial_probing_time_period);
        }
        self.initiate(now, probes, true)
    }

    /// `SetEstimatedBitrate`: the loss-based target changed (further probing, drop bookkeeping).
    pub fn set_estimated_bitrate(&mut self, rate: Bitrate, cause: LimitedCause, now: Time) -> Vec<ProbeRequest> {
        self.cause = cause;
        if rate.bps_f64() < BITRATE_DROP_THRESHOLD * self.estimated.bps_f64() {
            self.time_of_last_large_drop = now;
            self.bitrate_before_last_large_drop = self.estimated;
        }
        self.estimated = rate;
        if self.state == State::WaitingForResult {
            if self.cfg.abort_further_probe_if_max_lower_than_current
                && (rate > self.max_bitrate || (!self.max_total_allocated.is_zero() && rate > self.max_total_allocated * 2))
            {
                self.min_bitrate_to_probe_further = Bitrate::INFINITY;
            }
            let network_limit = match (self.cfg.network_state_estimate_probing_interval, self.network_estimate_upper) {
                (Some(_), Some(up)) if up.is_finite() => up.scale(self.cfg.further_probe_threshold),
                _ => Bitrate::INFINITY,
            };
            if rate > self.min_bitrate_to_probe_further && rate <= network_limit {
                return self.initiate(now, vec![rate.scale(self.cfg.further_exponential_probe_scale)], true);
            }
        }
        Vec::new()
    }

    /// `RequestProbe`: rapid recovery after a large drop, when the detector recovers from
    /// under-use in (or shortly after) ALR.
    pub fn request_probe(&mut self, now: Time) -> Vec<ProbeRequest> {
        let in_alr = self.alr_start.is_some();
        let alr_ended_recently = self.alr_end.is_some_and(|t| now - t < ALR_ENDED_TIMEOUT);
        if (in_alr || alr_ended_recently || self.cfg.rapid_recovery_experiment) && self.state == State::Complete {
            let suggested = self.bitrate_before_last_large_drop.scale(PROBE_FRACTION_AFTER_DROP);
            let min_expected = suggested.scale(1.0 - PROBE_UNCERTAINTY);
            if min_expected > self.estimated
                && now - self.time_of_last_large_drop < BITRATE_DROP_TIMEOUT
                && now - self.last_bwe_drop_probing_time > MIN_TIME_BETWEEN_ALR_PROBES
            {
                self.last_bwe_drop_probing_time = now;
                return self.initiate(now, vec![suggested], false);
            }
        }
        Vec::new()
    }

    /// `Reset` (route change): back to the initial state; the allocation and the repeated-
    /// initial-probing window survive.
    pub fn reset(&mut self, now: Time) {
        self.cause = LimitedCause::DelayLimited;
        self.state = State::Init;
        self.min_bitrate_to_probe_further = Bitrate::INFINITY;
        self.time_last_probing_initiated = Time::ZERO;
        self.estimated = Bitrate::ZERO;
        self.network_estimate_upper = None;
        self.start_bitrate = Bitrate::ZERO;
        self.max_bitrate = DEFAULT_MAX_PROBING_BITRATE;
        self.last_bwe_drop_probing_time = now;
        self.alr_end = None;
        self.time_of_last_large_drop = now;
        self.bitrate_before_last_large_drop = Bitrate::ZERO;
    }

    fn time_for_alr_probe(&self, now: Time) -> bool {
        match (self.periodic_alr_probing, self.alr_start) {
            (true, Some(start)) => now >= start.max(self.time_last_probing_initiated) + self.cfg.alr_probing_interval,
            _ => false,
        }
    }

    fn time_for_network_state_probe(&self, now: Time) -> bool {
        let Some(up) = self.network_estimate_upper.filter(|u| u.is_finite()) else { return false };
        let low = self.cause == LimitedCause::DelayLimited
            && self.estimated.bps_f64() < self.cfg.probe_if_estimate_lower_than_network_state_estimate_ratio * up.bps_f64();
        if let (true, Some(iv)) = (low, self.cfg.estimate_lower_than_network_state_estimate_probing_interval) {
            return now >= self.time_last_probing_initiated + iv;
        }
        if let (true, Some(iv)) = (self.estimated < up, self.cfg.network_state_estimate_probing_interval) {
            return now >= self.time_last_probing_initiated + iv;
        }
        false
    }

    fn time_for_next_repeated_initial_probe(&self, now: Time) -> bool {
        self.state != State::WaitingForResult
            && self.last_allowed_repeated_initial_probe.is_some_and(|t| t > now)
            && now >= self.time_last_probing_initiated + MAX_WAITING_FOR_RESULT
    }

    /// `Process` (every tick): result time-out, repeated initial, ALR and network-state probes.
    pub fn process(&mut self, now: Time) -> Vec<ProbeRequest> {
        if now - self.time_last_probing_initiated > MAX_WAITING_FOR_RESULT && self.state == State::WaitingForResult {
            self.update_state(State::Complete);
        }
        if self.estimated.is_zero() || self.state != State::Complete {
            return Vec::new();
        }
        if self.time_for_next_repeated_initial_probe(now) {
            return self.initiate(now, vec![self.estimated.scale(self.cfg.first_exponential_probe_scale)], true);
        }
        if self.time_for_alr_probe(now) || self.time_for_network_state_probe(now) {
            return self.initiate(now, vec![self.estimated.scale(self.cfg.alr_probe_scale)], true);
        }
        Vec::new()
    }

    fn cluster(&mut self, now: Time, rate: Bitrate) -> ProbeRequest {
        let network_sized = self.cfg.network_state_estimate_probing_interval.is_some()
            && self.network_estimate_upper.is_some_and(|u| u.is_finite() && u >= rate);
        let (target_duration, min_probe_delta) = if network_sized {
            (self.cfg.network_state_probe_duration, self.cfg.network_state_min_probe_delta)
        } else if self.last_allowed_repeated_initial_probe.is_some_and(|t| now < t) {
            (self.cfg.initial_probe_duration, self.cfg.initial_min_probe_delta)
        } else {
            (self.cfg.min_probe_duration, self.cfg.min_probe_delta)
        };
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        ProbeRequest { id, rate, target_duration, min_probe_delta, target_probe_count: self.cfg.min_probe_packets_sent }
    }

    fn initiate(&mut self, now: Time, rates: Vec<Bitrate>, mut probe_further: bool) -> Vec<ProbeRequest> {
        if self.cfg.skip_if_estimate_larger_than_fraction_of_max > 0.0 {
            let network = self.network_estimate_upper.unwrap_or(Bitrate::INFINITY);
            let max_probe_rate = if self.max_total_allocated.is_zero() {
                self.max_bitrate
            } else {
                self.max_total_allocated.scale(self.cfg.skip_probe_max_allocated_scale).min(self.max_bitrate)
            };
            if network.min(self.estimated).bps_f64() > self.cfg.skip_if_estimate_larger_than_fraction_of_max * max_probe_rate.bps_f64() {
                self.update_state(State::Complete);
                return Vec::new();
            }
        }
        let mut max_probe = self.max_bitrate;
        if !self.max_total_allocated.is_zero() {
            max_probe = max_probe.min(self.max_total_allocated * 2);
        }
        match self.cause {
            LimitedCause::RttBackoff | LimitedCause::DelayLimitedDelayIncreased | LimitedCause::LossLimited => return Vec::new(),
            LimitedCause::LossLimitedIncreasing => max_probe = max_probe.min(self.estimated.scale(self.cfg.loss_limited_probe_scale)),
            LimitedCause::DelayLimited => {}
        }
        if let (Some(_), Some(up)) = (self.cfg.network_state_estimate_probing_interval, self.network_estimate_upper) {
            if up.is_finite() {
                if up.is_zero() {
                    return Vec::new();
                }
                max_probe = max_probe.min(self.estimated.max(up.scale(self.cfg.network_state_probe_scale)));
            }
        }
        let mut out = Vec::with_capacity(rates.len());
        for mut r in rates {
            if r >= max_probe {
                r = max_probe;
                probe_further = false;
            }
            out.push(self.cluster(now, r));
        }
        self.time_last_probing_initiated = now;
        if probe_further {
            self.update_state(State::WaitingForResult);
            if let Some(last) = out.last() {
                self.min_bitrate_to_probe_further = last.rate.scale(self.cfg.further_probe_threshold);
            }
        } else {
            self.update_state(State::Complete);
        }
        out
    }
}
