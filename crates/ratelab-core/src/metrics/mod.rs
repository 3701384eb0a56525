//! Metrics, streamed and memory-bounded: per-flow accumulators (histograms for percentiles),
//! per-second goodput bins, and columnar logs (packets, time series) that the driver drains
//! while the run goes on.

use crate::media::receiver::VideoStats;
use crate::units::{Bytes, Duration, Time};
use hdrhistogram::Histogram;

/// Histogram of delays in microseconds, 3 significant digits, up to 1000 s.
fn delay_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000_000_000, 3).expect("static histogram bounds are valid")
}

/// Running statistics of one flow.
pub struct FlowMetrics {
    pub packets_sent: u64,
    pub bytes_sent: Bytes,
    pub packets_received: u64,
    pub bytes_received: Bytes,
    pub packets_lost: u64,
    pub bytes_lost: Bytes,
    owd: Histogram<u64>,
    queue: Histogram<u64>,
    owd_sum_us: i128,
    queue_sum_us: i128,
    /// Bytes received per whole second of simulated time.
    pub goodput_bins: Vec<i64>,
    pub video: Option<VideoStats>,
    /// Feedback / ACK packets this flow's receiver sent over a congested return path
    /// (`reverse_link`); `None` when the return path is an uncongested delay.
    pub return_path: Option<ReturnPathCounters>,
    pub start: Time,
    pub stop: Time,
    // accumulators for the current time-series interval
    pub(crate) iv_sent: Bytes,
    pub(crate) iv_recv: Bytes,
    pub(crate) iv_owd_sum_us: i64,
    pub(crate) iv_owd_n: u32,
    pub(crate) iv_lost: u64,
    /// Frames the flow's encoder had produced when the interval began.
    pub(crate) iv_frames: u64,
}

impl FlowMetrics {
    pub fn new(start: Time, stop: Time) -> Self {
        FlowMetrics {
            packets_sent: 0, bytes_sent: Bytes::ZERO, packets_received: 0, bytes_received: Bytes::ZERO, packets_lost: 0, bytes_lost: Bytes::ZERO,
            owd: delay_histogram(), queue: delay_histogram(), owd_sum_us: 0, queue_sum_us: 0, goodput_bins: Vec::new(), video: None, return_path: None,
            start, stop, iv_sent: Bytes::ZERO, iv_recv: Bytes::ZERO, iv_owd_sum_us: 0, iv_owd_n: 0, iv_lost: 0, iv_frames: 0,
        }
    }

    pub fn on_sent(&mut self, size: Bytes) {
        self.packets_sent += 1;
        self.bytes_sent += size;
        self.iv_sent += size;
    }

    pub fn on_received(&mut self, now: Time, size: Bytes, owd: Duration, queue_delay: Duration) {
        self.packets_received += 1;
        self.bytes_received += size;
        self.iv_recv += size;
        let owd_us = owd.as_us().max(0);
        self.owd_sum_us += owd_us as i128;
        self.queue_sum_us += queue_delay.as_us().max(0) as i128;
        self.iv_owd_sum_us += owd_us;
        self.iv_owd_n += 1;
        let _ = self.owd.record(owd_us.max(1) as u64);
        let _ = self.queue.record(queue_delay.as_us().max(1) as u64);
        let sec = (now.as_us() / 1_000_000).max(0) as usize;
        if self.goodput_bins.len() <= sec { self.goodput_bins.resize(sec + 1, 0); }
        self.goodput_bins[sec] += size.get();
    }

    pub fn on_lost(&mut self, size: Bytes) {
        self.packets_lost += 1;
        self.bytes_lost += size;
        self.iv_lost += 1;
    }

    pub fn owd_mean_ms(&self) -> Option<f64> {
        (self.packets_received > 0).then(|| self.owd_sum_us as f64 / self.packets_received as f64 / 1e3)
    }
    pub fn queue_mean_ms(&self) -> Option<f64> {
        (self.packets_received > 0).then(|| self.queue_sum_us as f64 / self.packets_received as f64 / 1e3)
    }
    pub fn owd_quantile_ms(&self, q: f64) -> Option<f64> {
        (self.packets_received > 0).then(|| self.owd.value_at_quantile(q) as f64 / 1e3)
    }
    pub fn queue_quantile_ms(&self, q: f64) -> Option<f64> {
        (self.packets_received > 0).then(|| self.queue.value_at_quantile(q) as f64 / 1e3)
    }
    pub fn loss_rate(&self) -> f64 {
        let n = self.packets_received + self.packets_lost;
        if n == 0 { 0.0 } else { self.packets_lost as f64 / n as f64 }
    }
    /// Active duration of the flow within [0, end].
    pub fn active(&self, end: Time) -> Duration { (self.stop.min(end) - self.start).max(Duration::ZERO) }
}

/// Receiver → sender packets of one flow on a congested return path. Conservation:
/// `packets_sent = packets_delivered + packets_lost + (in the network)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReturnPathCounters {
    pub packets_sent: u64,
    pub bytes_sent: i64,
    pub packets_delivered: u64,
    pub bytes_delivered: i64,
    pub packets_lost: u64,
    pub bytes_lost: i64,
}

impl ReturnPathCounters {
    pub fn on_sent(&mut self, size: Bytes) { self.packets_sent += 1; self.bytes_sent += size.get(); }
    pub fn on_delivered(&mut self, size: Bytes) { self.packets_delivered += 1; self.bytes_delivered += size.get(); }
    pub fn on_lost(&mut self, size: Bytes) { self.packets_lost += 1; self.bytes_lost += size.get(); }
}

/// Jain's fairness index of a set of rates (1 = perfectly fair).
pub fn jain_index(rates: &[f64]) -> f64 {
    let n = rates.len() as f64;
    let s: f64 = rates.iter().sum();
    let s2: f64 = rates.iter().map(|r| r * r).sum();
    if n == 0.0 || s2 <= 0.0 { 1.0 } else { s * s / (n * s2) }
}

/// Per-packet log, columnar. A row is written when the packet's fate is known (or at the end
/// for packets still in flight: `recv_s` NaN and `lost` false).
#[derive(Default, Clone, Debug)]
pub struct PacketLog {
    pub flow: Vec<u32>,
    pub seq: Vec<u64>,
    pub size: Vec<u32>,
    pub send_s: Vec<f64>,
    pub recv_s: Vec<f64>,
    pub lost: Vec<bool>,
}

impl PacketLog {
    pub fn push(&mut self, flow: u32, seq: u64, size: Bytes, send: Time, recv: Option<Time>, lost: bool) {
        self.flow.push(flow);
        self.seq.push(seq);
        self.size.push(size.get().clamp(0, u32::MAX as i64) as u32);
        self.send_s.push(send.as_secs_f64());
        self.recv_s.push(recv.map_or(f64::NAN, |t| t.as_secs_f64()));
        self.lost.push(lost);
    }
    pub fn len(&self) -> usize { self.flow.len() }
    pub fn is_empty(&self) -> bool { self.flow.is_empty() }
    pub fn take(&mut self) -> PacketLog { std::mem::take(self) }
}

/// Time series, one row per active flow per interval.
#[derive(Default, Clone, Debug)]
pub struct SeriesLog {
    pub t_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub target_kbps: Vec<f64>,
    /// What the encoder produces: 0 while it is paused (pacer queue > 2 s, or a scheduled pause).
    pub encoder_kbps: Vec<f64>,
    pub pacing_kbps: Vec<f64>,
    pub send_kbps: Vec<f64>,
    pub recv_kbps: Vec<f64>,
    pub owd_ms: Vec<f64>,
    pub capacity_kbps: Vec<f64>,
    pub queue_ms: Vec<f64>,
    pub cwnd_bytes: Vec<f64>,
    /// Packets of the flow found lost during the interval (a loss is counted when the
    /// simulator drops the packet, not when the receiver notices the gap).
    pub lost_packets: Vec<f64>,
    /// The receiver's freeze count so far (webrtc-stats `freezeCount`, cumulative); NaN for TCP.
    pub freezes: Vec<f64>,
    /// Frames the encoder produced per second over the interval (dropped and paused frames
    /// not counted, as webrtc-stats `framesPerSecond`); NaN for TCP.
    pub fps: Vec<f64>,
    /// The encoder's picture (media/encoder/floor.rs steps it down); NaN where the resolution is
    /// not modelled (without `media.frame_floor_kbit`) and for TCP.
    pub width: Vec<f64>,
    pub height: Vec<f64>,
}

impl SeriesLog {
    pub fn len(&self) -> usize { self.t_s.len() }
    pub fn is_empty(&self) -> bool { self.t_s.is_empty() }
    pub fn take(&mut self) -> SeriesLog { std::mem::take(self) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_hand_values() {
        assert!((jain_index(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
        assert!((jain_index(&[3.0, 1.0]) - 16.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn flow_metrics_means_and_quantiles() {
        let mut m = FlowMetrics::new(Time::ZERO, Time::from_ms(10_000));
        for i in 1..=100 {
            m.on_sent(Bytes::new(1000));
            m.on_received(Time::from_ms(i * 10), Bytes::new(1000), Duration::from_ms(50 + i), Duration::from_ms(i));
        }
        m.on_lost(Bytes::new(1000));
        assert!((m.owd_mean_ms().unwrap() - 100.5).abs() < 1e-9);
        assert!((m.queue_mean_ms().unwrap() - 50.5).abs() < 1e-9);
        let p95 = m.queue_quantile_ms(0.95).unwrap();
        assert!((p95 - 95.0).abs() < 0.1, "{p95}");
        assert!((m.loss_rate() - 1.0 / 101.0).abs() < 1e-12);
        assert_eq!(m.goodput_bins.iter().sum::<i64>(), 100_000);
    }
}
