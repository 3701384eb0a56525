//! The send times the congestion controller is told (`media.send_time_resolution_ms`,
//! `media.burst_spacing_us`), as a real sender records them.
//!
//! The simulator's pacer releases a burst of packets at one instant. A real one cannot: each
//! packet costs the host some microseconds to protect and hand to the socket (Chromium 156 on
//! the fidelity study's 2-core host: a median 38 µs between the packets of a burst, train
//! calls' packet records), and libwebrtc records the time a packet left in **whole
//! milliseconds** (`SentPacketInfo::send_time_ms`, read by `TransportFeedbackAdapter::
//! ProcessSentPacket`). Both matter to the delay-based estimator. Behind a congested queue,
//! `InterArrivalDelta` merges each burst into the group before it (its packets arrive sooner
//! after the group than they were sent), up to the 100 ms burst limit, unless a packet's send
//! gap is shorter than its arrival gap: then a group older than 5 ms ends. A burst at one
//! instant never has such a packet; a real one that straddles a millisecond boundary does (a
//! 1 ms send gap against a packet's serialization time), so its groups stay short
//! (docs/fidelity.md, round 10). The wire is unchanged: only the recorded time moves.

use crate::units::{Duration, Time};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SendClock {
    /// The recorded time is rounded down to a multiple of this; zero: exact.
    resolution: Duration,
    /// The k-th packet released at one instant is recorded k × this later.
    spacing: Duration,
    /// The instant of the last release, and how many packets it has released.
    instant: Option<Time>,
    released: i64,
}

impl SendClock {
    pub fn new(resolution: Duration, spacing: Duration) -> Self {
        SendClock { resolution: resolution.max(Duration::ZERO), spacing: spacing.max(Duration::ZERO), instant: None, released: 0 }
    }

    /// Whether the clock changes anything (both settings zero: the release time itself).
    pub fn is_exact(&self) -> bool { self.resolution == Duration::ZERO && self.spacing == Duration::ZERO }

    /// The send time recorded for a packet released at `now`.
    pub fn stamp(&mut self, now: Time) -> Time {
        if self.is_exact() { return now; }
        if self.instant == Some(now) {
            self.released += 1;
        } else {
            self.instant = Some(now);
            self.released = 0;
        }
        let t = now.as_us() + self.released * self.spacing.as_us();
        let res = self.resolution.as_us();
        Time::from_us(if res > 0 { t.div_euclid(res) * res } else { t })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_by_default() {
        let mut c = SendClock::default();
        assert!(c.is_exact());
        for t in [1_234, 1_234, 1_234, 9_999] { assert_eq!(c.stamp(Time::from_us(t)), Time::from_us(t)); }
    }

    #[test]
    fn a_burst_is_spread_then_rounded_down_to_whole_milliseconds() {
        // 40 µs apart from 10.900 ms: 10.900, 10.940, ..., the 4th (11.020) crosses into 11 ms.
        let mut c = SendClock::new(Duration::from_ms(1), Duration::from_us(40));
        let at = Time::from_us(10_900);
        let got: Vec<i64> = (0..5).map(|_| c.stamp(at).as_us()).collect();
        assert_eq!(got, vec![10_000, 10_000, 10_000, 11_000, 11_000]);
        // a new instant starts a new burst
        assert_eq!(c.stamp(Time::from_us(15_000)), Time::from_ms(15));
        assert_eq!(c.stamp(Time::from_us(15_000)), Time::from_ms(15));
    }

    #[test]
    fn spacing_alone_keeps_microseconds_and_resolution_alone_keeps_the_burst_together() {
        let mut c = SendClock::new(Duration::ZERO, Duration::from_us(30));
        let t = Time::from_us(500);
        assert_eq!((c.stamp(t), c.stamp(t), c.stamp(t)), (Time::from_us(500), Time::from_us(530), Time::from_us(560)));
        let mut c = SendClock::new(Duration::from_ms(1), Duration::ZERO);
        assert_eq!((c.stamp(Time::from_us(1_999)), c.stamp(Time::from_us(1_999))), (Time::from_ms(1), Time::from_ms(1)));
    }
}
