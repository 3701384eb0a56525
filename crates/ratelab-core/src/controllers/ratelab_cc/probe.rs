//! Probation of the competitive mode: does the delivery rate follow the send rate?
//!
//! The competitive detector ("draining does not shrink the queue") cannot tell, from passive
//! measurements, a queue held by a loss-based flow from a link this flow saturates alone: in a
//! FIFO each flow's delivery rate is its send rate × capacity / arrival rate, so the queue's rise
//! equals the flow's own send-over-delivery excess in both cases. What differs is how the
//! delivery rate answers a *change* of the send rate: on a shared link of capacity C carrying
//! much more than this flow, raising the send rate by Δ raises the delivery rate by about
//! Δ · C / arrival rate ≈ Δ; on a link the flow saturates alone, the delivery rate is the
//! capacity and stays there. The competitive mode's additive growth is that change, so the
//! first `duration` of the mode is the probe.

use crate::units::{Duration, Time};

/// A probe must raise the send rate at least this fraction above its start to be conclusive
/// (a probe cut short by losses at once proves nothing, and counts as failed).
const MIN_PROBE_RISE: f64 = 0.1;

pub(super) struct Probe {
    start: Time,
    duration: Duration,
    follow: f64,
    x0: f64,
    r0: f64,
    x_peak: f64,
    r_peak: f64,
}

impl Probe {
    /// `x0`, `r0`: send (target) and delivery rate at the start, bit/s.
    pub(super) fn new(start: Time, duration: Duration, follow: f64, x0: f64, r0: f64) -> Self {
        Probe { start, duration, follow, x0, r0, x_peak: x0, r_peak: r0 }
    }

    /// Feeds one feedback's rates; `None` while the probe runs, then whether the delivery rate
    /// rose by at least `follow` × the send rate's rise (peaks over the probe).
    pub(super) fn verdict(&mut self, now: Time, x: f64, r: f64) -> Option<bool> {
        self.x_peak = self.x_peak.max(x);
        self.r_peak = self.r_peak.max(r);
        if now - self.start < self.duration { return None; }
        let rise = self.x_peak - self.x0;
        Some(rise >= MIN_PROBE_RISE * self.x0 && self.r_peak - self.r0 >= self.follow * rise)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: f64) -> Time { Time::ZERO + Duration::from_secs_f64(s) }

    #[test]
    fn shared_link_follows_saturated_link_does_not() {
        // Shared: send 150 → 300 kbit/s, delivery 140 → 270: rise 130 ≥ 0.5 · 150.
        let mut p = Probe::new(at(0.0), Duration::from_secs(3), 0.5, 150e3, 140e3);
        assert_eq!(p.verdict(at(1.0), 200e3, 180e3), None);
        assert_eq!(p.verdict(at(2.9), 300e3, 270e3), None);
        assert_eq!(p.verdict(at(3.0), 290e3, 260e3), Some(true));
        // Saturated alone at ~170 kbit/s: send 150 → 250, delivery 165 → 180: 15 < 0.5 · 100.
        let mut p = Probe::new(at(0.0), Duration::from_secs(3), 0.5, 150e3, 165e3);
        assert_eq!(p.verdict(at(1.5), 250e3, 180e3), None);
        assert_eq!(p.verdict(at(3.0), 240e3, 170e3), Some(false));
        // A probe that never raised the rate (cut by losses at once) is not conclusive: failed.
        let mut p = Probe::new(at(0.0), Duration::from_secs(3), 0.5, 150e3, 140e3);
        assert_eq!(p.verdict(at(3.0), 155e3, 150e3), Some(false));
    }
}
