//! PCC Allegro's utility functions (NSDI'15 §2.2 and modong/pcc `sender/app/cc.h`).
//!
//! * `loss` (the paper's default): `u = T·S(L − L₀) − x·L`, with `T = x·(1 − L)` the throughput,
//!   `S(y) = 1 / (1 + e^{α·y})` a cut-off that drops from 1 to 0 around the loss threshold
//!   `L₀ = 5 %` (α = 100: from 0.99 at 0.4 % to 0.01 at 9.6 %), and `−x·L` the price of the lost
//!   packets. Random loss below the threshold barely moves `S`, so utility keeps rising with x:
//!   this is what makes Allegro loss-resilient.
//! * `latency` (modong/pcc's code as shipped, the one the Iris paper ran): the same terms, the
//!   throughput term further multiplied by `S_β(1 − RTT_{n−1}/RTT_n)` (β = 10) — below ½ when this
//!   MI's mean RTT is above the previous MI's, above ½ when it fell — and everything divided by
//!   `RTT_n`, so a higher RTT lowers utility at equal throughput.
//!
//! Units: x and T in Mbit/s, RTT in seconds. Only comparisons between MIs matter, so the scale
//! (modong/pcc's packets per µs × 1000) is irrelevant.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum UtilityKind {
    /// `T·S(L − L₀) − x·L` (PCC paper §2.2, the default there).
    #[default]
    Loss,
    /// `(T·S(L − L₀)·S_β(1 − RTT_{n−1}/RTT_n) − x·L) / RTT_n` (modong/pcc `cc.h`).
    Latency,
}

/// The sigmoid cut-off `1 / (1 + e^{α·y})`: ½ at y = 0, → 1 for y ≪ 0, → 0 for y ≫ 0.
pub fn sigmoid(alpha: f64, y: f64) -> f64 {
    let z = (alpha * y).clamp(-700.0, 700.0);
    1.0 / (1.0 + z.exp())
}

/// What one completed MI contributes to its utility.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MiStats {
    /// Sending rate, Mbit/s.
    pub rate_mbps: f64,
    /// Lost share of the MI's reported bytes.
    pub loss: f64,
    /// Mean RTT of the MI, seconds.
    pub rtt_s: f64,
    /// Mean RTT of the MI completed before it, seconds.
    pub prev_rtt_s: f64,
}

/// The constants of both utilities.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UtilityParams {
    pub kind: UtilityKind,
    /// Steepness α of the loss cut-off.
    pub loss_alpha: f64,
    /// Loss threshold L₀.
    pub loss_threshold: f64,
    /// Steepness β of the RTT-ratio cut-off (latency utility).
    pub rtt_alpha: f64,
}

pub fn utility(m: &MiStats, p: &UtilityParams) -> f64 {
    let x = m.rate_mbps.max(0.0);
    let l = m.loss.clamp(0.0, 1.0);
    let t = x * (1.0 - l);
    let loss_cut = sigmoid(p.loss_alpha, l - p.loss_threshold);
    match p.kind {
        UtilityKind::Loss => t * loss_cut - x * l,
        UtilityKind::Latency => {
            let rtt = m.rtt_s.max(1e-6);
            let prev = if m.prev_rtt_s > 0.0 { m.prev_rtt_s } else { rtt };
            (t * loss_cut * sigmoid(p.rtt_alpha, 1.0 - prev / rtt) - x * l) / rtt
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOSS: UtilityParams = UtilityParams { kind: UtilityKind::Loss, loss_alpha: 100.0, loss_threshold: 0.05, rtt_alpha: 10.0 };

    #[test]
    fn loss_utility_hand_computed() {
        let u = |x, l| utility(&MiStats { rate_mbps: x, loss: l, rtt_s: 0.05, prev_rtt_s: 0.05 }, &LOSS);
        // no loss: S(−0.05) = 1/(1 + e^{−5}) = 0.993 307 149 → u = 10 · 0.993 307 149
        assert!((u(10.0, 0.0) - 9.933_071_49).abs() < 1e-6, "{}", u(10.0, 0.0));
        // 2 % loss: T = 9.8, S(−0.03) = 1/(1 + e^{−3}) = 0.952 574 127; u = 9.335 226 − 0.2
        assert!((u(10.0, 0.02) - 9.135_226_44).abs() < 1e-6, "{}", u(10.0, 0.02));
        // at the threshold S = ½: u = 9.5 · 0.5 − 0.5 = 4.25
        assert!((u(10.0, 0.05) - 4.25).abs() < 1e-9);
        // 10 % loss: S(0.05) = 0.006 693; u = 9 · 0.006 693 − 1 < 0
        assert!((u(10.0, 0.10) - (9.0 * 0.006_692_850_9 - 1.0)).abs() < 1e-6);
        // random loss below the threshold: utility still rises with the rate (loss resilience)
        for l in [0.0, 0.01, 0.02, 0.03, 0.05] { assert!(u(10.1, l) > u(9.9, l), "L = {l}"); }
        // congestion loss beyond capacity C = 10: L = 1 − C/x; going past C lowers utility
        let cong = |x: f64| u(x, (1.0 - 10.0 / x).max(0.0));
        assert!(cong(10.0) > cong(11.0) && cong(10.0) > cong(9.0));
    }

    #[test]
    fn latency_utility_hand_computed() {
        let p = UtilityParams { kind: UtilityKind::Latency, ..LOSS };
        let u = |x, l, rtt, prev| utility(&MiStats { rate_mbps: x, loss: l, rtt_s: rtt, prev_rtt_s: prev }, &p);
        // steady RTT: S_β(0) = ½ → u = 10 · 0.993 307 · 0.5 / 0.05 = 99.330 715
        assert!((u(10.0, 0.0, 0.05, 0.05) - 99.330_714_9).abs() < 1e-5, "{}", u(10.0, 0.0, 0.05, 0.05));
        // RTT rose 50 → 60 ms: 1 − 50/60 = 1/6, S_10(1/6) = 1/(1 + e^{5/3}) = 0.158 869 105;
        // u = 10 · 0.993 307 149 · 0.158 869 105 / 0.06 = 26.300 970
        let up = u(10.0, 0.0, 0.06, 0.05);
        assert!((up - 26.300_970).abs() < 1e-5, "{up}");
        // a rising RTT costs more than the extra rate gains; a falling one is rewarded
        assert!(u(10.5, 0.0, 0.06, 0.05) < u(9.5, 0.0, 0.05, 0.05));
        assert!(u(9.5, 0.0, 0.045, 0.05) > u(9.5, 0.0, 0.05, 0.05));
        // no previous RTT: ratio 1
        assert_eq!(u(10.0, 0.0, 0.05, 0.0), u(10.0, 0.0, 0.05, 0.05));
        // finite for extreme inputs
        for v in [u(0.0, 1.0, 0.0, 0.0), u(1e6, 0.5, 1e-9, 10.0), u(1.0, 0.0, 10.0, 1e-9)] { assert!(v.is_finite()); }
    }
}
