//! The discrete-event engine core: a deterministic event queue ordered by (time, insertion
//! sequence), with cancellation, plus seeded random streams ([`rng`]) and a bounded Chrome
//! trace-event writer ([`trace`]).
//!
//! Written by hand (rather than with a DES crate) because the models need exact integer-ns time,
//! cheap cancellation of timers and strict determinism of tie-breaking.

pub mod rng;
pub mod trace;

use rtvirt_model::Nanos;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Hasher for event sequence numbers (distinct u64 keys): one multiply instead of SipHash.
#[derive(Default)]
struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Handle of a scheduled event, used to cancel it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(u64);

/// Pending events ordered by time; events at the same time pop in insertion order.
/// Cancellation is lazy: a cancelled event is skipped when it reaches the head.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    cancelled: HashSet<u64, BuildHasherDefault<SeqHasher>>,
    next_seq: u64,
    now: Nanos,
    popped: u64,
}

struct Entry<E> {
    at: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed: the max-heap yields the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        Reverse((self.at, self.seq)).cmp(&Reverse((o.at, o.seq)))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), cancelled: HashSet::default(), next_seq: 0, now: Nanos::ZERO, popped: 0 }
    }

    /// Current simulated time (time of the last popped event).
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Number of events delivered so far.
    pub fn delivered(&self) -> u64 {
        self.popped
    }

    /// Schedule `event` at absolute time `at` (never before now).
    pub fn schedule(&mut self, at: Nanos, event: E) -> EventId {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at: at.max(self.now).0, seq, event });
        EventId(seq)
    }

    /// Schedule `event` after `delay` from now.
    pub fn schedule_in(&mut self, delay: Nanos, event: E) -> EventId {
        self.schedule(Nanos(self.now.0.saturating_add(delay.0)), event)
    }

    /// Take the next insertion number without queueing anything: for a timer the model keeps
    /// outside the queue that must still pop in (time, insertion) order among queued events.
    pub fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// (time, insertion number) of the next pending event.
    pub fn peek_key(&mut self) -> Option<(Nanos, u64)> {
        self.skip_cancelled();
        self.heap.peek().map(|e| (Nanos(e.at), e.seq))
    }

    /// A timer kept outside the queue ([`EventQueue::take_seq`]) fires: the clock moves to its
    /// time (never backwards).
    pub fn advance_to(&mut self, at: Nanos) {
        self.now = self.now.max(at);
    }

    /// Cancel a pending event. The caller must not cancel an event that was already delivered
    /// (models keep the id only while the event is pending).
    pub fn cancel(&mut self, id: EventId) {
        self.cancelled.insert(id.0);
    }

    /// Time of the next pending event.
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.skip_cancelled();
        self.heap.peek().map(|e| Nanos(e.at))
    }

    /// Remove and return the next event, advancing `now` to its time.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.skip_cancelled();
        let e = self.heap.pop()?;
        self.now = Nanos(e.at);
        self.popped += 1;
        Some((self.now, e.event))
    }

    /// Pop the next event only if it is at or before `limit`.
    pub fn pop_until(&mut self, limit: Nanos) -> Option<(Nanos, E)> {
        match self.peek_time() {
            Some(t) if t <= limit => self.pop(),
            _ => None,
        }
    }

    /// Pending events, cancelled ones not yet skipped included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.len() == self.cancelled.len()
    }

    fn skip_cancelled(&mut self) {
        while !self.cancelled.is_empty() {
            match self.heap.peek() {
                Some(e) if self.cancelled.contains(&e.seq) => {
                    let seq = e.seq;
                    self.cancelled.remove(&seq);
                    self.heap.pop();
                }
                _ => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.schedule(Nanos(5), "b");
        q.schedule(Nanos(1), "a");
        q.schedule(Nanos(5), "c");
        let x = q.schedule(Nanos(3), "x");
        q.cancel(x);
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(got, vec![(Nanos(1), "a"), (Nanos(5), "b"), (Nanos(5), "c")]);
        assert_eq!(q.now(), Nanos(5));
        assert_eq!(q.delivered(), 3);
    }

    #[test]
    fn a_timer_outside_the_queue_keeps_its_insertion_place() {
        let mut q = EventQueue::new();
        q.schedule(Nanos(5), "a");
        let timer = (Nanos(5), q.take_seq());
        q.schedule(Nanos(5), "b");
        // the timer sorts after "a" and before "b", as if it had been queued
        assert!(q.peek_key().unwrap() < timer);
        assert_eq!(q.pop(), Some((Nanos(5), "a")));
        assert!(timer < q.peek_key().unwrap());
        q.advance_to(Nanos(4));
        assert_eq!(q.now(), Nanos(5), "the clock never goes back");
        q.advance_to(timer.0);
        assert_eq!((q.now(), q.delivered()), (Nanos(5), 1), "a timer is not a queue delivery");
    }

    #[test]
    fn never_goes_back_in_time() {
        let mut q = EventQueue::new();
        q.schedule(Nanos(10), 1);
        q.pop();
        q.schedule(Nanos(3), 2);
        assert_eq!(q.pop(), Some((Nanos(10), 2)));
    }

    proptest! {
        #[test]
        fn pops_sorted_and_skips_cancelled(
            times in proptest::collection::vec(0u64..1000, 0..200), cancel_mask in any::<u64>()
        ) {
            let mut q = EventQueue::new();
            let ids: Vec<_> = times.iter().enumerate().map(|(i, &t)| q.schedule(Nanos(t), i)).collect();
            let mut expect: Vec<(u64, usize)> = Vec::new();
            for (i, id) in ids.iter().enumerate() {
                if cancel_mask >> (i % 64) & 1 == 1 { q.cancel(*id); } else { expect.push((times[i], i)); }
            }
            expect.sort();
            let got: Vec<(u64, usize)> = std::iter::from_fn(|| q.pop()).map(|(t, i)| (t.0, i)).collect();
            prop_assert_eq!(got, expect);
        }
    }
}
