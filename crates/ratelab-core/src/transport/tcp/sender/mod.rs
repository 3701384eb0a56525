//! Sans-IO TCP sender: greedy (infinite backlog) or byte-limited.
//!
//! * Window: a segment may leave when `in_flight + len ≤ cwnd`, where `in_flight` is the RFC
//!   6675 pipe (sent, not cumulatively acknowledged, not SACKed, not marked lost; a
//!   retransmission counts once) and `cwnd` the controller's window plus, in a recovery without
//!   SACK, the RFC 6582 inflation. The fast retransmission (and the NewReno partial-ACK
//!   retransmission) leaves regardless of the window.
//! * Loss detection: `dupack_threshold` duplicate ACKs; with SACK also RFC 6675 `IsLost` (a
//!   hole with `dupack_threshold` SACKed segments above it), with a RACK-like guard so that a
//!   retransmission is only declared lost again when something sent after it was delivered.
//! * Recovery: RFC 6582 NewReno (recovery point, partial ACKs retransmit the next hole and
//!   deflate the window, full ACK exits with `cwnd = ssthresh`, only the first partial ACK
//!   re-arms the timer), or with SACK RFC 6675-style pipe-based recovery (`cwnd = ssthresh`,
//!   every marked hole is retransmitted as the pipe allows).
//! * RTO: RFC 6298 (see [`RttEstimator`]); on expiry all outstanding unSACKed data is marked
//!   lost (the first segment always, ignoring SACK, RFC 6675 §5.1), `cwnd = 1·SMSS`, the timer
//!   backs off, and fast retransmit is suppressed until everything outstanding at the timeout
//!   is acknowledged (RFC 6582 `recover`).
//! * RTT: from the echoed timestamp when present, else from the newest newly acknowledged
//!   segment that was never retransmitted (Karn's rule).
//! * Delivery-rate samples (draft-cheng-iccrg-delivery-rate-estimation) for BBR-like
//!   controllers, and pacing when the controller asks for it.
//!
//! The scoreboard is a `VecDeque` of fixed-size per-segment records between `snd_una` and
//! `snd_nxt`; in steady state nothing is allocated per segment.

use super::cc::{AckSample, CaState, CongestionEvent, RateSample, RtoEvent, WindowCongestionControl};
use super::rtt::RttEstimator;
use super::{build_tcp_cc, Ack, SackBlock, Segment, TcpConfig, MAX_SACK_BLOCKS};
use crate::error::ConfigError;
use crate::units::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SegState {
    /// Sent and not known to have arrived or been lost (counts in the pipe).
    InFlight,
    /// Declared lost, waiting for retransmission (not in the pipe).
    Lost,
    /// Selectively acknowledged.
    Sacked,
}

/// Per-segment record of the scoreboard.
#[derive(Clone, Copy, Debug)]
struct SentSeg {
    len: u32,
    state: SegState,
    retransmitted: bool,
    /// Time of the latest transmission.
    send_time: Time,
    // Delivery-rate snapshot taken at the latest transmission.
    delivered: i64,
    delivered_time: Time,
    first_sent_time: Time,
    app_limited: bool,
}

/// Event counters for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSenderStats {
    /// Segments put on the wire, retransmissions included.
    pub segments_sent: u64,
    pub retransmissions: u64,
    /// Fast-recovery episodes entered.
    pub fast_recoveries: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// ACKs ignored because they acknowledged data never sent.
    pub invalid_acks: u64,
}

/// Delivery-rate sample under construction during one ACK.
#[derive(Clone, Copy, Default)]
struct RsBuild {
    has_data: bool,
    prior_delivered: i64,
    is_app_limited: bool,
    send_elapsed: Duration,
    ack_elapsed: Duration,
    last_idx: u64,
}

pub struct TcpSender {
    cc: Box<dyn WindowCongestionControl>,
    rtt: RttEstimator,
    mss: i64,
    header: i64,
    sack: bool,
    dupthresh: u32,
    /// End of the byte stream (`u64::MAX / 4` for a greedy sender).
    limit: u64,

    /// Segments `una_idx .. una_idx + segs.len()` (everything sent and not cumulatively acked).
    segs: VecDeque<SentSeg>,
    una_idx: u64,
    in_flight: i64,
    lost_count: usize,
    /// No `Lost` segment below this index.
    retx_hint: u64,
    /// RFC 6675 loss frontier: every un-SACKed segment below it has been considered; the count
    /// is the number of SACKed segments at or above it.
    lost_ptr: u64,
    sacked_from_ptr: u64,
    /// Latest send time among delivered segments (RACK-like guard for retransmissions).
    rack_send_time: Time,
    /// SACK blocks of the previous ACK: their segments are already marked.
    prev_sack: [SackBlock; MAX_SACK_BLOCKS],
    prev_sack_len: usize,

    state: CaState,
    recovery_point: u64,
    recovery_start: Time,
    /// RFC 6582 `recover`: no new fast recovery until `snd_una ≥ recover`.
    recover: u64,
    inflation: i64,
    dupacks: u32,
    partial_acks: u32,
    force_retransmit: bool,
    consecutive_rtos: u32,

    rto_deadline: Option<Time>,
    next_send_time: Time,
    pacing_wait: bool,
    cwnd_limited: bool,

    // delivery-rate estimation
    delivered: i64,
    delivered_time: Time,
    first_sent_time: Time,
    app_limited_until: i64,

    bytes_sent: i64,
    bytes_retransmitted: i64,
    bytes_lost: i64,
    bytes_sacked: i64,
    stats: TcpSenderStats,
}

impl TcpSender {
    /// Build from a configuration (the controller by name) with random seed 0. Fails on an
    /// invalid configuration.
    pub fn new(cfg: &TcpConfig) -> Result<Self, ConfigError> { Self::with_seed(cfg, 0) }

    /// Build from a configuration; `seed` feeds the controller's random stream (BBR's initial
    /// ProbeBW phase), so the same seed gives the same run.
    pub fn with_seed(cfg: &TcpConfig, seed: u64) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let cc = build_tcp_cc(&cfg.cc, cfg, seed).map_err(|e| ConfigError::new("cc", e))?;
        Ok(Self::with_cc(cfg, cc))
    }

    /// Build with an explicit controller (`cfg.cc` is ignored). `cfg` is assumed valid.
    pub fn with_cc(cfg: &TcpConfig, cc: Box<dyn WindowCongestionControl>) -> Self {
        TcpSender {
            cc,
            rtt: RttEstimator::new(cfg.initial_rto(), cfg.min_rto(), cfg.max_rto()),
            mss: cfg.mss_bytes.max(1) as i64,
            header: cfg.header_bytes as i64,
            sack: cfg.sack,
            dupthresh: cfg.dupack_threshold.max(1),
            limit: cfg.max_bytes.unwrap_or(u64::MAX / 4),
            segs: VecDeque::new(),
            una_idx: 0,
            in_flight: 0,
            lost_count: 0,
            retx_hint: 0,
            lost_ptr: 0,
            sacked_from_ptr: 0,
            rack_send_time: Time::ZERO,
            prev_sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            prev_sack_len: 0,
            state: CaState::Open,
            recovery_point: 0,
            recovery_start: Time::ZERO,
            recover: 0,
            inflation: 0,
            dupacks: 0,
            partial_acks: 0,
            force_retransmit: false,
            consecutive_rtos: 0,
            rto_deadline: None,
            next_send_time: Time::ZERO,
            pacing_wait: false,
            cwnd_limited: false,
            delivered: 0,
            delivered_time: Time::ZERO,
            first_sent_time: Time::ZERO,
            app_limited_until: 0,
            bytes_sent: 0,
            bytes_retransmitted: 0,
            bytes_lost: 0,
            bytes_sacked: 0,
            stats: TcpSenderStats::default(),
        }
    }

    // ----- segment geometry -------------------------------------------------------------

    fn seq_of(&self, idx: u64) -> u64 { idx.saturating_mul(self.mss as u64).min(self.limit) }
    fn len_of(&self, idx: u64) -> i64 { (self.seq_of(idx + 1) - self.seq_of(idx)) as i64 }
    fn nxt_idx(&self) -> u64 { self.una_idx + self.segs.len() as u64 }
    fn seg(&self, idx: u64) -> &SentSeg { &self.segs[(idx - self.una_idx) as usize] }
    fn seg_mut(&mut self, idx: u64) -> &mut SentSeg { &mut self.segs[(idx - self.una_idx) as usize] }
    fn has_new_data(&self) -> bool { self.seq_of(self.nxt_idx()) < self.limit }

    /// Indices of the segments entirely inside `[lo, hi)`, clipped to the outstanding ones.
    fn covered(&self, lo: u64, hi: u64) -> (u64, u64) {
        let m = self.mss as u64;
        let first = lo.div_ceil(m).max(self.una_idx);
        let mut last = hi / m;
        if last < self.nxt_idx() && self.seq_of(last + 1) <= hi && self.seq_of(last) < self.seq_of(last + 1) {
            last += 1; // a short final segment ending exactly at `hi`
        }
        (first, last.min(self.nxt_idx()))
    }

    // ----- public API ---------------------------------------------------------------------

    /// The next segment to put on the wire now, if the window (and pacing) allow: a pending
    /// retransmission first, else new data. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        let retx = if self.lost_count > 0 { self.first_lost() } else { None };
        let (idx, is_retx) = match retx {
            Some(i) => (i, true),
            None if self.has_new_data() => (self.nxt_idx(), false),
            None => {
                if self.in_flight + self.mss <= self.cwnd().get() && self.app_limited_until == 0 {
                    // Nothing left to send with the window open: samples are app-limited.
                    self.app_limited_until = (self.delivered + self.in_flight).max(1);
                }
                return None;
            }
        };
        let len = self.len_of(idx);
        let forced = is_retx && self.force_retransmit;
        if !forced && self.in_flight + len > self.cwnd().get() {
            self.cwnd_limited = true;
            return None;
        }
        if let Some(rate) = self.cc.pacing_rate() {
            if now < self.next_send_time {
                self.pacing_wait = true;
                return None;
            }
            if rate.bps() > 0 {
                let gap = Bytes::new(len + self.header) / rate;
                self.next_send_time = self.next_send_time.max(now) + gap;
            }
        }
        self.pacing_wait = false;

        if self.una_idx == self.nxt_idx() {
            // Nothing outstanding: a new delivery-rate flight starts now.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        let snap = SentSeg {
            len: len as u32,
            state: SegState::InFlight,
            retransmitted: is_retx,
            send_time: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
        };
        if is_retx {
            let s = self.seg_mut(idx);
            debug_assert_eq!(s.state, SegState::Lost);
            *s = snap;
            self.lost_count -= 1;
            self.bytes_retransmitted += len;
            self.stats.retransmissions += 1;
            self.force_retransmit = false;
        } else {
            self.segs.push_back(snap);
        }
        self.in_flight += len;
        self.bytes_sent += len;
        self.stats.segments_sent += 1;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        self.cc.on_packet_sent(now, Bytes::new(len), Bytes::new(self.in_flight));
        Some(Segment {
            seq: self.seq_of(idx),
            len: Bytes::new(len),
            wire_size: Bytes::new(len + self.header),
            is_retransmit: is_retx,
            send_time: now,
        })
    }

    /// Process an ACK (in any order; stale ones only contribute their SACK blocks).
    pub fn on_ack(&mut self, now: Time, ack: &Ack) {
        let snd_nxt = self.seq_of(self.nxt_idx());
        if ack.cumulative > snd_nxt {
            self.stats.invalid_acks += 1;
            return;
        }
        let prior_una = self.snd_una();
        let prior_in_flight = self.in_flight;
        let prior_state = self.state;
        let cwnd_limited = self.cwnd_limited || prior_in_flight + self.mss > self.cwnd().get();
        let mut rs = RsBuild::default();
        let mut newly_delivered = 0i64;

        // 1. SACK blocks: mark newly covered segments (skipping what the previous ACK covered).
        if self.sack && !ack.sack.is_empty() {
            let mut prev = self.prev_sack;
            let prev_len = self.prev_sack_len;
            prev[..prev_len].sort_unstable_by_key(|b| b.start);
            for b in ack.sack.iter() {
                let lo = b.start.max(ack.cumulative);
                if b.end <= lo {
                    continue;
                }
                let mut cur = lo;
                for p in &prev[..prev_len] {
                    if p.end <= cur || p.start >= b.end {
                        continue;
                    }
                    if p.start > cur {
                        newly_delivered += self.sack_range(now, cur, p.start, &mut rs);
                    }
                    cur = cur.max(p.end);
                }
                if cur < b.end {
                    newly_delivered += self.sack_range(now, cur, b.end, &mut rs);
                }
            }
            self.prev_sack_len = ack.sack.len();
            self.prev_sack[..ack.sack.len()].copy_from_slice(ack.sack.as_slice());
        }

        // 2. Cumulative ACK.
        let mut newly_cum = 0i64;
        let mut karn_time: Option<Time> = None;
        let mut acked_retransmission = false;
        while let Some(front) = self.segs.front().copied() {
            let idx = self.una_idx;
            if self.seq_of(idx + 1) > ack.cumulative {
                break;
            }
            let len = front.len as i64;
            newly_cum += len;
            match front.state {
                SegState::InFlight => self.in_flight -= len,
                SegState::Lost => {
                    self.lost_count -= 1;
                    self.bytes_lost -= len;
                }
                SegState::Sacked => {
                    self.bytes_sacked -= len;
                    if idx >= self.lost_ptr {
                        self.sacked_from_ptr -= 1;
                    }
                }
            }
            acked_retransmission |= front.retransmitted;
            if front.state != SegState::Sacked {
                newly_delivered += len;
                self.rate_on_delivered(now, idx, &front, &mut rs);
                karn_time = Some(karn_time.map_or(front.send_time, |t: Time| t.max(front.send_time)));
            }
            self.segs.pop_front();
            self.una_idx += 1;
        }
        self.lost_ptr = self.lost_ptr.max(self.una_idx);
        self.retx_hint = self.retx_hint.max(self.una_idx);
        let cum_advanced = newly_cum > 0;
        let outstanding = self.una_idx < self.nxt_idx();
        let is_dupack = !cum_advanced && ack.cumulative == prior_una && outstanding;
        if cum_advanced {
            self.dupacks = 0;
            self.consecutive_rtos = 0;
        } else if is_dupack {
            self.dupacks = self.dupacks.saturating_add(1);
        }

        // 3. RTT sample (RFC 7323 only from ACKs that advance the left edge).
        let mut rtt_sample = None;
        if cum_advanced {
            let sent = match ack.ts_echo {
                Some(t) if t <= now => Some(t),
                Some(_) => None,
                // Karn: no sample from an ACK that covers a retransmitted segment.
                None if acked_retransmission => None,
                None => karn_time,
            };
            if let Some(t) = sent {
                let r = now - t;
                self.rtt.on_sample(r);
                rtt_sample = Some(r);
            }
        }

        // 4. SACK loss marking.
        let mut newly_lost = 0i64;
        if self.sack {
            newly_lost += self.advance_loss_frontier();
        }

        // 5. Recovery state machine.
        match self.state {
            CaState::Loss => {
                if self.snd_una() >= self.recover {
                    self.state = CaState::Open;
                }
            }
            CaState::Recovery => {
                if self.snd_una() >= self.recovery_point {
                    self.exit_recovery(now);
                } else if cum_advanced {
                    self.partial_acks += 1;
                    let s = *self.seg(self.una_idx);
                    let retransmitted_now = s.retransmitted && s.send_time >= self.recovery_start;
                    if s.state == SegState::InFlight && !retransmitted_now {
                        newly_lost += self.mark_lost(self.una_idx);
                    }
                    // RFC 6582: retransmit the first unacknowledged segment now. (With SACK the
                    // pipe decides, as for every other hole, RFC 6675.)
                    if !self.sack && self.first_lost() == Some(self.una_idx) {
                        self.force_retransmit = true;
                    }
                    if self.uses_inflation() {
                        self.inflation -= newly_cum;
                        if newly_cum >= self.mss {
                            self.inflation += self.mss;
                        }
                    }
                } else if is_dupack && self.uses_inflation() {
                    self.inflation += self.mss;
                }
            }
            CaState::Open => {}
        }
        if self.state == CaState::Open && outstanding && self.snd_una() >= self.recover {
            let trigger = self.dupacks >= self.dupthresh || (self.sack && newly_lost > 0);
            if trigger {
                newly_lost = self.enter_recovery(now, newly_lost);
            }
        }

        // 6. Controller.
        let rate = self.generate_rate_sample(&rs);
        if newly_delivered > 0 || cum_advanced {
            let sample = AckSample {
                now,
                newly_acked: Bytes::new(newly_delivered),
                newly_cum_acked: Bytes::new(newly_cum),
                rtt: rtt_sample,
                srtt: self.rtt.srtt(),
                min_rtt: self.rtt.min_rtt(),
                prior_in_flight: Bytes::new(prior_in_flight),
                in_flight: Bytes::new(self.in_flight),
                delivered: Bytes::new(self.delivered),
                state: if prior_state == CaState::Recovery { CaState::Recovery } else { self.state },
                is_cwnd_limited: cwnd_limited,
                rate,
                newly_lost: Bytes::new(newly_lost),
            };
            self.cc.on_ack(&sample);
            if self.cc.forces_app_limited() {
                self.app_limited_until = (self.delivered + self.in_flight).max(1);
            }
        }
        self.cwnd_limited = false;

        // 7. Retransmission timer (RFC 6298 5.2/5.3; RFC 6582: in a NewReno recovery only the
        // first partial ACK re-arms it).
        if !outstanding {
            self.rto_deadline = None;
        } else if cum_advanced {
            let impatient = self.state == CaState::Recovery && !self.sack && self.partial_acks > 1;
            if !impatient || self.rto_deadline.is_none() {
                self.rto_deadline = Some(now + self.rtt.rto());
            }
        }
    }

    /// When [`Self::on_timer`] wants to be called: the retransmission timer, or the pacing
    /// release time while a paced segment is waiting.
    pub fn next_timer(&self) -> Option<Time> {
        let pace = if self.pacing_wait { Some(self.next_send_time) } else { None };
        match (self.rto_deadline, pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Timer callback. Fires the RTO when due; a pacing wake-up needs no action here (poll
    /// afterwards as after any event).
    pub fn on_timer(&mut self, now: Time) {
        if self.pacing_wait && now >= self.next_send_time {
            self.pacing_wait = false;
        }
        let Some(deadline) = self.rto_deadline else { return };
        if now < deadline {
            return;
        }
        if self.una_idx == self.nxt_idx() {
            self.rto_deadline = None;
            return;
        }
        self.consecutive_rtos = self.consecutive_rtos.saturating_add(1);
        self.stats.timeouts += 1;
        self.cc.on_rto(&RtoEvent { now, flight_size: self.flight_size(), consecutive: self.consecutive_rtos, during_recovery: self.state == CaState::Recovery });
        // Go back: everything not SACKed is lost; the first segment is retransmitted even if
        // SACKed, in case the receiver reneged (RFC 6675 §5.1, RFC 2018).
        for idx in self.una_idx..self.nxt_idx() {
            match self.seg(idx).state {
                SegState::InFlight => {
                    self.mark_lost(idx);
                }
                SegState::Sacked if idx == self.una_idx => self.unsack(idx),
                _ => {}
            }
        }
        self.prev_sack_len = 0;
        self.state = CaState::Loss;
        self.recover = self.snd_nxt();
        self.inflation = 0;
        self.dupacks = 0;
        self.partial_acks = 0;
        self.force_retransmit = false;
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    // ----- accounting ---------------------------------------------------------------------

    /// Bytes in the pipe (sent, not acknowledged, not SACKed, not marked lost).
    pub fn bytes_in_flight(&self) -> Bytes { Bytes::new(self.in_flight) }
    /// RFC 5681 FlightSize: `snd_nxt − snd_una`.
    pub fn flight_size(&self) -> Bytes { Bytes::new((self.snd_nxt() - self.snd_una()) as i64) }
    /// Payload bytes put on the wire, retransmissions included.
    pub fn bytes_sent(&self) -> Bytes { Bytes::new(self.bytes_sent) }
    /// Bytes cumulatively acknowledged (`snd_una`).
    pub fn bytes_delivered(&self) -> Bytes { Bytes::new(self.snd_una() as i64) }
    /// Bytes SACKed above `snd_una`.
    pub fn bytes_sacked(&self) -> Bytes { Bytes::new(self.bytes_sacked) }
    /// Bytes of transmissions declared lost (by SACK, duplicate ACKs, partial ACKs or timeout)
    /// and not acknowledged before being retransmitted. With spurious loss declarations this
    /// can exceed what the network dropped. Invariant:
    /// `bytes_sent = bytes_delivered + bytes_sacked + bytes_in_flight + bytes_lost`.
    pub fn bytes_lost(&self) -> Bytes { Bytes::new(self.bytes_lost) }
    /// Payload bytes sent as retransmissions.
    pub fn bytes_retransmitted(&self) -> Bytes { Bytes::new(self.bytes_retransmitted) }
    /// Total bytes delivered (cumulatively or selectively acknowledged) as counted by the rate
    /// estimator.
    pub fn delivered_total(&self) -> Bytes { Bytes::new(self.delivered) }
    pub fn snd_una(&self) -> u64 { self.seq_of(self.una_idx) }
    pub fn snd_nxt(&self) -> u64 { self.seq_of(self.nxt_idx()) }
    /// Effective congestion window: the controller's plus any NewReno recovery inflation
    /// (never below one SMSS).
    pub fn cwnd(&self) -> Bytes { Bytes::new((self.cc.cwnd().get() + self.inflation).max(self.mss)) }
    pub fn ssthresh(&self) -> Bytes { self.cc.ssthresh() }
    pub fn srtt(&self) -> Option<Duration> { self.rtt.srtt() }
    pub fn min_rtt(&self) -> Option<Duration> { self.rtt.min_rtt() }
    /// Current retransmission timeout, back-off included.
    pub fn rto(&self) -> Duration { self.rtt.rto() }
    pub fn rtt_estimator(&self) -> &RttEstimator { &self.rtt }
    pub fn pacing_rate(&self) -> Option<Bitrate> { self.cc.pacing_rate() }
    pub fn state(&self) -> CaState { self.state }
    pub fn in_slow_start(&self) -> bool { self.cc.in_slow_start() }
    pub fn stats(&self) -> TcpSenderStats { self.stats }
    pub fn cc(&self) -> &dyn WindowCongestionControl { self.cc.as_ref() }
    pub fn mss(&self) -> Bytes { Bytes::new(self.mss) }
    /// A byte-limited sender whose data is all cumulatively acknowledged.
    pub fn is_finished(&self) -> bool { self.limit < u64::MAX / 4 && self.snd_una() >= self.limit }

    /// Append `bytes` of application data (rounded up to whole segments) to a byte-limited
    /// stream, e.g. the next file of an on/off flow. Only possible while the stream ends on a
    /// segment boundary (segments are indexed by `seq / mss`); returns false and changes nothing
    /// otherwise, and for a greedy sender.
    pub fn extend_stream(&mut self, bytes: u64) -> bool {
        let m = self.mss as u64;
        if self.limit >= u64::MAX / 4 || !self.limit.is_multiple_of(m) { return false; }
        let add = bytes.div_ceil(m).saturating_mul(m);
        if self.limit.saturating_add(add) >= u64::MAX / 4 { return false; }
        self.limit += add;
        true
    }
}

mod recovery;
#[cfg(test)]
mod tests;
