//! FEC under NACK (libwebrtc's hybrid NACK/FEC, `media.fec` and `media.nack` together): a
//! packet FEC repairs leaves the NACK list, as `NackRequester::OnReceivedPacket(.., is_recovered)`
//! does, so it is not retransmitted and no longer holds later frames back. The idealised
//! recovery (recovery.rs) repairs by frame while the NACK list counts media sequence numbers;
//! [`FrameSeqs`] places each repaired frame on the sequence-number line.

use std::collections::BTreeMap;

/// Frames further than this behind the newest are forgotten (recovery.rs keeps as many).
const KEEP_FRAMES: u64 = 256;

/// Media sequence numbers of recent frames: `frame → (first seq, packets)`.
#[derive(Default, Debug)]
pub struct FrameSeqs {
    frames: BTreeMap<u64, (u64, u16)>,
}

impl FrameSeqs {
    pub fn new() -> Self { Self::default() }

    /// A packet of `frame` arrived; the frame's packets are `first_seq .. first_seq + count`.
    pub fn on_packet(&mut self, frame: u64, first_seq: u64, count: u16) {
        if self.frames.insert(frame, (first_seq, count)).is_none() {
            let newest = self.frames.keys().next_back().copied().unwrap_or(frame);
            if newest >= KEEP_FRAMES { self.frames = self.frames.split_off(&(newest - KEEP_FRAMES)); }
        }
    }

    /// The sequence numbers of a repaired frame: its own when a packet of it arrived; for a frame
    /// none of whose packets arrived, the gap between its two neighbours when both are known.
    /// `None`: it cannot be placed, and its packets are left to the NACKs (a conservative gap in
    /// the model: a run of two or more wholly lost frames is repaired by retransmission only).
    pub fn place(&mut self, frame: u64) -> Option<(u64, u16)> {
        if let Some(&r) = self.frames.get(&frame) { return Some(r); }
        let &(prev_first, prev_count) = self.frames.get(&frame.checked_sub(1)?)?;
        let &(next_first, _) = self.frames.get(&(frame + 1))?;
        let first = prev_first + prev_count as u64;
        let count = u16::try_from(next_first.checked_sub(first)?).ok().filter(|&c| c > 0)?;
        self.frames.insert(frame, (first, count));
        Some((first, count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_placed_by_its_own_packets_or_between_two_known_neighbours() {
        let mut s = FrameSeqs::new();
        s.on_packet(10, 100, 3); // 100..103
        s.on_packet(12, 107, 2); // 107..109: frame 11 held 103..107
        s.on_packet(14, 111, 1);
        assert_eq!(s.place(10), Some((100, 3)));
        assert_eq!(s.place(11), Some((103, 4)));
        // 13 lies between 12 (107, 2) and 14 (111): 109, 110
        assert_eq!(s.place(13), Some((109, 2)));
        // 15 has no known successor, 9 no known predecessor
        assert_eq!(s.place(15), None);
        assert_eq!(s.place(9), None);
    }

    #[test]
    fn neighbours_without_room_between_them_place_nothing() {
        let mut s = FrameSeqs::new();
        s.on_packet(1, 0, 2);
        s.on_packet(3, 2, 1); // frame 2 would have no packets
        assert_eq!(s.place(2), None);
    }

    #[test]
    fn old_frames_are_forgotten() {
        let mut s = FrameSeqs::new();
        for f in 0..1000 { s.on_packet(f, f * 2, 2); }
        assert!(s.frames.len() <= KEEP_FRAMES as usize + 1);
        assert_eq!(s.place(999), Some((1998, 2)));
        assert_eq!(s.place(5), None);
    }
}
