//! `probe_controller_unittest.cc`. Field-trial strings become [`ProbeConfig`] fields.

use ratelab_core::controllers::gcc::probe_controller::{LimitedCause, ProbeConfig, ProbeController, ProbeRequest};
use ratelab_core::units::{Bitrate, Duration, Time};

const MIN: Bitrate = Bitrate::from_bps(100);
const START: Bitrate = Bitrate::from_bps(300);
const MAX: Bitrate = Bitrate::from_bps(10_000);
const MBPS: i64 = 1_000_000;
const EXPONENTIAL_PROBING_TIMEOUT: Duration = Duration::from_secs(5);
const ALR_PROBE_INTERVAL: Duration = Duration::from_secs(5);
const ALR_ENDED_TIMEOUT: Duration = Duration::from_secs(3);
const BITRATE_DROP_TIMEOUT: Duration = Duration::from_secs(5);
use LimitedCause::{DelayLimited, DelayLimitedDelayIncreased, LossLimited, LossLimitedIncreasing, RttBackoff};

fn bps(v: i64) -> Bitrate { Bitrate::from_bps(v) }
fn ms(v: i64) -> Duration { Duration::from_ms(v) }

/// `ProbeControllerFixture`: a clock at 100 s and a controller.
struct F {
    now: Time,
    p: ProbeController,
}

impl F {
    fn new() -> Self { F::with(ProbeConfig::default()) }
    fn with(cfg: ProbeConfig) -> Self { F { now: Time::from_ms(100_000), p: ProbeController::new(cfg) } }
    fn advance(&mut self, d: Duration) { self.now = self.now + d; }
    /// `OnNetworkAvailability(true)` (asserted empty) then `SetBitrates(MIN, START, MAX)`.
    fn start(&mut self) -> Vec<ProbeRequest> { self.start_with(START, MAX) }
    fn start_with(&mut self, start: Bitrate, max: Bitrate) -> Vec<ProbeRequest> {
        assert!(self.p.on_network_availability(true, self.now).is_empty());
        self.p.set_bitrates(MIN, start, max, self.now)
    }
    fn est(&mut self, r: Bitrate, c: LimitedCause) -> Vec<ProbeRequest> { self.p.set_estimated_bitrate(r, c, self.now) }
    fn process(&mut self) -> Vec<ProbeRequest> { self.p.process(self.now) }
    fn bitrates(&mut self, min: Bitrate, start: Bitrate, max: Bitrate) -> Vec<ProbeRequest> { self.p.set_bitrates(min, start, max, self.now) }
    fn alloc(&mut self, r: Bitrate) -> Vec<ProbeRequest> { self.p.on_max_total_allocated_bitrate(r, self.now) }
    fn alr_start(&mut self) { self.p.set_alr_start_time(Some(self.now)); }
    fn request(&mut self) -> Vec<ProbeRequest> { self.p.request_probe(self.now) }
}

#[test]
fn initiates_probing_after_set_bitrates() {
    let mut f = F::new();
    assert!(f.start().len() >= 2);
}

#[test]
fn initiates_probing_when_network_available() {
    let mut f = F::new();
    assert!(f.bitrates(MIN, START, MAX).is_empty());
    assert!(f.p.on_network_availability(true, f.now).len() >= 2);
}

#[test]
fn sets_default_target_duration_and_target_probe_count() {
    let mut f = F::new();
    let p = f.start();
    assert!(p.len() >= 2);
    assert_eq!(p[0].target_duration, ms(15));
    assert_eq!(p[0].target_probe_count, 5);
}

#[test]
fn field_trials_override_default_target_duration_and_target_probe_count() {
    let mut f = F::with(ProbeConfig { min_probe_packets_sent: 2, min_probe_duration: ms(123), ..ProbeConfig::default() });
    let p = f.start();
    assert!(p.len() >= 2);
    assert_eq!(p[0].target_duration, ms(123));
    assert_eq!(p[0].target_probe_count, 2);
}

#[test]
fn probe_only_when_network_is_up() {
    let mut f = F::new();
    f.p.on_network_availability(false, f.now);
    assert!(f.bitrates(MIN, START, MAX).is_empty());
    assert!(f.p.on_network_availability(true, f.now).len() >= 2);
}

#[test]
fn can_configure_initial_probe_rate_factor() {
    let mut f = F::with(ProbeConfig { first_exponential_probe_scale: 2.0, second_exponential_probe_scale: Some(3.0), ..ProbeConfig::default() });
    let p = f.start();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].rate, START * 2);
    assert_eq!(p[1].rate, START * 3);
}

#[test]
fn disable_second_initial_probe_if_rate_factor_zero() {
    let mut f = F::with(ProbeConfig { first_exponential_probe_scale: 2.0, second_exponential_probe_scale: Some(0.0), ..ProbeConfig::default() });
    let p = f.start();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, START * 2);
}

#[test]
fn initiates_probing_on_max_bitrate_increase() {
    let mut f = F::new();
    f.start();
    f.advance(EXPONENTIAL_PROBING_TIMEOUT);
    f.est(START, DelayLimited);
    f.process();
    let p = f.bitrates(MIN, START, MAX + bps(100));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, MAX + bps(100));
}

#[test]
fn probes_on_max_allocated_bitrate_increase_only_when_in_alr() {
    let mut f = F::new();
    f.start();
    f.est(MAX - bps(1), DelayLimited);
    f.advance(EXPONENTIAL_PROBING_TIMEOUT);
    assert!(f.process().is_empty());
    f.alr_start();
    let p = f.alloc(MAX + bps(1));
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].rate, MAX);
    f.p.set_alr_start_time(None);
    assert!(f.alloc(MAX + bps(2)).is_empty());
}

#[test]
fn probes_on_max_allocated_bitrate_limited_by_current_bwe() {
    let mut f = F::new();
    f.start();
    f.est(START, DelayLimited);
    f.advance(EXPONENTIAL_PROBING_TIMEOUT);
    assert!(f.process().is_empty());
    f.alr_start();
    let p = f.alloc(MAX);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, START * 2);
    let p = f.est(START.scale(1.5), DelayLimited);
    assert_eq!(p.len(), 1);
    assert!(p[0].rate > START.scale(1.5));
}

#[test]
fn can_disable_probing_on_max_total_allocated_bitrate_increase() {
    let mut f = F::with(ProbeConfig { probe_on_max_allocated_bitrate_change: false, ..ProbeConfig::default() });
    f.start();
    f.est(MAX - bps(1), DelayLimited);
    f.advance(EXPONENTIAL_PROBING_TIMEOUT);
    assert!(f.process().is_empty());
    f.alr_start();
    assert!(f.alloc(MAX + bps(1)).is_empty());
}

#[test]
fn initiates_probing_on_max_bitrate_increase_at_max_bitrate() {
    let mut f = F::new();
    f.start();
    f.advance(EXPONENTIAL_PROBING_TIMEOUT);
    f.est(START, DelayLimited);
    f.process();
    f.est(MAX, DelayLimited);
    let p = f.bitrates(MIN, START, MAX + bps(100));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, MAX + bps(100));
}

#[test]
fn test_exponential_probing() {
    let mut f = F::new();
    f.start();
    assert!(f.est(bps(1000), DelayLimited).is_empty());
    let p = f.est(bps(1800), DelayLimited);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(2 * 1800));
}

fn abort_further() -> ProbeConfig { ProbeConfig { abort_further_probe_if_max_lower_than_current: true, ..ProbeConfig::default() } }

#[test]
fn exponential_probing_stop_if_max_bitrate_low() {
    let mut f = F::with(abort_further());
    assert!(!f.start().is_empty());
    assert!(f.bitrates(MIN, START, START).is_empty());
    assert!(f.est(bps(1800), DelayLimited).is_empty());
}

#[test]
fn exponential_probing_stop_if_max_allocated_bitrate_low() {
    let mut f = F::with(abort_further());
    assert!(!f.start().is_empty());
    assert!(f.alloc(START).is_empty());
    assert!(f.est(bps(1800), DelayLimited).is_empty());
}

#[test]
fn initial_probing_to_low_max_allocatedbitrate() {
    let mut f = F::new();
    assert!(!f.start().is_empty());
    assert!(f.alloc(START).is_empty());
    let p = f.est(bps(1800), DelayLimited);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, START * 2);
}

#[test]
fn initial_probing_timeout() {
    let mut f = F::new();
    assert!(!f.start().is_empty());
    f.advance(EXPONENTIAL_PROBING_TIMEOUT);
    assert!(f.process().is_empty());
    assert!(f.est(bps(1800), DelayLimited).is_empty());
}

#[test]
fn repeated_initial_probing_sends_new_probe_after_timeout() {
    let mut f = F::new();
    f.p.enable_repeated_initial_probing(true);
    assert!(!f.start().is_empty());
    let start = f.now;
    let mut last = f.now;
    while f.now < start + Duration::from_secs(5) {
        f.advance(ms(100));
        let p = f.process();
        if !p.is_empty() {
            assert_eq!(f.now - last, ms(1100));
            assert_eq!(p[0].min_probe_delta, ms(20));
            assert_eq!(p[0].target_duration, ms(100));
            last = f.now;
        } else {
            assert!(f.now - last < ms(1100));
        }
    }
    f.advance(Duration::from_secs(1));
    assert!(f.process().is_empty());
}

#[test]
fn repeated_initial_probing_stop_if_max_allocated_bitrate_set() {
    let mut f = F::new();
    f.p.enable_repeated_initial_probing(true);
    assert!(!f.start().is_empty());
    f.advance(ms(1100));
    assert_eq!(f.process().len(), 1);
    f.alloc(MIN);
    f.advance(ms(1100));
    assert!(f.process().is_empty());
}

/// Common start of the RequestProbe cases: estimate 500 bps, ALR as given, probing complete,
/// then a large drop to 250 bps.
fn drop_setup(f: &mut F, in_alr: bool) {
    assert_eq!(f.start().len(), 2);
    f.est(bps(500), DelayLimited);
    if in_alr {
        f.alr_start();
    } else {
        f.p.set_alr_start_time(None);
    }
    f.advance(ALR_PROBE_INTERVAL + ms(1));
    f.process();
    f.est(bps(250), DelayLimited);
}

#[test]
fn request_probe_in_alr() {
    let mut f = F::new();
    drop_setup(&mut f, true);
    let p = f.request();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(425));
}

#[test]
fn request_probe_when_alr_ended_recently() {
    let mut f = F::new();
    drop_setup(&mut f, false);
    f.p.set_alr_ended_time(f.now);
    f.advance(ALR_ENDED_TIMEOUT - ms(1));
    let p = f.request();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(425));
}

#[test]
fn request_probe_when_alr_not_ended_recently() {
    let mut f = F::new();
    drop_setup(&mut f, false);
    f.p.set_alr_ended_time(f.now);
    f.advance(ALR_ENDED_TIMEOUT + ms(1));
    assert!(f.request().is_empty());
}

#[test]
fn request_probe_when_bwe_drop_not_recent() {
    let mut f = F::new();
    drop_setup(&mut f, true);
    f.advance(BITRATE_DROP_TIMEOUT + ms(1));
    assert!(f.request().is_empty());
}

#[test]
fn periodic_probing() {
    let mut f = F::new();
    assert!(f.p.on_network_availability(true, f.now).is_empty());
    f.p.enable_periodic_alr_probing(true);
    assert_eq!(f.bitrates(MIN, START, MAX).len(), 2);
    f.est(bps(500), DelayLimited);
    let start = f.now;
    f.p.set_alr_start_time(Some(start));
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(1000));
    f.est(bps(500), DelayLimited);
    // The next probe is due 5 s after the last one.
    f.p.set_alr_start_time(Some(start));
    f.advance(Duration::from_secs(4));
    f.process();
    assert!(f.est(bps(500), DelayLimited).is_empty());
    f.p.set_alr_start_time(Some(start));
    f.advance(Duration::from_secs(1));
    assert_eq!(f.process().len(), 1);
    assert!(f.est(bps(500), DelayLimited).is_empty());
}

#[test]
fn periodic_probing_after_reset() {
    let mut f = F::new();
    assert!(f.p.on_network_availability(true, f.now).is_empty());
    f.alr_start();
    f.p.enable_periodic_alr_probing(true);
    f.bitrates(MIN, START, MAX);
    f.p.reset(f.now);
    f.advance(Duration::from_secs(10));
    assert!(f.process().is_empty(), "no estimate after the reset");
    assert_eq!(f.bitrates(MIN, START, MAX).len(), 2);
    f.advance(Duration::from_secs(10));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, START * 2);
}

#[test]
fn no_probes_when_transport_is_not_writable() {
    let mut f = F::new();
    f.p.enable_periodic_alr_probing(true);
    assert!(f.p.on_network_availability(false, f.now).is_empty());
    assert!(f.bitrates(MIN, START, MAX).is_empty());
    f.advance(Duration::from_secs(10));
    assert!(f.process().is_empty());
    f.p.reset(f.now);
    assert!(f.bitrates(MIN * 2, START * 2, MAX * 2).is_empty());
    f.advance(Duration::from_secs(10));
    assert!(f.process().is_empty());
}

#[test]
fn test_exponential_probing_overflow() {
    let mut f = F::new();
    f.start_with(bps(10 * MBPS), bps(100 * MBPS));
    let p = f.est(bps(60 * MBPS), DelayLimited);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(100 * MBPS));
    assert!(f.est(bps(100 * MBPS), DelayLimited).is_empty());
}

#[test]
fn test_allocated_bitrate_cap() {
    let mut f = F::new();
    f.start_with(bps(10 * MBPS), bps(100 * MBPS));
    f.p.enable_periodic_alr_probing(true);
    f.alr_start();
    let estimated = bps(10 * MBPS);
    f.est(estimated, DelayLimited);
    let max_allocated = estimated - bps(MBPS);
    assert!(f.alloc(max_allocated).is_empty(), "lower than the current max");
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, max_allocated * 2);
    assert!(f.alloc(Bitrate::ZERO).is_empty());
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, estimated * 2);
}

#[test]
fn configurable_probing_field_trial() {
    // p1:2,p2:5,step_size:3,further_probe_threshold:0.8,alloc_p1:2,
    // alloc_current_bwe_limit:1000.0,alloc_p2 (empty: off),min_probe_packets_sent:2
    let mut f = F::with(ProbeConfig {
        first_exponential_probe_scale: 2.0,
        second_exponential_probe_scale: Some(5.0),
        further_exponential_probe_scale: 3.0,
        further_probe_threshold: 0.8,
        first_allocation_probe_scale: Some(2.0),
        allocation_probe_limit_by_current_scale: 1000.0,
        second_allocation_probe_scale: None,
        min_probe_packets_sent: 2,
        ..ProbeConfig::default()
    });
    let p = f.start_with(START, Bitrate::from_kbps(5000));
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].rate, p[0].target_probe_count), (bps(600), 2));
    assert_eq!((p[1].rate, p[1].target_probe_count), (bps(1500), 2));
    assert!(f.est(bps(1100), DelayLimited).is_empty());
    let p = f.est(bps(1250), DelayLimited);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(3 * 1250));
    f.advance(Duration::from_secs(5));
    f.process();
    f.alr_start();
    let p = f.alloc(Bitrate::from_kbps(200));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(400_000));
}

/// The second half of the file: loss-limited and network-state-estimate cases.
mod loss_and_network_state;
