//! Send-time grouping for the delay-based estimator (spec 2.3, libwebrtc `inter_arrival_delta.cc`).
//!
//! Packets are fed in arrival order. Packets whose send time lies within `group_length` (5 ms) of
//! the first packet of the current group form one *send-time group*; a packet sent later also
//! joins the group when it belongs to the same burst (it arrived with a negative propagation
//! delta, at most 5 ms after the group's last arrival, and the group has lasted < 100 ms in
//! arrival time). When a new group starts, the previous two complete groups give one sample
//! `(Δs, Δa)` for the trendline estimator (2.4).

use crate::units::{Bytes, Duration, Time};

/// `kSendTimeGroupLength` (spec 2.15).
pub const SEND_TIME_GROUP_LENGTH: Duration = Duration::from_ms(5);
/// Maximum arrival gap inside a burst (spec 2.3 / 2.15).
const BURST_DELTA_THRESHOLD: Duration = Duration::from_ms(5);
/// Maximum arrival-time extent of a burst (spec 2.3 / 2.15).
const MAX_BURST_DURATION: Duration = Duration::from_ms(100);
/// Reset after this many consecutive reordered groups (spec 2.15).
const REORDERED_RESET_THRESHOLD: u32 = 3;
/// Reset if the arrival clock jumps by this much relative to the system clock (spec 2.15).
const ARRIVAL_TIME_OFFSET_THRESHOLD: Duration = Duration::from_secs(3);

#[derive(Clone, Copy, Debug)]
struct Group {
    /// Bytes in the group.
    size: i64,
    /// Send time of the group's first packet.
    first_send: Time,
    /// Latest send time in the group (the group's send time).
    send: Time,
    /// Arrival time of the group's first packet.
    first_arrival: Time,
    /// Arrival time of the group's last packet (the group's "complete time").
    complete: Time,
    /// Local (feedback) time when the last packet was processed.
    last_system: Time,
}

impl Group {
    fn start(send: Time, arrival: Time, system: Time) -> Group {
        Group { size: 0, first_send: send, send, first_arrival: arrival, complete: arrival, last_system: system }
    }
}

/// One inter-group sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Deltas {
    /// `Δs = send(g) − send(g−1)`.
    pub send_delta: Duration,
    /// `Δa = complete(g) − complete(g−1)`.
    pub arrival_delta: Duration,
    /// Size difference between the two groups in bytes.
    pub size_delta: i64,
}

/// Inter-arrival grouping state (spec 2.3).
#[derive(Clone, Debug)]
pub struct InterArrival {
    group_length: Duration,
    current: Option<Group>,
    prev: Option<Group>,
    num_consecutive_reordered: u32,
}

impl InterArrival {
    pub fn new(group_length: Duration) -> Self {
        InterArrival { group_length, current: None, prev: None, num_consecutive_reordered: 0 }
    }

    /// Forget all groups (clock jump, too much reordering, stream timeout).
    pub fn reset(&mut self) {
        self.current = None;
        self.prev = None;
        self.num_consecutive_reordered = 0;
    }

    /// Feed one packet (in arrival order). `system_time` is the local clock when the packet was
    /// processed (the feedback arrival time). Returns the deltas between the two last complete
    /// groups when this packet starts a new group.
    pub fn compute_deltas(&mut self, send_time: Time, arrival_time: Time, system_time: Time, size: Bytes) -> Option<Deltas> {
        let mut out = None;
        match self.current {
            None => {
                // First packet ever (or after a reset): it opens the first group.
                self.current = Some(Group::start(send_time, arrival_time, system_time));
            }
            Some(cur) if send_time < cur.first_send => {
                // Sent before the current group started: a reordered packet, ignored (2.3).
                return None;
            }
            Some(cur) if self.starts_new_group(&cur, send_time, arrival_time) => {
                if let Some(prev) = self.prev {
                    let send_delta = cur.send - prev.send;
                    let arrival_delta = cur.complete - prev.complete;
                    let system_delta = cur.last_system - prev.last_system;
                    if arrival_delta - system_delta >= ARRIVAL_TIME_OFFSET_THRESHOLD {
                        // The arrival clock jumped relative to our clock: start over.
                        self.reset();
                        return None;
                    }
                    if arrival_delta < Duration::ZERO {
                        // The group was reordered relative to the previous one.
                        self.num_consecutive_reordered += 1;
                        if self.num_consecutive_reordered >= REORDERED_RESET_THRESHOLD {
                            self.reset();
                        }
                        return None;
                    }
                    self.num_consecutive_reordered = 0;
                    out = Some(Deltas { send_delta, arrival_delta, size_delta: cur.size - prev.size });
                }
                self.prev = Some(cur);
                self.current = Some(Group::start(send_time, arrival_time, system_time));
            }
            Some(_) => {
                if let Some(c) = self.current.as_mut() {
                    if send_time > c.send {
                        c.send = send_time;
                    }
                }
            }
        }
        if let Some(c) = self.current.as_mut() {
            c.size += size.get().max(0);
            c.complete = arrival_time;
            c.last_system = system_time;
        }
        out
    }

    /// Does a packet with these times start a new group after `cur`?
    fn starts_new_group(&self, cur: &Group, send_time: Time, arrival_time: Time) -> bool {
        if Self::belongs_to_burst(cur, send_time, arrival_time) {
            return false;
        }
        send_time - cur.first_send > self.group_length
    }

    /// Burst rule of 2.3: same send time, or sent later but arrived with a negative propagation
    /// delta, within 5 ms of the group's last arrival and < 100 ms after its first arrival.
    fn belongs_to_burst(cur: &Group, send_time: Time, arrival_time: Time) -> bool {
        let arrival_delta = arrival_time - cur.complete;
        let send_delta = send_time - cur.send;
        if send_delta == Duration::ZERO {
            return true;
        }
        let propagation_delta = arrival_delta - send_delta;
        propagation_delta < Duration::ZERO
            && arrival_delta <= BURST_DELTA_THRESHOLD
            && arrival_time - cur.first_arrival < MAX_BURST_DURATION
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Time { Time::from_ms(v) }
    const SZ: Bytes = Bytes::new(1000);

    fn feed(ia: &mut InterArrival, send: i64, arr: i64) -> Option<Deltas> { ia.compute_deltas(ms(send), ms(arr), ms(arr), SZ) }

    #[test]
    fn groups_of_five_ms_produce_hand_worked_deltas() {
        let mut ia = InterArrival::new(SEND_TIME_GROUP_LENGTH);
        // Group 1: sent 0, 2, 4 (arrive 10, 12, 14).
        assert_eq!(feed(&mut ia, 0, 10), None);
        assert_eq!(feed(&mut ia, 2, 12), None);
        assert_eq!(feed(&mut ia, 4, 14), None);
        // Group 2 starts at send 6 (6 − 0 > 5): no previous complete pair yet.
        assert_eq!(feed(&mut ia, 6, 16), None);
        assert_eq!(feed(&mut ia, 8, 18), None);
        assert_eq!(feed(&mut ia, 10, 21), None);
        // Group 3 starts at send 12 (arrives 23: propagation delta 0, not a burst).
        // Δs = 10 − 4 = 6 ms, Δa = 21 − 14 = 7 ms, size delta 0.
        let d = feed(&mut ia, 12, 23).expect("deltas");
        assert_eq!(d.send_delta, Duration::from_ms(6));
        assert_eq!(d.arrival_delta, Duration::from_ms(7));
        assert_eq!(d.size_delta, 0);
    }

    #[test]
    fn burst_arrivals_join_the_current_group() {
        let mut ia = InterArrival::new(SEND_TIME_GROUP_LENGTH);
        feed(&mut ia, 0, 100);
        // Sent 10 ms later but arrived 1 ms after: negative propagation delta -> same burst.
        assert_eq!(feed(&mut ia, 10, 101), None);
        assert_eq!(feed(&mut ia, 20, 102), None);
        // Sent 30, arrives 140: a new group (but no previous group yet).
        assert_eq!(feed(&mut ia, 30, 140), None);
        // Next group: the burst group (send 20, complete 102) vs group at 30/140.
        let d = feed(&mut ia, 40, 150).expect("deltas");
        assert_eq!(d.send_delta, Duration::from_ms(10));
        assert_eq!(d.arrival_delta, Duration::from_ms(38));
    }

    #[test]
    fn reordered_packets_are_ignored_and_reset_after_three_groups() {
        let mut ia = InterArrival::new(SEND_TIME_GROUP_LENGTH);
        feed(&mut ia, 0, 10);
        feed(&mut ia, 6, 16);
        // A packet sent before the current group's first packet is ignored.
        assert_eq!(feed(&mut ia, 1, 17), None);
        assert!(feed(&mut ia, 12, 22).is_some());
        // Now groups whose arrival goes backwards: Δa < 0 is skipped, 3 in a row reset.
        let mut ia = InterArrival::new(SEND_TIME_GROUP_LENGTH);
        feed(&mut ia, 0, 100);
        feed(&mut ia, 6, 110); // second group...
        feed(&mut ia, 8, 20); // ...completes at 20, before the first group's 100
        for k in 0..3 {
            assert_eq!(feed(&mut ia, 12 + 6 * k, 30 + 10 * k), None, "k={k}");
            if k < 2 {
                assert_eq!(ia.num_consecutive_reordered, k as u32 + 1);
            }
        }
        assert!(ia.prev.is_none() && ia.current.is_none(), "reset after 3 reorderings");
    }

    #[test]
    fn clock_jump_resets() {
        let mut ia = InterArrival::new(SEND_TIME_GROUP_LENGTH);
        feed(&mut ia, 0, 10);
        feed(&mut ia, 10, 20);
        // Arrival clock jumps by 5 s while the system clock does not.
        // This packet closes the (0 | 10) pair normally: Δa = 10 ms.
        assert!(ia.compute_deltas(ms(20), ms(5030), ms(30), SZ).is_some());
        // The next pair has Δa = 5010 ms against a system delta of 10 ms: reset.
        assert_eq!(ia.compute_deltas(ms(30), ms(5040), ms(40), SZ), None);
        assert!(ia.prev.is_none() && ia.current.is_none());
    }
}
