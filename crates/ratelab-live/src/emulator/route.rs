//! Route changes in the emulator (`route_changes`, the scenario's `[[route_changes]]`): at its
//! time `at_s` (on the emulator's clock: since `live run` started, or since `ratelab emulate` /
//! the handle started) the link of its direction becomes the new route's link — capacity or
//! trace (times counting from `at_s`), delay, loss and queue — exactly as the simulator applies
//! it (`sim/route.rs`; the link is built by the core's `sim::build::route_change_links` and
//! swapped in by `Link::reroute`).
//!
//! Packets at the old bottleneck at that time: with `queued = "drop"` (default) the one in
//! service and those waiting are lost, counted as queue drops (recorded with fate `queue`);
//! with `"carry"` they wait for the new route (the one in service finishes at the old rate).
//! Datagrams already past the bottleneck (propagating) are delivered when they were due, so
//! with a shorter new path, new datagrams can overtake them — the simulator's semantics.
//!
//! Path delays: each route's delay after the changed link moves by the new link's `delay_ms`
//! minus the old one's (the data delay of routes whose data crosses it, the return delay of
//! the others), never below zero (a route given explicit delays may not include the link's).
//! The emulator tells no sender: in `live run` each flow's sender is told by its own loop.

use super::{Emulator, Ev, Held};
use ratelab_core::network::capacity::CapacitySchedule;
use ratelab_core::scenario::{validate_link, Direction, RouteChangeConfig};
use ratelab_core::sim::build::{route_change_links, RouteLink};
use ratelab_core::sim::events::EventQueue;
use ratelab_core::{ConfigError, Duration, Time};
use std::collections::HashMap;

use crate::flags;

/// The route changes of a run and the link delays in effect.
pub(super) struct Routing {
    /// The new routes, taken when applied.
    changes: Vec<Option<RouteLink>>,
    /// `delay_ms` of the link in effect, by direction.
    link_delay: [Duration; 2],
    /// Each link's capacity over the run: `(from, schedule)`, the first from 0 (the summary's
    /// `LinkRecord` form).
    pub(super) capacities: [Vec<(Time, CapacitySchedule)>; 2],
}

impl Routing {
    pub(super) fn new(changes: Vec<RouteLink>, link_delay: [Duration; 2], capacities: [CapacitySchedule; 2]) -> Self {
        let mut caps = capacities.map(|c| vec![(Time::ZERO, c)]);
        for rl in &changes { caps[rl.dir.index()].push((rl.at, rl.capacity.clone())); }
        Routing { changes: changes.into_iter().map(Some).collect(), link_delay, capacities: caps }
    }
}

/// `route_changes` of the emulator's options: in time order, ranges as the scenario's, a
/// reverse one only with a `reverse_link`, and no `flows` (the emulator tells no sender).
pub(super) fn validate(changes: &[RouteChangeConfig], has_reverse: bool) -> Result<(), ConfigError> {
    let mut prev = f64::NEG_INFINITY;
    for (i, rc) in changes.iter().enumerate() {
        let p = format!("route_changes[{i}]");
        flags::check(&format!("{p}.at_s"), flags::scenario("route_changes[0].at_s"), rc.at_s)?;
        if rc.at_s < prev { return Err(ConfigError::new(format!("{p}.at_s"), format!("route changes must be in time order ({} s comes after {prev} s)", rc.at_s))); }
        prev = rc.at_s;
        if rc.direction == Direction::Reverse && !has_reverse {
            return Err(ConfigError::new(format!("{p}.direction"), "\"reverse\" needs a reverse_link to change"));
        }
        if rc.flows.is_some() { return Err(ConfigError::new(format!("{p}.flows"), "the emulator tells no sender of a route change; leave flows out")); }
        flags::check_part(&format!("{p}.link"), &rc.link, &[])?;
        validate_link(&format!("{p}.link"), &rc.link)?;
    }
    Ok(())
}

/// The new routes of `changes`, built by the core as the simulator builds them.
pub(super) fn build(changes: &[RouteChangeConfig], end: Time) -> Result<Vec<RouteLink>, String> {
    route_change_links(changes, end).map_err(|e| e.to_string())
}

impl Emulator {
    /// Put every route change on the event queue, at its time.
    pub(super) fn schedule_route_changes(&self, events: &mut EventQueue<Ev>) {
        for (i, rl) in self.routing.changes.iter().enumerate() {
            if let Some(rl) = rl { events.push(rl.at, Ev::Route(i)); }
        }
    }

    /// Route change `i` takes effect at `t` (its time).
    pub(super) fn on_route_change(&mut self, i: usize, t: Time, held: &mut HashMap<u64, Held>) {
        let Some(rl) = self.routing.changes.get_mut(i).and_then(Option::take) else { return };
        let d = rl.dir.index();
        for pkt in self.links[d].link.reroute(t, rl.link, rl.carry) {
            let Some(h) = held.remove(&pkt.seq) else { continue };
            let leg = self.routes[h.route].leg(d);
            self.routes[h.route].legs[leg].dropped(false);
            if let (Some(rec), 0) = (&self.recorder, leg) {
                rec.packet(h.route, h.arrived.as_secs_f64(), pkt.size.get(), f64::NAN, f64::NAN, super::Fate::Queue, &h.bytes);
            }
        }
        self.links[d].last_queue_delay = Duration::ZERO;
        let old = std::mem::replace(&mut self.routing.link_delay[d], rl.delay);
        let shift = |x: Duration| (x - old + rl.delay).max(Duration::ZERO);
        for r in &mut self.routes {
            if r.route.direction.index() == d { r.route.data_delay = shift(r.route.data_delay) } else { r.route.return_delay = shift(r.route.return_delay) }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The emulator's model driven with explicit times (no waiting on the wall clock): a
    //! datagram of 1222 bytes is 1250 on the wire, 10 ms at 1 Mbit/s, 2.5 ms at 4 Mbit/s.
    use super::super::{Emulator, EmulatorOptions, Ev, Fate, Held, Recorder, RouteConfig};
    use crate::net::LiveClock;
    use crate::StopFlag;
    use ratelab_core::sim::events::EventQueue;
    use ratelab_core::{Bitrate, Duration, Time};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::collections::HashMap;
    use std::net::UdpSocket;

    struct Model { emu: Emulator, rec: Recorder, events: EventQueue<Ev>, held: HashMap<u64, Held>, rng: ChaCha8Rng, next: u64, _rx: UdpSocket }

    /// 1 Mbit/s and 10 ms until 1 s, then 4 Mbit/s and 50 ms; `queued` as given.
    fn model(queued: &str) -> Model {
        let opts: EmulatorOptions = serde_json::from_value(serde_json::json!({
            "link": {"capacity_kbps": 1000, "delay_ms": 10},
            "route_changes": [{"at_s": 1.0, "queued": queued, "link": {"capacity_kbps": 4000, "delay_ms": 50}}],
        })).unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let cfg = RouteConfig { sender: Some("127.0.0.1:9".into()), receiver: rx.local_addr().unwrap().to_string(), direction: Default::default(), data_delay_ms: None, return_delay_ms: None };
        let routes = opts.routes(&[cfg]).unwrap();
        let rec = Recorder::new(100);
        let emu = Emulator::new(opts, "127.0.0.1:0".parse().unwrap(), routes[0].receiver, LiveClock::new(), StopFlag::new()).unwrap().with_routes(routes).with_recorder(rec.clone());
        let mut events = EventQueue::default();
        emu.schedule_route_changes(&mut events);
        Model { emu, rec, events, held: HashMap::new(), rng: ChaCha8Rng::seed_from_u64(1), next: 0, _rx: rx }
    }

    impl Model {
        fn send(&mut self, at_ms: i64, k: usize) {
            let t = Time::from_ms(at_ms);
            self.emu.process(&mut self.events, &mut self.held, &mut self.rng, t);
            for _ in 0..k {
                self.emu.admit(0, 0, self.next, &[0x80; 1222], t, &mut self.events, &mut self.held, &mut self.rng);
                self.next += 1;
            }
        }
        fn run_to(&mut self, ms: i64) { self.emu.process(&mut self.events, &mut self.held, &mut self.rng, Time::from_ms(ms)); }
        /// `(fate, delivered ms)` of each recorded datagram, in record order.
        fn fates(&self) -> Vec<(Fate, Option<f64>)> {
            let (p, _, _) = self.rec.drain();
            p.fate.iter().zip(&p.delivered_s).map(|(f, d)| (*f, (!d.is_nan()).then(|| (d * 1e6).round() / 1e3))).collect()
        }
    }

    #[test]
    fn from_the_change_on_datagrams_get_the_new_capacity_and_delay_and_the_old_queue_is_lost() {
        let mut m = model("drop");
        m.send(500, 1); // 10 ms + 10 ms
        m.run_to(600);
        assert_eq!(m.emu.links[0].link.capacity().rate_at(Time::from_ms(600)), Bitrate::from_kbps(1000));
        m.send(995, 3); // one in service until 1005 ms, two waiting: all at the old bottleneck at 1 s
        m.run_to(1400);
        assert_eq!(m.emu.links[0].link.capacity().rate_at(Time::from_ms(1400)), Bitrate::from_kbps(4000));
        assert_eq!(m.emu.routes[0].route.data_delay, Duration::from_ms(50));
        m.send(1500, 1); // 2.5 ms + 50 ms
        m.run_to(2000);
        assert_eq!(m.fates(), vec![(Fate::Delivered, Some(520.0)), (Fate::Queue, None), (Fate::Queue, None), (Fate::Queue, None), (Fate::Delivered, Some(1552.5))]);
        let leg = &m.emu.routes[0].legs[0].stats;
        assert_eq!((leg.queue_drops, leg.delivered_packets), (3, 2));
        assert_eq!(m.emu.links[0].link.stats.queue_drops, 3);
    }

    #[test]
    fn carried_datagrams_wait_for_the_new_route_and_leave_with_its_delay() {
        let mut m = model("carry");
        m.send(995, 3);
        m.run_to(2000);
        // The one in service ends at 1005 ms at the old rate; the two waiting go at 4 Mbit/s;
        // all leave after the change, so with the new 50 ms.
        assert_eq!(m.fates(), vec![(Fate::Delivered, Some(1055.0)), (Fate::Delivered, Some(1057.5)), (Fate::Delivered, Some(1060.0))]);
    }

    #[test]
    fn bad_route_changes_name_their_field() {
        let bad = |rc: serde_json::Value| {
            let opts: EmulatorOptions = serde_json::from_value(serde_json::json!({"route_changes": rc})).unwrap();
            opts.validate().unwrap_err().field
        };
        assert_eq!(bad(serde_json::json!([{"at_s": 2, "link": {"capacity_kbps": 1}}, {"at_s": 1, "link": {"capacity_kbps": 1}}])), "route_changes[1].at_s");
        assert_eq!(bad(serde_json::json!([{"at_s": 1, "direction": "reverse", "link": {"capacity_kbps": 1}}])), "route_changes[0].direction");
        assert_eq!(bad(serde_json::json!([{"at_s": 1, "flows": [0], "link": {"capacity_kbps": 1}}])), "route_changes[0].flows");
        assert_eq!(bad(serde_json::json!([{"at_s": 1, "link": {"capacity_kbps": -5}}])), "route_changes[0].link.capacity_kbps");
    }
}
