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
}

impl Default for SendHistory {
    fn default() -> Self { Self::new() }
}

impl SendHistory {
    pub fn new() -> Self { SendHistory { base: 0, entries: VecDeque::new(), next_seq: 0, in_flight: Bytes::ZERO } }

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

    /// Apply a report that reached the sender at `now`.
    pub fn on_report(&mut self, now: Time, report: &FeedbackReport, include_report_time: bool) -> TransportFeedback {
        let prior = self.in_flight;
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
        while let Some((sp, st)) = self.entries.front() {
            if *st != State::InFlight && now - sp.send_time > KEEP { self.entries.pop_front(); self.base += 1; } else { break; }
        }
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
}
