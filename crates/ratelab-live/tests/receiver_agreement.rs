//! One receiver endpoint, two drivers: a scenario run by the simulator and the same arrivals
//! fed, under a virtual clock, through live mode's receiver loop functions (`receiver::on_arrival`,
//! `receiver::on_timers`) into a receiver built as live builds it (`build_media_receiver`)
//! produce the same receiver output — the same feedback reports (report time and every
//! arrival in them; TWCC every 50 ms and per-packet) and estimates, in the same order — and the
//! same receiver-side estimator calls, at the same times, with the same arguments.
//!
//! The simulator's side is observed where it surfaces: the estimator through a recorder, the
//! reports and estimates as the sender's controller gets them (RFC 8888-style report times on,
//! so each report's generation time reaches it). Arrivals carry no frame parts on the live side:
//! feedback and estimates do not depend on rendering.

use ratelab_core::controller::{Constraints, Controller, ReceivedPacket, ReceiverEstimator, SentPacket, TransportFeedback, Update};
use ratelab_core::endpoint::{Arrival, ReceiverTransmit};
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build::build_media_receiver;
use ratelab_core::sim::{build_simulation, FlowState};
use ratelab_core::{Bitrate, Bytes, Duration, Time};
use ratelab_live::receiver::{on_arrival, on_timers};
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, s: String) { log.lock().unwrap().push(s); }

/// A receiver-side estimator: the bytes it saw since the last tick, as a rate.
struct Toy { bytes: i64 }

impl ReceiverEstimator for Toy {
    fn on_packet_received(&mut self, p: &ReceivedPacket) { self.bytes += p.size.get(); }
    fn on_tick(&mut self, _: Time) -> Option<Bitrate> {
        let r = Bitrate::from_bps(std::mem::take(&mut self.bytes) * 80);
        (r > Bitrate::ZERO).then_some(r)
    }
    fn tick_interval(&self) -> Duration { Duration::from_ms(100) }
}

/// Records every estimator call with its time and arguments, then forwards it.
struct EstRecorder { inner: Toy, log: Log }

impl ReceiverEstimator for EstRecorder {
    fn on_packet_received(&mut self, p: &ReceivedPacket) {
        push(&self.log, format!("{} pkt {} {} {} {:?}", p.recv_time.as_us(), p.seq, p.size.get(), p.send_time.as_us(), p.kind));
        self.inner.on_packet_received(p)
    }
    fn on_tick(&mut self, now: Time) -> Option<Bitrate> {
        let r = self.inner.on_tick(now);
        push(&self.log, format!("{} tick {:?}", now.as_us(), r.map(|r| r.bps())));
        r
    }
    fn tick_interval(&self) -> Duration { self.inner.tick_interval() }
    fn on_rtt_update(&mut self, now: Time, rtt: Duration) { push(&self.log, format!("{} rtt {}", now.as_us(), rtt.as_us())); }
}

/// The sender's controller: logs the receiver output it gets (report time and arrivals;
/// estimates at their send time at the receiver), then forwards the call.
struct Sink { inner: Box<dyn Controller>, log: Log, ret: Duration }

impl Controller for Sink {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update { self.inner.on_start(now, c) }
    fn on_packet_sent(&mut self, p: &SentPacket) -> Update { self.inner.on_packet_sent(p) }
    fn on_feedback(&mut self, f: &TransportFeedback) -> Update {
        let arrivals: Vec<_> = f.packets.iter().filter_map(|p| p.recv_time.map(|t| (p.sent.seq, t.as_us()))).collect();
        push(&self.log, format!("{} fb {:?}", f.report_time.expect("report times on").as_us(), arrivals));
        self.inner.on_feedback(f)
    }
    fn on_tick(&mut self, now: Time) -> Update { self.inner.on_tick(now) }
    fn tick_interval(&self) -> Duration { self.inner.tick_interval() }
    fn on_rtt_update(&mut self, now: Time, rtt: Duration) -> Update { self.inner.on_rtt_update(now, rtt) }
    fn on_remote_estimate(&mut self, now: Time, r: Bitrate) -> Update {
        push(&self.log, format!("{} est {}", (now - self.ret).as_us(), r.bps()));
        self.inner.on_remote_estimate(now, r)
    }
    fn on_sender_queue(&mut self, now: Time, q: Bytes) -> Update { self.inner.on_sender_queue(now, q) }
}

fn scenario(mode: &str) -> Scenario {
    let v = serde_json::json!({
        "name": "receiver-agreement", "duration_s": 6,
        "link": {"capacity_kbps": 1200, "delay_ms": 20, "queue": {"ms": 150}, "loss": 0.01},
        "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 5, "return_delay_ms": 25,
                   "feedback": {"mode": mode, "interval_ms": 50, "report_time": true}, "media": {"audio_kbps": 32}}]
    });
    Scenario::from_json(&v.to_string()).expect("valid scenario")
}

fn before(log: &Log, cutoff: Time) -> Vec<String> {
    log.lock().unwrap().iter().filter(|c| c.split(' ').next().unwrap().parse::<i64>().unwrap() < cutoff.as_us()).cloned().collect()
}

fn first_difference(what: &str, a: &[String], b: &[String]) {
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!("{what} {i} differs: simulator {:?}, live loop {:?} (of {} / {})", a.get(i), b.get(i), a.len(), b.len());
    }
}

#[test]
fn simulator_and_live_loop_drive_the_receiver_alike() {
    for mode in ["twcc", "per-packet"] { agree(mode); }
}

fn agree(mode: &str) {
    let sc = scenario(mode);
    // The simulator's run.
    let (sim_est, sim_out): (Log, Log) = Default::default();
    let mut sim = build_simulation(&sc, 11, None).unwrap();
    let ret = sim.flows[0].ret_delay;
    let start = sim.flows[0].start;
    let FlowState::Media(m) = &mut sim.flows[0].state else { panic!("media flow") };
    m.receiver.set_estimator(Some(Box::new(EstRecorder { inner: Toy { bytes: 0 }, log: sim_est.clone() })));
    let out = sim_out.clone();
    m.sender.map_controller(move |c| Box::new(Sink { inner: c, log: out, ret }));
    sim.run_to_end();
    // The arrivals the simulator's receiver got, from its estimator's record.
    let arrivals: Vec<(Time, Arrival)> = sim_est.lock().unwrap().iter().filter(|c| c.contains(" pkt ")).map(|c| {
        let f: Vec<&str> = c.split(' ').collect();
        let kind = match f[5] { "Video" => ratelab_core::controller::PacketKind::Video, "Audio" => ratelab_core::controller::PacketKind::Audio,
                                "Probe" => ratelab_core::controller::PacketKind::Probe, _ => ratelab_core::controller::PacketKind::Padding };
        let us = |s: &str| s.parse::<i64>().unwrap();
        (Time::from_us(us(f[0])), Arrival { seq: us(f[2]) as u64, size: Bytes::new(us(f[3])), send_time: Some(Time::from_us(us(f[4]))), kind, frame: None })
    }).collect();

    // Live's receiver loop under a virtual clock, on a receiver built as live builds it.
    let (live_est, live_out): (Log, Log) = Default::default();
    let mut rx = build_media_receiver(&sc.flows[0], Some(Box::new(EstRecorder { inner: Toy { bytes: 0 }, log: live_est.clone() })), Some(ret));
    rx.start(start);
    let emit = |now: Time| {
        let log = live_out.clone();
        move |m: ReceiverTransmit| match m {
            ReceiverTransmit::Feedback(r) => {
                let a: Vec<_> = r.arrivals.iter().enumerate().filter_map(|(i, t)| t.map(|t| (r.base_seq + i as u64, t.as_us()))).collect();
                push(&log, format!("{} fb {:?}", r.report_time.as_us(), a));
            }
            ReceiverTransmit::Estimate(rate) => push(&log, format!("{} est {}", now.as_us(), rate.bps())),
            ReceiverTransmit::Nack(seqs) => push(&log, format!("{} nack {:?}", now.as_us(), seqs)),
        }
    };
    let cutoff = start + Duration::from_secs(4);
    let mut next = arrivals.iter().peekable();
    loop {
        let now = [next.peek().map(|a| a.0), rx.poll_timeout()].into_iter().flatten().min().unwrap();
        if now >= cutoff { break; }
        // As the loop runs: the datagrams that are there, then the timers.
        while let Some(&&(_, a)) = next.peek().filter(|a| a.0 <= now) { next.next(); on_arrival(&mut rx, now, a, emit(now)); }
        on_timers(&mut rx, now, emit(now));
    }

    let (a, b) = (before(&sim_est, cutoff), before(&live_est, cutoff));
    assert!(a.iter().filter(|c| c.contains(" pkt ")).count() > 300 && a.iter().any(|c| c.contains(" rtt ")), "the estimator saw the flow");
    first_difference(&format!("{mode}: estimator call"), &a, &b);
    let (a, b) = (before(&sim_out, cutoff), before(&live_out, cutoff));
    assert!(a.iter().filter(|c| c.contains(" fb ")).count() > 60 && a.iter().any(|c| c.contains(" est ")), "{mode}: reports and estimates reached the sender");
    first_difference(&format!("{mode}: receiver output"), &a, &b);
}
