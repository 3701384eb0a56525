//! Cross's rate rule in PROBE_BW: Eq. 3 (queue load), Eq. 4 (MIMD) and Algorithm 2
//! (acceleration, UP→DOWN recovery factor, fast reduce) — spec 5.2 and 5.5, ⚙ RECONSTRUCTED.

use crate::units::{Bitrate, Bytes, Duration};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction { None, Up, Down }

impl Direction {
    pub fn code(self) -> f64 { match self { Direction::None => 0.0, Direction::Up => 1.0, Direction::Down => -1.0 } }
}

/// Parameters of Algorithm 2 (see [`super::CrossConfig`] for sources).
#[derive(Clone, Copy, Debug)]
pub struct MimdParams {
    pub epsilon: f64,
    pub threshold: Bytes,
    pub n_up: u32,
    pub n_down: u32,
    pub accel: bool,
    pub accel_delay_factor: f64,
    pub accel_gain: f64,
    pub accel_cap: Bitrate,
    pub up_down_recover: bool,
    pub fast_reduce: bool,
    pub fast_reduce_gain: f64,
}

/// The outcome of one decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// New rate before the constraints are applied.
    pub rate: Bitrate,
    pub queue_load: Bytes,
    pub dir: Direction,
    /// Extra increase from the acceleration rule (zero if it did not apply).
    pub accel: Bitrate,
    /// The fast-reduce gain was applied.
    pub fast_reduce: bool,
    /// This was an UP → DOWN switch (the recovery factor was applied).
    pub switched: bool,
}

#[derive(Clone, Debug)]
pub struct Mimd {
    pub p: MimdParams,
    pub dir: Direction,
    pub n_up: u32,
    pub n_down: u32,
}

/// Eq. 3: `Q = r · (D_m − D_min) / 8` bytes (rate in bit/s, delays in s).
pub fn queue_load(rate: Bitrate, d_m: Duration, d_min: Duration) -> Bytes { rate * (d_m - d_min).max(Duration::ZERO) }

impl Mimd {
    pub fn new(p: MimdParams) -> Self { Mimd { p, dir: Direction::None, n_up: 0, n_down: 0 } }

    /// Forget the direction history (after a ProbeRTT or a fast-adaptation reset).
    pub fn reset(&mut self) { self.dir = Direction::None; self.n_up = 0; self.n_down = 0; }

    /// One decision at rate `r` with decision delay `d_m` (Eq. 5) and minimum delay `d_min`.
    pub fn decide(&mut self, r: Bitrate, d_m: Duration, d_min: Duration) -> Decision {
        let p = self.p;
        let q = queue_load(r, d_m, d_min);
        let rf = r.bps_f64();
        if q < p.threshold {
            self.n_up = if self.dir == Direction::Up { self.n_up + 1 } else { 1 };
            self.n_down = 0;
            self.dir = Direction::Up;
            let mut new = rf * (1.0 + p.epsilon);
            let mut accel = 0.0;
            // Acceleration: more than N_up consecutive UPs while the delay is low.
            let low_delay = d_m.as_us() as f64 <= (1.0 + p.accel_delay_factor) * d_min.as_us() as f64;
            if p.accel && self.n_up > p.n_up && low_delay {
                accel = (p.accel_gain * rf * (self.n_up - p.n_up) as f64).min(p.accel_cap.bps_f64()).max(0.0);
                new += accel;
            }
            Decision { rate: Bitrate::from_bps_f64(new), queue_load: q, dir: Direction::Up, accel: Bitrate::from_bps_f64(accel), fast_reduce: false, switched: false }
        } else {
            let switched = self.dir == Direction::Up;
            let mut fast = false;
            let new = if switched {
                self.n_down = 1;
                // 1/(1+ε) undoes the failed increase, (1−ε) reduces further.
                if p.up_down_recover { rf * (1.0 - p.epsilon) / (1.0 + p.epsilon) } else { rf * (1.0 - p.epsilon) }
            } else {
                self.n_down += 1;
                let g = if p.fast_reduce && self.n_down > p.n_down { fast = true; p.fast_reduce_gain } else { 1.0 };
                rf * (1.0 - p.epsilon * g).max(0.05)
            };
            self.n_up = 0;
            self.dir = Direction::Down;
            Decision { rate: Bitrate::from_bps_f64(new), queue_load: q, dir: Direction::Down, accel: Bitrate::ZERO, fast_reduce: fast, switched }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> MimdParams {
        MimdParams {
            epsilon: 0.05, threshold: Bytes::new(3000), n_up: 3, n_down: 3, accel: true, accel_delay_factor: 0.125,
            accel_gain: 0.05, accel_cap: Bitrate::from_kbps(200), up_down_recover: true, fast_reduce: true, fast_reduce_gain: 2.0,
        }
    }
    const MS: fn(i64) -> Duration = Duration::from_ms;

    #[test]
    fn queue_load_eq3() {
        // 2 Mbit/s × 12 ms = 3000 B: exactly the threshold → DOWN
        assert_eq!(queue_load(Bitrate::from_kbps(2000), MS(62), MS(50)), Bytes::new(3000));
        let mut m = Mimd::new(params());
        assert_eq!(m.decide(Bitrate::from_kbps(2000), MS(62), MS(50)).dir, Direction::Down);
        let mut m = Mimd::new(params());
        assert_eq!(m.decide(Bitrate::from_kbps(2000), Duration::from_us(61_999), MS(50)).dir, Direction::Up);
    }

    #[test]
    fn mimd_steps_match_the_paper_example() {
        // Paper 002 §V: five 5 % increases take 2.0 Mbit/s to 2.55 Mbit/s (no acceleration:
        // the 4th and 5th UPs see a delay above the low-delay gate).
        let mut m = Mimd::new(params());
        let mut r = Bitrate::from_kbps(2000);
        for _ in 0..5 { r = m.decide(r, MS(57), MS(50)).rate; } // Q = r·7 ms < 3000 B at ≤ 3.4 Mbit/s
        assert!((r.kbps_f64() - 2552.56).abs() < 0.01, "{r}");
        assert_eq!(m.n_up, 5);
    }

    #[test]
    fn acceleration_after_n_up_when_delay_low_capped_at_200k() {
        let mut m = Mimd::new(params());
        let mut r = Bitrate::from_kbps(1000);
        let d_min = MS(40);
        let low = MS(45); // ≤ 1.125 · 40 = 45 ms
        let mut accels = vec![];
        for _ in 0..6 { let d = m.decide(r, low, d_min); accels.push(d.accel.bps()); r = d.rate; }
        // UPs 1–3: none; UP 4: 0.05 · r · 1; UP 5: 0.05 · r · 2; UP 6: 0.05 · r · 3 (r ≈ 1.3 M → 195 k)
        assert_eq!(&accels[..3], &[0, 0, 0]);
        let r4 = 1000e3 * 1.05f64.powi(3);
        assert!((accels[3] as f64 - 0.05 * r4).abs() < 2.0, "{accels:?}");
        assert!(accels[4] > accels[3] && accels[5] <= 200_000, "{accels:?}");
        // big rate (no queue, D_m = D_min): capped at 200 kbit/s
        let mut m = Mimd::new(params());
        let mut r = Bitrate::from_kbps(20_000);
        for _ in 0..4 { r = m.decide(r, d_min, d_min).rate; }
        let d = m.decide(r, d_min, d_min);
        assert_eq!(d.accel, Bitrate::from_kbps(200));
        assert_eq!(d.rate.bps_f64(), (r.bps_f64() * 1.05 + 200e3).round());
        // delay above the gate (45.001 ms): no acceleration
        let mut m = Mimd::new(params());
        let mut r = Bitrate::from_kbps(100);
        for _ in 0..6 { let d = m.decide(r, Duration::from_us(45_001), d_min); assert_eq!(d.accel, Bitrate::ZERO); r = d.rate; }
    }

    #[test]
    fn up_down_switch_and_fast_reduce() {
        let mut m = Mimd::new(params());
        let r0 = Bitrate::from_kbps(1000);
        let up = m.decide(r0, MS(50), MS(50));
        assert_eq!(up.rate, Bitrate::from_kbps(1050));
        // UP → DOWN: 1050 · 0.95 / 1.05 = 950
        let d1 = m.decide(up.rate, MS(100), MS(50));
        assert!(d1.switched && !d1.fast_reduce);
        assert_eq!(d1.rate, Bitrate::from_kbps(950));
        // DOWN 2 and 3: × 0.95; DOWN 4 and later (> N_down = 3): × (1 − 2·0.05) = × 0.9
        let d2 = m.decide(d1.rate, MS(100), MS(50));
        assert_eq!(d2.rate, Bitrate::from_bps(902_500));
        let d3 = m.decide(d2.rate, MS(100), MS(50));
        assert!(!d3.fast_reduce);
        let d4 = m.decide(d3.rate, MS(100), MS(50));
        assert!(d4.fast_reduce);
        assert_eq!(d4.rate, d3.rate.scale(0.9));
        // back UP resets the DOWN count
        let u = m.decide(d4.rate, MS(50), MS(50));
        assert_eq!((u.dir, m.n_up, m.n_down), (Direction::Up, 1, 0));
        // switches off: plain ×(1−ε) on the switch, no fast reduce
        let mut p = params();
        p.up_down_recover = false;
        p.fast_reduce = false;
        let mut m = Mimd::new(p);
        m.decide(r0, MS(50), MS(50));
        assert_eq!(m.decide(Bitrate::from_kbps(1050), MS(100), MS(50)).rate, Bitrate::from_bps(997_500));
        let mut r = Bitrate::from_kbps(1000);
        for _ in 0..6 { let d = m.decide(r, MS(100), MS(50)); assert!(!d.fast_reduce); assert_eq!(d.rate, r.scale(0.95)); r = d.rate; }
    }
}
