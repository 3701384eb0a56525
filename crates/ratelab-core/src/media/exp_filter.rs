//! `rtc::ExpFilter` (rtc_base/numerics/exp_filter.cc) with time-scaled smoothing
//! (`Apply(exp, sample)`: the factor is alpha^exp), in `float` as libwebrtc keeps it. Used by the
//! FEC controller's packets-per-frame estimates and the quality scaler's QP smoothers.

#[derive(Clone, Copy, Debug)]
pub struct ExpFilter { alpha: f32, value: Option<f32> }

impl ExpFilter {
    pub fn new(alpha: f32) -> Self { ExpFilter { alpha, value: None } }
    pub fn apply(&mut self, exp: f32, sample: f32) {
        self.value = Some(match self.value {
            None => sample,
            Some(v) => { let a = self.alpha.powf(exp); a * v + (1.0 - a) * sample }
        });
    }
    /// libwebrtc's `kValueUndefined` (−1) before the first sample.
    pub fn filtered(&self) -> f32 { self.value.unwrap_or(-1.0) }
    /// The filtered value, `None` before the first sample.
    pub fn value(&self) -> Option<f32> { self.value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_filter_scales_with_elapsed_time() {
        let mut f = ExpFilter::new(0.9999);
        assert_eq!(f.filtered(), -1.0);
        f.apply(0.0, 4.0);
        assert_eq!(f.filtered(), 4.0);
        f.apply(1000.0, 8.0);
        let a = 0.9999f32.powf(1000.0); // ≈ 0.905
        assert!((f.filtered() - (a * 4.0 + (1.0 - a) * 8.0)).abs() < 1e-5);
    }
}
