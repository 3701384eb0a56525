//! The window-sender congestion-control abstraction.
//!
//! Division of labour (as in Linux, where `tcp_congestion_ops` modules sit on top of the TCP
//! core): the [`super::TcpSender`] owns loss detection, the retransmission queue, the RTO timer,
//! the recovery state machine (fast retransmit, NewReno partial ACKs, SACK scoreboard) and
//! delivery-rate sampling. A [`WindowCongestionControl`] owns `cwnd`, `ssthresh` and, for
//! rate-based algorithms (BBR), the pacing rate. The sender asks it for the window before every
//! transmission and tells it about ACKs, congestion events and timeouts.
//!
//! During a NewReno recovery without SACK, the sender adds the RFC 6582 window inflation
//! (`+3·SMSS`, `+SMSS` per further duplicate ACK, deflation on partial ACKs) on top of
//! [`WindowCongestionControl::cwnd`] unless [`WindowCongestionControl::wants_recovery_inflation`]
//! says no; the controller itself only sets the post-reduction window.

use crate::units::{Bitrate, Bytes, Duration, Time};

/// The sender's loss-recovery state (Linux `tcp_ca_state`, reduced).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CaState {
    /// No recovery in progress.
    #[default]
    Open,
    /// Fast recovery after duplicate ACKs / SACK-detected loss, until the recovery point is
    /// cumulatively acknowledged.
    Recovery,
    /// After a retransmission timeout, until everything that was outstanding at the timeout is
    /// cumulatively acknowledged.
    Loss,
}

/// One delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation), for BBR.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Bytes delivered (cumulatively or selectively acknowledged) over `interval`.
    pub delivered: Bytes,
    /// max(send interval, ack interval) of the sampled flight.
    pub interval: Duration,
    /// `delivered / interval`.
    pub delivery_rate: Bitrate,
    /// The sampled segment was sent while the sender was application-limited, so the rate is a
    /// lower bound of what the path can carry.
    pub is_app_limited: bool,
    /// Sender's total delivered bytes when the sampled segment was sent.
    pub prior_delivered: Bytes,
}

/// What the sender tells the controller on each ACK that acknowledges new data (cumulatively
/// or by SACK).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckSample {
    pub now: Time,
    /// Bytes newly delivered by this ACK: newly SACKed plus newly cumulatively acknowledged
    /// bytes that were not SACKed before (Linux `acked_sacked`).
    pub newly_acked: Bytes,
    /// Bytes newly covered by the cumulative ACK field (including bytes SACKed earlier): the
    /// `N` of RFC 5681 slow start.
    pub newly_cum_acked: Bytes,
    /// RTT sample from this ACK (timestamp echo or Karn-filtered send time), if any.
    pub rtt: Option<Duration>,
    /// Smoothed RTT after this ACK's sample (RFC 6298), if any sample has been taken.
    pub srtt: Option<Duration>,
    /// Minimum RTT seen so far.
    pub min_rtt: Option<Duration>,
    /// Bytes in flight (RFC 6675 pipe: sent, not acknowledged, not SACKed, not marked lost)
    /// before and after this ACK.
    pub prior_in_flight: Bytes,
    pub in_flight: Bytes,
    /// Total bytes delivered so far (cumulative + SACKed), after this ACK.
    pub delivered: Bytes,
    /// `Recovery` if the ACK arrived during a fast recovery (including the full ACK that ends
    /// it) or started one; otherwise the sender's state (`Open`, or `Loss` after a timeout).
    pub state: CaState,
    /// Whether the window was the limit on sending since the previous ACK (RFC 7661 spirit):
    /// Reno-style growth should only happen while cwnd-limited.
    pub is_cwnd_limited: bool,
    /// Delivery-rate sample, if this ACK produced a valid one.
    pub rate: Option<RateSample>,
    /// Bytes newly marked lost while processing this ACK (SACK/duplicate-ACK loss marking,
    /// partial ACKs): Linux `rs->losses`, used by BBR.
    pub newly_lost: Bytes,
}

#[cfg(test)]
impl AckSample {
    /// Test fixture shared by the controllers' unit tests: an ACK at `now` that newly and
    /// cumulatively acknowledges `acked` bytes, with RTT = SRTT = min RTT = 100 ms, nothing in
    /// flight or delivered, cwnd-limited, no rate sample and no new losses. Tests override the
    /// fields they care about with struct-update syntax.
    pub(crate) fn for_test(now: Time, acked: i64, state: CaState) -> AckSample {
        AckSample {
            now,
            newly_acked: Bytes::new(acked),
            newly_cum_acked: Bytes::new(acked),
            rtt: Some(Duration::from_ms(100)),
            srtt: Some(Duration::from_ms(100)),
            min_rtt: Some(Duration::from_ms(100)),
            prior_in_flight: Bytes::ZERO,
            in_flight: Bytes::ZERO,
            delivered: Bytes::ZERO,
            state,
            is_cwnd_limited: true,
            rate: None,
            newly_lost: Bytes::ZERO,
        }
    }
}

/// A congestion event: the start of a fast-recovery episode (one per window of data).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CongestionEvent {
    pub now: Time,
    /// RFC 5681 FlightSize: bytes sent and not cumulatively acknowledged.
    pub flight_size: Bytes,
    /// Pipe (see [`AckSample::in_flight`]) at the moment of the event.
    pub in_flight: Bytes,
    /// Bytes newly marked lost by the ACK that triggered the event.
    pub lost: Bytes,
}

/// A retransmission timeout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtoEvent {
    pub now: Time,
    /// RFC 5681 FlightSize at the timeout.
    pub flight_size: Bytes,
    /// 1 for the first timeout of a back-off series, 2 for the next without progress, …
    /// (RFC 5681: ssthresh is only reduced on the first).
    pub consecutive: u32,
    /// The timeout interrupted a fast recovery, which already reduced `ssthresh` for this
    /// window of data.
    pub during_recovery: bool,
}

impl RtoEvent {
    /// Whether this timeout should set a new `ssthresh` (and save the window to restore): only
    /// the first timeout of a series (RFC 5681), and not one that interrupts a fast recovery
    /// (Linux `tcp_enter_loss` keeps the `ssthresh` of the recovery then; RFC 5681's
    /// `FlightSize/2` would be taken over everything sent during the recovery, SACKed data
    /// included, and can exceed the window that caused the loss).
    pub fn reduces_ssthresh(&self) -> bool { self.consecutive <= 1 && !self.during_recovery }
}

/// A window-based congestion controller driven by a [`super::TcpSender`].
pub trait WindowCongestionControl: Send {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// An ACK acknowledged new data. Called in every state, including recovery (rate-based
    /// algorithms keep measuring there); Reno-style window growth must check `sample.state`.
    fn on_ack(&mut self, sample: &AckSample);
    /// Loss detected by duplicate ACKs / SACK: set `ssthresh` and the reduced `cwnd`.
    fn on_congestion_event(&mut self, ev: &CongestionEvent);
    /// Retransmission timeout: collapse the window.
    fn on_rto(&mut self, ev: &RtoEvent);
    /// Fast recovery ended (the recovery point was cumulatively acknowledged).
    fn on_recovery_exit(&mut self, _now: Time) {}
    /// A segment (new or retransmitted) was put on the wire; `in_flight` includes it.
    fn on_packet_sent(&mut self, _now: Time, _bytes: Bytes, _in_flight: Bytes) {}
    /// Congestion window in bytes (at least one SMSS).
    fn cwnd(&self) -> Bytes;
    /// Slow-start threshold in bytes (`Bytes::INFINITY` until the first congestion event).
    fn ssthresh(&self) -> Bytes;
    fn in_slow_start(&self) -> bool { self.cwnd() < self.ssthresh() }
    /// Pacing rate; `None` = unpaced (segments leave as soon as the window allows).
    fn pacing_rate(&self) -> Option<Bitrate> { None }
    /// Whether the sender should apply the RFC 6582 window inflation during a recovery without
    /// SACK. Algorithms that manage the window in recovery themselves (BBR's packet
    /// conservation) return false.
    fn wants_recovery_inflation(&self) -> bool { true }
    /// While true, the sender marks the delivery-rate samples of what it sends next as
    /// application-limited, as if it had run out of data (checked after every
    /// [`Self::on_ack`]). BBR uses it in ProbeRTT so that the low-rate samples of that phase do
    /// not pull its bandwidth estimate down (`tcp_bbr.c`: `tp->app_limited` in
    /// `bbr_update_min_rtt`).
    fn forces_app_limited(&self) -> bool { false }
}

/// Counts round trips the way `tcp_bbr.c` does: a round ends when an ACK delivers a segment
/// that was sent after the round began, i.e. when a delivery-rate sample's `prior_delivered`
/// reaches the `delivered` count recorded at the start of the round. Used by BBR, Vegas and
/// HyStart++ ("once per RTT"). ACKs without a rate sample never end a round (as in Linux,
/// where `bbr_update_bw` returns before the round check on an invalid sample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundCounter {
    next_round_delivered: Bytes,
    count: u64,
}

impl RoundCounter {
    /// Feed an ACK; returns true if it ends the current round (and starts the next one).
    pub fn on_ack(&mut self, s: &AckSample) -> bool {
        match s.rate {
            Some(r) if r.prior_delivered >= self.next_round_delivered => {
                self.start_round_now(s.delivered);
                self.count += 1;
                true
            }
            _ => false,
        }
    }
    /// Start a new round now: it ends once a segment sent after this point is delivered
    /// (`delivered` = the sender's delivered count now). Does not count a round.
    pub fn start_round_now(&mut self, delivered: Bytes) { self.next_round_delivered = delivered; }
    /// Rounds completed so far.
    pub fn count(&self) -> u64 { self.count }
}
