//! Sender-side send history: assigns transport sequence numbers, tracks bytes in flight, and
//! turns a receiver's [`FeedbackReport`] into the controller's [`TransportFeedback`] (the job of
//! libwebrtc's TransportFeedbackAdapter).

use super::generator::FeedbackReport;
use crate::controller::{PacketResult, SentPacket, TransportFeedback};
use crate::units::{Bytes, Duration, Time};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State { InFlight, Acked, Lost }

/// How long acknowledged entries are kept (for late reports of reordered packets).
const KEEP: Duration = Duration::from_secs(10);

pub struct SendHistory {
    /// Sequence number of `entries[0]`.
    base: u64,
    entries: VecDeque<(SentPacket, State)>,
    next_seq: u64,
    in_flight: Bytes,
    /// Sequence numbers below this were already released (`release_while`).
    expired_upto: u64,
}

impl Default for SendHistory {
    fn default() -> Self { Self::new() }
}

impl SendHistory {
    pub fn new() -> Self { SendHistory { base: 0, entries: VecDeque::new(), next_seq: 0, in_flight: Bytes::ZERO, expired_upto: 0 } }

    pub fn in_flight(&self) -> Bytes { self.in_flight }
    pub fn next_seq(&self) -> u64 { self.next_seq }

    /// Record a packet leaving the sender; returns its [`SentPacket`] with the sequence number.
    pub fn on_sent(&mut self, now: Time, size: Bytes, probe_cluster: Option<u32>, is_padding: bool) -> SentPacket {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight += size;
        let sp = SentPacket { seq, size, send_time: now, probe_cluster, is_padding, data_in_flight: self.in_flight };
        if self.entries.is_empty() { self.base = seq; }
        self.entries.push_back((sp, State::InFlight));
        sp
    }

    /// Give up on packets still in flight that were sent more than `max_age` before `now`
    /// (their feedback was lost, as can happen on a real network): their bytes leave the
    /// in-flight count, they are not reported as lost, and a late report may still acknowledge
    /// them. Returns the bytes released. Without this a lost feedback packet would inflate
    /// in-flight (and block history pruning) for good.
    pub fn expire(&mut self, now: Time, max_age: Duration) -> Bytes {
        let released = self.release_while(|sp| now - sp.send_time > max_age);
        self.prune(now);
        released
    }

    /// From the first packet not yet released, release packets while `release(packet)` holds:
    /// still-in-flight ones leave the in-flight count (marked lost internally, not reported).
    /// Returns the bytes released.
    fn release_while(&mut self, release: impl Fn(&SentPacket) -> bool) -> Bytes {
        let mut released = Bytes::ZERO;
        let from = self.expired_upto.saturating_sub(self.base) as usize;
        for (sp, st) in self.entries.iter_mut().skip(from) {
            if !release(sp) { break; }
            if *st == State::InFlight { *st = State::Lost; self.in_flight -= sp.size; released += sp.size; }
            self.expired_upto = sp.seq + 1;
        }
        released
    }

    /// Reports cover consecutive ranges, so a report starting at `seq` means everything below
    /// was covered by earlier reports; packets still in flight there had their report lost (a
    /// congested or lossy return path). Release their bytes from in-flight without reporting
    /// them as lost, as libwebrtc's TransportFeedbackAdapter does for everything up to the
    /// newest acknowledged sequence number; a late report may still acknowledge them.
    fn release_before(&mut self, seq: u64) {
        self.release_while(|sp| sp.seq < seq);
    }

    fn prune(&mut self, now: Time) {
        while let Some((sp, st)) = self.entries.front() {
            if *st != State::InFlight && now - sp.send_time > KEEP { self.entries.pop_front(); self.base += 1; } else { break; }
        }
    }

    /// Packets held (for tests of memory bounds).
    pub fn len(&self) -> usize { self.entries.len() }
    pub fn is_empty(&self) -> bool { self.entries.is_empty() }

    /// Apply a report that reached the sender at `now`.
    pub fn on_report(&mut self, now: Time, report: &FeedbackReport, include_report_time: bool) -> TransportFeedback {
        let prior = self.in_flight;
        self.release_before(report.base_seq);
        let mut packets = Vec::with_capacity(report.arrivals.len());
        for (i, arrival) in report.arrivals.iter().enumerate() {
            let seq = report.base_seq + i as u64;
            if seq < self.base { continue; }
            let Some((sp, state)) = self.entries.get_mut((seq - self.base) as usize) else { continue };
            match (arrival, *state) {
                (Some(_), State::InFlight) => { self.in_flight -= sp.size; *state = State::Acked; }
                (Some(_), State::Lost) => { *state = State::Acked; }
                (None, State::InFlight) => { self.in_flight -= sp.size; *state = State::Lost; }
                (_, State::Acked) | (None, State::Lost) => continue,
            }
            packets.push(PacketResult { sent: *sp, recv_time: *arrival });
        }
        // Forget settled entries older than KEEP.
        self.prune(now);
        TransportFeedback {
            feedback_time: now,
            report_time: include_report_time.then_some(report.report_time),
            packets,
            prior_in_flight: prior,
            data_in_flight: self.in_flight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_accounting_and_loss_then_late_arrival() {
        let mut h = SendHistory::new();
        for i in 0..4 { h.on_sent(Time::from_ms(i), Bytes::new(1000), None, false); }
        assert_eq!(h.in_flight(), Bytes::new(4000));
        let r = FeedbackReport { report_time: Time::from_ms(60), base_seq: 0, arrivals: vec![Some(Time::from_ms(50)), None, Some(Time::from_ms(52))] };
        let fb = h.on_report(Time::from_ms(110), &r, false);
        assert_eq!(fb.packets.len(), 3);
        assert_eq!(fb.prior_in_flight, Bytes::new(4000));
        assert_eq!(fb.data_in_flight, Bytes::new(1000));
        assert_eq!(fb.lost().count(), 1);
        // the "lost" packet 1 shows up later; in-flight must not go negative or double-count
        let r2 = FeedbackReport { report_time: Time::from_ms(120), base_seq: 1, arrivals: vec![Some(Time::from_ms(115)), None, Some(Time::from_ms(116))] };
        let fb2 = h.on_report(Time::from_ms(170), &r2, true);
        assert_eq!(fb2.packets.iter().map(|p| p.sent.seq).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(fb2.data_in_flight, Bytes::ZERO);
        assert_eq!(fb2.report_time, Some(Time::from_ms(120)));
    }

    /// A lost report: the next report starts above packets 0–1, so their bytes leave in-flight
    /// (not reported lost); a late report of packet 0 still acknowledges it.
    #[test]
    fn a_report_starting_above_in_flight_packets_releases_them() {
        let mut h = SendHistory::new();
        for i in 0..4 { h.on_sent(Time::from_ms(i), Bytes::new(1000), None, false); }
        let r = FeedbackReport { report_time: Time::from_ms(60), base_seq: 2, arrivals: vec![Some(Time::from_ms(50)), None] };
        let fb = h.on_report(Time::from_ms(110), &r, false);
        assert_eq!(fb.prior_in_flight, Bytes::new(4000));
        assert_eq!(fb.packets.iter().map(|p| p.sent.seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(fb.lost().count(), 1, "only packet 3 is reported lost");
        assert_eq!(h.in_flight(), Bytes::ZERO);
        let late = FeedbackReport { report_time: Time::from_ms(120), base_seq: 0, arrivals: vec![Some(Time::from_ms(40))] };
        let fb = h.on_report(Time::from_ms(170), &late, false);
        assert_eq!(fb.packets.len(), 1);
        assert_eq!(h.in_flight(), Bytes::ZERO);
    }

    #[test]
    fn expiry_releases_in_flight_of_lost_feedback_and_bounds_memory() {
        let mut h = SendHistory::new();
        for i in 0..3 { h.on_sent(Time::from_ms(i * 10), Bytes::new(500), None, false); }
        // nothing older than 1 s yet
        assert_eq!(h.expire(Time::from_ms(500), Duration::from_secs(1)), Bytes::ZERO);
        // at 1.015 s packets sent at 0 and 10 ms are older than 1 s
        assert_eq!(h.expire(Time::from_ms(1015), Duration::from_secs(1)), Bytes::new(1000));
        assert_eq!(h.in_flight(), Bytes::new(500));
        // a late report still acknowledges an expired packet, without touching in-flight again
        let r = FeedbackReport { report_time: Time::from_ms(1100), base_seq: 0, arrivals: vec![Some(Time::from_ms(60))] };
        let fb = h.on_report(Time::from_ms(1100), &r, false);
        assert_eq!(fb.packets.len(), 1);
        assert_eq!(fb.data_in_flight, Bytes::new(500));
        // a sender whose feedback never arrives keeps a bounded history
        let mut t = Time::from_ms(2000);
        for _ in 0..100_000 { h.on_sent(t, Bytes::new(100), None, false); t += Duration::from_ms(1); h.expire(t, Duration::from_secs(1)); }
        assert!(h.len() < 12_000, "{}", h.len());
    }
}
