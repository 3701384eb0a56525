//! Congestion window and pushback (spec 2.10; libwebrtc `goog_cc_network_control.cc`
//! `UpdateCongestionWindowSize` and `congestion_window_pushback_controller.cc`).
//!
//! `window = target × (min over the last 32 feedbacks of the per-feedback max RTT + 350 ms)`,
//! averaged with the previous window and at least 3000 bytes. The pushback ratio reacts to
//! `fill = in_flight / window` and scales the target handed to the encoder.

use crate::units::{Bitrate, Bytes, Duration};
use std::collections::VecDeque;

const MAX_FEEDBACK_RTT_WINDOW: usize = 32;
const MIN_CWND: Bytes = Bytes::new(3000);

#[derive(Clone, Debug)]
pub struct CongestionWindow {
    queue_time: Duration,
    min_pushback: Bitrate,
    feedback_max_rtts: VecDeque<Duration>,
    window: Option<Bytes>,
    outstanding: Bytes,
    ratio: f64,
}

impl CongestionWindow {
    pub fn new(queue_time: Duration, min_pushback: Bitrate) -> Self {
        CongestionWindow {
            queue_time,
            min_pushback,
            feedback_max_rtts: VecDeque::with_capacity(MAX_FEEDBACK_RTT_WINDOW + 1),
            window: None,
            outstanding: Bytes::ZERO,
            ratio: 1.0,
        }
    }

    /// The largest `t_f − t_s` of one feedback (2.1 step 1).
    pub fn on_feedback_max_rtt(&mut self, rtt: Duration) {
        self.feedback_max_rtts.push_back(rtt.max(Duration::ZERO));
        if self.feedback_max_rtts.len() > MAX_FEEDBACK_RTT_WINDOW {
            self.feedback_max_rtts.pop_front();
        }
    }

    pub fn has_rtt(&self) -> bool { !self.feedback_max_rtts.is_empty() }

    /// Recompute the window for the current (loss-based) target.
    pub fn update_window(&mut self, target: Bitrate) {
        let Some(min_rtt) = self.feedback_max_rtts.iter().min().copied() else { return };
        let w = target * (min_rtt + self.queue_time);
        let w = match self.window {
            Some(prev) => ((w + prev) / 2).max(MIN_CWND),
            None => w.max(MIN_CWND),
        };
        self.window = Some(w);
    }

    pub fn set_outstanding(&mut self, in_flight: Bytes) { self.outstanding = in_flight.max(Bytes::ZERO); }

    pub fn window(&self) -> Option<Bytes> { self.window }
    /// Set the window directly (`SetDataWindow`; libwebrtc's `InitWin` trial presets it).
    pub fn set_data_window(&mut self, w: Bytes) { self.window = Some(w); }
    pub fn ratio(&self) -> f64 { self.ratio }

    /// Pushback (2.10): adapt the ratio to the window fill and return the pushed-back target.
    /// Called on every rate evaluation, as libwebrtc does.
    pub fn pushback(&mut self, target: Bitrate) -> Bitrate {
        let Some(w) = self.window.filter(|w| w.get() > 0) else { return target };
        let fill = self.outstanding.as_f64() / w.as_f64();
        if fill > 1.5 {
            self.ratio *= 0.9;
        } else if fill > 1.0 {
            self.ratio *= 0.95;
        } else if fill < 0.1 {
            self.ratio = 1.0;
        } else {
            self.ratio = (self.ratio * 1.05).min(1.0);
        }
        // Truncated to whole bit/s as libwebrtc's `static_cast<uint32_t>`.
        let adjusted = Bitrate::from_bps((target.bps() as f64 * self.ratio) as i64);
        // Not below the pushback floor, unless the original target already is.
        if adjusted < self.min_pushback { target.min(self.min_pushback) } else { adjusted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }

    #[test]
    fn window_by_hand() {
        let mut c = CongestionWindow::new(Duration::from_ms(350), kbps(30));
        c.update_window(kbps(1000));
        assert_eq!(c.window(), None, "no RTT yet");
        c.on_feedback_max_rtt(Duration::from_ms(150));
        c.on_feedback_max_rtt(Duration::from_ms(80));
        c.on_feedback_max_rtt(Duration::from_ms(120));
        // 1 Mbit/s × (80 + 350) ms = 53 750 B.
        c.update_window(kbps(1000));
        assert_eq!(c.window(), Some(Bytes::new(53_750)));
        // Averaged with the previous window: (2·53 750 + 53 750)/2.
        c.update_window(kbps(2000));
        assert_eq!(c.window(), Some(Bytes::new(80_625)));
        // Floor 3000 B.
        let mut c = CongestionWindow::new(Duration::from_ms(350), kbps(30));
        c.on_feedback_max_rtt(Duration::ZERO);
        c.update_window(kbps(10));
        assert_eq!(c.window(), Some(Bytes::new(3000)));
    }

    #[test]
    fn pushback_ratio_by_hand() {
        let mut c = CongestionWindow::new(Duration::from_ms(350), kbps(30));
        assert_eq!(c.pushback(kbps(1000)), kbps(1000), "no window");
        c.on_feedback_max_rtt(Duration::from_ms(50));
        c.update_window(kbps(1000)); // 50 000 B
        c.set_outstanding(Bytes::new(80_000)); // fill 1.6
        assert_eq!(c.pushback(kbps(1000)), kbps(900));
        c.set_outstanding(Bytes::new(60_000)); // fill 1.2
        assert_eq!(c.pushback(kbps(1000)), kbps(855));
        c.set_outstanding(Bytes::new(25_000)); // fill 0.5
        assert_eq!(c.pushback(kbps(1000)), Bitrate::from_bps(897_750));
        c.set_outstanding(Bytes::new(1000)); // fill 0.02
        assert_eq!(c.pushback(kbps(1000)), kbps(1000));
        // Floor at 30 kbit/s unless the target is lower.
        c.set_outstanding(Bytes::new(1_000_000));
        for _ in 0..100 {
            c.pushback(kbps(100));
        }
        assert_eq!(c.pushback(kbps(100)), kbps(30));
        assert_eq!(c.pushback(kbps(20)), kbps(20));
    }
}
