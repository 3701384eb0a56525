//! LCC's Probability Density Fitter and the closed form of its Bayesian Controller
//! (spec 3.4 steps 3, 4 and 7; paper 000 Eqs. 3, 4, 6, 7).
//!
//! Pairs are `(S_j, D_j)` with the sending rate in kbit/s and the smoothed OWD in ms. The joint
//! density is the weighted product-Gaussian KDE
//! `P(S, D) = (1/W) Σ_j w_j · φ_hS(S − S_j) · φ_hD(D − D_j)` with `w_j = e^{j/N − 1}` for the
//! window position `j = 1` (oldest) … `N` (newest). Conditioning on `D = T_c` and integrating
//! `S` gives the Nadaraya–Watson mean
//! `E[S | D = T_c] = Σ_j w_j φ_hD(T_c − D_j) S_j / Σ_j w_j φ_hD(T_c − D_j)`:
//! each S-kernel integrates to its centre, so `h_S` drops out of the mean.

/// Weight of window position `j` (1-based, `j = n` newest) of `n` pairs: `e^{j/n − 1}` (Eq. 3).
pub fn pair_weight(j: usize, n: usize) -> f64 {
    if n == 0 { return 0.0; }
    ((j as f64) / (n as f64) - 1.0).exp()
}

/// How the kernel bandwidths are chosen (the paper gives no rule, spec 3.5 ✗).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandwidthRule {
    /// Multiplier on the weighted Scott bandwidth `σ_w · n_eff^{−1/6}`.
    pub scale: f64,
    /// Floor for `h_D` (ms), so that a window of identical delays still has a kernel.
    pub min_d_ms: f64,
    /// Floor for `h_S` (kbit/s).
    pub min_s_kbps: f64,
}

/// A fitted (frozen) KDE snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct Kde {
    s: Vec<f64>,
    d: Vec<f64>,
    w: Vec<f64>,
    /// Rate bandwidth (kbit/s).
    pub h_s: f64,
    /// Delay bandwidth (ms).
    pub h_d: f64,
    /// Kernel correlation ρ: 0 for the product kernel; the weighted (S, D) correlation of the
    /// data for a full-covariance kernel `H = c²·Σ_w` (scipy-style `gaussian_kde`).
    pub rho: f64,
}

/// Weighted mean and standard deviation.
fn weighted_moments(x: &[f64], w: &[f64]) -> (f64, f64) {
    let sw: f64 = w.iter().sum();
    if sw <= 0.0 { return (0.0, 0.0); }
    let mean = x.iter().zip(w).map(|(x, w)| x * w).sum::<f64>() / sw;
    let var = x.iter().zip(w).map(|(x, w)| w * (x - mean) * (x - mean)).sum::<f64>() / sw;
    (mean, var.max(0.0).sqrt())
}

impl Kde {
    /// Fit on `pairs` ordered oldest first (`(S kbit/s, D ms)`), with the weights of Eq. 3 and
    /// explicit bandwidths.
    pub fn with_bandwidths(pairs: &[(f64, f64)], h_s: f64, h_d: f64) -> Option<Kde> {
        let pairs: Vec<(f64, f64)> = pairs.iter().copied().filter(|(s, d)| s.is_finite() && d.is_finite()).collect();
        if pairs.is_empty() || !(h_s > 0.0 && h_d > 0.0 && h_s.is_finite() && h_d.is_finite()) { return None; }
        let n = pairs.len();
        let w = (1..=n).map(|j| pair_weight(j, n)).collect();
        Some(Kde { s: pairs.iter().map(|p| p.0).collect(), d: pairs.iter().map(|p| p.1).collect(), w, h_s, h_d, rho: 0.0 })
    }

    /// Fit with bandwidths from the weighted Scott rule
    /// `h = scale · σ_w · n_eff^{−1/6}`, `n_eff = (Σw)² / Σw²` (spec 3.5), floored.
    pub fn fit(pairs: &[(f64, f64)], rule: BandwidthRule) -> Option<Kde> {
        let pairs: Vec<(f64, f64)> = pairs.iter().copied().filter(|(s, d)| s.is_finite() && d.is_finite()).collect();
        if pairs.is_empty() { return None; }
        let n = pairs.len();
        let w: Vec<f64> = (1..=n).map(|j| pair_weight(j, n)).collect();
        let sw: f64 = w.iter().sum();
        let sw2: f64 = w.iter().map(|w| w * w).sum();
        let n_eff = sw * sw / sw2;
        let factor = rule.scale.max(0.0) * n_eff.powf(-1.0 / 6.0);
        let s: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        let d: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        let (_, sd_s) = weighted_moments(&s, &w);
        let (_, sd_d) = weighted_moments(&d, &w);
        let h_s = (sd_s * factor).max(rule.min_s_kbps).max(1e-9);
        let h_d = (sd_d * factor).max(rule.min_d_ms).max(1e-9);
        Some(Kde { s, d, w, h_s, h_d, rho: 0.0 })
    }

    /// Turn the product kernel into a full-covariance one with the data's weighted correlation
    /// (bandwidths unchanged). Only non-negative correlations are kept when `nonneg`.
    pub fn with_data_correlation(mut self, nonneg: bool) -> Kde {
        let (ms, ss) = weighted_moments(&self.s, &self.w);
        let (md, sd) = weighted_moments(&self.d, &self.w);
        let sw: f64 = self.w.iter().sum();
        let cov = self.s.iter().zip(&self.d).zip(&self.w).map(|((s, d), w)| w * (s - ms) * (d - md)).sum::<f64>() / sw;
        let rho = if ss > 0.0 && sd > 0.0 { (cov / (ss * sd)).clamp(-1.0, 1.0) } else { 0.0 };
        self.rho = if nonneg { rho.max(0.0) } else { rho };
        self
    }

    pub fn len(&self) -> usize { self.s.len() }
    pub fn is_empty(&self) -> bool { self.s.is_empty() }

    /// Smallest and largest delay in the snapshot (ms).
    pub fn delay_range(&self) -> (f64, f64) {
        self.d.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &d| (lo.min(d), hi.max(d)))
    }

    /// Joint density `P(S, D)` of Eq. 4 (per kbit/s per ms).
    pub fn density(&self, s: f64, d: f64) -> f64 {
        let sw: f64 = self.w.iter().sum();
        if sw <= 0.0 { return 0.0; }
        let r = self.rho.clamp(-0.999, 0.999);
        let one_r2 = 1.0 - r * r;
        let norm = 1.0 / (2.0 * std::f64::consts::PI * self.h_s * self.h_d * one_r2.sqrt());
        let sum: f64 = self.s.iter().zip(&self.d).zip(&self.w).map(|((sj, dj), w)| {
            let zs = (s - sj) / self.h_s;
            let zd = (d - dj) / self.h_d;
            w * (-0.5 * (zs * zs - 2.0 * r * zs * zd + zd * zd) / one_r2).exp()
        }).sum();
        norm * sum / sw
    }

    /// `E[S | D = t_c]` (Eqs. 6–7) in closed form. Computed with log-sum-exp, so a `t_c` far
    /// from every recorded delay does not underflow: the mean then tends to the rate of the
    /// pair(s) with the nearest delay (spec 3.6, "conditional density far from data").
    /// With a correlated kernel (ρ ≠ 0) each component's conditional mean is
    /// `S_j + ρ·(h_S/h_D)·(t_c − D_j)`, so the estimate extrapolates beyond the data.
    pub fn conditional_mean(&self, t_c: f64) -> Option<f64> {
        if self.is_empty() || !t_c.is_finite() { return None; }
        let logs: Vec<f64> = self.d.iter().zip(&self.w).map(|(dj, w)| {
            let z = (t_c - dj) / self.h_d;
            w.ln() - 0.5 * z * z
        }).collect();
        let m = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !m.is_finite() { return None; }
        let (mut num, mut den) = (0.0, 0.0);
        let beta = self.rho.clamp(-0.999, 0.999) * self.h_s / self.h_d;
        for ((l, sj), dj) in logs.iter().zip(&self.s).zip(&self.d) {
            let e = (l - m).exp();
            num += e * (sj + beta * (t_c - dj));
            den += e;
        }
        (den > 0.0).then(|| num / den).filter(|v| v.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_eq3() {
        // N = 4: e^{1/4−1}, e^{2/4−1}, e^{3/4−1}, e^0
        let w: Vec<f64> = (1..=4).map(|j| pair_weight(j, 4)).collect();
        let want = [(-0.75f64).exp(), (-0.5f64).exp(), (-0.25f64).exp(), 1.0];
        for (a, b) in w.iter().zip(want) { assert!((a - b).abs() < 1e-12, "{w:?}"); }
        assert!((pair_weight(1, 300) - (1.0 / 300.0 - 1.0f64).exp()).abs() < 1e-12);
    }

    /// Three pairs, h_D = 10 ms, T_c = 60 ms, by hand:
    /// pairs (S, D) = (500, 50), (800, 60), (1000, 80); weights e^{−2/3}, e^{−1/3}, 1
    /// = 0.513417, 0.716531, 1. Kernel factors exp(−z²/2) with z = (60 − D)/10:
    /// z = 1 → 0.606531, z = 0 → 1, z = −2 → 0.135335.
    /// Products: 0.311403, 0.716531, 0.135335; sum 1.163269.
    /// Mean = (0.311403·500 + 0.716531·800 + 0.135335·1000) / 1.163269
    ///      = (155.7015 + 573.2248 + 135.3353) / 1.163269 = 864.2616 / 1.163269 = 742.96.
    #[test]
    fn conditional_mean_hand_computed() {
        let kde = Kde::with_bandwidths(&[(500.0, 50.0), (800.0, 60.0), (1000.0, 80.0)], 100.0, 10.0).unwrap();
        let m = kde.conditional_mean(60.0).unwrap();
        assert!((m - 742.96).abs() < 0.01, "{m}");
        // h_S does not change the mean
        let kde2 = Kde::with_bandwidths(&[(500.0, 50.0), (800.0, 60.0), (1000.0, 80.0)], 7.0, 10.0).unwrap();
        assert!((kde2.conditional_mean(60.0).unwrap() - m).abs() < 1e-9);
    }

    /// The closed form equals the numerical integral ∫ S · P(S, T_c) dS / ∫ P(S, T_c) dS.
    #[test]
    fn closed_form_matches_numerical_integration_of_the_density() {
        let pairs = [(400.0, 52.0), (650.0, 55.0), (900.0, 63.0), (1200.0, 90.0), (700.0, 58.0)];
        let kde = Kde::with_bandwidths(&pairs, 80.0, 6.0).unwrap();
        for t_c in [50.0, 57.0, 70.0, 95.0] {
            let (mut num, mut den) = (0.0, 0.0);
            let ds = 1.0;
            let mut s = -500.0;
            while s < 2500.0 {
                let p = kde.density(s, t_c);
                num += s * p * ds;
                den += p * ds;
                s += ds;
            }
            let cf = kde.conditional_mean(t_c).unwrap();
            assert!((num / den - cf).abs() < 1e-6 * cf.abs().max(1.0), "t_c {t_c}: {} vs {cf}", num / den);
        }
    }

    /// Correlated kernel: the closed form still equals the numerical conditional mean of the
    /// density, and beyond the data it extrapolates along ρ·h_S/h_D.
    #[test]
    fn correlated_kernel_closed_form_and_extrapolation() {
        let pairs = [(400.0, 52.0), (650.0, 55.0), (900.0, 63.0), (1200.0, 70.0)];
        let mut kde = Kde::with_bandwidths(&pairs, 80.0, 6.0).unwrap();
        kde.rho = 0.5;
        for t_c in [50.0, 60.0, 75.0] {
            let (mut num, mut den) = (0.0, 0.0);
            let mut s = -1000.0;
            while s < 4000.0 {
                let p = kde.density(s, t_c);
                num += s * p;
                den += p;
                s += 1.0;
            }
            let cf = kde.conditional_mean(t_c).unwrap();
            assert!((num / den - cf).abs() < 1e-6 * cf.abs(), "t_c {t_c}: {} vs {cf}", num / den);
        }
        // far above the data: the top pair plus β·(t_c − 70), β = 0.5·80/6
        let far = kde.conditional_mean(170.0).unwrap();
        assert!((far - (1200.0 + 0.5 * 80.0 / 6.0 * 100.0)).abs() < 1e-6, "{far}");
        // the data's own correlation is positive here
        let k = Kde::with_bandwidths(&pairs, 80.0, 6.0).unwrap().with_data_correlation(true);
        assert!(k.rho > 0.9, "{}", k.rho);
    }

    #[test]
    fn far_from_data_tends_to_the_nearest_pair_without_underflow() {
        let kde = Kde::with_bandwidths(&[(500.0, 50.0), (800.0, 60.0), (1000.0, 80.0)], 100.0, 1.0).unwrap();
        assert!((kde.conditional_mean(10_000.0).unwrap() - 1000.0).abs() < 1e-9);
        assert!((kde.conditional_mean(-10_000.0).unwrap() - 500.0).abs() < 1e-9);
        assert!(kde.conditional_mean(f64::NAN).is_none());
    }

    #[test]
    fn weighted_scott_bandwidth() {
        // two pairs: weights e^{-1/2}, 1; D values 50, 70
        let rule = BandwidthRule { scale: 1.0, min_d_ms: 0.0, min_s_kbps: 0.0 };
        let kde = Kde::fit(&[(100.0, 50.0), (300.0, 70.0)], rule).unwrap();
        let (w1, w2) = ((-0.5f64).exp(), 1.0);
        let sw = w1 + w2;
        let mean = (w1 * 50.0 + w2 * 70.0) / sw;
        let sd = ((w1 * (50.0 - mean).powi(2) + w2 * (70.0 - mean).powi(2)) / sw).sqrt();
        let n_eff = sw * sw / (w1 * w1 + w2 * w2);
        assert!((kde.h_d - sd * n_eff.powf(-1.0 / 6.0)).abs() < 1e-9);
        assert!((kde.h_s - 10.0 * sd * n_eff.powf(-1.0 / 6.0)).abs() < 1e-9); // S spread is 10× D spread
        // identical delays: the floor applies
        let rule = BandwidthRule { scale: 1.0, min_d_ms: 0.5, min_s_kbps: 1.0 };
        let kde = Kde::fit(&[(100.0, 50.0), (300.0, 50.0)], rule).unwrap();
        assert_eq!(kde.h_d, 0.5);
        assert!(Kde::fit(&[], rule).is_none());
    }
}
