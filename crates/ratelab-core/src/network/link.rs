//! The bottleneck: a FIFO drop-tail queue drained at a (time-varying) capacity, with random
//! loss at the entrance (default) or at the exit (`loss_after_queue`). Propagation delays are applied by the driver per flow, so flows with
//! different RTTs share one queue.

use super::capacity::CapacitySchedule;
use super::loss::LossModel;
use super::packet::Packet;
use super::trace::Trace;
use crate::units::{Bytes, Duration, Time};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueLimit {
    Unlimited,
    Bytes(Bytes),
    Packets(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason { Random, QueueFull }

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub arrived_packets: u64,
    pub arrived_bytes: i64,
    pub random_drops: u64,
    pub queue_drops: u64,
    pub departed_packets: u64,
    pub departed_bytes: i64,
    /// Random drops at the exit (`loss_after_queue`): counted in `random_drops` *and* in
    /// `departed_*` (they used their transmission time). Conservation:
    /// arrived = random_drops − exit_drops + queue_drops + departed + held.
    pub exit_drops: u64,
}

pub struct Link {
    capacity: CapacitySchedule,
    limit: QueueLimit,
    loss: LossModel,
    loss_start: Time,
    /// Random loss (`loss`) applies to departing packets, not arriving ones.
    loss_after: bool,
    queue: VecDeque<Packet>,
    queue_bytes: Bytes,
    in_service: Option<(Packet, Time)>,
    /// Trace with per-interval loss and/or delay (replaces `loss` where the trace gives one).
    overlay: Option<(Trace, bool)>,
    /// Latest exit time after the trace delay (keeps the link FIFO when the delay drops).
    last_exit: Time,
    /// Absolute time of the overlay trace's time 0 (a route change's link starts it then).
    origin: Duration,
    pub stats: LinkStats,
}

pub enum Enqueued {
    Dropped(DropReason, Packet),
    /// Queued; if the link was idle, transmission started and ends at the given time.
    Accepted(Option<Time>),
}

impl Link {
    pub fn new(capacity: CapacitySchedule, limit: QueueLimit, loss: LossModel, loss_start: Time) -> Self {
        Link { capacity, limit, loss, loss_start, loss_after: false, queue: VecDeque::new(), queue_bytes: Bytes::ZERO, in_service: None, overlay: None, last_exit: Time::ZERO, origin: Duration::ZERO, stats: LinkStats::default() }
    }

    /// Move the random loss model from the link's entrance to its exit (spec 5.9).
    pub fn set_loss_after_queue(&mut self, after: bool) { self.loss_after = after; }

    /// Random loss of a packet that has just finished transmission (only with
    /// `set_loss_after_queue(true)`): true if it is dropped (counted as a random drop).
    pub fn drop_on_exit(&mut self, now: Time, rng: &mut ChaCha8Rng) -> bool {
        if !self.loss_after || now < self.loss_start || !self.loss.drop(rng) { return false; }
        self.stats.random_drops += 1;
        self.stats.exit_drops += 1;
        true
    }

    /// Use a trace's loss and delay columns (`looped`: the trace repeats).
    pub fn set_trace_overlay(&mut self, trace: Trace, looped: bool) {
        if trace.samples.iter().any(|s| s.loss.is_some() || s.delay.is_some()) { self.overlay = Some((trace, looped)); }
    }

    /// Time a packet that finished transmission at `now` leaves the link, after the trace's
    /// extra delay (if any), never before an earlier packet.
    pub fn exit_time(&mut self, now: Time) -> Time {
        let Some((tr, looped)) = &self.overlay else { return now };
        let extra = tr.sample_at(now - self.origin, *looped).and_then(|s| s.delay).unwrap_or(Duration::ZERO);
        self.last_exit = self.last_exit.max(now + extra);
        self.last_exit
    }

    pub fn capacity(&self) -> &CapacitySchedule { &self.capacity }
    /// When the transmission in service ends (a driver's pending end event is stale otherwise).
    pub fn service_end(&self) -> Option<Time> { self.in_service.as_ref().map(|(_, end)| *end) }

    /// A route change: from `now` the link is `new` (capacity, queue limit, loss, trace
    /// overlay, whose times start now); the counters and, with `carry`, the queue and the
    /// packet in service stay. Without `carry` the queued packets and the one in service are
    /// returned, counted as queue drops (the old interface is gone). Exits on the new route
    /// are not held behind the old route's trace delay (a new path may reorder).
    pub fn reroute(&mut self, now: Time, new: Link, carry: bool) -> Vec<Packet> {
        self.capacity = new.capacity.starting_at(now);
        self.limit = new.limit;
        self.loss = new.loss;
        self.loss_start = new.loss_start;
        self.loss_after = new.loss_after;
        self.overlay = new.overlay;
        self.origin = now - Time::ZERO;
        self.last_exit = Time::ZERO;
        if carry { return Vec::new(); }
        let mut lost: Vec<Packet> = self.in_service.take().map(|(p, _)| p).into_iter().collect();
        lost.extend(self.queue.drain(..));
        self.queue_bytes = Bytes::ZERO;
        self.stats.queue_drops += lost.len() as u64;
        lost
    }
    /// Move the link's time 0 to absolute time `origin`: its capacity steps or trace, trace
    /// overlay and `loss_start` count from there on; the queue, the packet in service and the
    /// counters stay. The emulator does this when the first media datagram arrives
    /// (`align_media_s`), so that a real call's media meet the schedule's start as a simulated
    /// flow does, whatever its connection set-up took.
    pub fn shift_origin(&mut self, origin: Time) {
        let o = origin - Time::ZERO;
        self.capacity = self.capacity.clone().starting_at(origin);
        self.loss_start = self.loss_start + o;
        self.origin = o;
    }
    /// Bytes waiting (not counting the packet being transmitted).
    pub fn queue_bytes(&self) -> Bytes { self.queue_bytes }
    pub fn queue_packets(&self) -> usize { self.queue.len() }
    pub fn in_service(&self) -> Option<&Packet> { self.in_service.as_ref().map(|(p, _)| p) }
    pub fn queued(&self) -> impl Iterator<Item = &Packet> { self.queue.iter() }

    /// A packet reaches the bottleneck.
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet, rng: &mut ChaCha8Rng) -> Enqueued {
        self.stats.arrived_packets += 1;
        self.stats.arrived_bytes += pkt.size.get();
        let trace_loss = self.overlay.as_ref().and_then(|(tr, looped)| tr.sample_at(now - self.origin, *looped).and_then(|s| s.loss));
        let dropped = match trace_loss {
            Some(p) => p > 0.0 && rng.gen::<f64>() < p,
            None => !self.loss_after && now >= self.loss_start && self.loss.drop(rng),
        };
        if dropped {
            self.stats.random_drops += 1;
            return Enqueued::Dropped(DropReason::Random, pkt);
        }
        let full = match self.limit {
            QueueLimit::Unlimited => false,
            QueueLimit::Bytes(b) => self.queue_bytes + pkt.size > b,
            QueueLimit::Packets(n) => self.queue.len() >= n,
        };
        // An idle link with an empty queue always takes the packet straight into service.
        if full && self.in_service.is_some() {
            self.stats.queue_drops += 1;
            return Enqueued::Dropped(DropReason::QueueFull, pkt);
        }
        pkt.enqueue_time = now;
        if self.in_service.is_none() {
            pkt.tx_start = now;
            let end = self.capacity.transmit_end(now, pkt.size);
            self.in_service = Some((pkt, end));
            return Enqueued::Accepted(Some(end));
        }
        self.queue_bytes += pkt.size;
        self.queue.push_back(pkt);
        Enqueued::Accepted(None)
    }

    /// The transmission in service ends at `now`: returns the departed packet and, if another
    /// packet starts, the end time of its transmission.
    pub fn complete(&mut self, now: Time) -> Option<(Packet, Option<Time>)> {
        let (done, _) = self.in_service.take()?;
        self.stats.departed_packets += 1;
        self.stats.departed_bytes += done.size.get();
        let next = self.queue.pop_front().map(|mut p| {
            self.queue_bytes -= p.size;
            p.tx_start = now;
            let end = self.capacity.transmit_end(now, p.size);
            self.in_service = Some((p, end));
            end
        });
        Some((done, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::packet::Payload;
    use crate::units::Bitrate;
    use rand::SeedableRng;

    fn pkt(seq: u64, size: i64) -> Packet {
        Packet { flow: 0, seq, size: Bytes::new(size), send_time: Time::ZERO, enqueue_time: Time::ZERO, tx_start: Time::ZERO, probe_cluster: None, payload: Payload::Padding }
    }

    #[test]
    fn fifo_service_times_and_drop_tail() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // 1 Mbit/s, queue of 2000 bytes: 1000-byte packets take 8 ms each.
        let mut l = Link::new(CapacitySchedule::constant(Bitrate::from_kbps(1000)), QueueLimit::Bytes(Bytes::new(2000)), LossModel::None, Time::ZERO);
        let first = l.enqueue(Time::ZERO, pkt(0, 1000), &mut rng);
        assert!(matches!(first, Enqueued::Accepted(Some(t)) if t == Time::from_ms(8)));
        assert!(matches!(l.enqueue(Time::ZERO, pkt(1, 1000), &mut rng), Enqueued::Accepted(None)));
        assert!(matches!(l.enqueue(Time::ZERO, pkt(2, 1000), &mut rng), Enqueued::Accepted(None)));
        assert!(matches!(l.enqueue(Time::ZERO, pkt(3, 1000), &mut rng), Enqueued::Dropped(DropReason::QueueFull, _)));
        assert_eq!(l.queue_bytes(), Bytes::new(2000));
        let (p0, next) = l.complete(Time::from_ms(8)).unwrap();
        assert_eq!(p0.seq, 0);
        assert_eq!(next, Some(Time::from_ms(16)));
        let (p1, next) = l.complete(Time::from_ms(16)).unwrap();
        assert_eq!((p1.seq, p1.tx_start - p1.enqueue_time), (1, crate::units::Duration::from_ms(8)));
        assert_eq!(next, Some(Time::from_ms(24)));
        let (_, next) = l.complete(Time::from_ms(24)).unwrap();
        assert_eq!(next, None);
        assert_eq!(l.stats.queue_drops, 1);
        assert_eq!(l.stats.departed_bytes, 3000);
    }

    #[test]
    fn packet_limit() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut l = Link::new(CapacitySchedule::constant(Bitrate::from_kbps(1000)), QueueLimit::Packets(1), LossModel::None, Time::ZERO);
        assert!(matches!(l.enqueue(Time::ZERO, pkt(0, 100), &mut rng), Enqueued::Accepted(Some(_))));
        assert!(matches!(l.enqueue(Time::ZERO, pkt(1, 100), &mut rng), Enqueued::Accepted(None)));
        assert!(matches!(l.enqueue(Time::ZERO, pkt(2, 100), &mut rng), Enqueued::Dropped(DropReason::QueueFull, _)));
    }

    #[test]
    fn reroute_drops_or_carries_the_old_queue() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut l = Link::new(CapacitySchedule::constant(Bitrate::from_kbps(1000)), QueueLimit::Unlimited, LossModel::None, Time::ZERO);
        for k in 0..3 { l.enqueue(Time::ZERO, pkt(k, 1000), &mut rng); }
        // Drop: the packet in service and both queued ones are lost, counted as queue drops.
        let fast = || Link::new(CapacitySchedule::constant(Bitrate::from_kbps(2000)), QueueLimit::Packets(1), LossModel::None, Time::ZERO);
        let lost = l.reroute(Time::from_ms(4), fast(), false);
        assert_eq!(lost.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!((l.stats.queue_drops, l.queue_bytes(), l.service_end()), (3, Bytes::ZERO, None));
        // The new route: 1000 B at 2 Mbit/s = 4 ms, and its one-packet queue limit.
        assert!(matches!(l.enqueue(Time::from_ms(4), pkt(3, 1000), &mut rng), Enqueued::Accepted(Some(t)) if t == Time::from_ms(8)));
        assert!(matches!(l.enqueue(Time::from_ms(4), pkt(4, 1000), &mut rng), Enqueued::Accepted(None)));
        assert!(matches!(l.enqueue(Time::from_ms(4), pkt(5, 1000), &mut rng), Enqueued::Dropped(DropReason::QueueFull, _)));
        // Carry: the packet in service keeps its end (8 ms), the queued one goes at the new rate.
        let slow = Link::new(CapacitySchedule::constant(Bitrate::from_kbps(500)), QueueLimit::Unlimited, LossModel::None, Time::ZERO);
        assert!(l.reroute(Time::from_ms(5), slow, true).is_empty());
        assert_eq!(l.service_end(), Some(Time::from_ms(8)));
        let (p, next) = l.complete(Time::from_ms(8)).unwrap();
        assert_eq!((p.seq, next), (3, Some(Time::from_ms(24))));
    }

    /// Loss after the queue: every packet is accepted and transmitted (8 ms each at 1 Mbit/s),
    /// the drop decision comes at the exit, and only from `loss_start` on.
    #[test]
    fn loss_after_queue_drops_at_the_exit_after_transmission() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut l = Link::new(CapacitySchedule::constant(Bitrate::from_kbps(1000)), QueueLimit::Unlimited, LossModel::Bernoulli(1.0), Time::from_ms(10));
        l.set_loss_after_queue(true);
        assert!(matches!(l.enqueue(Time::ZERO, pkt(0, 1000), &mut rng), Enqueued::Accepted(Some(t)) if t == Time::from_ms(8)));
        assert!(matches!(l.enqueue(Time::ZERO, pkt(1, 1000), &mut rng), Enqueued::Accepted(None)));
        let (_, next) = l.complete(Time::from_ms(8)).unwrap();
        assert!(!l.drop_on_exit(Time::from_ms(8), &mut rng), "before loss_start");
        assert_eq!(next, Some(Time::from_ms(16)), "the second packet still takes its 8 ms");
        l.complete(Time::from_ms(16)).unwrap();
        assert!(l.drop_on_exit(Time::from_ms(16), &mut rng));
        assert_eq!((l.stats.random_drops, l.stats.exit_drops, l.stats.departed_packets), (1, 1, 2));
        // At the entrance (default) the same model drops on arrival, before any transmission.
        let mut l = Link::new(CapacitySchedule::constant(Bitrate::from_kbps(1000)), QueueLimit::Unlimited, LossModel::Bernoulli(1.0), Time::ZERO);
        assert!(matches!(l.enqueue(Time::ZERO, pkt(0, 1000), &mut rng), Enqueued::Dropped(DropReason::Random, _)));
        assert!(!l.drop_on_exit(Time::ZERO, &mut rng));
    }
}
