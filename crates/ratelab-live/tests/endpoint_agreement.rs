//! One media endpoint, two drivers: a scenario run by the simulator and the same sender driven
//! by live mode's loop (`sender::step`) under a virtual clock make the same controller calls,
//! at the same times, with the same arguments (`on_sender_queue` included).
//!
//! The live side gets, at the same instants, the feedback the simulator's receiver sent: a
//! per-packet feedback generator fed with the simulator's packet arrivals, delivered after the
//! flow's return delay. Same inputs, so any difference is in how the drivers run the endpoint.

use ratelab_core::controller::{Constraints, Controller, SentPacket, TransportFeedback, Update};
use ratelab_core::feedback::generator::{FeedbackGenerator, GeneratorMode};
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::{build_simulation, FlowState};
use ratelab_core::{Bitrate, Bytes, Duration, Time};
use ratelab_live::sender::{step, Incoming};
use std::sync::{Arc, Mutex};

type Calls = Arc<Mutex<Vec<String>>>;

/// Records every call with its time and arguments, then forwards it.
struct Recorder { inner: Box<dyn Controller>, calls: Calls }

impl Recorder {
    fn log(&self, s: String) { self.calls.lock().unwrap().push(s); }
}

impl Controller for Recorder {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update { self.log(format!("{} start", now.as_us())); self.inner.on_start(now, c) }
    fn on_packet_sent(&mut self, p: &SentPacket) -> Update { self.log(format!("{} sent {} {} {}", p.send_time.as_us(), p.seq, p.size.get(), p.data_in_flight.get())); self.inner.on_packet_sent(p) }
    fn on_feedback(&mut self, f: &TransportFeedback) -> Update {
        let pk: Vec<_> = f.packets.iter().map(|p| (p.sent.seq, p.recv_time.map(|t| t.as_us()))).collect();
        self.log(format!("{} feedback {:?}", f.feedback_time.as_us(), pk));
        self.inner.on_feedback(f)
    }
    fn on_tick(&mut self, now: Time) -> Update { self.log(format!("{} tick", now.as_us())); self.inner.on_tick(now) }
    fn tick_interval(&self) -> Duration { self.inner.tick_interval() }
    fn on_rtt_update(&mut self, now: Time, rtt: Duration) -> Update { self.log(format!("{} rtt {}", now.as_us(), rtt.as_us())); self.inner.on_rtt_update(now, rtt) }
    fn on_constraints(&mut self, now: Time, c: Constraints) -> Update { self.log(format!("{} constraints", now.as_us())); self.inner.on_constraints(now, c) }
    fn on_remote_estimate(&mut self, now: Time, r: Bitrate) -> Update { self.log(format!("{} remb {}", now.as_us(), r.bps())); self.inner.on_remote_estimate(now, r) }
    fn on_sender_queue(&mut self, now: Time, q: Bytes) -> Update { self.log(format!("{} queue {}", now.as_us(), q.get())); self.inner.on_sender_queue(now, q) }
    fn on_route_change(&mut self, now: Time, c: Constraints) -> Update { self.log(format!("{} route", now.as_us())); self.inner.on_route_change(now, c) }
}

fn scenario(controller: &str) -> Scenario {
    let v = serde_json::json!({
        "name": "agreement", "duration_s": 6,
        "link": {"capacity_kbps": 1500, "delay_ms": 20, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": controller, "one_way_delay_ms": 5, "return_delay_ms": 25,
                   "feedback": {"mode": "per-packet"}, "media": {"audio_kbps": 32}}]
    });
    Scenario::from_json(&v.to_string()).expect("valid scenario")
}

fn calls_until(calls: &Calls, cutoff: Time) -> Vec<String> {
    calls.lock().unwrap().iter().filter(|c| c.split(' ').next().unwrap().parse::<i64>().unwrap() < cutoff.as_us()).cloned().collect()
}

fn agree(controller: &str) {
    let sc = scenario(controller);
    let seed = 7;
    // The simulator's run.
    let sim_calls: Calls = Default::default();
    let mut sim = build_simulation(&sc, seed, None).unwrap();
    let FlowState::Media(m) = &mut sim.flows[0].state else { panic!("media flow") };
    m.sender.map_controller(|c| Box::new(Recorder { inner: c, calls: sim_calls.clone() }));
    let ret = sim.flows[0].ret_delay;
    let start = sim.flows[0].start;
    sim.run_until(Time::from_secs_f64(100.0));
    let log = sim.take_packets();
    // The feedback the simulator's receiver sent, in arrival order at the sender.
    let mut arrivals: Vec<(Time, u64)> = log.seq.iter().zip(&log.recv_s)
        .filter(|(_, r)| r.is_finite()).map(|(&s, &r)| (Time::from_us((r * 1e6).round() as i64), s)).collect();
    arrivals.sort();
    let mut gen = FeedbackGenerator::new(GeneratorMode::PerPacket, Duration::from_ms(50));
    let mut feedback: std::collections::VecDeque<(Time, Incoming)> = arrivals.iter()
        .filter_map(|&(t, s)| gen.on_packet(t, s).map(|r| (t + ret, Incoming::Feedback(r, true)))).collect();

    // The live loop with a virtual clock, on a sender built as the simulator builds it.
    let live_calls: Calls = Default::default();
    let mut sim2 = build_simulation(&sc, seed, None).unwrap();
    let FlowState::Media(m2) = sim2.flows.swap_remove(0).state else { panic!("media flow") };
    let mut s = m2.sender;
    s.map_controller(|c| Box::new(Recorder { inner: c, calls: live_calls.clone() }));
    let cutoff = start + Duration::from_secs(4);
    s.start(start);
    let mut sent = 0u64;
    loop {
        let next_fb = feedback.front().map(|f| f.0);
        let now = [s.poll_timeout(), next_fb].into_iter().flatten().min().unwrap();
        if now >= cutoff { break; }
        let mut due = Vec::new();
        while feedback.front().is_some_and(|f| f.0 <= now) { due.push(feedback.pop_front().unwrap().1); }
        step(&mut s, now, due.into_iter(), |_| sent += 1);
    }
    let (a, b) = (calls_until(&sim_calls, cutoff), calls_until(&live_calls, cutoff));
    assert!(sent > 300, "{controller}: {sent} packets");
    assert!(a.iter().any(|c| c.contains(" queue ")), "{controller}: on_sender_queue is called");
    assert!(a.iter().any(|c| c.contains(" feedback ")), "{controller}: feedback reached the controller");
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!("{controller}: call {i} differs: simulator {:?}, live loop {:?} (of {} / {})", a.get(i), b.get(i), a.len(), b.len());
    }
}

#[test]
fn simulator_and_live_loop_make_the_same_controller_calls() {
    for c in ["gcc", "scream", "nada"] { agree(c); }
}
