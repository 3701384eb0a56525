//! Cross controller tests on the scripted link of [`crate::controllers::testkit`].

use super::*;
use crate::controllers::testkit::Harness;

fn constraints(max_kbps: i64) -> Constraints {
    Constraints { min_rate: Bitrate::from_kbps(300), max_rate: Bitrate::from_kbps(max_kbps), start_rate: Bitrate::from_kbps(500) }
}

fn cross(cfg: CrossConfig) -> Cross { Cross::new(cfg, &BuildContext::new(1)) }

/// Defaults with the encoder discount off: the harness sends exactly the target (no headers),
/// so target = r and the rate rule can be read off the target.
fn unit() -> CrossConfig { CrossConfig { encoder_discount: 1.0, ..CrossConfig::default() } }

fn diag(c: &dyn Controller, name: &str) -> f64 {
    let mut d = Vec::new();
    c.diagnostics(&mut d);
    d.iter().find(|(n, _)| *n == name).map_or(f64::NAN, |(_, v)| *v)
}

/// Run in steps of `step_ms`, calling `f` after each.
fn run(h: &mut Harness, until_ms: i64, step_ms: i64, mut f: impl FnMut(&Harness)) {
    let mut t = h.now.as_us() / 1000;
    while t < until_ms { t += step_ms; h.run_until(Time::from_ms(t)); f(h); }
}

#[test]
fn startup_drain_probe_bw_then_holds_capacity_with_small_queue() {
    let mut h = Harness::new(Box::new(cross(unit())), Bitrate::from_kbps(4000), 25, constraints(20_000));
    let mut modes = vec![];
    run(&mut h, 30_000, 5, |h| { let m = diag(&*h.ctrl, "cross_mode"); if modes.last() != Some(&m) { modes.push(m); } });
    assert_eq!(&modes[..3], &[0.0, 1.0, 2.0], "{modes:?}");
    let tgt = h.mean_target(Time::from_ms(10_000), Time::from_ms(30_000)).kbps_f64();
    assert!(tgt > 3600.0 && tgt < 4200.0, "mean target {tgt}");
    // MIMD limit cycle (±5 % per ~3 RTT, acceleration): the queue swings 0 … ~40 ms
    let q = h.mean_queue(Time::from_ms(10_000), Time::from_ms(30_000)).as_ms_f64();
    assert!(q < 25.0, "mean queuing delay {q} ms");
    assert!(diag(&*h.ctrl, "cross_decisions") > 50.0);
}

#[test]
fn startup_exits_on_queue_load_alone_and_on_growth_alone() {
    for (name, cfg) in [
        ("queue rule", CrossConfig { startup_rounds: 1000, ..unit() }),
        ("growth rule", CrossConfig { startup_queue_rounds: 1000, ..unit() }),
    ] {
        let mut h = Harness::new(Box::new(cross(cfg)), Bitrate::from_kbps(4000), 25, constraints(20_000));
        let mut left = None;
        run(&mut h, 5000, 5, |h| if left.is_none() && diag(&*h.ctrl, "cross_mode") != 0.0 { left = Some(h.now) });
        let t = left.unwrap_or_else(|| panic!("{name}: never left StartUp"));
        assert!(t < Time::from_ms(3000), "{name}: left StartUp at {t}");
    }
}

#[test]
fn probe_bw_decisions_step_5_percent_about_every_three_rounds_then_accelerate() {
    // 100 Mbit/s link, 50 ms RTT: no queue, every decision is UP with D_m = D_min (low delay).
    let c = cross(unit()).start_in_probe_bw();
    let mut h = Harness::new(Box::new(c), Bitrate::from_kbps(100_000), 25, constraints(100_000));
    run(&mut h, 3000, 1, |_| {});
    let changes: Vec<(Time, Bitrate)> = h.target_log.windows(2).filter(|w| w[1].1 != w[0].1).map(|w| w[1]).collect();
    assert!(changes.len() >= 6, "{changes:?}");
    let mut r = 500e3;
    for (i, (_, got)) in changes.iter().take(6).enumerate() {
        let n_up = i as u32 + 1;
        let accel = if n_up > 3 { (0.05 * r * (n_up - 3) as f64).min(200e3) } else { 0.0 };
        r = (r * 1.05 + accel).round();
        assert!((got.bps_f64() - r).abs() <= 1.0, "decision {n_up}: {got} vs {r}");
    }
    // epochs: cycle 0 + cycle 1 (≥ min RTT each) + feedback of cycle 1's last packet
    let min_rtt = diag(&*h.ctrl, "cross_min_rtt_ms");
    assert!((50.0..60.0).contains(&min_rtt), "{min_rtt}");
    for w in changes.windows(2).take(5) {
        let gap = (w[1].0 - w[0].0).as_ms_f64();
        assert!(gap >= 2.0 * min_rtt && gap <= 4.0 * min_rtt, "decision gap {gap} ms, min RTT {min_rtt}");
    }
}

#[test]
fn queue_load_above_threshold_steps_down_and_fast_reduces() {
    // Start in ProbeBW at 3 Mbit/s on a 2 Mbit/s link: the queue load exceeds 2 MTU.
    let cfg = CrossConfig { fast_adapt: false, ..unit() };
    let c = cross(cfg).start_in_probe_bw();
    let mut cons = constraints(20_000);
    cons.start_rate = Bitrate::from_kbps(3000);
    let mut h = Harness::new(Box::new(c), Bitrate::from_kbps(2000), 25, cons);
    let mut decisions = vec![];
    let mut last = 0.0;
    run(&mut h, 8000, 1, |h| {
        let n = diag(&*h.ctrl, "cross_decisions");
        if n != last { last = n; decisions.push((diag(&*h.ctrl, "cross_dir"), h.target)); }
    });
    // first decisions are DOWN ×0.95, ×0.95, ×0.95, then ×0.9 (fast reduce) while Q ≥ B_th
    // (the queue keeps growing, so the epochs — which wait for cycle 1's feedback — stretch)
    assert!(decisions[..4].iter().all(|d| d.0 == -1.0), "{decisions:?}");
    let r: Vec<f64> = decisions.iter().map(|d| d.1.bps_f64()).collect();
    assert!((r[0] - 3000e3 * 0.95).abs() < 2.0, "{r:?}");
    assert!((r[1] - r[0] * 0.95).abs() < 2.0 && (r[2] - r[1] * 0.95).abs() < 2.0, "{r:?}");
    assert!((r[3] - r[2] * 0.9).abs() < 2.0, "fast reduce: {r:?}");
    // it gets below capacity and the queue drains
    assert!(r.iter().any(|x| *x < 2000e3), "{r:?}");
    assert!(h.mean_queue(Time::from_ms(7000), Time::from_ms(8000)) < Duration::from_ms(100), "{:?}", h.mean_queue(Time::from_ms(7000), Time::from_ms(8000)));
}

#[test]
fn probe_rtt_after_five_seconds_without_new_min_delay() {
    // No queue (100 Mbit/s) but the path delay grows by 20 ms at 2 s: D_min (25 ms + tx) is not
    // sampled again, so ProbeRTT starts ~5 s later, halves the rate for ≥ 200 ms and a round,
    // re-samples D_min at the new base (≈ 45 ms) and restores the rate.
    let cfg = CrossConfig { accel: false, ..unit() };
    let c = cross(cfg).start_in_probe_bw();
    let mut h = Harness::new(Box::new(c), Bitrate::from_kbps(100_000), 25, constraints(100_000));
    h.delay_steps = vec![(Time::from_ms(2000), Duration::from_ms(20))];
    let mut entered = None;
    let mut exited = None;
    let mut before = Bitrate::ZERO;
    let mut during = vec![];
    let mut prev_mode = 2.0;
    run(&mut h, 9000, 1, |h| {
        let m = diag(&*h.ctrl, "cross_mode");
        if m == 3.0 && prev_mode != 3.0 { entered = Some(h.now); before = Bitrate::from_kbps_f64(diag(&*h.ctrl, "cross_rate_kbps")); }
        if m == 3.0 { during.push(h.target); }
        if m != 3.0 && prev_mode == 3.0 && exited.is_none() { exited = Some((h.now, h.target, diag(&*h.ctrl, "cross_d_min_ms"))); }
        prev_mode = m;
    });
    let t_in = entered.expect("ProbeRTT entered");
    assert!(t_in > Time::from_ms(6900) && t_in < Time::from_ms(7300), "entered at {t_in}");
    assert!(during.iter().all(|r| (r.bps_f64() - before.bps_f64() * 0.5).abs() <= 1.0), "{during:?} vs {before}");
    let (t_out, r_out, d_min) = exited.expect("ProbeRTT exited");
    assert!(t_out - t_in >= Duration::from_ms(200) && t_out - t_in < Duration::from_ms(400), "{}", t_out - t_in);
    assert_eq!(r_out, before, "rate restored");
    assert!(d_min > 45.0 && d_min < 46.0, "D_min re-sampled at the new base: {d_min}");
}

#[test]
fn fast_adaptation_shortens_the_delay_spike_after_a_capacity_drop() {
    // 10 → 4 Mbit/s at 20 s, 500 ms buffer, 50 ms RTT. Spike = time (10 ms bins by send time)
    // with > 100 ms queuing delay during the 20 s after the drop.
    let spike = |fast_adapt: bool| {
        let cfg = CrossConfig { fast_adapt, ..unit() };
        let mut h = Harness::new(Box::new(cross(cfg)), Bitrate::from_kbps(10_000), 25, constraints(10_000));
        h.capacity.push((Time::from_ms(20_000), Bitrate::from_kbps(4000)));
        h.queue_limit = Duration::from_ms(500);
        run(&mut h, 40_000, 10, |_| {});
        let mut bins = std::collections::BTreeSet::new();
        for (t, q) in &h.queue_log {
            if *t >= Time::from_ms(20_000) && *q > Duration::from_ms(100) { bins.insert(t.as_us() / 10_000); }
        }
        let resets = diag(&*h.ctrl, "cross_fast_adapt_resets");
        (bins.len() as f64 * 0.01, resets, h.mean_target(Time::from_ms(34_000), Time::from_ms(40_000)), h.mean_queue(Time::from_ms(34_000), Time::from_ms(40_000)))
    };
    let (with, resets_on, r_on, q_on) = spike(true);
    let (without, resets_off, r_off, q_off) = spike(false);
    assert!(resets_on >= 1.0 && resets_off == 0.0);
    assert!(with < 3.0, "spike with fast adaptation {with} s (paper ≈ 2 s)");
    assert!(without > 2.0 * with, "spike without fast adaptation {without} s vs {with} s");
    // both settle near the new capacity with a small queue (14–20 s after the drop)
    for (r, q) in [(r_on, q_on), (r_off, q_off)] {
        assert!(r.kbps_f64() > 3400.0 && r.kbps_f64() < 4200.0, "{r}");
        assert!(q < Duration::from_ms(40), "{q}");
    }
}

#[test]
fn outputs_target_discounted_and_pacing_at_the_rate() {
    let mut c = cross(CrossConfig { encoder_discount: 0.95, ..CrossConfig::default() });
    let u = c.on_start(Time::ZERO, constraints(10_000));
    // r = start rate 500 kbit/s; encoder target = discount 0.95 · r; pacing = 1.0 · r; no padding, no window
    assert_eq!(u.target_rate, Some(Bitrate::from_kbps(475)));
    assert_eq!(u.pacing_rate, Some(Bitrate::from_kbps(500)));
    assert_eq!(u.padding_rate, Some(Bitrate::ZERO));
    assert_eq!(u.cwnd, None);
}
