//! LCC unit tests against hand-worked steps (spec 3.4).

use super::*;
use crate::controller::Controller;
use crate::controllers::testkit::scripted_epoch;

fn constraints() -> Constraints {
    Constraints { min_rate: Bitrate::from_kbps(50), max_rate: Bitrate::from_kbps(20_000), start_rate: Bitrate::from_kbps(300) }
}

/// Scripted sender: each epoch (ε = 50 ms, whatever the default) sends `n` packets of 1200 B
/// evenly, each delivered `owd` later and acknowledged per packet 10 ms after arrival; the tick
/// ends the epoch.
struct Script { lcc: Lcc, now: Time, seq: u64, rate: Bitrate }

impl Script {
    fn new(cfg: LccConfig) -> Self {
        let mut lcc = Lcc::new(LccConfig { epoch_ms: 50.0, ..cfg }).unwrap();
        let u = lcc.on_start(Time::ZERO, constraints());
        Script { lcc, now: Time::ZERO, seq: 0, rate: u.target_rate.unwrap() }
    }
    fn epoch(&mut self, n: u32, owd_ms: f64) {
        let u = scripted_epoch(&mut self.lcc, self.now, &mut self.seq, n, owd_ms, 10.0, &[]);
        self.now += Duration::from_ms(50);
        if let Some(r) = u.target_rate { self.rate = r; }
    }
}

fn literal_cfg() -> LccConfig {
    LccConfig { alpha: 1.0, delta: 0.1, target_offset_ms: 25.0, exorbitant_ratio: 2.0, backoff: 0.5, tc_clamp: TcClamp::None, min_pairs: 1, explore_gain: 0.0, rate_window_ms: 0.0, ..LccConfig::default() }
}

#[test]
fn setpoint_step_eq5() {
    // T_c = 72.5 + 0.1·(75 − 100) = 70.0
    assert!((setpoint_step(72.5, 75.0, 100.0, 0.1) - 70.0).abs() < 1e-12);
    assert!((setpoint_step(60.0, 75.0, 55.0, 0.2) - 64.0).abs() < 1e-12);
}

/// Tracker, send-aligned, α = 0.2: epoch OWDs 50, 60, 80 ms →
/// D_ave = 50, 0.8·50 + 0.2·60 = 52, 0.8·52 + 0.2·80 = 57.6;
/// S = 10, 20, 5 packets of 1200 B per 50 ms = 1920, 3840, 960 kbit/s.
#[test]
fn tracker_ewma_and_pairs_hand_computed() {
    let mut s = Script::new(LccConfig { alpha: 0.2, startup_growth: 1.0, rate_window_ms: 0.0, ..LccConfig::default() });
    s.epoch(10, 50.0);
    s.epoch(20, 60.0);
    s.epoch(5, 80.0);
    let tr = s.lcc.tracker().unwrap();
    let want = [(1920.0, 50.0), (3840.0, 52.0), (960.0, 57.6)];
    assert_eq!(tr.pairs.len(), 3, "{:?}", tr.pairs);
    for (p, w) in tr.pairs.iter().zip(want) {
        assert!((p.0 - w.0).abs() < 1e-9 && (p.1 - w.1).abs() < 1e-9, "{:?}", tr.pairs);
    }
    assert_eq!(tr.d_min, Some(50.0));
    assert!((tr.d_ave.unwrap() - 57.6).abs() < 1e-9);
}

/// Measured S over a 100 ms window (two 50 ms epochs): epochs of 10, 20, 5 packets of 1200 B
/// → S = 1920 (first epoch alone), (1920 + 3840)/2 = 2880, (3840 + 960)/2 = 2400 kbit/s.
#[test]
fn measured_rate_window_averages_epochs() {
    let mut s = Script::new(LccConfig { startup_growth: 1.0, rate_window_ms: 100.0, ..LccConfig::default() });
    s.epoch(10, 50.0);
    s.epoch(20, 50.0);
    s.epoch(5, 50.0);
    let got: Vec<f64> = s.lcc.tracker().unwrap().pairs.iter().map(|p| p.0).collect();
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip([1920.0, 2880.0, 2400.0]) { assert!((g - w).abs() < 1e-9, "{got:?}"); }
}

#[test]
fn window_keeps_latest_n_pairs() {
    let mut s = Script::new(LccConfig { window: 4, startup_growth: 1.0, rate_window_ms: 0.0, ..LccConfig::default() });
    for i in 0..10 { s.epoch(1 + i, 50.0); }
    let tr = s.lcc.tracker().unwrap();
    assert_eq!(tr.pairs.len(), 4);
    // the newest pair is the last epoch: 10 packets → 1920 kbit/s
    assert!((tr.pairs.back().unwrap().0 - 1920.0).abs() < 1e-9);
}

/// Start-up doubles per epoch while D_ave ≤ T_A; the first epoch above T_A starts the
/// Bayesian controller with T_c = T_A, then Eq. 5 moves T_c; above R·T_A the rate is halved.
/// α = 1 (D_ave = D_i), δ = 0.1, T_A = 50 + 25 = 75 ms, R·T_A = 150 ms, M = 0.5.
#[test]
fn startup_setpoint_and_backoff_hand_worked() {
    let mut s = Script::new(literal_cfg());
    assert_eq!(s.rate, Bitrate::from_kbps(300));
    s.epoch(10, 50.0); // D_ave 50 ≤ 75: ×2
    assert_eq!(s.rate, Bitrate::from_kbps(600));
    assert!(s.lcc.in_startup());
    s.epoch(20, 100.0); // D_ave 100 > 75: Bayesian, T_c = 75 + 0.1·(75 − 100) = 72.5
    assert!(!s.lcc.in_startup());
    assert!((s.lcc.t_c_ms().unwrap() - 72.5).abs() < 1e-9, "{:?}", s.lcc.t_c_ms());
    // rate = E[S | D = 72.5] over the pairs (1920, 50), (3840, 100): between both, and equal to
    // the KDE's closed form
    let kde = s.lcc.kde().unwrap();
    let want = kde.conditional_mean(72.5).unwrap();
    assert!(want > 1920.0 && want < 3840.0, "{want}");
    assert!((s.rate.kbps_f64() - want).abs() < 0.01, "{} vs {want}", s.rate);
    let before = s.rate;
    s.epoch(10, 200.0); // D_ave 200 > 150: Eq. 8, S = 0.5·S; T_c = 72.5 + 0.1·(75 − 200) = 60
    assert!((s.lcc.t_c_ms().unwrap() - 60.0).abs() < 1e-9);
    assert_eq!(s.lcc.backoff_count(), 1);
    assert!((s.rate.bps_f64() - 0.5 * before.bps_f64()).abs() <= 1.0, "{} vs {}", s.rate, before);
    s.epoch(10, 160.0); // still above 150: halved again
    assert_eq!(s.lcc.backoff_count(), 2);
    assert!((s.rate.bps_f64() - 0.25 * before.bps_f64()).abs() <= 2.0);
}

/// Exploration (not in the paper): with every recorded delay below T_A the set-point passes the
/// top of the data and the rate grows by γ per epoch from max(E[S | D = T_c], S_i).
/// α = 1, δ = 0.1, T_A = 75 ms, `data` clamp, γ = 0.1.
#[test]
fn exploration_above_the_data_grows_the_rate_by_gamma() {
    let mut s = Script::new(LccConfig { tc_clamp: TcClamp::Data, explore_gain: 0.1, ..literal_cfg() });
    s.epoch(10, 50.0);
    s.epoch(10, 100.0); // Bayesian from here
    let mut prev = s.rate;
    let mut grew = 0;
    for _ in 0..30 {
        s.epoch(10, 52.0); // D_ave 52 < T_A: T_c climbs to the top of the data
        if s.lcc.exploration_count() > 0 && s.rate.bps_f64() > prev.bps_f64() * 1.099 { grew += 1; }
        prev = s.rate;
    }
    assert!(s.lcc.exploration_count() > 0);
    assert!(grew > 0, "rate never grew by ≥ 10 % in an exploring epoch");
    // without exploration the controller never leaves the recorded rates (every epoch sent 10
    // packets: 1920 kbit/s)
    let mut lit = Script::new(LccConfig { tc_clamp: TcClamp::Data, ..literal_cfg() });
    lit.epoch(10, 50.0);
    lit.epoch(10, 100.0);
    for _ in 0..30 { lit.epoch(10, 52.0); }
    assert!(lit.rate.kbps_f64() <= 1920.0 + 1e-6, "{}", lit.rate);
    assert_eq!(lit.lcc.exploration_count(), 0);
}

/// With `backoff_once_per_rtt`, Eq. 8 fires once and then waits until the delay of an epoch
/// sent after the back-off has been observed. An epoch without packets (no new delay sample)
/// leaves `D_ave` above `R·T_A`: the literal rule halves again, the once-per-RTT rule waits.
#[test]
fn backoff_once_per_rtt_waits_for_its_effect() {
    for (once, want) in [(false, 2), (true, 1)] {
        let mut s = Script::new(LccConfig { backoff_once_per_rtt: once, ..literal_cfg() });
        s.epoch(10, 50.0);
        s.epoch(20, 100.0);
        s.epoch(10, 200.0); // D_ave 200 > 150: back-off
        assert_eq!(s.lcc.backoff_count(), 1);
        s.epoch(0, 0.0); // nothing new observed, D_ave still 200
        assert_eq!(s.lcc.backoff_count(), want, "once = {once}");
        if once {
            s.epoch(10, 200.0); // packets sent after the back-off still see 200 ms: again
            assert_eq!(s.lcc.backoff_count(), 2);
        }
    }
}

#[test]
fn band_clamp_keeps_tc_between_dmin_and_r_ta() {
    let mut s = Script::new(LccConfig { tc_clamp: TcClamp::Band, ..literal_cfg() });
    s.epoch(10, 50.0);
    s.epoch(10, 100.0);
    for _ in 0..20 { s.epoch(10, 400.0); } // T_c would fall by 32.5 ms per epoch
    assert!((s.lcc.t_c_ms().unwrap() - 50.0).abs() < 1e-9, "{:?}", s.lcc.t_c_ms());
    assert!(s.rate >= constraints().min_rate);
}

#[test]
fn literal_pairing_uses_owds_arriving_in_the_epoch() {
    // packets sent in epoch 0 arrive (and are reported) during epoch 0 (OWD 5 ms)
    let mut s = Script::new(LccConfig { pairing: Pairing::Literal, alpha: 1.0, startup_growth: 1.0, rate_window_ms: 0.0, ..LccConfig::default() });
    s.epoch(10, 5.0);
    s.epoch(10, 7.0);
    let tr = s.lcc.tracker().unwrap();
    assert_eq!(tr.pairs.len(), 2);
    assert!((tr.pairs[0].1 - 5.0).abs() < 1e-9 && (tr.pairs[1].1 - 7.0).abs() < 1e-9, "{:?}", tr.pairs);
}

#[test]
fn rejects_out_of_range_parameters() {
    for bad in [serde_json::json!({"alpha": 0.0}), serde_json::json!({"backoff": 1.5}), serde_json::json!({"window": 0}), serde_json::json!({"tc_clamp": "sideways"})] {
        let r = crate::controllers::build("lcc", &bad, &crate::controllers::BuildContext::new(1));
        assert!(r.is_err(), "{bad}");
    }
}

#[test]
fn no_feedback_no_growth_and_rates_stay_in_bounds() {
    let mut lcc = Lcc::new(LccConfig::default()).unwrap();
    lcc.on_start(Time::ZERO, constraints());
    let mut rate = constraints().start_rate;
    for i in 1..200 {
        if let Some(r) = lcc.on_tick(Time::from_ms(50 * i)).target_rate { rate = r; }
    }
    // feedback never came: start-up does not grow blindly
    assert_eq!(rate, constraints().start_rate);
}
