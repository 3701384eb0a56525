//! Receiver-side video: frame reassembly and rendering, with freezes counted as libwebrtc counts
//! webrtc-stats `freezeCount` (`VideoQualityObserver::OnRenderedFrame`): on whole-millisecond
//! render times, each interval first joins the average of the last 30, and it is a freeze when
//! it is at least max(3 × average, average + 150 ms), the average rounded down, once 5
//! intervals are in. Without retransmission (the default) a
//! frame with a lost packet is never decodable and the decoder conceals it by showing the next
//! complete frame (which is how a loss becomes a visible stall). With NACK (`media.nack`, the
//! endpoint's [`FrameReceiver::add_packet`] / [`FrameReceiver::render_ready`]) a complete frame
//! waits while media before it is still being retransmitted, as libwebrtc's frame buffer only
//! decodes continuous frames; see docs/models/nack.md. With a [`QualityTracker`] it also
//! scores every displayed slot in PSNR (media/quality.rs).

use super::quality::QualityTracker;
use crate::units::{Bytes, Duration, Time};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VideoStats {
    pub frames_rendered: u64,
    pub freeze_count: u64,
    pub freeze_duration: Duration,
    /// Σ (render − capture) over rendered frames.
    pub frame_delay_sum: Duration,
    /// Σ PSNR (dB) over displayed slots and their number (0 without a quality model).
    pub psnr_sum_db: f64,
    pub psnr_slots: u64,
}

impl VideoStats {
    pub fn mean_frame_delay(&self) -> Option<Duration> {
        (self.frames_rendered > 0).then(|| self.frame_delay_sum / self.frames_rendered as i64)
    }
    /// Mean PSNR per displayed slot (repeated slots included).
    pub fn mean_psnr_db(&self) -> Option<f64> {
        (self.psnr_slots > 0).then(|| self.psnr_sum_db / self.psnr_slots as f64)
    }
}

#[derive(Clone, Copy)]
struct Partial {
    received: u16, count: u16, capture: Time, payload: Bytes, keyframe: bool, first_seq: u64,
    /// Whether any packet was a retransmission (NACK mode).
    retransmitted: bool,
}

/// libwebrtc's render-side delay a frame that is on time waits after it is decodable:
/// `kDefaultRenderDelayMs` (10 ms, VCMTiming) + `OPERATING_SYSTEM_JITTER` (10 ms, jitter
/// estimator). The Kalman jitter term and the decode time are left out (docs/models/nack.md).
pub const PLAYOUT_BUFFER: Duration = Duration::from_ms(20);

/// The expected completion delay (completion − capture) of frames not delayed by a
/// retransmission: an EWMA standing in for libwebrtc's timestamp extrapolator.
const PLAYOUT_GAIN: f64 = 0.1;

/// libwebrtc's `kMaxAllowedFrameDelay`: later than this past its render time, a frame is
/// dropped if a newer one can be decoded.
const MAX_LATE: Duration = Duration::from_ms(5);

pub struct FrameReceiver {
    partial: BTreeMap<u64, Partial>,
    last_rendered: Option<(u64, Time)>,
    /// The last rendered-frame intervals, whole milliseconds, and their sum.
    intervals: VecDeque<i64>,
    interval_sum: i64,
    quality: Option<QualityTracker>,
    /// The sender paused its media on purpose (RFC 8867 5.8): no freeze while paused.
    paused: bool,
    /// The first interval after a resume spans the pause: neither a freeze nor a frame duration.
    skip_next: bool,
    /// NACK mode's playout timing: the expected completion delay, once a frame set it.
    playout_delay: Option<Duration>,
    /// Learn the expected completion delay (only [`FrameReceiver::render_ready`], the NACK
    /// mode, uses it; the default path skips the arithmetic per frame).
    render_timing: bool,
    pub stats: VideoStats,
}

/// Frame intervals kept for the running average (`kAvgInterframeDelaysWindowSizeFrames`).
const AVG_WINDOW: usize = 30;
/// Intervals in the average, the one tested included, before any can be a freeze
/// (`kMinFrameSamplesToDetectFreeze`).
const FREEZE_MIN_SAMPLES: usize = 5;
/// The least increase over the average that is a freeze (`kMinIncreaseForFreezeMs`).
const FREEZE_MIN_INCREASE_MS: i64 = 150;

/// A render time in whole milliseconds, as libwebrtc's decode timestamps are.
fn whole_ms(t: Time) -> i64 { t.as_us().div_euclid(1000) }

impl Default for FrameReceiver {
    fn default() -> Self { Self::new() }
}

impl FrameReceiver {
    pub fn new() -> Self {
        FrameReceiver { partial: BTreeMap::new(), last_rendered: None, intervals: VecDeque::new(), interval_sum: 0, quality: None, paused: false, skip_next: false, playout_delay: None, render_timing: false, stats: VideoStats::default() }
    }

    /// A receiver that also scores displayed frames in PSNR.
    pub fn with_quality(quality: QualityTracker) -> Self {
        FrameReceiver { quality: Some(quality), ..Self::new() }
    }

    fn sync_quality(&mut self) {
        if let Some(q) = &self.quality { self.stats.psnr_sum_db = q.sum_db; self.stats.psnr_slots = q.slots; }
    }

    /// Whether an interval of `ms` would be a freeze: it joins the window (the oldest leaving a
    /// full one) before the average is taken, as libwebrtc adds the sample first.
    fn would_freeze(&self, ms: i64) -> bool {
        let full = self.intervals.len() >= AVG_WINDOW;
        let n = self.intervals.len() + 1 - usize::from(full);
        if n < FREEZE_MIN_SAMPLES { return false; }
        let leaving = if full { self.intervals.front().copied().unwrap_or(0) } else { 0 };
        let avg = (self.interval_sum + ms - leaving).div_euclid(n as i64);
        ms >= (3 * avg).max(avg + FREEZE_MIN_INCREASE_MS)
    }

    /// Count the interval from the last rendered frame at `last` to `now` if it is a freeze;
    /// returns it in whole milliseconds.
    fn count_if_freeze(&mut self, last: Time, now: Time) -> i64 {
        let ms = whole_ms(now) - whole_ms(last);
        if self.would_freeze(ms) {
            self.stats.freeze_count += 1;
            self.stats.freeze_duration += now - last;
        }
        ms
    }

    /// A media packet of `frame` (`payload` media bytes, headers excluded) arrived at `now`.
    /// Returns true if it completed and rendered a frame.
    pub fn on_packet(&mut self, now: Time, frame: u64, count: u16, capture: Time, payload: Bytes, keyframe: bool) -> bool {
        if !self.add_packet(now, frame, count, capture, payload, keyframe, 0, false) { return false; }
        self.render(now, frame);
        true
    }

    /// Add a media packet of `frame` (whose first packet has media sequence number
    /// `first_seq`) without rendering; true if the frame is now complete. The caller passes
    /// each packet once (with NACK, the NACK list drops second copies).
    #[allow(clippy::too_many_arguments)]
    pub fn add_packet(&mut self, now: Time, frame: u64, count: u16, capture: Time, payload: Bytes, keyframe: bool, first_seq: u64, retransmitted: bool) -> bool {
        if let Some((last, _)) = self.last_rendered { if frame <= last { return false; } }
        let p = self.partial.entry(frame).or_insert(Partial { received: 0, count, capture, payload: Bytes::ZERO, keyframe, first_seq, retransmitted: false });
        p.received += 1;
        p.payload += payload;
        p.retransmitted |= retransmitted;
        if p.received < p.count { return false; }
        // A frame not delayed by a retransmission teaches the expected completion delay
        // (libwebrtc feeds its timestamp extrapolator only with those).
        if self.render_timing && !p.retransmitted {
            let d = (now - p.capture).as_secs_f64();
            let e = self.playout_delay.map_or(d, |old| old.as_secs_f64() + PLAYOUT_GAIN * (d - old.as_secs_f64()));
            self.playout_delay = Some(Duration::from_secs_f64(e));
        }
        true
    }

    /// Hold frames for retransmissions and show them at their render time (`media.nack`).
    pub fn enable_render_timing(&mut self) { self.render_timing = true; }

    /// First media sequence number of the newest complete key frame not yet rendered.
    pub fn newest_complete_keyframe(&self) -> Option<u64> {
        self.partial.values().rev().find(|p| p.keyframe && p.received >= p.count).map(|p| p.first_seq)
    }

    /// Show the complete frames that nothing missing precedes (`oldest_missing`: the oldest
    /// media sequence number still being retransmitted), in order, each at its render time
    /// (expected completion + [`PLAYOUT_BUFFER`]) or at once when that has passed. A frame more
    /// than 5 ms past its render time is dropped when a newer one is ready (libwebrtc's
    /// `FrameDecodeTiming`, `kMaxAllowedFrameDelay`). Returns the frames shown.
    pub fn render_ready(&mut self, now: Time, oldest_missing: Option<u64>) -> u32 {
        let ready: Vec<u64> = self.partial.iter()
            .filter(|(_, p)| p.received >= p.count && oldest_missing.is_none_or(|m| p.first_seq < m))
            .map(|(&f, _)| f).collect();
        let mut shown = 0;
        for (i, &frame) in ready.iter().enumerate() {
            let Some(p) = self.partial.get(&frame).copied() else { continue };
            let due = self.playout_delay.map(|d| p.capture + d + PLAYOUT_BUFFER);
            if i + 1 < ready.len() && due.is_some_and(|t| now - t > MAX_LATE) {
                self.partial.remove(&frame);
                continue;
            }
            let mut at = due.map_or(now, |t| t.max(now));
            if let Some((_, t)) = self.last_rendered { at = at.max(t); }
            self.render(at, frame);
            shown += 1;
        }
        shown
    }

    /// Show complete frame `frame` at `now`.
    fn render(&mut self, now: Time, frame: u64) {
        let Some(p) = self.partial.get(&frame) else { return };
        let (capture, size, keyframe) = (p.capture, p.payload, p.keyframe);
        if let Some(q) = self.quality.as_mut() { q.on_render(capture, size, keyframe); }
        // Render: frames older than this one can no longer be shown.
        self.partial = self.partial.split_off(&(frame + 1));
        if self.skip_next && !self.paused {
            self.skip_next = false;
        } else if let Some((_, t_last)) = self.last_rendered {
            let ms = self.count_if_freeze(t_last, now);
            self.intervals.push_back(ms);
            self.interval_sum += ms;
            if self.intervals.len() > AVG_WINDOW { self.interval_sum -= self.intervals.pop_front().unwrap_or(0); }
        }
        self.last_rendered = Some((frame, now));
        self.stats.frames_rendered += 1;
        self.stats.frame_delay_sum += now - capture;
        self.sync_quality();
    }

    /// The sender paused its media on purpose: the gap is not a freeze.
    pub fn pause(&mut self) { self.paused = true; }

    /// The sender resumed: the interval spanning the pause is not counted.
    pub fn resume(&mut self) {
        if self.paused { self.paused = false; self.skip_next = true; }
    }

    /// The stream ended at `now`: a stall still in progress counts as a freeze (unless the
    /// sender paused on purpose), and the frames captured up to `now −` mean frame delay (those
    /// an on-time receiver would have shown) but not shown are repeats of the last shown one.
    pub fn finish(&mut self, now: Time) {
        if let (Some(q), Some(d)) = (self.quality.as_mut(), self.stats.mean_frame_delay()) {
            q.finish(now - d);
        }
        self.sync_quality();
        if self.paused || self.skip_next { return; }
        if let Some((_, t_last)) = self.last_rendered { self.count_if_freeze(t_last, now); }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freeze_detection_follows_webrtc_stats_rule() {
        let mut r = FrameReceiver::new();
        let step = Duration::from_us(33_333);
        let mut t = Time::ZERO;
        for f in 0..30 { assert!(r.on_packet(t, f, 1, t, Bytes::new(1000), false)); t += step; }
        // avg ≈ 33 ms: threshold = max(100 ms, 183 ms) = 183 ms. A 150 ms gap is no freeze.
        t += Duration::from_ms(150) - step;
        r.on_packet(t, 30, 1, t, Bytes::new(1000), false);
        assert_eq!(r.stats.freeze_count, 0);
        // a 400 ms gap is
        t += Duration::from_ms(400);
        r.on_packet(t, 31, 1, t, Bytes::new(1000), false);
        assert_eq!(r.stats.freeze_count, 1);
        assert_eq!(r.stats.freeze_duration, Duration::from_ms(400));
    }

    /// Frames rendered at `times` (ms); the freeze count.
    fn freezes_at(times: &[i64]) -> u64 {
        let mut r = FrameReceiver::new();
        for (f, &t) in times.iter().enumerate() {
            let t = Time::from_ms(t);
            assert!(r.on_packet(t, f as u64, 1, t, Bytes::new(1000), false));
        }
        r.stats.freeze_count
    }

    #[test]
    fn the_interval_joins_the_average_before_it_is_tested() {
        // 29 intervals of 67 ms, then x: the average is ⌊(29 × 67 + x) / 30⌋ = 72 for x = 221
        // and 222, so the threshold is max(216, 222) = 222 ms. (Against the 29 earlier ones
        // alone it would be 67 + 150 = 217 ms, and 221 ms would be a freeze.)
        let mut t: Vec<i64> = (0..30).map(|i| 67 * i).collect();
        let last = *t.last().unwrap();
        t.push(last + 221);
        assert_eq!(freezes_at(&t), 0);
        *t.last_mut().unwrap() = last + 222;
        assert_eq!(freezes_at(&t), 1);
    }

    #[test]
    fn no_freeze_before_five_intervals_and_render_times_are_whole_milliseconds() {
        // Three intervals of 33 ms and a fourth of 1 s: too few samples. The same 1 s as the
        // fifth: average ⌊(4 × 33 + 1000) / 5⌋ = 226, threshold 678 ms, a freeze.
        assert_eq!(freezes_at(&[0, 33, 66, 99, 1099]), 0);
        assert_eq!(freezes_at(&[0, 33, 66, 99, 132, 1132]), 1);
        // Render times count in whole milliseconds: frames every 67 ms from 0.5 ms, then one
        // 221.7 ms after the last (1943.5 → 2165.2 ms) is 2165 − 1943 = 222 whole ms, a freeze
        // by the threshold above although less than 222 ms passed.
        let mut r = FrameReceiver::new();
        for f in 0..30 {
            let t = Time::from_us(500 + 67_000 * f);
            r.on_packet(t, f as u64, 1, t, Bytes::new(1000), false);
        }
        let t = Time::from_us(500 + 67_000 * 29 + 221_700);
        r.on_packet(t, 30, 1, t, Bytes::new(1000), false);
        assert_eq!(r.stats.freeze_count, 1);
    }

    #[test]
    fn incomplete_frames_are_skipped() {
        let mut r = FrameReceiver::new();
        assert!(!r.on_packet(Time::from_ms(0), 0, 2, Time::ZERO, Bytes::new(600), false));
        // frame 1 completes first; frame 0 (one packet lost) is dropped
        assert!(r.on_packet(Time::from_ms(40), 1, 1, Time::from_ms(33), Bytes::new(600), false));
        assert!(!r.on_packet(Time::from_ms(41), 0, 2, Time::ZERO, Bytes::new(600), false));
        assert_eq!(r.stats.frames_rendered, 1);
        assert_eq!(r.stats.mean_frame_delay(), Some(Duration::from_ms(7)));
    }

    #[test]
    fn with_nack_a_frame_waits_for_the_retransmission_before_it() {
        // Frames 0..=4 of two packets each (media seq 2 f, 2 f + 1), captured every 33 ms and
        // complete 10 ms later; seq 3 (frame 1) is lost and retransmitted.
        let mut r = FrameReceiver::new();
        r.enable_render_timing();
        let ms = Time::from_ms;
        let pkt = |r: &mut FrameReceiver, t: i64, f: u64, rtx: bool| r.add_packet(ms(t), f, 2, ms(33 * f as i64), Bytes::new(500), false, 2 * f, rtx);
        assert!(!pkt(&mut r, 9, 0, false) && pkt(&mut r, 10, 0, false));
        // Expected completion delay 10 ms: frame 0 is shown at its render time 0 + 10 + 20 ms.
        assert_eq!(r.render_ready(ms(10), None), 1);
        assert!(!pkt(&mut r, 43, 1, false));
        assert!(!pkt(&mut r, 75, 2, false) && pkt(&mut r, 76, 2, false));
        // Seq 3 is on the NACK list: frame 2 (first seq 4) may not be shown.
        assert_eq!(r.render_ready(ms(76), Some(3)), 0);
        // The RTX arrives at 150 ms: frame 1 (render time 63 ms) is more than 5 ms late and a
        // newer frame is ready, so it is dropped; frame 2 (render time 96 ms) is shown at once.
        assert!(pkt(&mut r, 150, 1, true));
        assert_eq!(r.render_ready(ms(150), None), 1);
        assert_eq!(r.stats.frames_rendered, 2);
        assert_eq!(r.stats.frame_delay_sum, Duration::from_ms(30 + 84));
        // A late copy of frame 1 is ignored.
        assert!(!pkt(&mut r, 160, 1, true));
        // Frame 3 is lost whole. Frame 4, on time: shown at its render time 132 + 10 + 20 ms.
        assert!(!pkt(&mut r, 141, 4, false) && pkt(&mut r, 142, 4, false));
        assert_eq!(r.render_ready(ms(142), None), 1);
        assert_eq!(r.stats.frame_delay_sum, Duration::from_ms(30 + 84 + 30));
    }

    #[test]
    fn with_nack_frames_still_before_their_render_time_are_all_shown() {
        let mut r = FrameReceiver::new();
        r.enable_render_timing();
        let ms = Time::from_ms;
        // Frame 0 completes 50 ms after capture: shown at 0 + 50 + 20 ms.
        assert!(r.add_packet(ms(50), 0, 1, ms(0), Bytes::new(500), false, 0, false));
        assert_eq!(r.render_ready(ms(50), None), 1);
        // Frame 2 completes 10 ms after capture: expected delay 50 + 0.1 × (10 − 50) = 46 ms.
        assert!(r.add_packet(ms(76), 2, 1, ms(66), Bytes::new(500), false, 2, false));
        assert_eq!(r.render_ready(ms(76), Some(1)), 0);
        // Frame 1's retransmission arrives at 100 ms, 1 ms after its render time 33 + 46 + 20:
        // within the 5 ms allowance, so frames 1 and 2 are both shown, in order.
        assert!(r.add_packet(ms(100), 1, 1, ms(33), Bytes::new(500), false, 1, true));
        assert_eq!(r.render_ready(ms(100), None), 2);
        // Frame 1 at 100 ms, frame 2 at its render time 66 + 46 + 20 = 132 ms.
        assert_eq!(r.stats.frames_rendered, 3);
        assert_eq!(r.stats.frame_delay_sum, Duration::from_ms(70 + 67 + 66));
    }

    #[test]
    fn a_complete_key_frame_is_found_for_clearing() {
        let mut r = FrameReceiver::new();
        let t = Time::ZERO;
        assert!(!r.add_packet(t, 4, 2, t, Bytes::new(500), true, 40, false));
        assert_eq!(r.newest_complete_keyframe(), None);
        assert!(r.add_packet(t, 4, 2, t, Bytes::new(500), true, 40, false));
        assert!(r.add_packet(t, 5, 1, t, Bytes::new(500), false, 42, false));
        assert_eq!(r.newest_complete_keyframe(), Some(40));
    }

    #[test]
    fn psnr_counts_payload_of_all_packets_and_repeats_lost_frames() {
        use crate::media::quality::{repeated_psnr, QualityModel, QualityTracker};
        let mut r = FrameReceiver::with_quality(QualityTracker::new(QualityModel::ForemanCif, 30.0, 4.0));
        let iv = Duration::from_secs_f64(1.0 / 30.0);
        let cap = |i: i64| Time::ZERO + iv * i;
        // frame 0 in two packets of 2000 + 2167 bytes = 1 Mbit/s at 30 fps
        r.on_packet(Time::from_ms(50), 0, 2, cap(0), Bytes::new(2000), false);
        r.on_packet(Time::from_ms(51), 0, 2, cap(0), Bytes::new(2167), false);
        let p0 = QualityModel::ForemanCif.curve().psnr(crate::units::Bitrate::from_bps_f64(4167.0 * 240.0));
        assert!((r.stats.mean_psnr_db().unwrap() - p0).abs() < 1e-9);
        // frame 1 loses a packet, frame 2 arrives whole: slot 1 shows frame 0 again
        r.on_packet(Time::from_ms(84), 1, 2, cap(1), Bytes::new(2000), false);
        r.on_packet(Time::from_ms(117), 2, 1, cap(2), Bytes::new(4167), false);
        assert_eq!(r.stats.psnr_slots, 3);
        let mean = (2.0 * p0 + repeated_psnr(p0, 1)) / 3.0;
        assert!((r.stats.mean_psnr_db().unwrap() - mean).abs() < 1e-9);
        // stream ends 1 s later (frame delay 50 ms): slots 3..=31 repeat frame 2
        r.finish(cap(2) + Duration::from_ms(1000));
        let slots = ((cap(2) + Duration::from_ms(950)).as_us() / iv.as_us()) as u64 + 1;
        assert_eq!(r.stats.psnr_slots, slots);
        assert!(r.stats.mean_psnr_db().unwrap() < mean - 5.0);
    }

    #[test]
    fn a_sender_pause_is_not_a_freeze() {
        let mut r = FrameReceiver::new();
        let ms = Time::from_ms;
        for i in 0..10u64 { assert!(r.on_packet(ms(33 * i as i64), i, 1, ms(33 * i as i64), Bytes::new(1000), false)); }
        r.pause();
        r.resume();
        // 20 s later: the next frame spans the pause.
        assert!(r.on_packet(ms(20_000), 10, 1, ms(19_990), Bytes::new(1000), false));
        assert!(r.on_packet(ms(20_033), 11, 1, ms(20_023), Bytes::new(1000), false));
        assert_eq!(r.stats.freeze_count, 0);
        // The same gap without a pause is a freeze.
        assert!(r.on_packet(ms(40_033), 12, 1, ms(40_023), Bytes::new(1000), false));
        assert_eq!(r.stats.freeze_count, 1);
        // Ending while paused: no freeze either.
        r.pause();
        r.finish(ms(60_000));
        assert_eq!(r.stats.freeze_count, 1);
    }
}
