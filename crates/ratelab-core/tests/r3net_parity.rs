//! The `r3net` controller's policy (tract-onnx) against the reference outputs in
//! `tests/data/r3net_parity.csv`: 600 observations recorded from two RL-environment episodes
//! driven by the shipped policy itself, with the action mean, std and hidden-state norm that
//! ratelab's former hand-written ONNX runtime computed for them (parity-tested against
//! onnxruntime in `tests/python/test_rl_model.py`). The file was written by the test that
//! compared both runtimes step by step before the hand-written one was removed.

use ratelab_core::controllers::r3net::{R3NetPolicy, SHIPPED_MODEL};

/// Tolerance 1e-5 relative to the quantity's scale, floored at 0.02 for μ and σ: tract computes
/// sigmoid as `0.5 + fit(x)`, whose f32 error is absolute (~6e-8), so far in the sigmoid's tail
/// (the shipped policy often answers μ ≈ 0.001) a relative bound alone would test rounding at
/// 0.5, not the model. 2e-7 of μ is 1.6 bit/s of an estimate on the 8 Mbit/s scale.
fn close(got: f32, want: f32) -> bool { (got - want).abs() <= 1e-5 * want.abs().max(0.02) }

#[test]
fn tract_policy_matches_the_recorded_reference_outputs() {
    let csv = include_str!("data/r3net_parity.csv");
    let mut p = R3NetPolicy::load(SHIPPED_MODEL).expect("shipped model");
    let mut n = 0;
    for (k, line) in csv.lines().filter(|l| !l.starts_with('#')).skip(1).enumerate() {
        let v: Vec<f32> = line.split(',').map(|x| x.parse().expect("number")).collect();
        assert_eq!(v.len(), 8, "row {k}: {line}");
        if v[0] == 1.0 { p.reset(); }
        let (mu, std) = p.step_with_std(&[v[1], v[2], v[3], v[4]]).expect("step");
        let norm = p.hidden_state().iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(close(mu, v[5]), "row {k}: μ {mu} vs {}", v[5]);
        assert!(close(std, v[6]), "row {k}: σ {std} vs {}", v[6]);
        assert!((norm - v[7]).abs() <= 1e-5 * v[7], "row {k}: |h| {norm} vs {}", v[7]);
        n += 1;
    }
    assert_eq!(n, 600, "all recorded steps compared");
}
