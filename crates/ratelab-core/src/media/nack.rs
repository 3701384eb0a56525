//! Receiver-side NACK list (`media.nack`): which media packets are missing and when to ask the
//! sender for them again, as libwebrtc's `NackRequester` does
//! (modules/video_coding/nack_requester.cc, read on the ajune-wang/webrtc mirror, 2024):
//!
//! * a packet whose RTP sequence number skips ahead puts every skipped number on the list, and
//!   they are NACKed at once: the send delay is 0 (`kDefaultSendNackDelay`, field trial
//!   "WebRTC-SendNackDelayMs" unset) and the reordering wait is 0 packets (the reordering
//!   histogram is never fed: `is_retransmitted` is hard-wired to true upstream);
//! * every 20 ms (`NackPeriodicProcessor::kUpdateInterval`) an entry whose last NACK is at least
//!   one RTT old is NACKed again (RTT 100 ms, `kDefaultRtt`, until one is known);
//! * after the 10th NACK (`kMaxNackRetries`) an entry leaves the list: the packet is given up;
//! * entries more than 10 000 numbers behind the newest leave (`kMaxPacketAge`); a list that
//!   would exceed 1000 entries (`kMaxNackPackets`) first drops everything before the newest
//!   key frame it knows, and if still too long is cleared and a key frame requested;
//! * a packet arriving out of order leaves the list (its frame can complete);
//! * `clear_up_to` drops entries before a frame that became decodable on its own (upstream:
//!   `RtpVideoStreamReceiver2::FrameContinuous` → `ClearUpTo`), which is how a complete key
//!   frame makes older requests useless.
//!
//! Sequence numbers are the flow's unwrapped media (RTP) sequence, so no 16-bit wrap logic
//! (with unwrapped numbers and the 1000-entry bound, the 10 000 age bound is kept for
//! faithfulness but a list never spans that far).

use crate::units::{Duration, Time};
use std::collections::{BTreeMap, BTreeSet};

pub const DEFAULT_RTT: Duration = Duration::from_ms(100);
pub const MAX_NACK_RETRIES: u32 = 10;
pub const MAX_NACK_PACKETS: usize = 1000;
pub const MAX_PACKET_AGE: u64 = 10_000;
/// `NackPeriodicProcessor::kUpdateInterval`: how often the time-based re-sends are checked.
pub const PROCESS_INTERVAL: Duration = Duration::from_ms(20);

#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    /// When it was last NACKed (`None`: not yet).
    sent: Option<Time>,
    retries: u32,
}

/// What an arriving packet was to the NACK list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrived {
    /// The newest packet so far (any gap before it is now on the list).
    New,
    /// An older packet that was on the list: a retransmission or a late original.
    Recovered,
    /// An older packet that was not on the list (a second copy, or one already given up).
    Stale,
}

#[derive(Debug, Default)]
pub struct NackList {
    newest: Option<u64>,
    list: BTreeMap<u64, Entry>,
    keyframes: BTreeSet<u64>,
    rtt: Option<Duration>,
    /// Packets given up after [`MAX_NACK_RETRIES`] NACKs.
    pub given_up: u64,
    /// Times the list overflowed and libwebrtc would have asked for a key frame.
    pub keyframe_requests: u64,
}

impl NackList {
    pub fn new() -> Self { Self::default() }

    pub fn update_rtt(&mut self, rtt: Duration) { self.rtt = Some(rtt.max(Duration::ZERO)); }
    pub fn rtt(&self) -> Duration { self.rtt.unwrap_or(DEFAULT_RTT) }
    pub fn len(&self) -> usize { self.list.len() }
    pub fn is_empty(&self) -> bool { self.list.is_empty() }
    /// The oldest packet still being asked for.
    pub fn oldest_missing(&self) -> Option<u64> { self.list.keys().next().copied() }
    pub fn contains(&self, seq: u64) -> bool { self.list.contains_key(&seq) }
    /// Whether `seq` has not arrived as far as the list knows: on the list, or past the newest.
    pub fn awaits(&self, seq: u64) -> bool { self.contains(seq) || self.newest.is_none_or(|n| seq > n) }

    /// Media packet `seq` arrived at `now` (the first packet of a key frame: `keyframe`).
    /// NACKs due at once are appended to `batch`.
    pub fn on_packet(&mut self, now: Time, seq: u64, keyframe: bool, batch: &mut Vec<u64>) -> Arrived {
        let Some(newest) = self.newest else {
            self.newest = Some(seq);
            if keyframe { self.keyframes.insert(seq); }
            return Arrived::New;
        };
        if seq == newest { return Arrived::Stale; }
        if seq < newest {
            return if self.list.remove(&seq).is_some() { Arrived::Recovered } else { Arrived::Stale };
        }
        if keyframe { self.keyframes.insert(seq); }
        let floor = seq.saturating_sub(MAX_PACKET_AGE);
        self.keyframes = self.keyframes.split_off(&floor);
        self.add_missing(newest + 1, seq);
        self.newest = Some(seq);
        // Send delay 0 and reordering wait 0: every entry not yet NACKed is due now.
        for (&s, e) in self.list.iter_mut() {
            if e.sent.is_none() {
                e.sent = Some(now);
                e.retries += 1;
                batch.push(s);
            }
        }
        self.drop_exhausted();
        Arrived::New
    }

    /// The periodic check at `now`: entries last NACKed at least one RTT ago, again.
    pub fn process(&mut self, now: Time, batch: &mut Vec<u64>) {
        let rtt = self.rtt();
        for (&s, e) in self.list.iter_mut() {
            if e.sent.is_none_or(|t| now - t >= rtt) {
                e.sent = Some(now);
                e.retries += 1;
                batch.push(s);
            }
        }
        self.drop_exhausted();
    }

    /// Forget every request before `seq` (a frame from `seq` on decodes without them).
    pub fn clear_up_to(&mut self, seq: u64) {
        self.list = self.list.split_off(&seq);
        self.keyframes = self.keyframes.split_off(&seq);
    }

    fn drop_exhausted(&mut self) {
        let before = self.list.len();
        self.list.retain(|_, e| e.retries < MAX_NACK_RETRIES);
        self.given_up += (before - self.list.len()) as u64;
    }

    /// Put `[start, end)` on the list, within the age and size bounds.
    fn add_missing(&mut self, start: u64, end: u64) {
        if start >= end { return; }
        self.list = self.list.split_off(&end.saturating_sub(MAX_PACKET_AGE));
        let new = (end - start) as usize;
        if self.list.len() + new > MAX_NACK_PACKETS {
            while self.list.len() + new > MAX_NACK_PACKETS && self.remove_until_keyframe() {}
            if self.list.len() + new > MAX_NACK_PACKETS {
                self.list.clear();
                self.keyframe_requests += 1;
                return;
            }
        }
        for s in start..end { self.list.insert(s, Entry { sent: None, retries: 0 }); }
    }

    /// Drop the entries before the oldest known key frame that is newer than one of them
    /// (upstream `RemovePacketsUntilKeyFrame`).
    fn remove_until_keyframe(&mut self) -> bool {
        while let Some(&k) = self.keyframes.iter().next() {
            if self.list.keys().next().is_some_and(|&s| s < k) {
                self.list = self.list.split_off(&k);
                return true;
            }
            self.keyframes.remove(&k);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: i64) -> Time { Time::from_ms(t) }

    fn arrive(n: &mut NackList, t: i64, seq: u64) -> Vec<u64> {
        let mut b = vec![];
        n.on_packet(ms(t), seq, false, &mut b);
        b
    }

    #[test]
    fn a_gap_is_nacked_at_once() {
        // libwebrtc NackRequesterTest.NackForMissingPackets-like: 0, then 3 → 1 and 2 at once.
        let mut n = NackList::new();
        assert!(arrive(&mut n, 0, 0).is_empty());
        assert!(arrive(&mut n, 1, 1).is_empty());
        assert_eq!(arrive(&mut n, 2, 4), vec![2, 3]);
        assert_eq!(n.oldest_missing(), Some(2));
        // The next in-order packet sends nothing new.
        assert!(arrive(&mut n, 3, 5).is_empty());
    }

    #[test]
    fn resent_every_rtt_then_given_up_after_ten() {
        let mut n = NackList::new();
        arrive(&mut n, 0, 0);
        assert_eq!(arrive(&mut n, 0, 2), vec![1]);
        // Default RTT 100 ms: nothing at 20..80 ms, again at 100 ms.
        let mut b = vec![];
        for t in (20..100).step_by(20) { n.process(ms(t), &mut b); }
        assert!(b.is_empty());
        n.process(ms(100), &mut b);
        assert_eq!(b, vec![1]);
        // With a 40 ms RTT the next is due 40 ms after the last.
        n.update_rtt(Duration::from_ms(40));
        b.clear();
        n.process(ms(120), &mut b);
        assert!(b.is_empty());
        n.process(ms(140), &mut b);
        assert_eq!(b, vec![1]);
        // 3 NACKs so far; 7 more, then it is gone.
        b.clear();
        let mut t = 140;
        while n.contains(1) { t += 40; n.process(ms(t), &mut b); }
        assert_eq!(b.len(), 7);
        assert_eq!(n.given_up, 1);
        assert_eq!(t, 140 + 7 * 40);
    }

    #[test]
    fn a_reordered_or_retransmitted_packet_leaves_the_list_once() {
        let mut n = NackList::new();
        arrive(&mut n, 0, 10);
        arrive(&mut n, 1, 13);
        let mut b = vec![];
        assert_eq!(n.on_packet(ms(2), 12, false, &mut b), Arrived::Recovered);
        assert_eq!(n.on_packet(ms(3), 12, false, &mut b), Arrived::Stale, "a second copy");
        assert_eq!(n.on_packet(ms(3), 13, false, &mut b), Arrived::Stale, "the newest again");
        assert!(b.is_empty());
        assert_eq!(n.oldest_missing(), Some(11));
        n.process(ms(200), &mut b);
        assert_eq!(b, vec![11]);
    }

    #[test]
    fn a_decodable_key_frame_clears_older_requests() {
        let mut n = NackList::new();
        arrive(&mut n, 0, 0);
        arrive(&mut n, 1, 5); // 1..=4 missing
        n.clear_up_to(3);
        assert_eq!(n.oldest_missing(), Some(3));
        assert_eq!(n.len(), 2);
    }

    #[test]
    fn overflow_drops_up_to_a_key_frame_or_clears() {
        let mut n = NackList::new();
        let mut b = vec![];
        n.on_packet(ms(0), 0, false, &mut b);
        n.on_packet(ms(1), 601, false, &mut b); // 1..=600 missing
        n.on_packet(ms(2), 602, true, &mut b); // a key frame's first packet
        n.on_packet(ms(3), 1003, false, &mut b); // 603..=1002: 1000 entries, at the bound
        assert_eq!(n.len(), 1000);
        // One more would make 1001: everything before the key frame (600 entries) goes.
        n.on_packet(ms(4), 1005, false, &mut b);
        assert_eq!(n.len(), 401);
        assert_eq!(n.oldest_missing(), Some(603));
        assert_eq!(n.keyframe_requests, 0);
        // No key frame left to cut at: 700 more clear the list and ask for a key frame.
        n.on_packet(ms(5), 1706, false, &mut b);
        assert!(n.is_empty());
        assert_eq!(n.keyframe_requests, 1);
    }
}
