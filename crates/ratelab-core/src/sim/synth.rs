//! Synthetic capacity traces for RL training (issue 5: "Markov / random-walk / step traces over
//! 0.1–8 Mbit/s"), drawn from a seeded RNG so that an episode is reproducible. Each generator
//! returns piecewise-constant `(start_s, kbps)` steps starting at 0, covering `duration_s`.

use rand::Rng;
use rand_distr::{Distribution, Exp, Normal};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SynthKind {
    /// Continuous-time Markov chain over 8 log-spaced levels; mean dwell U(1, 5) s per trace;
    /// 70 % of transitions go to a neighbouring level, 30 % anywhere; ±10 % jitter per visit.
    Markov,
    /// Log-capacity random walk every 200 ms with σ ~ U(0.02, 0.10) per trace, reflected at the bounds.
    RandomWalk,
    /// Steps of U(2, 10) s at log-uniform levels.
    Step,
}

impl SynthKind {
    pub const ALL: [SynthKind; 3] = [SynthKind::Markov, SynthKind::RandomWalk, SynthKind::Step];
    pub fn name(self) -> &'static str { match self { SynthKind::Markov => "markov", SynthKind::RandomWalk => "random-walk", SynthKind::Step => "step" } }
    pub fn parse(s: &str) -> Option<SynthKind> { SynthKind::ALL.into_iter().find(|k| k.name() == s) }
}

fn log_uniform<R: Rng>(rng: &mut R, lo: f64, hi: f64) -> f64 { (lo.ln() + rng.gen::<f64>() * (hi.ln() - lo.ln())).exp() }

/// Generate one trace. Bounds are sanitised (`lo` ≥ 1 kbit/s, `hi` ≥ `lo`).
pub fn generate<R: Rng>(kind: SynthKind, rng: &mut R, duration_s: f64, lo_kbps: f64, hi_kbps: f64) -> Vec<(f64, f64)> {
    let lo = if lo_kbps.is_finite() { lo_kbps.max(1.0) } else { 100.0 };
    let hi = if hi_kbps.is_finite() { hi_kbps.max(lo) } else { lo };
    let dur = if duration_s.is_finite() { duration_s.max(0.0) } else { 0.0 };
    let mut out = Vec::new();
    match kind {
        SynthKind::Markov => {
            const LEVELS: usize = 8;
            let level = |i: usize| (lo.ln() + (i as f64 + 0.5) / LEVELS as f64 * (hi.ln() - lo.ln())).exp();
            let dwell = Exp::new(1.0 / rng.gen_range(1.0..5.0)).expect("positive rate");
            let mut s = rng.gen_range(0..LEVELS);
            let mut t = 0.0;
            while t < dur || out.is_empty() {
                out.push((t, (level(s) * rng.gen_range(0.9..1.1)).clamp(lo, hi)));
                t += f64::max(dwell.sample(rng), 0.2);
                s = if rng.gen::<f64>() < 0.7 {
                    match s { 0 => 1, x if x == LEVELS - 1 => LEVELS - 2, x => if rng.gen() { x + 1 } else { x - 1 } }
                } else { rng.gen_range(0..LEVELS) };
            }
        }
        SynthKind::RandomWalk => {
            let sigma = rng.gen_range(0.02..0.10);
            let noise = Normal::new(0.0, sigma).expect("finite sigma");
            let (llo, lhi) = (lo.ln(), hi.ln());
            let mut x = rng.gen_range(llo..=lhi);
            let mut t = 0.0;
            while t < dur || out.is_empty() {
                out.push((t, x.exp().clamp(lo, hi)));
                x += noise.sample(rng);
                if x > lhi { x = 2.0 * lhi - x; }
                if x < llo { x = 2.0 * llo - x; }
                x = x.clamp(llo, lhi);
                t += 0.2;
            }
        }
        SynthKind::Step => {
            let mut t = 0.0;
            while t < dur || out.is_empty() {
                out.push((t, log_uniform(rng, lo, hi).clamp(lo, hi)));
                t += rng.gen_range(2.0..10.0);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn every_kind_covers_the_duration_within_bounds_and_is_reproducible() {
        for kind in SynthKind::ALL {
            for seed in 0..20 {
                let a = generate(kind, &mut ChaCha8Rng::seed_from_u64(seed), 60.0, 100.0, 8000.0);
                let b = generate(kind, &mut ChaCha8Rng::seed_from_u64(seed), 60.0, 100.0, 8000.0);
                assert_eq!(a, b);
                assert_eq!(a[0].0, 0.0);
                assert!(a.windows(2).all(|w| w[1].0 > w[0].0), "{kind:?} times increase");
                assert!(a.last().unwrap().0 < 60.0, "{kind:?}: every step starts inside the trace (the last one holds to the end)");
                assert!(a.len() >= 3, "{kind:?}: a 60 s trace changes capacity");
                assert!(a.iter().all(|(_, c)| (100.0..=8000.0).contains(c)), "{kind:?} within bounds");
            }
            assert_eq!(SynthKind::parse(kind.name()), Some(kind));
        }
        // Over many traces the generators visit most of the range (log scale).
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let all: Vec<f64> = (0..50).flat_map(|_| generate(SynthKind::Step, &mut rng, 60.0, 100.0, 8000.0)).map(|s| s.1).collect();
        assert!(all.iter().any(|c| *c < 300.0) && all.iter().any(|c| *c > 4000.0));
    }

    #[test]
    fn degenerate_bounds_do_not_panic() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for kind in SynthKind::ALL {
            assert!(!generate(kind, &mut rng, 0.0, 500.0, 500.0).is_empty());
            assert!(!generate(kind, &mut rng, f64::NAN, f64::NAN, -1.0).is_empty());
            assert!(generate(kind, &mut rng, 10.0, 900.0, 100.0).iter().all(|(_, c)| *c == 900.0));
        }
    }
}
