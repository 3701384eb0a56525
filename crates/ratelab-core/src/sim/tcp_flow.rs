//! A bulk TCP flow: the sans-IO TCP sender/receiver pair plus the timer bookkeeping the
//! event loop needs (pending wake-ups, older events are stale).

use super::{ControlMsg, Event, Simulation};
use crate::network::packet::{Packet, Payload};
use crate::transport::tcp::{Ack, TcpReceiver, TcpSender};
use crate::units::{Duration, Time};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

pub struct TcpFlow {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    /// Pending sender timer event (RTO or pacing release).
    pub sender_wake: Option<Time>,
    /// Pending receiver (delayed-ACK) timer event.
    pub receiver_wake: Option<Time>,
    /// On/off pattern (RFC 8867 5.7), if any.
    pub on_off: Option<OnOff>,
}

/// Files of `file_bytes` separated by exponential OFF times.
pub struct OnOff {
    pub file_bytes: u64,
    pub off_mean_s: f64,
    pub initially_on: bool,
    pub rng: ChaCha8Rng,
    /// An ON event is scheduled (the current file is done).
    pub waiting: bool,
    /// Files started so far.
    pub files: u64,
}

impl OnOff {
    /// Draw the next OFF time (exponential with mean `off_mean_s`).
    pub fn off_time(&mut self) -> Duration {
        let u: f64 = self.rng.gen();
        Duration::from_secs_f64(-self.off_mean_s * (1.0 - u).ln())
    }
}

/// The event loop's TCP handlers: segments out, timers, ACKs, on/off files.
impl Simulation {
    /// Send every segment the TCP sender allows now and re-arm its timer.
    pub(super) fn tcp_transmit(&mut self, f: u32) {
        let now = self.now;
        if !self.flows[f as usize].active { return; }
        loop {
            let Some(t) = self.tcp(f) else { return };
            let Some(seg) = t.sender.poll_transmit(now) else { break };
            let pkt = Packet {
                flow: f, seq: seg.seq, size: seg.wire_size, send_time: now, enqueue_time: now, tx_start: now, probe_cluster: None,
                payload: Payload::Tcp { seq: seg.seq, len: seg.len.get().clamp(0, u32::MAX as i64) as u32, retransmit: seg.is_retransmit },
            };
            self.send_into_network(pkt);
        }
        let Some(t) = self.tcp(f) else { return };
        if let Some(at) = t.sender.next_timer() {
            if t.sender_wake.is_none_or(|w| at < w) {
                t.sender_wake = Some(at.max(now));
                self.events.push(at.max(now), Event::TcpSenderTimer(f));
            }
        }
    }

    pub(super) fn schedule_tcp_receiver(&mut self, f: u32) {
        let Some(t) = self.tcp(f) else { return };
        if let Some(at) = t.receiver.next_timer() {
            if t.receiver_wake.is_none_or(|w| at < w) {
                t.receiver_wake = Some(at);
                self.events.push(at, Event::TcpReceiverTimer(f));
            }
        }
    }

    pub(super) fn on_tcp_sender_timer(&mut self, f: u32) {
        let now = self.now;
        let active = self.flows[f as usize].active;
        let Some(t) = self.tcp(f) else { return };
        if t.sender_wake != Some(now) { return; }
        t.sender_wake = None;
        if !active { return; }
        if t.sender.next_timer().is_some_and(|at| at <= now) { t.sender.on_timer(now); }
        self.tcp_transmit(f);
    }

    pub(super) fn on_tcp_receiver_timer(&mut self, f: u32) {
        let now = self.now;
        let Some(t) = self.tcp(f) else { return };
        if t.receiver_wake != Some(now) { return; }
        t.receiver_wake = None;
        if let Some(ack) = t.receiver.on_timer(now) { self.send_control(f, ControlMsg::TcpAck(ack)); }
        self.schedule_tcp_receiver(f);
    }

    pub(super) fn on_tcp_ack(&mut self, f: u32, ack: Ack) {
        let now = self.now;
        if !self.flows[f as usize].active { return; }
        let Some(t) = self.tcp(f) else { return };
        t.sender.on_ack(now, &ack);
        if let Some(o) = t.on_off.as_mut() {
            if !o.waiting && t.sender.is_finished() {
                o.waiting = true;
                let off = o.off_time();
                self.events.push(now + off, Event::TcpOn(f));
            }
        }
        self.tcp_transmit(f);
    }

    pub(super) fn on_tcp_on(&mut self, f: u32) {
        if !self.flows[f as usize].active { return; }
        let Some(t) = self.tcp(f) else { return };
        let Some(o) = t.on_off.as_mut() else { return };
        o.waiting = false;
        o.files += 1;
        t.sender.extend_stream(o.file_bytes);
        self.tcp_transmit(f);
    }
}
