//! Piecewise-constant link capacity over time (constant, stepped or trace-driven), with the
//! one query the link needs: when does a transmission of N bytes that starts at t end?

use crate::units::{div_i128, Bitrate, Bytes, Duration, Time};

#[derive(Clone, Debug)]
pub struct CapacitySchedule {
    /// (start, rate) steps; the first starts at 0; each applies until the next.
    steps: Vec<(Time, Bitrate)>,
    /// Loop period (a looped trace restarts at this time); `None` holds the last rate forever.
    period: Option<Duration>,
    /// Absolute time of the schedule's time 0 (a route change's new link starts its steps
    /// and its trace when it takes over).
    origin: Duration,
}

impl CapacitySchedule {
    pub fn constant(rate: Bitrate) -> Self { CapacitySchedule { steps: vec![(Time::ZERO, rate)], period: None, origin: Duration::ZERO } }

    /// Steps must start at increasing times; a schedule not starting at 0 gets its first rate from 0.
    pub fn stepped(mut steps: Vec<(Time, Bitrate)>, period: Option<Duration>) -> Self {
        if steps.is_empty() { steps.push((Time::ZERO, Bitrate::ZERO)); }
        steps[0].0 = Time::ZERO;
        let period = period.filter(|p| p.as_us() > 0);
        CapacitySchedule { steps, period, origin: Duration::ZERO }
    }

    pub fn steps(&self) -> &[(Time, Bitrate)] { &self.steps }

    /// The same schedule started at absolute time `origin` (its steps count from there).
    pub fn starting_at(mut self, origin: Time) -> Self {
        self.origin = origin - Time::ZERO;
        self
    }

    /// Map an absolute time to (index of the step, absolute start of its loop).
    fn locate(&self, t: Time) -> (usize, Time) {
        let (t, origin) = (t - self.origin, self.origin);
        let (local, base) = match self.period {
            Some(p) => {
                let k = t.as_us().div_euclid(p.as_us());
                (Time::from_us(t.as_us() - k * p.as_us()), Time::from_us(k * p.as_us()))
            }
            None => (t, Time::ZERO),
        };
        let i = self.steps.partition_point(|(s, _)| *s <= local).saturating_sub(1);
        (i, base + origin)
    }

    pub fn rate_at(&self, t: Time) -> Bitrate { let (i, _) = self.locate(t); self.steps[i].1 }

    /// End of the step containing t (absolute time), `Time::MAX` if the rate never changes again.
    pub fn next_change_after(&self, t: Time) -> Time {
        let (i, base) = self.locate(t);
        if i + 1 < self.steps.len() { return base + (self.steps[i + 1].0 - Time::ZERO); }
        match self.period { Some(p) => base + p, None => Time::MAX }
    }

    /// Time at which a transmission of `size` starting at `start` completes, integrating the
    /// capacity across steps (a zero-capacity step simply stalls the transmission).
    pub fn transmit_end(&self, start: Time, size: Bytes) -> Time {
        let mut t = start;
        let mut bits_left = size.bits() as i128 * 1_000_000; // bit·µs units to stay exact
        for _ in 0..1_000_000 {
            let rate = self.rate_at(t).bps() as i128;
            let end = self.next_change_after(t);
            if rate > 0 {
                let need_us = div_i128(bits_left + rate - 1, rate);
                if end == Time::MAX || t.as_us() as i128 + need_us <= end.as_us() as i128 {
                    return Time::from_us((t.as_us() as i128 + need_us) as i64);
                }
                bits_left -= rate * (end - t).as_us() as i128;
            } else if end == Time::MAX {
                return Time::MAX;
            }
            t = end;
        }
        Time::MAX
    }

    /// Mean capacity over [from, to).
    pub fn mean_over(&self, from: Time, to: Time) -> Bitrate {
        if to <= from { return self.rate_at(from); }
        let mut acc: i128 = 0;
        let mut t = from;
        while t < to {
            let end = self.next_change_after(t).min(to);
            acc += self.rate_at(t).bps() as i128 * (end - t).as_us() as i128;
            t = end;
        }
        Bitrate::from_bps(div_i128(acc, (to - from).as_us() as i128) as i64)
    }

    /// Bytes the link could carry over [from, to).
    pub fn bytes_over(&self, from: Time, to: Time) -> Bytes { self.mean_over(from, to) * (to - from) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmit_across_steps() {
        // 1 Mbit/s for 10 ms then 2 Mbit/s: 3000 bytes = 24000 bits; 10000 bits in the first
        // 10 ms, 14000 bits at 2 Mbit/s = 7 ms -> ends at 17 ms.
        let s = CapacitySchedule::stepped(vec![(Time::ZERO, Bitrate::from_kbps(1000)), (Time::from_ms(10), Bitrate::from_kbps(2000))], None);
        assert_eq!(s.transmit_end(Time::ZERO, Bytes::new(3000)), Time::from_ms(17));
        assert_eq!(s.transmit_end(Time::from_ms(20), Bytes::new(250)), Time::from_ms(21));
    }

    #[test]
    fn a_schedule_started_later_counts_its_steps_from_there() {
        // 1 Mbit/s, 2 Mbit/s from 10 ms, started at 1 s: the step is at 1.010 s.
        let s = CapacitySchedule::stepped(vec![(Time::ZERO, Bitrate::from_kbps(1000)), (Time::from_ms(10), Bitrate::from_kbps(2000))], None).starting_at(Time::from_ms(1000));
        assert_eq!(s.rate_at(Time::from_ms(1009)), Bitrate::from_kbps(1000));
        assert_eq!(s.rate_at(Time::from_ms(1010)), Bitrate::from_kbps(2000));
        assert_eq!(s.transmit_end(Time::from_ms(1000), Bytes::new(3000)), Time::from_ms(1017));
        // Looped with a 200 ms period from 1 s: 1.2 s is the start of the second loop.
        let l = CapacitySchedule::stepped(vec![(Time::ZERO, Bitrate::ZERO), (Time::from_ms(100), Bitrate::from_kbps(800))], Some(Duration::from_ms(200))).starting_at(Time::from_ms(1000));
        assert_eq!(l.rate_at(Time::from_ms(1150)), Bitrate::from_kbps(800));
        assert_eq!(l.rate_at(Time::from_ms(1250)), Bitrate::ZERO);
        assert_eq!(l.transmit_end(Time::from_ms(1250), Bytes::new(1000)), Time::from_ms(1310));
    }

    #[test]
    fn zero_capacity_stalls_and_loops() {
        let s = CapacitySchedule::stepped(vec![(Time::ZERO, Bitrate::ZERO), (Time::from_ms(100), Bitrate::from_kbps(800))], Some(Duration::from_ms(200)));
        // a packet at 0 waits for 100 ms, then 1000 B at 800 kbit/s = 10 ms
        assert_eq!(s.transmit_end(Time::ZERO, Bytes::new(1000)), Time::from_ms(110));
        // in the second loop the zero step is 200..300 ms
        assert_eq!(s.rate_at(Time::from_ms(250)), Bitrate::ZERO);
        assert_eq!(s.transmit_end(Time::from_ms(250), Bytes::new(1000)), Time::from_ms(310));
        assert_eq!(s.mean_over(Time::ZERO, Time::from_ms(400)), Bitrate::from_kbps(400));
        let dead = CapacitySchedule::constant(Bitrate::ZERO);
        assert_eq!(dead.transmit_end(Time::ZERO, Bytes::new(1)), Time::MAX);
    }
}
