//! Sender-side packet history for retransmission on NACK (`media.nack`), as libwebrtc's
//! `RtpPacketHistory` (modules/rtp_rtcp/source/rtp_packet_history.cc) keeps it for video in
//! `kStoreAndCull` mode with 600 packets (`kMinSendSidePacketHistorySize`, rtp_video_sender.cc):
//!
//! * a packet is kept at least max(1 s, 3 × RTT) after its last send (`kMinPacketDuration`,
//!   `kMinPacketDurationRtt`); after that it goes once the history holds 600 packets, and in any
//!   case at 3 × that age (`kPacketCullingDelayFactor`); never while queued in the pacer;
//! * a NACK for a packet already retransmitted less than one RTT ago is ignored
//!   (`VerifyRtt`: it is probably still on its way), as is one for a packet whose copy still
//!   waits in the pacer (`pending_transmission`);
//! * an RTX copy is the original plus the 2-byte original sequence number (RFC 4588 §4).
//!
//! Left out: upstream also culls packets that transport feedback acknowledged (a NACK never
//! asks for those) and uses history packets as payload padding.

use crate::network::packet::Payload;
use crate::units::{Bytes, Duration, Time};
use std::collections::BTreeMap;

pub const MIN_PACKET_DURATION: Duration = Duration::from_secs(1);
pub const MIN_PACKET_DURATION_RTT: i64 = 3;
pub const CULLING_DELAY_FACTOR: i64 = 3;
/// libwebrtc's video send-side history size.
pub const HISTORY_PACKETS: usize = 600;
/// RTX header: the original sequence number (RFC 4588).
pub const RTX_HEADER: Bytes = Bytes::new(2);

#[derive(Clone, Copy, Debug)]
struct Stored {
    size: Bytes,
    payload: Payload,
    send_time: Time,
    retransmitted: u32,
    pending: bool,
}

#[derive(Debug, Default)]
pub struct RtxHistory {
    packets: BTreeMap<u64, Stored>,
    rtt: Option<Duration>,
}

impl RtxHistory {
    pub fn new() -> Self { Self::default() }

    pub fn set_rtt(&mut self, rtt: Duration) { self.rtt = Some(rtt.max(Duration::ZERO)); }
    pub fn len(&self) -> usize { self.packets.len() }
    pub fn is_empty(&self) -> bool { self.packets.is_empty() }

    /// A media packet (`media_seq`, `size` on the wire) went out at `now` (first send or RTX).
    pub fn on_sent(&mut self, now: Time, media_seq: u64, size: Bytes, payload: Payload) {
        self.cull(now);
        match self.packets.get_mut(&media_seq) {
            Some(s) => { s.send_time = now; s.pending = false; }
            None => { self.packets.insert(media_seq, Stored { size, payload, send_time: now, retransmitted: 0, pending: false }); }
        }
    }

    /// A NACK for `media_seq` at `now`: the RTX packet to queue (size with the RTX header,
    /// payload marked `rtx`), or `None` when it is gone, queued already, or retransmitted
    /// within the last RTT.
    pub fn retransmit(&mut self, now: Time, media_seq: u64) -> Option<(Bytes, Payload)> {
        self.cull(now);
        let rtt = self.rtt.unwrap_or(Duration::ZERO);
        let s = self.packets.get_mut(&media_seq)?;
        if s.pending || (s.retransmitted > 0 && now < s.send_time + rtt) { return None; }
        s.retransmitted += 1;
        s.pending = true;
        let payload = match s.payload {
            Payload::Media { frame, index, count, capture, keyframe, media_seq, .. } => Payload::Media { frame, index, count, capture, keyframe, media_seq, rtx: true },
            p => p,
        };
        Some((s.size + RTX_HEADER, payload))
    }

    fn cull(&mut self, now: Time) {
        let keep = (self.rtt.unwrap_or(Duration::ZERO) * MIN_PACKET_DURATION_RTT).max(MIN_PACKET_DURATION);
        while let Some((&seq, s)) = self.packets.iter().next() {
            if s.pending || s.send_time + keep > now { return; }
            if self.packets.len() >= HISTORY_PACKETS || s.send_time + keep * CULLING_DELAY_FACTOR <= now {
                self.packets.remove(&seq);
            } else {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(seq: u64) -> Payload {
        Payload::Media { frame: 0, index: 0, count: 1, capture: Time::ZERO, keyframe: false, media_seq: seq as u32, rtx: false }
    }
    fn ms(t: i64) -> Time { Time::from_ms(t) }

    #[test]
    fn retransmits_once_per_rtt_and_not_while_queued() {
        let mut h = RtxHistory::new();
        h.set_rtt(Duration::from_ms(100));
        h.on_sent(ms(0), 7, Bytes::new(1240), media(7));
        let (size, p) = h.retransmit(ms(50), 7).expect("first NACK");
        assert_eq!(size, Bytes::new(1242));
        assert!(matches!(p, Payload::Media { rtx: true, media_seq: 7, .. }));
        assert_eq!(h.retransmit(ms(55), 7), None, "its copy is still in the pacer");
        h.on_sent(ms(60), 7, size, p);
        assert_eq!(h.retransmit(ms(159), 7), None, "retransmitted 99 ms ago, RTT 100 ms");
        assert!(h.retransmit(ms(160), 7).is_some());
        assert_eq!(h.retransmit(ms(160), 8), None, "never sent");
    }

    #[test]
    fn keeps_max_of_one_second_and_three_rtts_then_culls() {
        let mut h = RtxHistory::new();
        h.set_rtt(Duration::from_ms(500)); // 3 × RTT = 1.5 s > 1 s
        h.on_sent(ms(0), 0, Bytes::new(1000), media(0));
        h.on_sent(ms(1), 1, Bytes::new(1000), media(1));
        // Fewer than 600 packets: each is kept until 3 × 1.5 s = 4.5 s after its send.
        h.on_sent(ms(4_499), 2, Bytes::new(1000), media(2));
        assert_eq!(h.len(), 3);
        h.on_sent(ms(4_500), 3, Bytes::new(1000), media(3));
        assert_eq!(h.len(), 3, "packet 0 (sent at 0) is culled at 4.5 s");
        assert_eq!(h.retransmit(ms(4_500), 0), None);
        assert!(h.retransmit(ms(4_500), 1).is_some());
    }

    #[test]
    fn a_full_history_drops_packets_past_the_minimum_age() {
        let mut h = RtxHistory::new();
        for i in 0..600u64 { h.on_sent(ms(i as i64), i, Bytes::new(1000), media(i)); }
        // No RTT known: minimum 1 s. At 1 000 ms packet 0 is old enough and the history full.
        h.on_sent(ms(1_000), 600, Bytes::new(1000), media(600));
        assert_eq!(h.len(), 600);
        assert_eq!(h.retransmit(ms(1_000), 0), None);
        assert!(h.retransmit(ms(1_000), 1).is_some());
    }
}
