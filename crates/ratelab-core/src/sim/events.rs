//! The event queue: a binary heap ordered by (time, insertion number), so events at the same
//! time run in the order they were scheduled and every run is reproducible.

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> { time: Time, order: u64, event: E }

impl<E> PartialEq for Entry<E> { fn eq(&self, o: &Self) -> bool { self.time == o.time && self.order == o.order } }
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> { fn partial_cmp(&self, o: &Self) -> Option<Ordering> { Some(self.cmp(o)) } }
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering { o.time.cmp(&self.time).then_with(|| o.order.cmp(&self.order)) }
}

pub struct EventQueue<E> { heap: BinaryHeap<Entry<E>>, next_order: u64 }

impl<E> Default for EventQueue<E> {
    fn default() -> Self { EventQueue { heap: BinaryHeap::new(), next_order: 0 } }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, time: Time, event: E) {
        self.heap.push(Entry { time, order: self.next_order, event });
        self.next_order += 1;
    }
    pub fn peek_time(&self) -> Option<Time> { self.heap.peek().map(|e| e.time) }
    pub fn pop(&mut self) -> Option<(Time, E)> { self.heap.pop().map(|e| (e.time, e.event)) }
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
}
