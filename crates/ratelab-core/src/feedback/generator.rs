//! Receiver-side feedback (spec 1.2): TWCC-style reports every interval listing, for a
//! contiguous range of transport sequence numbers, whether each packet arrived and when (at
//! 250 µs resolution), or one acknowledgement per packet on arrival.

use crate::units::{Duration, Time};

/// TWCC receive-delta resolution.
pub const TWCC_TICK: Duration = Duration::from_us(250);

/// One feedback report: `arrivals[i]` is the fate of sequence number `base_seq + i`.
/// Most sequence numbers one report covers (a TWCC packet status count is 16 bits).
pub const MAX_REPORT_SPAN: u64 = 1 << 16;

#[derive(Clone, Debug, PartialEq)]
pub struct FeedbackReport {
    /// When the receiver generated the report.
    pub report_time: Time,
    pub base_seq: u64,
    pub arrivals: Vec<Option<Time>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeneratorMode { Twcc, PerPacket }

pub struct FeedbackGenerator {
    mode: GeneratorMode,
    interval: Duration,
    /// First sequence number not yet covered by a report.
    next_base: Option<u64>,
    /// Arrivals since the last report (seq, quantized arrival), in arrival order.
    pending: Vec<(u64, Time)>,
}

impl FeedbackGenerator {
    pub fn new(mode: GeneratorMode, interval: Duration) -> Self {
        FeedbackGenerator { mode, interval, next_base: None, pending: Vec::new() }
    }

    pub fn interval(&self) -> Duration { self.interval }
    pub fn mode(&self) -> GeneratorMode { self.mode }
    pub fn has_pending(&self) -> bool { !self.pending.is_empty() }

    /// A packet with transport sequence `seq` arrived at `now`. In per-packet mode this returns
    /// the acknowledgement to send right away.
    pub fn on_packet(&mut self, now: Time, seq: u64) -> Option<FeedbackReport> {
        match self.mode {
            GeneratorMode::Twcc => {
                let q = Time::from_us(now.as_us() - now.as_us().rem_euclid(TWCC_TICK.as_us()));
                self.pending.push((seq, q));
                None
            }
            GeneratorMode::PerPacket => {
                self.pending.push((seq, now));
                self.build(now)
            }
        }
    }

    /// Periodic report (TWCC mode). `None` if nothing arrived since the last report.
    pub fn on_timer(&mut self, now: Time) -> Option<FeedbackReport> { self.build(now) }

    fn build(&mut self, now: Time) -> Option<FeedbackReport> {
        if self.pending.is_empty() { return None; }
        let max_seq = self.pending.iter().map(|p| p.0).max()?;
        let min_seq = self.pending.iter().map(|p| p.0).min()?;
        // Packets older than the last report's range were already reported missing; a late
        // arrival is reported again on its own (the sender then un-loses it).
        let mut base = match self.next_base { Some(b) => b.min(min_seq), None => min_seq };
        // Bound the report: a sequence number far ahead (a burst of losses, or a bogus packet)
        // must not make the receiver allocate without limit. Older arrivals are dropped.
        if max_seq - base >= MAX_REPORT_SPAN { base = max_seq + 1 - MAX_REPORT_SPAN; self.pending.retain(|p| p.0 >= base); }
        let span = (max_seq - base + 1) as usize;
        let mut arrivals = vec![None; span];
        for &(seq, t) in &self.pending { arrivals[(seq - base) as usize] = Some(t); }
        self.pending.clear();
        self.next_base = Some(self.next_base.map_or(max_seq + 1, |b| b.max(max_seq + 1)));
        Some(FeedbackReport { report_time: now, base_seq: base, arrivals })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twcc_report_lists_range_with_losses_and_quantized_times() {
        let mut g = FeedbackGenerator::new(GeneratorMode::Twcc, Duration::from_ms(50));
        assert!(g.on_packet(Time::from_us(10_130), 0).is_none());
        g.on_packet(Time::from_us(20_260), 1);
        g.on_packet(Time::from_us(40_999), 3); // 2 lost
        let r = g.on_timer(Time::from_ms(50)).unwrap();
        assert_eq!(r.base_seq, 0);
        assert_eq!(r.arrivals, vec![Some(Time::from_us(10_000)), Some(Time::from_us(20_250)), None, Some(Time::from_us(40_750))]);
        assert!(g.on_timer(Time::from_ms(100)).is_none());
        g.on_packet(Time::from_ms(120), 5);
        let r = g.on_timer(Time::from_ms(150)).unwrap();
        assert_eq!((r.base_seq, r.arrivals.clone()), (4, vec![None, Some(Time::from_ms(120))]));
    }

    #[test]
    fn report_span_is_bounded() {
        let mut g = FeedbackGenerator::new(GeneratorMode::Twcc, Duration::from_ms(50));
        g.on_packet(Time::from_ms(1), 0);
        g.on_packet(Time::from_ms(2), 10_000_000);
        let r = g.on_timer(Time::from_ms(50)).unwrap();
        assert_eq!(r.arrivals.len() as u64, MAX_REPORT_SPAN);
        assert_eq!(r.base_seq, 10_000_000 + 1 - MAX_REPORT_SPAN);
        assert_eq!(r.arrivals.last(), Some(&Some(Time::from_ms(2))));
    }

    #[test]
    fn per_packet_acks_are_immediate_and_exact() {
        let mut g = FeedbackGenerator::new(GeneratorMode::PerPacket, Duration::from_ms(50));
        let r = g.on_packet(Time::from_us(1_001), 0).unwrap();
        assert_eq!(r.arrivals, vec![Some(Time::from_us(1_001))]);
        let r = g.on_packet(Time::from_us(2_002), 2).unwrap();
        assert_eq!((r.base_seq, r.arrivals), (1, vec![None, Some(Time::from_us(2_002))]));
    }
}
