//! `probe_controller_unittest.cc`, second half: loss-limited causes and the network-state
//! estimate.

use super::*;

fn network_interval(s: i64) -> ProbeConfig { ProbeConfig { network_state_estimate_probing_interval: Some(Duration::from_secs(s)), ..ProbeConfig::default() } }

#[test]
fn limit_alr_probe_when_loss_based_bwe_limited() {
    let mut f = F::new();
    assert!(f.p.on_network_availability(true, f.now).is_empty());
    f.p.enable_periodic_alr_probing(true);
    f.bitrates(MIN, START, MAX);
    f.est(bps(500), DelayLimited);
    f.alr_start();
    f.advance(Duration::from_secs(5));
    assert_eq!(f.process().len(), 1);
    f.est(bps(500), LossLimitedIncreasing);
    f.advance(Duration::from_secs(6));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(750));
    f.est(bps(750), DelayLimited);
    f.advance(Duration::from_secs(6));
    let p = f.process();
    assert!(!p.is_empty());
    assert!(p[0].rate > bps(500).scale(1.5 * 1.5));
}

#[test]
fn periodic_probe_at_upper_network_state_estimate() {
    let mut f = F::with(network_interval(5));
    f.start();
    f.est(bps(5000), DelayLimited);
    let upper = Bitrate::from_kbps(6);
    f.p.set_network_state_estimate(Some(upper));
    for _ in 0..2 {
        f.advance(Duration::from_secs(5));
        let p = f.process();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].rate, upper);
    }
}

#[test]
fn limit_probe_at_upper_network_state_estimate_if_loss_based_limited() {
    let mut f = F::with(network_interval(5));
    f.start();
    f.est(bps(500), DelayLimited);
    f.p.set_network_state_estimate(Some(bps(700)));
    f.advance(Duration::from_secs(5));
    assert_eq!(f.process().len(), 1);
    f.est(bps(500), LossLimitedIncreasing);
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert!(!p.is_empty());
    assert_eq!(p[0].rate, bps(700));
}

#[test]
fn alr_probes_limited_by_network_state_estimate() {
    let mut f = F::with(network_interval(5));
    f.p.enable_periodic_alr_probing(true);
    f.start();
    f.est(Bitrate::from_kbps(6), DelayLimited);
    f.alr_start();
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, MAX);
    f.p.set_network_state_estimate(Some(bps(8000)));
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, bps(8000));
}

#[test]
fn can_set_longer_probe_duration_after_network_state_estimate() {
    let mut f = F::with(ProbeConfig { network_state_probe_duration: ms(100), ..network_interval(5) });
    f.start();
    let p = f.est(Bitrate::from_kbps(5), DelayLimited);
    assert!(!p.is_empty());
    assert!(p[0].target_duration < ms(100));
    f.p.set_network_state_estimate(Some(Bitrate::from_kbps(6)));
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].target_duration, ms(100));
}

/// Periodic ALR probing after the initial probes timed out, with the estimate's `cause`.
fn alr_probe_with_cause(cause: LimitedCause, in_alr: bool) -> Vec<ProbeRequest> {
    let mut f = F::new();
    f.start();
    f.p.enable_periodic_alr_probing(true);
    f.est(START, cause);
    f.advance(EXPONENTIAL_PROBING_TIMEOUT);
    assert!(f.process().is_empty());
    if in_alr {
        f.alr_start();
    } else {
        f.p.set_alr_start_time(None);
    }
    f.advance(ALR_PROBE_INTERVAL + ms(1));
    f.process()
}

#[test]
fn probe_in_alr_if_loss_based_increasing() {
    let p = alr_probe_with_cause(LossLimitedIncreasing, true);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rate, START.scale(1.5));
}

#[test]
fn not_probe_when_in_alr_if_loss_based_decreases() { assert!(alr_probe_with_cause(LossLimited, true).is_empty()); }

#[test]
fn not_probe_if_loss_based_increasing_outside_alr() { assert!(alr_probe_with_cause(LossLimitedIncreasing, false).is_empty()); }

#[test]
fn probe_further_when_loss_based_is_same_as_delay_based_estimate() {
    let mut f = F::with(network_interval(5));
    assert!(!f.start().is_empty());
    f.advance(ms(1100));
    assert!(f.process().is_empty());
    let upper = START * 5;
    f.p.set_network_state_estimate(Some(upper));
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert!(!p.is_empty());
    let target = p[0].rate;
    assert!(target < upper);
    let p = f.est(target, DelayLimited);
    assert!(!p.is_empty());
    assert_eq!(p[0].rate, target * 2);
}

#[test]
fn probe_if_estimate_lower_than_network_state_estimate() {
    // est_lower_than_network_interval:1s, est_lower_than_network_ratio:0.5 (the trial's
    // limit_probe_target_rate_to_loss_bwe no longer exists and is ignored by libwebrtc).
    let mut f = F::with(ProbeConfig {
        estimate_lower_than_network_state_estimate_probing_interval: Some(Duration::from_secs(1)),
        probe_if_estimate_lower_than_network_state_estimate_ratio: 0.5,
        ..ProbeConfig::default()
    });
    f.start();
    f.est(START, DelayLimited);
    f.advance(ms(1100));
    assert!(f.process().is_empty());
    f.p.set_network_state_estimate(Some(START));
    assert!(f.process().is_empty());
    f.p.set_network_state_estimate(Some(START * 3));
    let p = f.process();
    assert_eq!(p.len(), 1);
    assert!(p[0].rate > START);
    f.advance(ms(1100));
    assert!(!f.process().is_empty());
    f.est(START * 2, DelayLimited);
    f.advance(ms(1100));
    assert!(f.process().is_empty());
}

/// Initial probes, then a network-state probe 5 s later at `3 × start`.
fn network_probe_then(cause: LimitedCause) -> (Vec<ProbeRequest>, Bitrate) {
    let mut f = F::with(network_interval(5));
    assert!(!f.start().is_empty());
    f.advance(ms(1100));
    assert!(f.process().is_empty());
    let upper = START * 3;
    f.p.set_network_state_estimate(Some(upper));
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert!(!p.is_empty());
    assert!(p[0].rate < upper);
    (f.est(p[0].rate, cause), upper)
}

#[test]
fn dont_probe_further_when_loss_limited() { assert!(network_probe_then(LossLimited).0.is_empty()); }

#[test]
fn probe_further_when_delay_based_limited() {
    let (p, upper) = network_probe_then(DelayLimited);
    assert!(!p.is_empty());
    assert_eq!(p[0].rate, upper);
}

#[test]
fn probe_after_timeout_if_network_state_estimate_increase_after_probe_sent() {
    let mut f = F::with(ProbeConfig {
        estimate_lower_than_network_state_estimate_probing_interval: Some(Duration::from_secs(3)),
        probe_if_estimate_lower_than_network_state_estimate_ratio: 0.7,
        ..network_interval(5)
    });
    let p = f.start();
    assert!(!p.is_empty());
    let mut upper = (p[0].rate / 2).scale(1.2);
    f.p.set_network_state_estimate(Some(upper));
    assert!(f.est(p[0].rate / 2, DelayLimited).is_empty());
    f.advance(Duration::from_secs(5));
    let p = f.process();
    assert!(!p.is_empty());
    assert!(p[0].rate <= upper);
    upper = START * 3;
    f.p.set_network_state_estimate(Some(upper));
    assert!(f.est(p[0].rate, DelayLimited).is_empty());
    f.advance(Duration::from_secs(3));
    assert!(!f.process().is_empty());
    assert!(f.est(upper.scale(0.9), DelayLimited).is_empty());
}

fn skip_fraction(fraction: f64) -> ProbeConfig { ProbeConfig { skip_if_estimate_larger_than_fraction_of_max: fraction, ..ProbeConfig::default() } }

#[test]
fn skip_probe_further_if_already_probed_to_max_rate() {
    let mut f = F::with(ProbeConfig { network_state_estimate_probing_interval: Some(Duration::from_secs(2)), ..skip_fraction(0.9) });
    assert!(!f.start().is_empty());
    f.p.set_network_state_estimate(Some(MAX * 2));
    let p = f.est(MAX.scale(0.8), DelayLimited);
    assert!(!p.is_empty());
    assert_eq!(p[0].rate, MAX);
    assert!(f.est(MAX.scale(0.8), DelayLimited).is_empty());
    f.advance(ms(1000));
    assert!(f.process().is_empty());
    f.advance(ms(1000));
    assert!(!f.process().is_empty());
}

#[test]
fn max_allocated_bitrate_not_reset() {
    let mut f = F::new();
    assert!(!f.start().is_empty());
    f.alloc(START / 4);
    f.p.reset(f.now);
    let p = f.bitrates(MIN, START, MAX);
    assert!(!p.is_empty());
    assert_eq!(p[0].rate, START / 4 * 2);
}

#[test]
fn skip_alr_probe_if_estimate_larger_than_max_probe() {
    let mut f = F::with(skip_fraction(0.9));
    f.p.enable_periodic_alr_probing(true);
    assert!(!f.start().is_empty());
    assert!(f.est(MAX, DelayLimited).is_empty());
    f.alr_start();
    f.advance(Duration::from_secs(10));
    assert!(f.process().is_empty());
    assert!(!f.bitrates(MIN, START, MAX * 2).is_empty());
}

#[test]
fn skip_alr_probe_if_estimate_larger_than_fraction_of_max_allocated() {
    let mut f = F::with(skip_fraction(1.0));
    f.p.enable_periodic_alr_probing(true);
    assert!(!f.start().is_empty());
    f.est(MAX / 2, DelayLimited);
    f.advance(Duration::from_secs(10));
    f.alr_start();
    assert!(f.alloc(MAX / 2).is_empty());
    f.advance(Duration::from_secs(2));
    assert!(f.process().is_empty());
    assert!(!f.alloc(MAX / 2 + bps(1)).is_empty());
}

#[test]
fn skip_network_state_probe_if_estimate_larger_than_max_probe() {
    let mut f = F::with(ProbeConfig { network_state_estimate_probing_interval: Some(Duration::from_secs(2)), ..skip_fraction(0.9) });
    assert!(!f.start().is_empty());
    f.p.set_network_state_estimate(Some(MAX * 2));
    assert!(f.est(MAX, DelayLimited).is_empty());
    f.advance(Duration::from_secs(10));
    assert!(f.process().is_empty());
}

#[test]
fn sends_probe_if_network_state_estimate_lower_than_max_probe() {
    let mut f = F::with(ProbeConfig {
        network_state_estimate_probing_interval: Some(Duration::from_secs(2)),
        network_state_probe_duration: ms(100),
        network_state_min_probe_delta: ms(20),
        ..skip_fraction(0.9)
    });
    assert!(!f.start().is_empty());
    f.p.set_network_state_estimate(Some(MAX * 2));
    assert!(f.est(MAX, DelayLimited).is_empty());
    f.advance(ms(2100));
    assert!(f.est(START, DelayLimited).is_empty());
    f.p.set_network_state_estimate(Some(START * 2));
    let p = f.process();
    assert!(!p.is_empty());
    assert!(p[0].rate <= START * 2);
    assert_eq!(p[0].min_probe_delta, ms(20));
    assert_eq!(p[0].target_duration, ms(100));
}

#[test]
fn probe_not_limited_by_network_state_esimate_if_lower_thant_current() {
    let mut f = F::with(ProbeConfig { network_state_probe_duration: ms(100), network_state_min_probe_delta: ms(20), ..network_interval(5) });
    f.p.enable_periodic_alr_probing(true);
    f.start();
    f.est(START, DelayLimited);
    f.p.set_network_state_estimate(Some(START));
    f.advance(ms(1100));
    assert!(f.process().is_empty());
    f.alr_start();
    f.p.set_network_state_estimate(Some(START / 2));
    f.advance(Duration::from_secs(6));
    let p = f.process();
    assert!(!p.is_empty());
    assert_eq!(p[0].rate, START);
    assert_eq!(p[0].min_probe_delta, ms(2));
    assert_eq!(p[0].target_duration, ms(15));
}

fn no_probe_with_cause(cause: LimitedCause) {
    let mut f = F::new();
    assert!(!f.start().is_empty());
    f.advance(ms(1100));
    assert!(f.process().is_empty());
    f.p.set_network_state_estimate(Some(START * 3));
    assert!(f.est(START, cause).is_empty());
    f.advance(Duration::from_secs(5));
    assert!(f.process().is_empty());
}

#[test]
fn dont_probe_if_delay_increased() { no_probe_with_cause(DelayLimitedDelayIncreased); }

#[test]
fn dont_probe_if_high_rtt() { no_probe_with_cause(RttBackoff); }
