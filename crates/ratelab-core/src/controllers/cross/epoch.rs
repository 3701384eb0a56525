//! Cross's decision epochs (spec 5.4, paper 002 §V and Fig. 4): time is cut into cycles of about
//! one min RTT, advanced on sent packets; the OWDs of the packets sent in cycle 1 are collected,
//! and when the packet with the largest sequence number of cycle 1 is reported the epoch ends
//! with those samples (for Eq. 5) and a new epoch starts. Cycle 0 is skipped because its
//! packets were sent partly under the previous rate.

use crate::controller::PacketResult;
use crate::units::{Duration, Time};

#[derive(Clone, Debug, Default)]
pub struct Epochs {
    /// `cycle_current_offset_`: 0, 1, 2, … (saturates).
    pub offset: u32,
    cycle_start: Option<Time>,
    /// First and last sequence number sent in cycle 1.
    cycle1: Option<(u64, u64)>,
    owds: Vec<Duration>,
}

impl Epochs {
    pub fn new() -> Self { Self::default() }

    /// Start a new epoch at `now` (cycle 0 begins).
    pub fn restart(&mut self, now: Time) {
        self.offset = 0;
        self.cycle_start = Some(now);
        self.cycle1 = None;
        self.owds.clear();
    }

    /// `OnSentPacket`: advance the cycle when it has lasted at least `min_rtt`, and remember the
    /// packets of cycle 1.
    pub fn on_packet_sent(&mut self, seq: u64, now: Time, min_rtt: Duration) {
        match self.cycle_start {
            None => { self.restart(now); }
            Some(start) if now - start >= min_rtt => {
                self.offset = self.offset.saturating_add(1);
                self.cycle_start = Some(now);
            }
            _ => {}
        }
        if self.offset == 1 {
            self.cycle1 = Some(match self.cycle1 { None => (seq, seq), Some((a, b)) => (a.min(seq), b.max(seq)) });
        }
    }

    /// Feed a feedback's packets. When cycle 1 is closed and its last packet (or any later one)
    /// is reported, returns the OWDs of cycle 1's received packets and starts a new epoch at
    /// `now`.
    pub fn on_feedback(&mut self, now: Time, packets: &[PacketResult]) -> Option<Vec<Duration>> {
        let (first, last) = self.cycle1?;
        let mut done = false;
        for p in packets {
            let s = p.sent.seq;
            if s >= first && s <= last {
                if let Some(r) = p.recv_time { self.owds.push(r - p.sent.send_time); }
            }
            if self.offset >= 2 && s >= last { done = true; }
        }
        if !done { return None; }
        let out = std::mem::take(&mut self.owds);
        self.restart(now);
        Some(out)
    }

    /// Packets of cycle 1 (for tests and diagnostics).
    pub fn cycle1(&self) -> Option<(u64, u64)> { self.cycle1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::SentPacket;
    use crate::units::Bytes;

    fn pr(seq: u64, send_ms: i64, owd_ms: Option<i64>) -> PacketResult {
        PacketResult {
            sent: SentPacket { seq, size: Bytes::new(1200), send_time: Time::from_ms(send_ms), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
            recv_time: owd_ms.map(|o| Time::from_ms(send_ms + o)),
        }
    }

    #[test]
    fn epoch_collects_cycle_one_and_ends_on_its_last_packet() {
        // min RTT 50 ms, a packet every 10 ms: cycle 0 = seq 0..4 (0–40 ms), cycle 1 = seq 5..9
        // (50–90 ms), cycle 2 starts at 100 ms (seq 10).
        let mut e = Epochs::new();
        for s in 0..12u64 { e.on_packet_sent(s, Time::from_ms(10 * s as i64), Duration::from_ms(50)); }
        assert_eq!(e.cycle1(), Some((5, 9)));
        assert_eq!(e.offset, 2);
        // a feedback covering 0..7: cycle 1 not finished
        let fb1: Vec<_> = (0..8).map(|s| pr(s, 10 * s as i64, Some(30 + s as i64))).collect();
        assert!(e.on_feedback(Time::from_ms(120), &fb1).is_none());
        // 8 lost, 9 received: epoch ends with the OWDs of 5, 6, 7, 9
        let fb2 = vec![pr(8, 80, None), pr(9, 90, Some(39)), pr(10, 100, Some(40))];
        let owds = e.on_feedback(Time::from_ms(170), &fb2).unwrap();
        assert_eq!(owds, [35, 36, 37, 39].map(Duration::from_ms).to_vec());
        // new epoch: cycle 0 starts at the feedback (170 ms)
        assert_eq!((e.offset, e.cycle1()), (0, None));
        e.on_packet_sent(12, Time::from_ms(200), Duration::from_ms(50));
        assert_eq!(e.offset, 0);
        e.on_packet_sent(13, Time::from_ms(220), Duration::from_ms(50));
        assert_eq!((e.offset, e.cycle1()), (1, Some((13, 13))));
    }

    #[test]
    fn cycle_one_still_open_does_not_end_the_epoch() {
        let mut e = Epochs::new();
        for s in 0..8u64 { e.on_packet_sent(s, Time::from_ms(10 * s as i64), Duration::from_ms(50)); }
        assert_eq!(e.offset, 1);
        // the newest packet of the (still open) cycle 1 is reported: not yet the end
        let fb: Vec<_> = (0..8).map(|s| pr(s, 10 * s as i64, Some(30))).collect();
        assert!(e.on_feedback(Time::from_ms(120), &fb).is_none());
    }
}
