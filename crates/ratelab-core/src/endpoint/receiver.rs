//! The media receiver: frame reassembly and rendering, transport-wide feedback generation and
//! its cadence, and every call into a receiver-side estimator, behind a sans-IO surface. The
//! simulator and live mode's UDP loop both drive this one type, so what a receiver reports —
//! and when — cannot drift between them.

use crate::controller::{PacketKind, ReceivedPacket, ReceiverEstimator};
use crate::feedback::generator::{FeedbackGenerator, FeedbackReport, GeneratorMode};
use crate::media::fec::hybrid::FrameSeqs;
use crate::media::fec::recovery::{FecInfo, FecReceiver, Recovered};
use crate::media::nack::{Arrived, NackList, PROCESS_INTERVAL};
use crate::media::receiver::{FrameReceiver, VideoStats};
use crate::units::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// The receiver's own timers (one simulator event each, as for [`super::SenderTimer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiverTimer {
    /// The periodic feedback report (TWCC mode only).
    Feedback,
    /// The receiver-side estimator's tick (only with an estimator).
    Estimator,
    /// The NACK list's periodic re-send check (only with `media.nack`).
    Nack,
}

/// A message the receiver sends back to the sender now.
#[derive(Clone, Debug, PartialEq)]
pub enum ReceiverTransmit {
    /// Transport-wide feedback (TWCC or RFC 8888 on the wire).
    Feedback(FeedbackReport),
    /// A receiver-side estimate (REMB on the wire).
    Estimate(Bitrate),
    /// A generic NACK (RFC 4585 §6.2.1) for these media sequence numbers (`media.nack`).
    Nack(Vec<u64>),
}

/// The video frame a media packet belongs to (its RTP-level media header).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FramePart {
    pub frame: u64,
    /// The packet's index in the frame.
    pub index: u16,
    /// The flow's RTP sequence number of the packet (an RTX packet: of the one it repeats);
    /// `None` where the driver does not carry it (live mode, which refuses `media.nack`).
    pub media_seq: Option<u64>,
    /// Packets in the frame.
    pub count: u16,
    pub capture: Time,
    pub keyframe: bool,
}

/// One received packet, as the driver parsed it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    /// Transport-wide sequence number (unwrapped).
    pub seq: u64,
    /// Size on the wire (headers included).
    pub size: Bytes,
    /// The sender's timestamp, when the packet carries one.
    pub send_time: Option<Time>,
    pub kind: PacketKind,
    /// The frame it carries (video only; `None` when the driver does not render it).
    pub frame: Option<FramePart>,
}

pub struct MediaReceiver {
    frames: FrameReceiver,
    feedback: FeedbackGenerator,
    estimator: Option<Box<dyn ReceiverEstimator>>,
    /// Per-packet header bytes: the frame receiver counts payload.
    header: Bytes,
    /// Return path delay, when known: an estimator then gets each packet's RTT as its one-way
    /// delay plus this (a congested return link's queue is not known here).
    return_delay: Option<Duration>,
    next_feedback: Option<Time>,
    next_estimate: Option<Time>,
    /// When each timer was last armed (a counter): timers due at the same instant run in the
    /// order they were armed, as the simulator's event queue runs them.
    armed: [u64; 3],
    /// The NACK list (`media.nack`; `None`: no retransmission requests).
    nack: Option<NackList>,
    next_nack: Option<Time>,
    nacks: u64,
    arms: u64,
    out: VecDeque<ReceiverTransmit>,
    reports: u64,
    estimates: u64,
    /// FEC recovery (`media.fec`); `None`: FEC packets are ignored.
    fec: Option<FecReceiver>,
    /// With FEC and NACK both on: where each frame sits on the media sequence numbers, so that
    /// what FEC repairs leaves the NACK list.
    frame_seqs: Option<FrameSeqs>,
}

/// A timer this far behind (a stalled wall-clock loop) restarts from now instead of catching up.
const MAX_TIMER_LAG: Duration = Duration::from_secs(1);

impl MediaReceiver {
    pub fn new(frames: FrameReceiver, feedback: FeedbackGenerator, estimator: Option<Box<dyn ReceiverEstimator>>, header: Bytes, return_delay: Option<Duration>) -> MediaReceiver {
        MediaReceiver { frames, feedback, estimator, header, return_delay, next_feedback: None, next_estimate: None, armed: [0; 3], nack: None, next_nack: None, nacks: 0, arms: 0, out: VecDeque::new(), reports: 0, estimates: 0, fec: None, frame_seqs: None }
    }

    /// Replace the receiver-side estimator (before [`MediaReceiver::start`]).
    pub fn set_estimator(&mut self, e: Option<Box<dyn ReceiverEstimator>>) { self.estimator = e; }
    /// Wrap the receiver-side estimator (a recorder in a test).
    pub fn map_estimator(&mut self, f: impl FnOnce(Box<dyn ReceiverEstimator>) -> Box<dyn ReceiverEstimator>) {
        self.estimator = self.estimator.take().map(f);
    }
    pub fn has_estimator(&self) -> bool { self.estimator.is_some() }
    /// Ask for lost media with NACKs and hold frames behind a retransmission (`media.nack`).
    pub fn enable_nack(&mut self) {
        self.nack = Some(NackList::new());
        self.frames.enable_render_timing();
        if self.fec.is_some() { self.frame_seqs = Some(FrameSeqs::new()); }
    }
    /// The NACK list, with its give-up and key-frame-request counters.
    pub fn nack_list(&self) -> Option<&NackList> { self.nack.as_ref() }
    /// NACK messages sent so far.
    pub fn nacks_sent(&self) -> u64 { self.nacks }
    pub fn set_return_delay(&mut self, d: Option<Duration>) { self.return_delay = d; }
    /// Recover lost media packets from FEC packets (`media.fec`).
    pub fn enable_fec(&mut self) {
        self.fec = Some(FecReceiver::new());
        if self.nack.is_some() { self.frame_seqs = Some(FrameSeqs::new()); }
    }
    /// Media packets recovered by FEC so far.
    pub fn fec_recovered(&self) -> u64 { self.fec.as_ref().map_or(0, |f| f.recovered) }

    /// The flow starts: the first feedback report (TWCC mode) and estimator tick are due one
    /// interval from now.
    pub fn start(&mut self, now: Time) {
        self.next_feedback = (self.feedback.mode() == GeneratorMode::Twcc).then(|| now + self.feedback_interval());
        self.arm(ReceiverTimer::Feedback);
        self.next_estimate = self.estimator.as_ref().map(|e| now + e.tick_interval());
        self.arm(ReceiverTimer::Estimator);
        self.next_nack = self.nack.as_ref().map(|_| now + PROCESS_INTERVAL);
        self.arm(ReceiverTimer::Nack);
    }

    fn arm(&mut self, which: ReceiverTimer) {
        self.armed[which as usize] = self.arms;
        self.arms += 1;
    }

    /// When `which` is next due.
    #[inline]
    pub fn timer(&self, which: ReceiverTimer) -> Option<Time> {
        match which {
            ReceiverTimer::Feedback => self.next_feedback,
            ReceiverTimer::Estimator => self.next_estimate,
            ReceiverTimer::Nack => self.next_nack,
        }
    }

    /// The earliest time anything is due.
    pub fn poll_timeout(&self) -> Option<Time> { [self.next_feedback, self.next_estimate, self.next_nack].into_iter().flatten().min() }

    /// Run every timer due by `now`, each once, earliest first (a wall-clock driver, which may
    /// be late; a timer still due after that runs on the next call).
    pub fn handle_timeout(&mut self, now: Time) {
        let key = |w: ReceiverTimer| self.timer(w).filter(|&t| t <= now).map(|t| (t, self.armed[w as usize], w as u8));
        let mut due = [ReceiverTimer::Feedback, ReceiverTimer::Estimator, ReceiverTimer::Nack].map(key);
        due.sort_unstable(); // `None` (not due) first
        for (t, _, w) in due.into_iter().flatten() {
            match w {
                0 => self.feedback_timer(t, now),
                1 => self.estimator_timer(t, now),
                _ => self.nack_timer(t, now),
            }
        }
    }

    /// Run one timer that the driver scheduled for exactly `now` (the simulator's events).
    #[inline]
    pub fn handle_timer(&mut self, now: Time, which: ReceiverTimer) {
        match which {
            ReceiverTimer::Feedback => self.feedback_timer(now, now),
            ReceiverTimer::Estimator => self.estimator_timer(now, now),
            ReceiverTimer::Nack => self.nack_timer(now, now),
        }
    }

    /// A packet arrived at `now`: render what it completes, tell the estimator, and (per-packet
    /// mode) acknowledge it at once.
    #[inline]
    pub fn handle_packet(&mut self, now: Time, a: Arrival) {
        if let Some(f) = a.frame {
            match (self.nack.is_some(), f.media_seq) {
                (true, Some(seq)) => self.media_with_nack(now, &a, f, seq),
                _ => {
                    self.frames.on_packet(now, f.frame, f.count, f.capture, a.size - self.header, f.keyframe);
                    if let Some(fec) = self.fec.as_mut() {
                        let rec = fec.on_media(f.frame, f.count, f.capture, f.keyframe);
                        self.render_recovered(now, rec);
                    }
                }
            }
        }
        if let Some(e) = self.estimator.as_mut() {
            e.on_packet_received(&ReceivedPacket { seq: a.seq, size: a.size, send_time: a.send_time.unwrap_or(now), recv_time: now, kind: a.kind });
            if let (Some(ret), Some(s)) = (self.return_delay, a.send_time) { e.on_rtt_update(now, (now - s) + ret); }
        }
        if let Some(r) = self.feedback.on_packet(now, a.seq) { self.push_report(r); }
    }

    /// An FEC packet of block `info` arrived: a transport packet like any other, then whatever
    /// it lets the receiver recover.
    pub fn handle_fec_packet(&mut self, now: Time, a: Arrival, info: FecInfo) {
        self.handle_packet(now, Arrival { frame: None, ..a });
        if let Some(fec) = self.fec.as_mut() {
            let rec = fec.on_fec(info);
            if self.nack.is_some() { self.recover_under_nack(now, rec) } else { self.render_recovered(now, rec) }
        }
    }

    fn render_recovered(&mut self, now: Time, rec: Vec<Recovered>) {
        for r in rec { self.frames.on_packet(now, r.frame, r.count, r.capture, r.payload, r.keyframe); }
    }

    /// What FEC repaired, with NACK on: each repaired packet arrives on the NACK list (leaving it)
    /// and in its frame, then the frames nothing missing holds back are shown. A frame that
    /// cannot be placed on the sequence numbers is left to the retransmissions.
    fn recover_under_nack(&mut self, now: Time, rec: Vec<Recovered>) {
        let (Some(n), Some(seqs)) = (self.nack.as_mut(), self.frame_seqs.as_mut()) else { return };
        let mut batch = Vec::new();
        let mut done = None;
        for r in rec {
            // recovery.rs lists a frame once per repaired packet; its missing packets are found here
            if done == Some(r.frame) { continue; }
            done = Some(r.frame);
            let Some((first, count)) = seqs.place(r.frame) else { continue };
            // a frame recovered whole comes back as one piece: share its bytes among its packets
            let payload = if r.count == count { r.payload } else { r.payload / count.max(1) as i64 };
            for s in first..first + count as u64 {
                if !n.awaits(s) { continue; }
                n.on_packet(now, s, r.keyframe && s == first, &mut batch);
                self.frames.add_packet(now, r.frame, count, r.capture, payload, r.keyframe, first, true);
            }
        }
        self.push_nack(batch);
        self.render_ready(now);
    }

    /// A media packet with NACK on: the list learns of it (a gap is NACKed at once), a second
    /// copy is dropped, and the newest frame nothing missing precedes is rendered. The RTT the
    /// list re-sends by is this receiver's own: the packet's one-way delay plus the return
    /// delay (the network RTT that libwebrtc's RTCP measures).
    fn media_with_nack(&mut self, now: Time, a: &Arrival, f: FramePart, seq: u64) {
        let Some(n) = self.nack.as_mut() else { return };
        if let (Some(ret), Some(s)) = (self.return_delay, a.send_time) { n.update_rtt((now - s) + ret); }
        let mut batch = Vec::new();
        let arrived = n.on_packet(now, seq, f.keyframe && f.index == 0, &mut batch);
        self.push_nack(batch);
        if arrived == Arrived::Stale { return; }
        let payload = a.size - self.header;
        let first = seq - f.index as u64;
        self.frames.add_packet(now, f.frame, f.count, f.capture, payload, f.keyframe, first, arrived == Arrived::Recovered);
        if let (Some(fec), Some(seqs)) = (self.fec.as_mut(), self.frame_seqs.as_mut()) {
            seqs.on_packet(f.frame, first, f.count);
            let rec = fec.on_media(f.frame, f.count, f.capture, f.keyframe);
            if !rec.is_empty() { return self.recover_under_nack(now, rec); }
        }
        self.render_ready(now);
    }

    /// A complete key frame makes the requests before it useless (libwebrtc clears up to a
    /// frame that became continuous); then show what nothing missing holds back.
    fn render_ready(&mut self, now: Time) {
        let Some(n) = self.nack.as_mut() else { return };
        if let Some(k) = self.frames.newest_complete_keyframe() { n.clear_up_to(k); }
        self.frames.render_ready(now, n.oldest_missing());
    }

    fn push_nack(&mut self, batch: Vec<u64>) {
        if batch.is_empty() { return; }
        self.nacks += 1;
        self.out.push_back(ReceiverTransmit::Nack(batch));
    }

    /// The NACK check due at `t`, run at `now`: re-send what is a RTT old; what was given up
    /// no longer holds frames back.
    fn nack_timer(&mut self, t: Time, now: Time) {
        let Some(n) = self.nack.as_mut() else { self.next_nack = None; return };
        let mut batch = Vec::new();
        n.process(now, &mut batch);
        self.push_nack(batch);
        self.render_ready(now);
        self.next_nack = Some(next_after(t, now, PROCESS_INTERVAL));
        self.arm(ReceiverTimer::Nack);
    }

    /// The sender paused (`true`) or resumed its media on purpose: the gap is not a freeze.
    pub fn handle_sender_pause(&mut self, paused: bool) {
        if paused { self.frames.pause() } else { self.frames.resume() }
    }

    /// Report now whatever arrived since the last report (a driver closing the session).
    pub fn flush_feedback(&mut self, now: Time) {
        if let Some(r) = self.feedback.on_timer(now) { self.push_report(r); }
    }

    /// The stream ended at `at`: close the video statistics (a stall in progress is a freeze).
    pub fn finish(&mut self, at: Time) { self.frames.finish(at); }

    /// The next message to send back, in order.
    #[inline]
    pub fn poll_transmit(&mut self) -> Option<ReceiverTransmit> { self.out.pop_front() }

    pub fn video_stats(&self) -> VideoStats { self.frames.stats }
    /// Arrivals not yet covered by a feedback report.
    pub fn has_pending_feedback(&self) -> bool { self.feedback.has_pending() }
    pub fn feedback_mode(&self) -> GeneratorMode { self.feedback.mode() }
    /// Feedback reports and estimates generated so far.
    pub fn reports_generated(&self) -> u64 { self.reports }
    pub fn estimates_generated(&self) -> u64 { self.estimates }

    /// The report interval, never zero (a zero interval would never let time advance).
    fn feedback_interval(&self) -> Duration { self.feedback.interval().max(Duration::from_us(1)) }

    fn push_report(&mut self, r: FeedbackReport) {
        self.reports += 1;
        self.out.push_back(ReceiverTransmit::Feedback(r));
    }

    /// The report due at `t`, run at `now`.
    fn feedback_timer(&mut self, t: Time, now: Time) {
        self.flush_feedback(now);
        self.next_feedback = Some(next_after(t, now, self.feedback_interval()));
        self.arm(ReceiverTimer::Feedback);
    }

    /// The estimator tick due at `t`, run at `now`.
    fn estimator_timer(&mut self, t: Time, now: Time) {
        let Some(e) = self.estimator.as_mut() else { self.next_estimate = None; return };
        let rate = e.on_tick(now);
        let d = e.tick_interval().max(Duration::from_ms(1));
        self.next_estimate = Some(next_after(t, now, d));
        self.arm(ReceiverTimer::Estimator);
        if let Some(r) = rate {
            self.estimates += 1;
            self.out.push_back(ReceiverTransmit::Estimate(r));
        }
    }
}

/// The next deadline of a periodic timer due at `t` and run at `now`: one period on, unless
/// that is already far in the past.
fn next_after(t: Time, now: Time, period: Duration) -> Time {
    let next = t + period;
    if now - next > MAX_TIMER_LAG { now + period } else { next }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl ReceiverEstimator for Fixed {
        fn on_packet_received(&mut self, _: &ReceivedPacket) {}
        fn on_tick(&mut self, _: Time) -> Option<Bitrate> { Some(Bitrate::from_kbps(500)) }
        fn tick_interval(&self) -> Duration { Duration::from_ms(100) }
    }

    fn rx(mode: GeneratorMode) -> MediaReceiver {
        MediaReceiver::new(FrameReceiver::new(), FeedbackGenerator::new(mode, Duration::from_ms(50)), Some(Box::new(Fixed)), Bytes::new(40), None)
    }

    fn video(seq: u64, frame: u64) -> Arrival {
        Arrival { seq, size: Bytes::new(1040), send_time: None, kind: PacketKind::Video, frame: Some(FramePart { frame, index: 0, media_seq: None, count: 1, capture: Time::ZERO, keyframe: false }) }
    }

    #[test]
    fn twcc_reports_and_estimates_follow_their_timers() {
        let mut r = rx(GeneratorMode::Twcc);
        r.start(Time::ZERO);
        assert_eq!(r.poll_timeout(), Some(Time::from_ms(50)));
        r.handle_packet(Time::from_ms(10), video(0, 0));
        assert_eq!(r.poll_transmit(), None);
        assert_eq!(r.video_stats().frames_rendered, 1);
        r.handle_timeout(Time::from_ms(50));
        assert!(matches!(r.poll_transmit(), Some(ReceiverTransmit::Feedback(f)) if f.base_seq == 0 && f.arrivals.len() == 1));
        // A late wall-clock loop: the report due at 100 ms runs at 120 ms, the next stays at 150.
        r.handle_timeout(Time::from_ms(120));
        assert_eq!(r.poll_transmit(), Some(ReceiverTransmit::Estimate(Bitrate::from_kbps(500))));
        assert_eq!(r.poll_transmit(), None);
        assert_eq!(r.timer(ReceiverTimer::Feedback), Some(Time::from_ms(150)));
        assert_eq!(r.timer(ReceiverTimer::Estimator), Some(Time::from_ms(200)));
        // Far behind: restart from now.
        r.handle_timeout(Time::from_ms(5_000));
        assert_eq!(r.timer(ReceiverTimer::Feedback), Some(Time::from_ms(5_050)));
    }

    #[test]
    fn nack_mode_requests_a_gap_at_once_then_every_rtt_and_renders_on_the_retransmission() {
        let mut r = MediaReceiver::new(FrameReceiver::new(), FeedbackGenerator::new(GeneratorMode::Twcc, Duration::from_ms(50)), None, Bytes::new(40), Some(Duration::from_ms(30)));
        r.enable_nack();
        r.start(Time::ZERO);
        assert_eq!(r.timer(ReceiverTimer::Nack), Some(Time::from_ms(20)));
        // Frame f has one packet, media seq f, sent at 10 f ms, arriving 20 ms later: RTT 50 ms.
        let pkt = |f: u64| Arrival { seq: f, size: Bytes::new(1040), send_time: Some(Time::from_ms(10 * f as i64)), kind: PacketKind::Video,
                                     frame: Some(FramePart { frame: f, index: 0, media_seq: Some(f), count: 1, capture: Time::from_ms(10 * f as i64), keyframe: false }) };
        let at = |f: u64| Time::from_ms(10 * f as i64 + 20);
        r.handle_packet(at(0), pkt(0));
        r.handle_packet(at(2), pkt(2)); // 1 is lost
        assert_eq!(r.poll_transmit(), Some(ReceiverTransmit::Nack(vec![1])));
        assert_eq!(r.video_stats().frames_rendered, 1, "frame 2 waits for 1");
        // NACK checks run every 20 ms; the RTT is 50 ms, so the next NACK goes at 100 ms.
        for t in [20, 40, 60, 80] { r.handle_timer(Time::from_ms(t), ReceiverTimer::Nack); }
        assert!(!std::iter::from_fn(|| r.poll_transmit()).any(|m| matches!(m, ReceiverTransmit::Nack(_))));
        r.handle_timer(Time::from_ms(100), ReceiverTimer::Nack);
        assert!(std::iter::from_fn(|| r.poll_transmit()).any(|m| m == ReceiverTransmit::Nack(vec![1])));
        // The RTX copy of 1 arrives (sent at 90 ms): frame 2, the newest ready, is shown.
        let mut rtx = pkt(1);
        rtx.send_time = Some(Time::from_ms(90));
        r.handle_packet(Time::from_ms(110), rtx);
        assert_eq!(r.video_stats().frames_rendered, 2);
        assert_eq!(r.nack_list().map(|n| n.len()), Some(0));
        // A second copy changes nothing.
        r.handle_packet(Time::from_ms(115), rtx);
        assert_eq!(r.video_stats().frames_rendered, 2);
        assert_eq!(r.nacks_sent(), 2);
    }

    /// FEC and NACK together: frame 1 (media seq 2) is lost whole and NACKed; the block's FEC
    /// packet repairs it, which takes it off the NACK list and releases frame 2 behind it; the
    /// retransmission that comes later changes nothing.
    #[test]
    fn hybrid_mode_repairs_by_fec_and_stops_asking() {
        use crate::media::fec::recovery::FecInfo;
        let mut r = MediaReceiver::new(FrameReceiver::new(), FeedbackGenerator::new(GeneratorMode::Twcc, Duration::from_ms(50)), None, Bytes::new(40), Some(Duration::from_ms(30)));
        r.enable_fec();
        r.enable_nack();
        r.start(Time::ZERO);
        // (frame, index, count, media seq): frame 0 = seqs 0-1, frame 1 = seq 2, frame 2 = seqs 3-4
        let pkt = |frame: u64, index: u16, count: u16, seq: u64| Arrival { seq, size: Bytes::new(1040), send_time: Some(Time::from_ms(10 * seq as i64)), kind: PacketKind::Video,
            frame: Some(FramePart { frame, index, media_seq: Some(seq), count, capture: Time::from_ms(66 * frame as i64), keyframe: false }) };
        let at = |seq: u64| Time::from_ms(10 * seq as i64 + 20);
        for (f, i, c, s) in [(0, 0, 2, 0), (0, 1, 2, 1), (2, 0, 2, 3), (2, 1, 2, 4)] { r.handle_packet(at(s), pkt(f, i, c, s)); }
        assert_eq!(r.poll_transmit(), Some(ReceiverTransmit::Nack(vec![2])));
        assert_eq!(r.video_stats().frames_rendered, 1, "frame 2 waits for seq 2");
        let info = FecInfo { first_frame: 0, first_capture: Time::ZERO, span_us: 132_000, protected: 1000, media: 5, fec: 1, frames: 3, keyframe: false };
        let fec = Arrival { seq: 5, size: Bytes::new(1040), send_time: Some(Time::from_ms(50)), kind: PacketKind::Video, frame: None };
        r.handle_fec_packet(Time::from_ms(70), fec, info);
        assert_eq!(r.fec_recovered(), 1);
        assert_eq!(r.nack_list().map(|n| n.len()), Some(0), "repaired: no longer asked for");
        assert_eq!(r.video_stats().frames_rendered, 3);
        // no more NACKs for it, and its retransmission is a second copy
        r.handle_timer(Time::from_ms(200), ReceiverTimer::Nack);
        assert!(!std::iter::from_fn(|| r.poll_transmit()).any(|m| matches!(m, ReceiverTransmit::Nack(_))));
        r.handle_packet(Time::from_ms(210), pkt(1, 0, 1, 2));
        assert_eq!(r.video_stats().frames_rendered, 3);
        assert_eq!(r.nacks_sent(), 1);
    }

    #[test]
    fn per_packet_mode_acknowledges_at_once_and_has_no_report_timer() {
        let mut r = rx(GeneratorMode::PerPacket);
        r.start(Time::ZERO);
        assert_eq!(r.timer(ReceiverTimer::Feedback), None);
        r.handle_packet(Time::from_ms(10), video(0, 0));
        assert!(matches!(r.poll_transmit(), Some(ReceiverTransmit::Feedback(_))));
        assert_eq!(r.reports_generated(), 1);
    }
}
