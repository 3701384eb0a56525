//! Messages that travel receiver → sender: media feedback, receiver-side rate reports and TCP
//! ACKs. Without a `reverse_link` they arrive after the flow's return delay; with one (RFC 8867
//! 5.3) each becomes a packet of its real wire size that queues, can be dropped and shares the
//! reverse bottleneck with the media going that way.

use super::FlowState;
use crate::endpoint::ReceiverTransmit;
use crate::feedback::generator::FeedbackReport;
use crate::transport::tcp::Ack;
use crate::units::{Bitrate, Bytes};
use crate::wire::remb::Remb;
use crate::wire::twcc::TwccEncoder;

/// IPv4 (20) + UDP (8) bytes around every RTCP datagram.
pub const IP_UDP_BYTES: i64 = 28;

#[derive(Debug)]
pub enum ControlMsg {
    /// A transport-wide feedback report (TWCC on the wire).
    Feedback(Box<FeedbackReport>),
    /// A receiver-side estimate (REMB on the wire).
    RemoteEstimate(Bitrate),
    /// A TCP acknowledgement (its own `wire_size`).
    TcpAck(Ack),
    /// A generic NACK for these media sequence numbers (`media.nack`).
    Nack(Vec<u64>),
}

/// The simulator's side of the return path: a receiver's output becomes messages, and a message
/// that arrived reaches the sender (or the TCP source) it is for.
impl super::Simulation {
    /// Send what media flow `f`'s receiver has to send back, in order.
    #[inline]
    pub(super) fn send_receiver_output(&mut self, f: u32) {
        loop {
            let FlowState::Media(m) = &mut self.flows[f as usize].state else { return };
            let msg = match m.receiver.poll_transmit() {
                Some(ReceiverTransmit::Feedback(r)) => ControlMsg::Feedback(Box::new(r)),
                Some(ReceiverTransmit::Estimate(rate)) => ControlMsg::RemoteEstimate(rate),
                Some(ReceiverTransmit::Nack(seqs)) => ControlMsg::Nack(seqs),
                None => return,
            };
            self.send_control(f, msg);
        }
    }

    pub(super) fn on_control(&mut self, f: u32, msg: ControlMsg) {
        match msg {
            ControlMsg::Feedback(r) => self.on_feedback(f, &r),
            ControlMsg::RemoteEstimate(rate) => self.on_remote_estimate(f, rate),
            ControlMsg::TcpAck(a) => self.on_tcp_ack(f, a),
            ControlMsg::Nack(seqs) => {
                let now = self.now;
                let Some(m) = self.media(f) else { return };
                m.sender.handle_nack(now, &seqs);
                self.schedule_pacer(f);
            }
        }
    }
}

impl ControlMsg {
    /// Bytes on the wire, from the real encoders: a TWCC report as RTCP transport-feedback
    /// packets (several when it exceeds the 1200-byte packet limit; carried here as one
    /// datagram of their total size), a REMB for one SSRC, or the ACK's own size. `scratch` is
    /// a reusable buffer.
    pub fn wire_size(&self, scratch: &mut Vec<u8>) -> Bytes {
        let rtcp = match self {
            ControlMsg::TcpAck(a) => return a.wire_size,
            ControlMsg::Feedback(r) => {
                let mut total = 0i64;
                for p in TwccEncoder::new(0, 0).encode(r) {
                    scratch.clear();
                    if p.write(scratch).is_ok() { total += scratch.len() as i64; }
                }
                // An empty report still costs a minimal transport-feedback packet (20 bytes of header + one chunk).
                total.max(24)
            }
            // RFC 4585 §6.2.1: 12 bytes (header, sender and media SSRC), then one 4-byte FCI
            // (PID + 16-bit bitmask of the next 16) per run of up to 17 numbers.
            ControlMsg::Nack(seqs) => 12 + 4 * nack_fci_count(seqs) as i64,
            ControlMsg::RemoteEstimate(rate) => {
                scratch.clear();
                let remb = Remb { sender_ssrc: 0, bitrate_bps: rate.bps().max(0) as u64, ssrcs: vec![0] };
                if remb.write(scratch).is_ok() { scratch.len() as i64 } else { 24 }
            }
        };
        Bytes::new(rtcp + IP_UDP_BYTES)
    }
}

/// FCI entries a generic NACK needs for `seqs` (sorted ascending, as the NACK list gives them).
pub fn nack_fci_count(seqs: &[u64]) -> usize {
    let mut n = 0;
    let mut pid: Option<u64> = None;
    for &s in seqs {
        if pid.is_none_or(|p| s > p + 16) { pid = Some(s); n += 1; }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    /// Hand-computed sizes. REMB for one SSRC: 4 header + 4 sender SSRC + 4 media SSRC (0) +
    /// 4 "REMB" + 4 (count, exp, mantissa) + 4 SSRC = 24, plus 28 → 52. TWCC for 3 packets
    /// received 1 ms apart: 20 fixed bytes (header, 2 SSRCs, base seq, status count, reference
    /// time, feedback count) + one 2-byte chunk + three 1-byte small deltas = 25, padded to a
    /// 32-bit boundary = 28, plus 28 → 56.
    #[test]
    fn wire_sizes_by_hand() {
        let mut buf = Vec::new();
        assert_eq!(ControlMsg::RemoteEstimate(Bitrate::from_kbps(1500)).wire_size(&mut buf), Bytes::new(52));
        let r = FeedbackReport { report_time: Time::from_ms(100), base_seq: 7, arrivals: vec![Some(Time::from_ms(10)), Some(Time::from_ms(11)), Some(Time::from_ms(12))] };
        assert_eq!(ControlMsg::Feedback(Box::new(r)).wire_size(&mut buf), Bytes::new(56));
        let a = Ack::new(1000);
        assert_eq!(ControlMsg::TcpAck(a).wire_size(&mut buf), a.wire_size);
        // NACK for 5, 9, 21 (one FCI: 21 = 5 + 16) and 22 (a second): 12 + 8 + 28 = 48.
        assert_eq!(ControlMsg::Nack(vec![5, 9, 21, 22]).wire_size(&mut buf), Bytes::new(48));
        assert_eq!(nack_fci_count(&[1]), 1);
    }
}
