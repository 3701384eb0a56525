//! Random loss models applied to packets entering the bottleneck.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug)]
pub enum LossModel {
    None,
    /// Independent loss with probability p.
    Bernoulli(f64),
    /// Two-state Markov chain (per packet): loss probability depends on the state.
    GilbertElliott { p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64, bad: bool },
}

impl LossModel {
    /// Decide the fate of one packet. Draws from the run's RNG only when the model needs it,
    /// so a loss-free scenario does not perturb other random streams.
    pub fn drop(&mut self, rng: &mut ChaCha8Rng) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli(p) => *p > 0.0 && rng.gen::<f64>() < *p,
            LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad, bad } => {
                let flip = if *bad { *p_bg } else { *p_gb };
                if rng.gen::<f64>() < flip { *bad = !*bad; }
                let p = if *bad { *loss_bad } else { *loss_good };
                p > 0.0 && rng.gen::<f64>() < p
            }
        }
    }

    /// Long-run loss rate of the model.
    pub fn mean_loss(&self) -> f64 {
        match self {
            LossModel::None => 0.0,
            LossModel::Bernoulli(p) => *p,
            LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad, .. } => {
                if p_gb + p_bg <= 0.0 { return *loss_good; }
                let pi_bad = p_gb / (p_gb + p_bg);
                pi_bad * loss_bad + (1.0 - pi_bad) * loss_good
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn empirical_rates_match_models() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut m = LossModel::Bernoulli(0.1);
        let n = 200_000;
        let lost = (0..n).filter(|_| m.drop(&mut rng)).count() as f64 / n as f64;
        assert!((lost - 0.1).abs() < 0.005, "{lost}");
        let mut ge = LossModel::GilbertElliott { p_gb: 0.01, p_bg: 0.1, loss_good: 0.0, loss_bad: 0.5, bad: false };
        let expect = ge.mean_loss();
        assert!((expect - 0.5 / 11.0).abs() < 1e-12);
        let lost = (0..n).filter(|_| ge.drop(&mut rng)).count() as f64 / n as f64;
        assert!((lost - expect).abs() < 0.01, "{lost} vs {expect}");
    }
}
