//! Small estimators that several controllers share (spec 1.3): windowed min/max filters,
//! a sliding-window rate meter, and the RTT flavours one can read off a transport feedback.

use crate::controller::{PacketResult, TransportFeedback};
use crate::units::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// Exact time-windowed extremum (monotonic deque): `max` keeps the largest value of the last
/// `window`, `min` the smallest. O(1) amortised per sample.
#[derive(Clone, Debug)]
pub struct WindowedFilter<T> {
    window: Duration,
    keep_max: bool,
    samples: VecDeque<(Time, T)>,
}

impl<T: PartialOrd + Copy> WindowedFilter<T> {
    pub fn max(window: Duration) -> Self { WindowedFilter { window, keep_max: true, samples: VecDeque::new() } }
    pub fn min(window: Duration) -> Self { WindowedFilter { window, keep_max: false, samples: VecDeque::new() } }

    pub fn set_window(&mut self, window: Duration) { self.window = window; }

    pub fn update(&mut self, now: Time, v: T) {
        while let Some(&(_, back)) = self.samples.back() {
            let dominated = if self.keep_max { back <= v } else { back >= v };
            if dominated { self.samples.pop_back(); } else { break; }
        }
        self.samples.push_back((now, v));
        self.expire(now);
    }

    /// Drop samples older than the window (the newest sample is always kept).
    pub fn expire(&mut self, now: Time) {
        while self.samples.len() > 1 && self.samples.front().is_some_and(|(t, _)| now - *t > self.window) {
            self.samples.pop_front();
        }
    }

    pub fn get(&self) -> Option<T> { self.samples.front().map(|(_, v)| *v) }
    pub fn reset(&mut self) { self.samples.clear(); }
}

/// Bytes per time over a sliding window (receive rate, send rate).
#[derive(Clone, Debug)]
pub struct RateMeter {
    window: Duration,
    samples: VecDeque<(Time, Bytes)>,
    sum: Bytes,
}

impl RateMeter {
    pub fn new(window: Duration) -> Self { RateMeter { window, samples: VecDeque::new(), sum: Bytes::ZERO } }

    /// Change the window (e.g. to follow a smoothed RTT); takes effect at the next `add`/`rate`.
    pub fn set_window(&mut self, window: Duration) { self.window = window.max(Duration::from_us(1)); }
    pub fn window(&self) -> Duration { self.window }

    pub fn add(&mut self, now: Time, size: Bytes) {
        self.samples.push_back((now, size));
        self.sum += size;
        self.expire(now);
    }

    fn expire(&mut self, now: Time) {
        while let Some(&(t, b)) = self.samples.front() {
            if now - t >= self.window { self.samples.pop_front(); self.sum -= b; } else { break; }
        }
    }

    /// Rate over the window ending at `now`.
    pub fn rate(&mut self, now: Time) -> Bitrate {
        self.expire(now);
        self.sum / self.window
    }
}

/// RTT flavours of spec 1.3 for one feedback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeedbackRtt {
    /// min over packets of `t_f − t_s` (includes the receiver's hold time).
    pub naive_min: Duration,
    /// max over packets of `t_f − t_s`.
    pub naive_max: Duration,
    /// goog_cc's propagation RTT: `min_p [(t_f − t_s(p)) − (max_recv − t_r(p))]`.
    pub propagation: Duration,
    /// Exact RTT of the newest packet when the report time is known (RFC 8888 style).
    pub exact: Option<Duration>,
}

/// RTTs readable from a feedback; `None` if it reports no received packet.
pub fn feedback_rtt(fb: &TransportFeedback) -> Option<FeedbackRtt> {
    let max_recv = fb.received().filter_map(|p| p.recv_time).max()?;
    let (mut nmin, mut nmax, mut prop) = (Duration::MAX, Duration::from_us(i64::MIN / 4), Duration::MAX);
    let mut newest: Option<(Time, Time)> = None;
    for p in fb.received() {
        let r = p.recv_time?;
        let naive = fb.feedback_time - p.sent.send_time;
        nmin = nmin.min(naive);
        nmax = nmax.max(naive);
        prop = prop.min(naive - (max_recv - r));
        if newest.is_none_or(|(nr, _)| r >= nr) { newest = Some((r, p.sent.send_time)); }
    }
    let exact = match (fb.report_time, newest) {
        (Some(rt), Some((r, s))) => Some((fb.feedback_time - s) - (rt - r)),
        _ => None,
    };
    Some(FeedbackRtt { naive_min: nmin, naive_max: nmax, propagation: prop.max(Duration::ZERO), exact })
}

/// RTT of one reported packet (spec 1.3): exact when the feedback carries the receiver's report
/// time (`(t_f − t_s) − (report − t_r)`), otherwise goog_cc-style with the hold time measured
/// against the newest arrival in the feedback (`(t_f − t_s) − (max_recv − t_r)`).
/// `None` for a packet reported lost.
pub fn packet_rtt(fb: &TransportFeedback, p: &PacketResult, max_recv: Time) -> Option<Duration> {
    let r = p.recv_time?;
    let hold = match fb.report_time { Some(rt) => rt - r, None => max_recv - r };
    Some(((fb.feedback_time - p.sent.send_time) - hold).max(Duration::ZERO))
}

/// Latest arrival time in a feedback (the reference for [`packet_rtt`]).
pub fn max_recv_time(fb: &TransportFeedback) -> Option<Time> { fb.received().filter_map(|p| p.recv_time).max() }

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::SentPacket;

    #[test]
    fn windowed_filters() {
        let mut mx = WindowedFilter::max(Duration::from_ms(100));
        let mut mn = WindowedFilter::min(Duration::from_ms(100));
        for (t, v) in [(0, 5), (10, 3), (20, 8), (130, 1)] {
            mx.update(Time::from_ms(t), v);
            mn.update(Time::from_ms(t), v);
        }
        // at 130 ms the window is (30, 130]: only 1 remains... plus 8 from 20 ms is expired
        assert_eq!(mx.get(), Some(1));
        assert_eq!(mn.get(), Some(1));
        mx.update(Time::from_ms(140), 4);
        assert_eq!(mx.get(), Some(4));
    }

    #[test]
    fn rate_meter() {
        let mut m = RateMeter::new(Duration::from_ms(100));
        for i in 0..10 { m.add(Time::from_ms(i * 10), Bytes::new(1250)); }
        // 12500 B in 100 ms = 1 Mbit/s
        assert_eq!(m.rate(Time::from_ms(99)), Bitrate::from_kbps(1000));
        assert_eq!(m.rate(Time::from_ms(250)), Bitrate::ZERO);
    }

    #[test]
    fn rtt_flavours_hand_computed() {
        let sp = |seq, t| SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_ms(t), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
        let fb = TransportFeedback {
            feedback_time: Time::from_ms(200),
            report_time: Some(Time::from_ms(150)),
            packets: vec![
                PacketResult { sent: sp(0, 0), recv_time: Some(Time::from_ms(60)) },
                PacketResult { sent: sp(1, 40), recv_time: Some(Time::from_ms(110)) },
                PacketResult { sent: sp(2, 50), recv_time: None },
            ],
            ..Default::default()
        };
        let r = feedback_rtt(&fb).unwrap();
        assert_eq!(r.naive_min, Duration::from_ms(160));
        assert_eq!(r.naive_max, Duration::from_ms(200));
        // p0: 200 − (110 − 60) = 150; p1: 160 − 0 = 160 → 150
        assert_eq!(r.propagation, Duration::from_ms(150));
        // newest p1: 160 − (150 − 110) = 120
        assert_eq!(r.exact, Some(Duration::from_ms(120)));
        // per packet: exact p0 = 200 − 0 − (150 − 60) = 110, p1 = 120; lost p2 has none
        let mx = max_recv_time(&fb).unwrap();
        assert_eq!(packet_rtt(&fb, &fb.packets[0], mx), Some(Duration::from_ms(110)));
        assert_eq!(packet_rtt(&fb, &fb.packets[1], mx), Some(Duration::from_ms(120)));
        assert_eq!(packet_rtt(&fb, &fb.packets[2], mx), None);
        // without the report time: hold against the newest arrival (p0: 200 − 50 = 150)
        let fb2 = TransportFeedback { report_time: None, ..fb.clone() };
        assert_eq!(packet_rtt(&fb2, &fb2.packets[0], mx), Some(Duration::from_ms(150)));
        assert_eq!(packet_rtt(&fb2, &fb2.packets[1], mx), Some(Duration::from_ms(160)));
    }
}
