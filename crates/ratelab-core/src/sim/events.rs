//! The event queue: ordered by (time, insertion number), so events at the same time run in the
//! order they were scheduled and every run is reproducible.
//!
//! The heap holds only 24-byte keys (time, insertion number, slot); the events themselves wait in
//! a slab of reused slots. A pop sifts ~log2(n) keys down the heap, and moving small keys rather
//! than whole events (a `Deliver` carries a packet) is most of what the queue costs (issue 16,
//! docs/benchmarks.md: the heap was ~30 % of a single-flow run).
//!
//! **Lanes.** Most pending events are packets propagating to their receiver, and one flow's
//! deliveries are scheduled in time order (a FIFO link, then a fixed delay). Such events go into
//! a FIFO lane ([`EventQueue::push_in_lane`]) and only the lane's head has a key in the heap, so
//! the heap stays as small as the number of sources. Every event keeps its own insertion number
//! and a lane is sorted by (time, number), so the heap's minimum is still the global minimum:
//! events pop in exactly the order a single heap gives. An event that would arrive before its
//! lane's tail (a delay that shrank) goes to the heap instead.
//!
//! **Slots.** Per data packet, a flow's pacer wake-up and its link's end of transmission are
//! each one pending event of their source at a time, almost always; so are the periodic timers
//! (frames, controller ticks, feedback timers, …). A single-event slot
//! ([`EventQueue::push_in_slot`]) holds one such event with its own (time, insertion number),
//! outside the heap. Slots come in groups (per-packet events, timers), each with its earliest
//! key cached, so a slot pop rescans only its own group's few 16-byte keys; a pop takes the
//! earliest of the heap's head and the groups' heads, so the order is still exactly a single
//! heap's. A push to a full slot (a second pending wake-up of the same pacer) goes to the heap:
//! nothing is replaced or dropped.

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

/// `Key::slot` values with this bit set name a lane, not a slab slot.
const LANE: u32 = 1 << 31;

/// The key of a free single-event slot: later than every event's (no event gets the last
/// insertion number).
const EMPTY: (Time, u64) = (Time::from_us(i64::MAX), u64::MAX);

#[derive(Clone, Copy)]
struct Key { time: Time, order: u64, slot: u32 }

impl PartialEq for Key { fn eq(&self, o: &Self) -> bool { self.time == o.time && self.order == o.order } }
impl Eq for Key {}
impl PartialOrd for Key { fn partial_cmp(&self, o: &Self) -> Option<Ordering> { Some(self.cmp(o)) } }
impl Ord for Key {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering { o.time.cmp(&self.time).then_with(|| o.order.cmp(&self.order)) }
}

/// Number of slot groups ([`EventQueue::push_in_slot`]).
pub const SLOT_GROUPS: usize = 2;

/// Single-event slots: the (time, insertion number) of each slot's event ([`EMPTY`] for a free
/// slot) apart from the events, so that finding the earliest reads a few 16-byte keys. Slots
/// are stored densely in the order of their first use (`index`: the caller's slot number →
/// position), so numbers that a run never uses cost nothing.
struct SlotGroup<E> {
    index: Vec<u32>,
    keys: Vec<(Time, u64)>,
    events: Vec<Option<E>>,
    /// The earliest key ([`EMPTY`] if none) and its position.
    head: (Time, u64),
    min: usize,
}

impl<E> Default for SlotGroup<E> {
    fn default() -> Self { SlotGroup { index: Vec::new(), keys: Vec::new(), events: Vec::new(), head: EMPTY, min: 0 } }
}

impl<E> SlotGroup<E> {
    /// Position of slot number `slot`, if it was ever used.
    fn position(&self, slot: usize) -> Option<usize> {
        self.index.get(slot).filter(|&&i| i != u32::MAX).map(|&i| i as usize)
    }

    /// Put `event` in `slot` with `key`, or give it back if the slot is full.
    fn put(&mut self, slot: usize, key: (Time, u64), event: E) -> Result<(), E> {
        let i = match self.position(slot) {
            Some(i) => i,
            None => {
                if slot >= self.index.len() { self.index.resize(slot + 1, u32::MAX); }
                self.index[slot] = self.keys.len() as u32;
                self.keys.push(EMPTY);
                self.events.push(None);
                self.keys.len() - 1
            }
        };
        if self.keys[i] != EMPTY { return Err(event); }
        self.keys[i] = key;
        self.events[i] = Some(event);
        if key < self.head {
            self.head = key;
            self.min = i;
        }
        Ok(())
    }

    /// Take the earliest event and find the next earliest.
    fn take_head(&mut self) -> (Time, E) {
        let (m, time) = (self.min, self.head.0);
        let ev = self.events[m].take().expect("the earliest slot holds an event");
        self.keys[m] = EMPTY;
        self.head = EMPTY;
        for (i, &k) in self.keys.iter().enumerate() {
            if k < self.head {
                self.head = k;
                self.min = i;
            }
        }
        (time, ev)
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    /// Events by slot; `None` for a free slot (listed in `free`).
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    /// FIFO lanes: (time, insertion number, event), sorted; the head has a key in the heap.
    lanes: Vec<VecDeque<(Time, u64, E)>>,
    /// Single-event slots, not in the heap, in [`SLOT_GROUPS`] groups.
    groups: [SlotGroup<E>; SLOT_GROUPS],
    next_order: u64,
    len: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(), slots: Vec::new(), free: Vec::new(), lanes: Vec::new(),
            groups: std::array::from_fn(|_| SlotGroup::default()), next_order: 0, len: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, time: Time, event: E) {
        let slot = match self.free.pop() {
            Some(s) => { self.slots[s as usize] = Some(event); s }
            None => {
                self.slots.push(Some(event));
                u32::try_from(self.slots.len() - 1).ok().filter(|s| s & LANE == 0).expect("fewer than 2^31 pending events")
            }
        };
        self.heap.push(Key { time, order: self.next_order, slot });
        self.next_order += 1;
        self.len += 1;
    }

    /// Schedule `event` in FIFO lane `lane` (lanes are numbered by the caller, densely from 0):
    /// the same order as [`EventQueue::push`], cheaper when the lane's events come in time order.
    pub fn push_in_lane(&mut self, lane: usize, time: Time, event: E) {
        if lane >= self.lanes.len() {
            assert!(lane < LANE as usize, "fewer than 2^31 lanes");
            self.lanes.resize_with(lane + 1, VecDeque::new);
        }
        let order = self.next_order;
        let q = &mut self.lanes[lane];
        match q.back() {
            Some(&(tail, _, _)) if time < tail => return self.push(time, event),
            Some(_) => q.push_back((time, order, event)),
            None => {
                q.push_back((time, order, event));
                self.heap.push(Key { time, order, slot: LANE | lane as u32 });
            }
        }
        self.next_order += 1;
        self.len += 1;
    }

    /// Schedule `event` in single-event slot `slot` of group `group` (slots are numbered by the
    /// caller, densely from 0 in each group): the same order as [`EventQueue::push`]; if the
    /// slot already holds an event, `event` goes to the heap.
    pub fn push_in_slot(&mut self, group: usize, slot: usize, time: Time, event: E) {
        if let Err(event) = self.groups[group].put(slot, (time, self.next_order), event) {
            return self.push(time, event);
        }
        self.next_order += 1;
        self.len += 1;
    }

    /// Where the earliest event waits (`Some(group)`: in a slot; `None`: the heap) and its time.
    fn earliest(&self) -> Option<(Option<usize>, Time)> {
        let mut best = (None, self.heap.peek().map_or(EMPTY, |k| (k.time, k.order)));
        for (g, group) in self.groups.iter().enumerate() {
            if group.head < best.1 { best = (Some(g), group.head); }
        }
        (best.1 != EMPTY).then_some((best.0, best.1 .0))
    }

    /// Pop the earliest event if its time is at most `limit` (one look at the heads instead of
    /// a `peek_time` and a `pop`).
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, E)> {
        match self.earliest()? {
            (_, t) if t > limit => None,
            (Some(g), _) => Some(self.pop_slot(g)),
            (None, _) => self.pop_heap(),
        }
    }

    pub fn pop(&mut self) -> Option<(Time, E)> {
        match self.earliest()? {
            (Some(g), _) => Some(self.pop_slot(g)),
            (None, _) => self.pop_heap(),
        }
    }

    pub fn peek_time(&self) -> Option<Time> { self.earliest().map(|e| e.1) }

    fn pop_slot(&mut self, group: usize) -> (Time, E) {
        self.len -= 1;
        self.groups[group].take_head()
    }

    fn pop_heap(&mut self) -> Option<(Time, E)> {
        let mut top = self.heap.peek_mut()?;
        let k = *top;
        self.len -= 1;
        if k.slot & LANE != 0 {
            let q = &mut self.lanes[(k.slot & !LANE) as usize];
            let (time, order, ev) = q.pop_front().expect("a lane key points at its lane's head");
            debug_assert!(time == k.time && order == k.order);
            match q.front() {
                // The lane's next event takes the key's place: one sift instead of a pop and a push.
                Some(&(t, o, _)) => *top = Key { time: t, order: o, slot: k.slot },
                None => { PeekMut::pop(top); }
            }
            return Some((time, ev));
        }
        PeekMut::pop(top);
        let ev = self.slots[k.slot as usize].take().expect("a queued key points at its event");
        self.free.push(k.slot);
        Some((k.time, ev))
    }

    pub fn len(&self) -> usize { self.len }
    pub fn is_empty(&self) -> bool { self.len == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pop one event and check it is the model's earliest (time in ms, push number, payload).
    fn pop_and_check(q: &mut EventQueue<u32>, model: &mut Vec<(i64, u64, u32)>) -> u32 {
        let (t, e) = q.pop().expect("the queue holds what the model holds");
        let i = (0..model.len()).min_by_key(|&i| (model[i].0, model[i].1)).expect("the model is not empty");
        let (mt, _, me) = model.remove(i);
        assert_eq!((t, e), (Time::from_ms(mt), me));
        e
    }

    /// After each operation: the queue holds as many events as the model, and its next time is the
    /// model's earliest.
    fn check_against(q: &EventQueue<u32>, model: &[(i64, u64, u32)]) {
        assert_eq!(q.len(), model.len());
        assert_eq!(q.peek_time(), model.iter().map(|m| (m.0, m.1)).min().map(|m| Time::from_ms(m.0)));
    }

    fn drain_against(q: &mut EventQueue<u32>, model: &mut Vec<(i64, u64, u32)>) {
        while !q.is_empty() { pop_and_check(q, model); }
        assert!(model.is_empty());
    }

    #[test]
    fn time_order_then_fifo() {
        let mut q = EventQueue::default();
        q.push(Time::from_ms(5), "b");
        q.push(Time::from_ms(1), "a");
        q.push(Time::from_ms(5), "c");
        q.push(Time::from_ms(3), "x");
        let order: Vec<&str> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["a", "x", "b", "c"]);
    }

    #[test]
    fn reused_slots_keep_time_then_fifo_order() {
        // Interleaved pushes and pops reuse slots; the order must not depend on which slot an
        // event got: a model queue (sorted by time, then push number) gives the expected order.
        let mut q = EventQueue::default();
        let mut model: Vec<(i64, u64, u32)> = Vec::new();
        let (mut n, mut seen, mut peak) = (0u64, Vec::new(), 0usize);
        let mut x: u64 = 12345;
        for step in 0..5000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if x >> 62 != 0 || q.is_empty() {
                let t = ((x >> 20) % 50) as i64 + step as i64 / 10;
                q.push(Time::from_ms(t), step);
                model.push((t, n, step));
                n += 1;
            } else {
                seen.push(pop_and_check(&mut q, &mut model));
            }
            assert_eq!(q.len(), model.len());
            peak = peak.max(q.len());
        }
        // Slots are reused: the slab never grows past the most events pending at once.
        assert!(seen.len() > 500 && q.slots.len() == peak && (peak as u64) < n, "{} slots, peak {peak}, {n} events", q.slots.len());
    }

    #[test]
    fn lanes_pop_in_the_order_of_one_heap() {
        // Pushes to 4 lanes (mostly in time order, sometimes earlier than the lane's tail: those
        // go to the heap) and to the heap, interleaved with pops: the order must be the model's,
        // sorted by time, then push number, whatever the lane.
        let mut q = EventQueue::default();
        let mut model: Vec<(i64, u64, u32)> = Vec::new();
        let mut tails = [0i64; 4];
        let (mut n, mut popped, mut laned) = (0u64, 0usize, 0usize);
        let mut x: u64 = 777;
        for step in 0..20_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if x >> 62 != 0 || q.is_empty() {
                let now = step as i64 / 8;
                let lane = ((x >> 30) % 5) as usize;
                if lane < 4 {
                    // mostly monotone per lane; 1 in 16 goes back in time
                    let t = if (x >> 40) % 16 == 0 { now } else { tails[lane].max(now) + ((x >> 20) % 7) as i64 };
                    if t >= tails[lane] { laned += 1; }
                    tails[lane] = tails[lane].max(t);
                    q.push_in_lane(lane, Time::from_ms(t), step);
                    model.push((t, n, step));
                } else {
                    let t = now + ((x >> 20) % 50) as i64;
                    q.push(Time::from_ms(t), step);
                    model.push((t, n, step));
                }
                n += 1;
            } else {
                pop_and_check(&mut q, &mut model);
                popped += 1;
            }
            check_against(&q, &model);
        }
        drain_against(&mut q, &mut model);
        assert!(popped > 2000 && laned > 5000, "{popped} pops, {laned} laned");
    }

    #[test]
    fn slots_lanes_and_heap_pop_in_the_order_of_one_heap() {
        // Pushes to 4 single-event slots in 2 groups (a full slot sends the event to the heap), 2 lanes and
        // the heap, interleaved with pops, some bounded by a limit: the order must be the
        // model's (time, then push number), and a bounded pop must stop exactly where the
        // model's earliest event is later than the limit.
        let mut q = EventQueue::default();
        let mut model: Vec<(i64, u64, u32)> = Vec::new();
        let mut tails = [0i64; 2];
        let (mut n, mut popped, mut slotted, mut overflow, mut stopped) = (0u64, 0usize, 0usize, 0usize, 0usize);
        let mut x: u64 = 4242;
        for step in 0..30_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let now = step as i64 / 8;
            if x >> 61 < 3 || q.is_empty() {
                let mut t = now + ((x >> 20) % 9) as i64;
                match (x >> 30) % 7 {
                    s @ 0..=3 => {
                        let (g, s) = (s as usize % 2, 5 * (s as usize / 2)); // slot numbers 0 and 5
                        let full = q.groups[g].position(s).is_some_and(|i| q.groups[g].keys[i] != EMPTY);
                        if full { overflow += 1 } else { slotted += 1 }
                        q.push_in_slot(g, s, Time::from_ms(t), step);
                    }
                    l @ 4..=5 => {
                        let l = (l - 4) as usize;
                        t = tails[l].max(t);
                        tails[l] = t;
                        q.push_in_lane(l, Time::from_ms(t), step);
                    }
                    _ => q.push(Time::from_ms(t), step),
                }
                model.push((t, n, step));
                n += 1;
            } else if (x >> 40) % 4 == 0 {
                // pop_until(limit): pops the model's earliest if it is due, else nothing
                let limit = now + ((x >> 20) % 5) as i64 - 2;
                let due = model.iter().map(|m| (m.0, m.1)).min().is_some_and(|m| m.0 <= limit);
                if due {
                    let i = (0..model.len()).min_by_key(|&i| (model[i].0, model[i].1)).unwrap();
                    let (mt, _, me) = model.remove(i);
                    assert_eq!(q.pop_until(Time::from_ms(limit)), Some((Time::from_ms(mt), me)));
                    popped += 1;
                } else {
                    assert_eq!(q.pop_until(Time::from_ms(limit)), None);
                    stopped += !model.is_empty() as usize;
                }
            } else {
                pop_and_check(&mut q, &mut model);
                popped += 1;
            }
            check_against(&q, &model);
        }
        drain_against(&mut q, &mut model);
        assert!(popped > 10_000 && slotted > 3000 && overflow > 1000 && stopped > 2000,
            "{popped} pops, {slotted} slotted, {overflow} to the heap from a full slot, {stopped} bounded pops that stopped");
    }
}
