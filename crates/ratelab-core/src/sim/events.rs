//! The event queue: a binary heap ordered by (time, insertion number), so events at the same
//! time run in the order they were scheduled and every run is reproducible.
//!
//! The heap holds only 24-byte keys (time, insertion number, slot); the events themselves wait in
//! a slab of reused slots. A pop sifts ~log2(n) keys down the heap, and moving small keys rather
//! than whole events (a `Deliver` carries a packet) is most of what the queue costs (issue 16,
//! docs/benchmarks.md: the heap was ~30 % of a single-flow run).

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy)]
struct Key { time: Time, order: u64, slot: u32 }

impl PartialEq for Key { fn eq(&self, o: &Self) -> bool { self.time == o.time && self.order == o.order } }
impl Eq for Key {}
impl PartialOrd for Key { fn partial_cmp(&self, o: &Self) -> Option<Ordering> { Some(self.cmp(o)) } }
impl Ord for Key {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering { o.time.cmp(&self.time).then_with(|| o.order.cmp(&self.order)) }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    /// Events by slot; `None` for a free slot (listed in `free`).
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    next_order: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self { EventQueue { heap: BinaryHeap::new(), slots: Vec::new(), free: Vec::new(), next_order: 0 } }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, time: Time, event: E) {
        let slot = match self.free.pop() {
            Some(s) => { self.slots[s as usize] = Some(event); s }
            None => {
                self.slots.push(Some(event));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 pending events")
            }
        };
        self.heap.push(Key { time, order: self.next_order, slot });
        self.next_order += 1;
    }
    pub fn peek_time(&self) -> Option<Time> { self.heap.peek().map(|k| k.time) }
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let k = self.heap.pop()?;
        let ev = self.slots[k.slot as usize].take().expect("a queued key points at its event");
        self.free.push(k.slot);
        Some((k.time, ev))
    }
    pub fn len(&self) -> usize { self.heap.len() }
    pub fn is_empty(&self) -> bool { self.heap.is_empty() }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                let (t, e) = q.pop().unwrap();
                let i = (0..model.len()).min_by_key(|&i| (model[i].0, model[i].1)).unwrap();
                let (mt, _, me) = model.remove(i);
                assert_eq!((t, e), (Time::from_ms(mt), me));
                seen.push(e);
            }
            assert_eq!(q.len(), model.len());
            peak = peak.max(q.len());
        }
        // Slots are reused: the slab never grows past the most events pending at once.
        assert!(seen.len() > 500 && q.slots.len() == peak && (peak as u64) < n, "{} slots, peak {peak}, {n} events", q.slots.len());
    }
}
