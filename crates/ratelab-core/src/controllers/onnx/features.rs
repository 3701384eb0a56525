//! The 150-feature observation of the ACM MMSys 2024 bandwidth-estimation challenge
//! (Microsoft's offline-RL dataset), computed at the receiver from the packets that arrive.
//!
//! 15 features, each over the 5 most recent short monitor intervals (MI, 60 ms) and the 5 most
//! recent long MIs (600 ms): feature `k` (1-based) sits at indices `(k−1)·10 … (k−1)·10+4` for
//! the short MIs and `(k−1)·10+5 … (k−1)·10+9` for the long ones, the most recent MI first.
//! The dataset description defines each feature in one sentence; where it leaves a choice
//! open, the choice made here is written next to the code and in docs/models/mmsys24.md.
//!
//! Implementation: every tick closes one short MI into a [`Bin`] of sums (packets, bytes,
//! delays, inter-arrival gaps, losses, packet kinds); a long MI is the union of the 10 most
//! recent bins ending at its end, so long MIs slide by one short MI per tick (the dataset's
//! observation is produced every 60 ms, and its long MIs are the last 600 ms, 600–1200 ms, …).

use crate::controller::{PacketKind, ReceivedPacket};
use crate::units::{Duration, Time};

/// Number of features per MI.
pub const FEATURES: usize = 15;
/// Short and long MIs per feature.
pub const MIS: usize = 5;
/// Length of the observation vector.
pub const OBS_LEN: usize = FEATURES * 2 * MIS;
/// Short MIs in one long MI (60 ms → 600 ms).
pub const LONG_FACTOR: usize = 10;
/// The challenge's short MI (and its observation period).
pub const SHORT_MI: Duration = Duration::from_ms(60);
/// Fixed base delay the "delay" feature subtracts (dataset description: 200 ms).
pub const BASE_DELAY_MS: f64 = 200.0;

/// Feature numbers (1-based, as in the dataset description).
pub mod feature {
    pub const RECV_RATE: usize = 1;
    pub const RECV_PACKETS: usize = 2;
    pub const RECV_BYTES: usize = 3;
    pub const QUEUING_DELAY: usize = 4;
    pub const DELAY: usize = 5;
    pub const MIN_SEEN_DELAY: usize = 6;
    pub const DELAY_RATIO: usize = 7;
    pub const DELAY_MIN_DIFF: usize = 8;
    pub const INTERARRIVAL: usize = 9;
    pub const JITTER: usize = 10;
    pub const LOSS_RATIO: usize = 11;
    pub const LOST_PER_EVENT: usize = 12;
    pub const VIDEO_FRACTION: usize = 13;
    pub const AUDIO_FRACTION: usize = 14;
    pub const PROBE_FRACTION: usize = 15;
}

/// Index of feature `k` (1-based) over short MI `j` (0 = most recent).
pub const fn short_index(k: usize, j: usize) -> usize { (k - 1) * 10 + j }
/// Index of feature `k` (1-based) over long MI `j` (0 = most recent).
pub const fn long_index(k: usize, j: usize) -> usize { (k - 1) * 10 + MIS + j }

/// Sums over the packets of one short MI.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bin {
    packets: u64,
    bytes: i64,
    delay_sum_ms: f64,
    delay_min_ms: f64,
    /// Gaps between consecutive arrivals inside the bin: count, sum, sum of squares (ms).
    gaps: u64,
    gap_sum: f64,
    gap_sq: f64,
    /// The gap from the last arrival before the bin to its first packet, with that earlier
    /// arrival's time: a long MI counts it when the earlier arrival falls inside the long MI.
    lead_gap: Option<(Time, f64)>,
    lost: u64,
    loss_events: u64,
    video: u64,
    audio: u64,
    probe: u64,
    /// Minimum delay seen since the start, at the end of the bin (`None` before any packet).
    min_seen_ms: Option<f64>,
    /// End of the bin.
    end: Time,
}

impl Bin {
    fn empty(end: Time, min_seen_ms: Option<f64>) -> Bin {
        Bin {
            packets: 0, bytes: 0, delay_sum_ms: 0.0, delay_min_ms: f64::INFINITY, gaps: 0, gap_sum: 0.0, gap_sq: 0.0, lead_gap: None,
            lost: 0, loss_events: 0, video: 0, audio: 0, probe: 0, min_seen_ms, end,
        }
    }
}

/// Accumulates arrivals and produces the 150-value observation every MI.
#[derive(Clone, Debug)]
pub struct Mmsys24Features {
    mi: Duration,
    current: Bin,
    /// Closed bins, most recent last; at most `MIS × LONG_FACTOR`.
    history: std::collections::VecDeque<Bin>,
    last_arrival: Option<Time>,
    highest_seq: Option<u64>,
    min_seen_ms: Option<f64>,
}

impl Mmsys24Features {
    /// Features over MIs of `mi` (the challenge: [`SHORT_MI`]) and `10 × mi`, starting at `start`.
    pub fn new(start: Time, mi: Duration) -> Self {
        let mi = mi.max(Duration::from_ms(1));
        Mmsys24Features { mi, current: Bin::empty(start + mi, None), history: Default::default(), last_arrival: None, highest_seq: None, min_seen_ms: None }
    }

    pub fn mi(&self) -> Duration { self.mi }

    pub fn on_packet(&mut self, p: &ReceivedPacket) {
        let b = &mut self.current;
        b.packets += 1;
        b.bytes += p.size.get();
        // Delay: receive time − the sender's timestamp (a one-way delay; in the dataset the two
        // clocks are not synchronised, so only differences of delays are meaningful).
        let d = (p.recv_time - p.send_time).as_ms_f64();
        b.delay_sum_ms += d;
        b.delay_min_ms = b.delay_min_ms.min(d);
        self.min_seen_ms = Some(self.min_seen_ms.map_or(d, |m| m.min(d)));
        b.min_seen_ms = self.min_seen_ms;
        if let Some(prev) = self.last_arrival {
            let g = (p.recv_time - prev).max(Duration::ZERO).as_ms_f64();
            if b.packets == 1 { b.lead_gap = Some((prev, g)); } else { b.gaps += 1; b.gap_sum += g; b.gap_sq += g * g; }
        }
        self.last_arrival = Some(self.last_arrival.map_or(p.recv_time, |t| t.max(p.recv_time)));
        // Loss from transport-wide sequence numbers: a jump past the highest sequence number
        // seen is a loss event of that many packets. A late (reordered) packet counts as
        // received and does not take back the loss counted when the gap appeared.
        match self.highest_seq {
            Some(h) if p.seq > h => {
                if p.seq > h + 1 { b.lost += p.seq - h - 1; b.loss_events += 1; }
                self.highest_seq = Some(p.seq);
            }
            Some(_) => {}
            None => self.highest_seq = Some(p.seq),
        }
        match p.kind {
            PacketKind::Video => b.video += 1,
            PacketKind::Audio => b.audio += 1,
            PacketKind::Probe => b.probe += 1,
            PacketKind::Padding => {}
        }
    }

    /// Close the current short MI at `now` and return the observation.
    pub fn take(&mut self, now: Time) -> [f32; OBS_LEN] {
        let mut closed = std::mem::replace(&mut self.current, Bin::empty(now + self.mi, self.min_seen_ms));
        closed.end = now;
        closed.min_seen_ms = self.min_seen_ms;
        if self.history.len() == MIS * LONG_FACTOR { self.history.pop_front(); }
        self.history.push_back(closed);
        self.observation()
    }

    /// The observation over the closed MIs (most recent first).
    pub fn observation(&self) -> [f32; OBS_LEN] {
        let mut out = [0f32; OBS_LEN];
        let n = self.history.len();
        for j in 0..MIS {
            // Short MI j: the bin j steps back.
            if let Some(i) = n.checked_sub(1 + j) {
                let v = self.window(i, 1, self.history[i].end - self.mi);
                for (k, x) in v.iter().enumerate() { out[short_index(k + 1, j)] = *x; }
            }
            // Long MI j: the 10 bins ending 10·j steps back (missing bins before the start are empty).
            let end_i = n as i64 - 1 - (LONG_FACTOR * j) as i64;
            if end_i >= 0 {
                let end_i = end_i as usize;
                let start = self.history[end_i].end - self.mi * LONG_FACTOR as i64;
                let v = self.window(end_i, LONG_FACTOR, start);
                for (k, x) in v.iter().enumerate() { out[long_index(k + 1, j)] = *x; }
            }
            // (A long MI that ends before the first tick stays all zero.)
        }
        out
    }

    /// The 15 features of the window made of up to `bins` bins ending at history index `end_i`,
    /// covering `(start, history[end_i].end]`.
    fn window(&self, end_i: usize, bins: usize, start: Time) -> [f32; FEATURES] {
        let first = (end_i + 1).saturating_sub(bins);
        let (mut packets, mut bytes, mut dsum, mut dmin) = (0u64, 0i64, 0.0f64, f64::INFINITY);
        let (mut gaps, mut gsum, mut gsq) = (0u64, 0.0f64, 0.0f64);
        let (mut lost, mut events, mut video, mut audio, mut probe) = (0u64, 0u64, 0u64, 0u64, 0u64);
        for (idx, b) in self.history.range(first..=end_i).enumerate() {
            packets += b.packets;
            bytes += b.bytes;
            dsum += b.delay_sum_ms;
            dmin = dmin.min(b.delay_min_ms);
            gaps += b.gaps;
            gsum += b.gap_sum;
            gsq += b.gap_sq;
            // The gap into this bin belongs to the window when the earlier arrival does (never
            // for the window's first bin of a short MI: a short MI is one bin).
            if let Some((prev, g)) = b.lead_gap {
                if idx > 0 && prev > start { gaps += 1; gsum += g; gsq += g * g; }
            }
            lost += b.lost;
            events += b.loss_events;
            video += b.video;
            audio += b.audio;
            probe += b.probe;
        }
        let end = self.history[end_i];
        let len_s = (end.end - start).as_secs_f64();
        let min_seen = end.min_seen_ms.unwrap_or(0.0);
        let mut f = [0f64; FEATURES];
        let at = |k: usize| k - 1;
        f[at(feature::RECV_RATE)] = if len_s > 0.0 { bytes as f64 * 8.0 / len_s } else { 0.0 };
        f[at(feature::RECV_PACKETS)] = packets as f64;
        f[at(feature::RECV_BYTES)] = bytes as f64;
        f[at(feature::MIN_SEEN_DELAY)] = min_seen;
        if packets > 0 {
            let n = packets as f64;
            let mean = dsum / n;
            f[at(feature::QUEUING_DELAY)] = mean - min_seen;
            f[at(feature::DELAY)] = mean - BASE_DELAY_MS;
            f[at(feature::DELAY_RATIO)] = if dmin > 0.0 { mean / dmin } else { 0.0 };
            f[at(feature::DELAY_MIN_DIFF)] = mean - dmin;
            f[at(feature::VIDEO_FRACTION)] = video as f64 / n;
            f[at(feature::AUDIO_FRACTION)] = audio as f64 / n;
            f[at(feature::PROBE_FRACTION)] = probe as f64 / n;
        }
        if gaps > 0 {
            let mean = gsum / gaps as f64;
            f[at(feature::INTERARRIVAL)] = mean;
            f[at(feature::JITTER)] = (gsq / gaps as f64 - mean * mean).max(0.0).sqrt();
        }
        if lost + packets > 0 { f[at(feature::LOSS_RATIO)] = lost as f64 / (lost + packets) as f64; }
        if events > 0 { f[at(feature::LOST_PER_EVENT)] = lost as f64 / events as f64; }
        f.map(|x| x as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;
    use feature::*;

    fn pkt(seq: u64, send_ms: i64, recv_ms: i64, size: i64, kind: PacketKind) -> ReceivedPacket {
        ReceivedPacket { seq, size: Bytes::new(size), send_time: Time::from_ms(send_ms), recv_time: Time::from_ms(recv_ms), kind }
    }
    fn close(a: f32, b: f64) -> bool { (a as f64 - b).abs() <= 1e-4 * b.abs().max(1.0) }

    #[test]
    fn layout_matches_the_dataset_description() {
        assert_eq!(OBS_LEN, 150);
        assert_eq!(short_index(RECV_RATE, 0), 0);
        assert_eq!(long_index(RECV_RATE, 4), 9);
        assert_eq!(short_index(QUEUING_DELAY, 0), 30);
        assert_eq!(long_index(PROBE_FRACTION, 4), 149);
        assert_eq!(short_index(AUDIO_FRACTION, 2), 132);
    }

    /// One 60-ms MI worked by hand.
    #[test]
    fn hand_worked_short_mi() {
        let mut f = Mmsys24Features::new(Time::ZERO, SHORT_MI);
        // Arrivals at 10, 20, 40, 45 ms; delays 50, 60, 70, 40 ms; seq 0, 1, 4, 5 (2 and 3
        // lost: one loss event of 2); kinds video, audio, probe, padding; 1000/100/500/400 B.
        f.on_packet(&pkt(0, -40, 10, 1000, PacketKind::Video));
        f.on_packet(&pkt(1, -40, 20, 100, PacketKind::Audio));
        f.on_packet(&pkt(4, -30, 40, 500, PacketKind::Probe));
        f.on_packet(&pkt(5, 5, 45, 400, PacketKind::Padding));
        let o = f.take(Time::from_ms(60));
        let s = |k| o[short_index(k, 0)];
        // 2000 B in 60 ms = 266 666.7 bit/s
        assert!(close(s(RECV_RATE), 2000.0 * 8.0 / 0.06));
        assert_eq!(s(RECV_PACKETS), 4.0);
        assert_eq!(s(RECV_BYTES), 2000.0);
        // mean delay (50 + 60 + 70 + 40) / 4 = 55; min seen 40; min in MI 40
        assert!(close(s(QUEUING_DELAY), 15.0));
        assert!(close(s(DELAY), 55.0 - 200.0));
        assert!(close(s(MIN_SEEN_DELAY), 40.0));
        assert!(close(s(DELAY_RATIO), 55.0 / 40.0));
        assert!(close(s(DELAY_MIN_DIFF), 15.0));
        // gaps 10, 20, 5: mean 11.667, population std sqrt(((−1.667)² + 8.333² + (−6.667)²)/3) = 6.2361
        assert!(close(s(INTERARRIVAL), 35.0 / 3.0));
        assert!(close(s(JITTER), ((1.0f64 / 3.0 * (100.0 + 400.0 + 25.0)) - (35.0f64 / 3.0).powi(2)).sqrt()));
        assert!((s(JITTER) as f64 - 6.2361).abs() < 1e-3);
        // 2 lost of 6 sent; one event of 2
        assert!(close(s(LOSS_RATIO), 2.0 / 6.0));
        assert!(close(s(LOST_PER_EVENT), 2.0));
        assert!(close(s(VIDEO_FRACTION), 0.25) && close(s(AUDIO_FRACTION), 0.25) && close(s(PROBE_FRACTION), 0.25));
        // The long MI (600 ms, only this bin so far) holds the same packets over 600 ms.
        let l = |k| o[long_index(k, 0)];
        assert!(close(l(RECV_RATE), 2000.0 * 8.0 / 0.6));
        assert_eq!(l(RECV_PACKETS), 4.0);
        assert!(close(l(INTERARRIVAL), 35.0 / 3.0));
        // Older MIs do not exist yet: all zero.
        for j in 1..MIS { for k in 1..=FEATURES { assert_eq!(o[short_index(k, j)], 0.0); assert_eq!(o[long_index(k, j)], 0.0); } }
    }

    /// MIs shift back by one each tick; long MIs join the gap between bins; an empty MI is all
    /// zero but the minimum seen delay.
    #[test]
    fn shifting_empty_mi_and_gaps_across_bins() {
        let mut f = Mmsys24Features::new(Time::ZERO, SHORT_MI);
        f.on_packet(&pkt(0, 0, 50, 1000, PacketKind::Video));
        f.take(Time::from_ms(60));
        f.on_packet(&pkt(1, 60, 80, 1000, PacketKind::Video)); // delay 20 → new minimum
        f.on_packet(&pkt(3, 70, 110, 1000, PacketKind::Video)); // seq 2 lost
        let o = f.take(Time::from_ms(120));
        // Short MI 0 = second bin: one gap inside (30 ms); the 30-ms gap from 50 → 80 belongs to no short MI.
        assert_eq!(o[short_index(RECV_PACKETS, 0)], 2.0);
        assert!(close(o[short_index(INTERARRIVAL, 0)], 30.0));
        assert_eq!(o[short_index(JITTER, 0)], 0.0);
        assert!(close(o[short_index(MIN_SEEN_DELAY, 0)], 20.0));
        assert!(close(o[short_index(QUEUING_DELAY, 0)], 30.0 - 20.0));
        assert!(close(o[short_index(LOSS_RATIO, 0)], 1.0 / 3.0));
        // Short MI 1 = first bin, as it was (min seen delay at its end: 50).
        assert_eq!(o[short_index(RECV_PACKETS, 1)], 1.0);
        assert!(close(o[short_index(MIN_SEEN_DELAY, 1)], 50.0));
        assert_eq!(o[short_index(INTERARRIVAL, 1)], 0.0);
        // Long MI 0 spans both bins: gaps 30 (across the bins) and 30 → mean 30, jitter 0; 3 packets.
        assert_eq!(o[long_index(RECV_PACKETS, 0)], 3.0);
        assert!(close(o[long_index(INTERARRIVAL, 0)], 30.0));
        assert!(close(o[long_index(RECV_RATE, 0)], 3000.0 * 8.0 / 0.6));
        assert!(close(o[long_index(QUEUING_DELAY, 0)], (50.0 + 20.0 + 40.0) / 3.0 - 20.0));
        assert!(close(o[long_index(DELAY_RATIO, 0)], ((50.0 + 20.0 + 40.0) / 3.0) / 20.0));
        // An empty MI: zeros, but the minimum seen delay carries on.
        let o = f.take(Time::from_ms(180));
        for k in 1..=FEATURES { if k != MIN_SEEN_DELAY { assert_eq!(o[short_index(k, 0)], 0.0, "feature {k}"); } }
        assert!(close(o[short_index(MIN_SEEN_DELAY, 0)], 20.0));
        assert_eq!(o[short_index(RECV_PACKETS, 2)], 1.0);
    }

    /// Long MI j covers bins 10j … 10j+9 back; after 50 ticks the oldest bins drop out.
    #[test]
    fn long_mis_slide_by_one_short_mi() {
        let mut f = Mmsys24Features::new(Time::ZERO, SHORT_MI);
        let mut o = [0f32; OBS_LEN];
        // k packets in the bin that ends at tick k (k = 1..=55), each 100 B.
        let mut seq = 0;
        for k in 1..=55u64 {
            for i in 0..k { f.on_packet(&pkt(seq, 0, (k as i64 - 1) * 60 + 1 + i as i64 % 50, 100, PacketKind::Video)); seq += 1; }
            o = f.take(Time::from_ms(60 * k as i64));
        }
        for j in 0..MIS {
            assert_eq!(o[short_index(RECV_PACKETS, j)], (55 - j) as f32);
            // long MI j: ticks 55−10j−9 ..= 55−10j
            let hi = 55 - 10 * j as u64;
            let want: u64 = (hi - 9..=hi).sum();
            assert_eq!(o[long_index(RECV_PACKETS, j)], want as f32, "long MI {j}");
            assert_eq!(o[long_index(LOSS_RATIO, j)], 0.0);
        }
    }

    #[test]
    fn late_packet_counts_as_received() {
        let mut f = Mmsys24Features::new(Time::ZERO, SHORT_MI);
        f.on_packet(&pkt(0, 0, 10, 100, PacketKind::Video));
        f.on_packet(&pkt(2, 0, 20, 100, PacketKind::Video)); // gap: 1 lost
        f.on_packet(&pkt(1, 0, 30, 100, PacketKind::Video)); // late
        let o = f.take(Time::from_ms(60));
        assert!(close(o[short_index(LOSS_RATIO, 0)], 1.0 / 4.0));
        assert_eq!(o[short_index(RECV_PACKETS, 0)], 3.0);
    }
}
