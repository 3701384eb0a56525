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

    // ----- internals ----------------------------------------------------------------------

    fn uses_inflation(&self) -> bool { !self.sack && self.cc.wants_recovery_inflation() }

    fn first_lost(&mut self) -> Option<u64> {
        if self.lost_count == 0 {
            return None;
        }
        let mut i = self.retx_hint.max(self.una_idx);
        while i < self.nxt_idx() {
            if self.seg(i).state == SegState::Lost {
                self.retx_hint = i;
                return Some(i);
            }
            i += 1;
        }
        None
    }

    fn mark_lost(&mut self, idx: u64) -> i64 {
        let s = self.seg_mut(idx);
        if s.state != SegState::InFlight {
            return 0;
        }
        s.state = SegState::Lost;
        let len = s.len as i64;
        self.in_flight -= len;
        self.bytes_lost += len;
        self.lost_count += 1;
        self.retx_hint = self.retx_hint.min(idx);
        len
    }

    fn unsack(&mut self, idx: u64) {
        let s = self.seg_mut(idx);
        if s.state != SegState::Sacked {
            return;
        }
        s.state = SegState::Lost;
        let len = s.len as i64;
        self.bytes_sacked -= len;
        self.bytes_lost += len;
        self.lost_count += 1;
        self.retx_hint = self.retx_hint.min(idx);
        if idx >= self.lost_ptr {
            self.sacked_from_ptr -= 1;
        }
    }

    /// SACK the segments inside `[lo, hi)`; returns the bytes newly delivered.
    fn sack_range(&mut self, now: Time, lo: u64, hi: u64, rs: &mut RsBuild) -> i64 {
        let (first, last) = self.covered(lo, hi);
        let mut newly = 0;
        for idx in first..last {
            let s = *self.seg(idx);
            let len = s.len as i64;
            match s.state {
                SegState::Sacked => continue,
                SegState::InFlight => self.in_flight -= len,
                SegState::Lost => {
                    self.lost_count -= 1;
                    self.bytes_lost -= len;
                }
            }
            self.seg_mut(idx).state = SegState::Sacked;
            self.bytes_sacked += len;
            if idx >= self.lost_ptr {
                self.sacked_from_ptr += 1;
            }
            newly += len;
            self.rate_on_delivered(now, idx, &s, rs);
        }
        newly
    }

    /// Mark as lost every un-SACKed segment with at least `dupthresh` SACKed segments above it
    /// (RFC 6675 IsLost). Amortised O(1) per segment.
    fn advance_loss_frontier(&mut self) -> i64 {
        let mut lost = 0;
        let thresh = self.dupthresh as u64;
        while self.lost_ptr < self.nxt_idx() {
            let s = *self.seg(self.lost_ptr);
            let here = (s.state == SegState::Sacked) as u64;
            if self.sacked_from_ptr - here < thresh {
                break;
            }
            // A retransmission is only lost if something sent after it got through.
            if s.state == SegState::InFlight && (!s.retransmitted || s.send_time < self.rack_send_time) {
                lost += self.mark_lost(self.lost_ptr);
            }
            self.sacked_from_ptr -= here;
            self.lost_ptr += 1;
        }
        lost
    }

    /// Returns `newly_lost` plus what entering recovery marked lost.
    fn enter_recovery(&mut self, now: Time, mut newly_lost: i64) -> i64 {
        self.state = CaState::Recovery;
        self.recovery_point = self.snd_nxt();
        self.recover = self.recovery_point;
        self.recovery_start = now;
        self.partial_acks = 0;
        self.stats.fast_recoveries += 1;
        if self.seg(self.una_idx).state == SegState::InFlight && (!self.sack || self.lost_count == 0) {
            newly_lost += self.mark_lost(self.una_idx);
        }
        self.cc.on_congestion_event(&CongestionEvent {
            now,
            flight_size: self.flight_size(),
            in_flight: Bytes::new(self.in_flight),
            lost: Bytes::new(newly_lost),
        });
        self.inflation = if self.uses_inflation() { self.dupthresh as i64 * self.mss } else { 0 };
        self.force_retransmit = self.lost_count > 0;
        newly_lost
    }

    fn exit_recovery(&mut self, now: Time) {
        self.state = CaState::Open;
        self.inflation = 0;
        self.partial_acks = 0;
        self.force_retransmit = false;
        self.cc.on_recovery_exit(now);
    }

    fn rate_on_delivered(&mut self, now: Time, idx: u64, s: &SentSeg, rs: &mut RsBuild) {
        self.delivered += s.len as i64;
        self.delivered_time = now;
        self.rack_send_time = self.rack_send_time.max(s.send_time);
        let newest = !rs.has_data || s.send_time > self.first_sent_time || (s.send_time == self.first_sent_time && idx > rs.last_idx);
        if newest {
            rs.has_data = true;
            rs.prior_delivered = s.delivered;
            rs.is_app_limited = s.app_limited;
            rs.send_elapsed = s.send_time - s.first_sent_time;
            rs.ack_elapsed = now - s.delivered_time;
            rs.last_idx = idx;
            self.first_sent_time = s.send_time;
        }
    }

    fn generate_rate_sample(&mut self, rs: &RsBuild) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if !rs.has_data {
            return None;
        }
        let interval = rs.send_elapsed.max(rs.ack_elapsed);
        if interval <= Duration::ZERO || self.rtt.min_rtt().is_some_and(|m| interval < m) {
            return None;
        }
        let delivered = Bytes::new(self.delivered - rs.prior_delivered);
        Some(RateSample {
            delivered,
            interval,
            delivery_rate: delivered / interval,
            is_app_limited: rs.is_app_limited,
            prior_delivered: Bytes::new(rs.prior_delivered),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_conservation, Net, Step, TraceEntry};
    use super::super::NewReno;
    use super::*;

    const MSS: i64 = 1000;

    fn cfg(sack: bool) -> TcpConfig { TcpConfig { mss_bytes: MSS as u32, sack, ..TcpConfig::default() } }

    /// No bottleneck, 50 ms each way; drop the first transmission of the listed byte offsets.
    fn net_dropping(cfg: &TcpConfig, lost: &'static [u64]) -> Net {
        let mut net = Net::new(cfg, Duration::from_ms(50));
        net.drop_data = Box::new(move |_, s| !s.is_retransmit && lost.contains(&s.seq));
        net
    }

    fn acks(net: &Net) -> Vec<(TraceEntry, Ack)> {
        net.trace().iter().filter_map(|e| if let Step::AckIn(a) = e.step { Some((*e, a)) } else { None }).collect()
    }

    fn retransmissions(net: &Net) -> Vec<(Time, u64)> {
        net.sent().iter().filter(|(_, s)| s.is_retransmit).map(|(t, s)| (*t, s.seq)).collect()
    }

    fn cwnd_at(net: &Net, t: Time) -> Bytes { net.trace().iter().rfind(|e| e.t <= t).unwrap().cwnd }

    #[test]
    fn initial_window_and_slow_start_doubling_per_rtt() {
        let mut net = net_dropping(&cfg(true), &[]);
        net.run(Time::from_ms(350), check_conservation);
        let sent = net.sent();
        let per_round: Vec<usize> = (0..4).map(|k| sent.iter().filter(|(t, _)| *t == Time::from_ms(100 * k)).count()).collect();
        assert_eq!(per_round, vec![10, 20, 40, 80], "IW = 10, then doubling every RTT");
        for k in 0..4 {
            assert_eq!(cwnd_at(&net, Time::from_ms(100 * k)), Bytes::new((10 * MSS) << k));
        }
        assert!(net.s.in_slow_start());
        assert_eq!(net.s.ssthresh(), Bytes::INFINITY);
        assert_eq!(net.s.srtt(), Some(Duration::from_ms(100)));
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_rtt() {
        let c = cfg(true);
        let mut net = net_dropping(&c, &[]);
        net.s = TcpSender::with_cc(&c, Box::new(NewReno::with_ssthresh(c.mss(), 10, Bytes::new(10 * MSS))));
        net.run(Time::from_ms(1050), check_conservation);
        assert!(!net.s.in_slow_start());
        // Round 1: ten ACKs each add ⌊(SMSS² + carry)/cwnd⌋:
        // 100, 99, 98, 97, 96, 95, 95, 93, 93, 92 -> 10 958 bytes.
        assert_eq!(cwnd_at(&net, Time::from_ms(100)), Bytes::new(10_958));
        // Each round has ⌊cwnd/SMSS⌋ ACKs of SMSS²/cwnd each: a little under one SMSS per RTT.
        let c: Vec<i64> = (0..=10).map(|k| cwnd_at(&net, Time::from_ms(100 * k)).get()).collect();
        for w in c.windows(2) {
            let growth = w[1] - w[0];
            assert!((850..=1000).contains(&growth), "per-RTT growth {growth} in {c:?}");
        }
        assert!((9000..=10_000).contains(&(c[10] - c[0])), "{c:?}");
        // Segments per round go 10, 10, 11, 12, ...
        let sent = net.sent();
        let per_round: Vec<usize> = (0..5).map(|k| sent.iter().filter(|(t, _)| *t == Time::from_ms(100 * k)).count()).collect();
        assert_eq!(per_round, vec![10, 10, 11, 12, 13]);
    }

    #[test]
    fn single_loss_fast_retransmit_and_recovery_newreno() {
        // Segment 2 of the initial window is lost.
        let mut net = net_dropping(&cfg(false), &[2000]);
        net.run(Time::from_ms(450), check_conservation);
        let a = acks(&net);
        // t = 100 ms: ACK 1000, ACK 2000 (slow start sends 10..13), then duplicates of 2000.
        let entry = a.iter().position(|(e, _)| e.state == CaState::Recovery).unwrap();
        assert_eq!(entry, 4, "the third duplicate ACK triggers fast retransmit");
        let (e, ack) = a[entry];
        assert_eq!(ack.cumulative, 2000);
        // FlightSize = 14 000 − 2 000 -> ssthresh 6 000; cwnd = ssthresh + 3·SMSS.
        assert_eq!(e.ssthresh, Bytes::new(6000));
        assert_eq!(e.cwnd, Bytes::new(9000));
        // Segments 2..13 outstanding, 2 marked lost (its retransmission is not yet polled).
        assert_eq!(e.in_flight, Bytes::new(11_000));
        // Each further duplicate ACK inflates by one SMSS (7 duplicates at t = 100 ms).
        assert_eq!(a[8].1.cumulative, 2000);
        assert_eq!(a[8].0.cwnd, Bytes::new(13_000));
        assert_eq!(retransmissions(&net), vec![(Time::from_ms(100), 2000)]);
        // The full ACK (everything up to the recovery point 14 000) ends recovery: cwnd = ssthresh.
        let exit = a.iter().find(|(_, k)| k.cumulative >= 14_000).unwrap();
        assert_eq!(exit.1.cumulative, 14_000);
        assert_eq!(exit.0.state, CaState::Open);
        assert_eq!(exit.0.cwnd, Bytes::new(6000));
        assert_eq!(exit.0.ssthresh, Bytes::new(6000));
        assert_eq!(exit.0.t, Time::from_ms(200));
        let st = net.s.stats();
        assert_eq!((st.fast_recoveries, st.timeouts, st.retransmissions), (1, 0, 1));
        assert_eq!(net.s.bytes_lost(), Bytes::new(1000));
    }

    #[test]
    fn newreno_partial_ack_repairs_two_losses_without_timeout() {
        let mut net = net_dropping(&cfg(false), &[2000, 5000]);
        net.run(Time::from_ms(450), check_conservation);
        let a = acks(&net);
        let entry = a.iter().find(|(e, _)| e.state == CaState::Recovery).unwrap();
        assert_eq!((entry.0.t, entry.0.cwnd, entry.0.ssthresh), (Time::from_ms(100), Bytes::new(9000), Bytes::new(6000)));
        // t = 200 ms: four more duplicates (cwnd 16 000), then the partial ACK 5 000 acks 3 000
        // bytes: deflate by 3 000, add back one SMSS -> 14 000; segment 5 is retransmitted.
        let partial = a.iter().find(|(_, k)| k.cumulative == 5000).unwrap();
        assert_eq!(partial.0.t, Time::from_ms(200));
        assert_eq!(partial.0.state, CaState::Recovery);
        assert_eq!(partial.0.cwnd, Bytes::new(14_000));
        assert_eq!(retransmissions(&net), vec![(Time::from_ms(100), 2000), (Time::from_ms(200), 5000)]);
        // t = 300 ms: the ACK for the second retransmission covers the recovery point.
        let exit = a.iter().find(|(_, k)| k.cumulative >= 14_000).unwrap();
        assert_eq!((exit.0.t, exit.1.cumulative, exit.0.state, exit.0.cwnd), (Time::from_ms(300), 18_000, CaState::Open, Bytes::new(6000)));
        let st = net.s.stats();
        assert_eq!((st.fast_recoveries, st.timeouts, st.retransmissions), (1, 0, 2));
    }

    #[test]
    fn sack_recovery_repairs_both_holes_without_partial_acks() {
        let mut net = net_dropping(&cfg(true), &[2000, 5000]);
        net.run(Time::from_ms(450), check_conservation);
        let a = acks(&net);
        let entry = a.iter().position(|(e, _)| e.state == CaState::Recovery).unwrap();
        // ACKs at 100 ms: 1000, 2000 (slow start sends 10..13), then SACKs for 3 and 4, each of
        // which frees pipe for one new segment (14, 15), then the SACK for 6: three SACKed
        // segments above the hole at 2.
        assert_eq!(entry, 4);
        // FlightSize 16 000 − 2 000 -> ssthresh 7 000; RFC 6675: cwnd = ssthresh, no inflation.
        assert_eq!((a[entry].0.cwnd, a[entry].0.ssthresh), (Bytes::new(7000), Bytes::new(7000)));
        // Segment 5 is declared lost by SACK (6, 7, 8 above it) in the same round; the pipe is
        // full until the first SACK of the next round, which releases its retransmission before
        // the partial ACK for segment 2 arrives.
        assert_eq!(retransmissions(&net), vec![(Time::from_ms(100), 2000), (Time::from_ms(200), 5000)]);
        let tr = net.trace();
        let rx5 = tr.iter().position(|e| matches!(e.step, Step::Sent(s) if s.is_retransmit && s.seq == 5000)).unwrap();
        let trigger = tr[..rx5].iter().rev().find_map(|e| if let Step::AckIn(k) = e.step { Some(k) } else { None }).unwrap();
        assert_eq!(trigger.cumulative, 2000);
        assert!(!trigger.sack.is_empty());
        let exit = a.iter().find(|(_, k)| k.cumulative >= 16_000).unwrap();
        assert_eq!((exit.0.t, exit.0.state, exit.0.cwnd), (Time::from_ms(300), CaState::Open, Bytes::new(7000)));
        let st = net.s.stats();
        assert_eq!((st.fast_recoveries, st.timeouts, st.retransmissions), (1, 0, 2));
    }

    #[test]
    fn rto_when_all_acks_are_lost() {
        let mut net = net_dropping(&cfg(true), &[]);
        net.drop_ack = Box::new(|_, _| true);
        net.run(Time::from_ms(7_500), check_conservation);
        let rtos: Vec<Time> = net.trace().iter().filter(|e| matches!(e.step, Step::Rto)).map(|e| e.t).collect();
        // No RTT sample: initial RTO 1 s, then 2 s, 4 s.
        assert_eq!(rtos, vec![Time::from_ms(1000), Time::from_ms(3000), Time::from_ms(7000)]);
        assert_eq!(retransmissions(&net), vec![(Time::from_ms(1000), 0), (Time::from_ms(3000), 0), (Time::from_ms(7000), 0)]);
        assert_eq!(net.s.cwnd(), Bytes::new(MSS));
        // ssthresh from the first timeout (FlightSize 10 000 / 2), held on the later ones.
        assert_eq!(net.s.ssthresh(), Bytes::new(5000));
        assert_eq!(net.s.rto(), Duration::from_secs(8));
        assert_eq!(net.s.next_timer(), Some(Time::from_ms(15_000)));
        assert_eq!(net.s.state(), CaState::Loss);
    }

    #[test]
    fn rto_after_rtt_samples_uses_the_estimate_and_doubles() {
        let mut net = net_dropping(&cfg(true), &[]);
        // ACKs get through until 150 ms: one round of ten 100 ms samples. SRTT = 100 ms and
        // RTTVAR = 50·0.75⁹ ≈ 3.75 ms (3 753 µs after integer rounding); 4·RTTVAR = 15 ms is
        // floored at the 200 ms min RTO (Linux rule), so RTO = 100 + 200 = 300 ms.
        net.drop_ack = Box::new(|t, _| t >= Time::from_ms(150));
        net.run(Time::from_ms(2_500), check_conservation);
        assert_eq!(net.s.srtt(), Some(Duration::from_ms(100)));
        assert_eq!(net.s.rtt_estimator().rttvar(), Duration::from_us(3_753));
        let rtos: Vec<Time> = net.trace().iter().filter(|e| matches!(e.step, Step::Rto)).map(|e| e.t).collect();
        // Timer re-armed by the last ACK at 100 ms: 100 + 300, then +600, +1200.
        assert_eq!(rtos, vec![Time::from_ms(400), Time::from_ms(1000), Time::from_ms(2200)]);
        assert_eq!(net.s.rto(), Duration::from_ms(2400));
        assert_eq!(retransmissions(&net)[0], (Time::from_ms(400), 10_000));
        // FlightSize at the first timeout: 20 segments.
        assert_eq!(net.s.ssthresh(), Bytes::new(10_000));
        assert_eq!(net.s.cwnd(), Bytes::new(MSS));
    }

    #[test]
    fn after_timeout_flow_recovers_in_slow_start() {
        let mut net = net_dropping(&cfg(true), &[]);
        // ACKs sent between 150 and 350 ms are lost. The RTO (200 ms after the last ACK at
        // 100 ms) fires at 300 ms; the ACK of that retransmission, sent at 350 ms, gets through.
        net.drop_ack = Box::new(|t, _| t >= Time::from_ms(150) && t < Time::from_ms(350));
        net.run(Time::from_ms(3_000), check_conservation);
        assert_eq!(net.s.stats().timeouts, 1);
        assert_eq!(net.s.state(), CaState::Open);
        assert!(net.s.bytes_delivered() > Bytes::new(100_000));
        let rto = net.trace().iter().position(|e| matches!(e.step, Step::Rto)).unwrap();
        assert_eq!(net.trace()[rto].cwnd, Bytes::new(MSS));
        // FlightSize at the timeout was 20 segments -> ssthresh 10 segments; the window grows
        // back through slow start and beyond.
        assert_eq!(net.s.ssthresh(), Bytes::new(10 * MSS));
        assert!(net.s.cwnd() > net.s.ssthresh());
        assert!(net.r.bytes_delivered() >= net.s.bytes_delivered());
    }

    #[test]
    fn karn_rule_without_timestamps() {
        let c = TcpConfig { max_bytes: Some(3000), ..cfg(true) };
        // Plain sample: ACK for a segment sent once.
        let mut s = TcpSender::new(&c).unwrap();
        while s.poll_transmit(Time::ZERO).is_some() {}
        s.on_ack(Time::from_ms(100), &Ack::new(1000));
        assert_eq!(s.srtt(), Some(Duration::from_ms(100)));

        // Timeout, retransmission, then an ACK without timestamp: ambiguous, no sample, the
        // backed-off RTO stays.
        let mut s = TcpSender::new(&c).unwrap();
        while s.poll_transmit(Time::ZERO).is_some() {}
        s.on_timer(Time::from_ms(1000));
        let rx = s.poll_transmit(Time::from_ms(1000)).unwrap();
        assert!(rx.is_retransmit && rx.seq == 0);
        assert_eq!(s.rto(), Duration::from_secs(2));
        s.on_ack(Time::from_ms(1100), &Ack::new(1000));
        assert_eq!(s.srtt(), None);
        assert_eq!(s.rto(), Duration::from_secs(2));

        // The same ACK with a timestamp echo is unambiguous (RFC 7323) and clears the back-off.
        let mut s = TcpSender::new(&c).unwrap();
        while s.poll_transmit(Time::ZERO).is_some() {}
        s.on_timer(Time::from_ms(1000));
        s.poll_transmit(Time::from_ms(1000)).unwrap();
        let ack = Ack { ts_echo: Some(Time::from_ms(1000)), ..Ack::new(1000) };
        s.on_ack(Time::from_ms(1100), &ack);
        assert_eq!(s.srtt(), Some(Duration::from_ms(100)));
        assert_eq!(s.rto(), Duration::from_ms(300));
    }

    #[test]
    fn stale_and_invalid_acks_are_harmless() {
        let mut s = TcpSender::new(&cfg(true)).unwrap();
        while s.poll_transmit(Time::ZERO).is_some() {}
        s.on_ack(Time::from_ms(100), &Ack::new(5000));
        let before = (s.snd_una(), s.cwnd(), s.bytes_in_flight());
        // An older ACK (reordered) is not a duplicate and changes nothing.
        s.on_ack(Time::from_ms(101), &Ack::new(3000));
        // An ACK for data never sent is ignored.
        s.on_ack(Time::from_ms(102), &Ack::new(1_000_000));
        assert_eq!((s.snd_una(), s.cwnd(), s.bytes_in_flight()), before);
        assert_eq!(s.stats().invalid_acks, 1);
    }

    /// NewReno with a fixed pacing rate, to exercise the pacing hook.
    struct Paced(NewReno, Bitrate);
    impl WindowCongestionControl for Paced {
        fn name(&self) -> &'static str { "paced" }
        fn on_ack(&mut self, s: &AckSample) { self.0.on_ack(s) }
        fn on_congestion_event(&mut self, ev: &CongestionEvent) { self.0.on_congestion_event(ev) }
        fn on_rto(&mut self, ev: &RtoEvent) { self.0.on_rto(ev) }
        fn cwnd(&self) -> Bytes { self.0.cwnd() }
        fn ssthresh(&self) -> Bytes { self.0.ssthresh() }
        fn pacing_rate(&self) -> Option<Bitrate> { Some(self.1) }
    }

    #[test]
    fn pacing_spaces_segments_and_drives_the_timer() {
        let c = cfg(true);
        let mut s = TcpSender::with_cc(&c, Box::new(Paced(NewReno::new(c.mss(), 10), Bitrate::from_kbps(1000))));
        let first = s.poll_transmit(Time::ZERO).unwrap();
        assert_eq!(first.seq, 0);
        assert!(s.poll_transmit(Time::ZERO).is_none(), "paced: one segment at a time");
        // 1052 wire bytes at 1 Mbit/s = 8.416 ms.
        assert_eq!(s.next_timer(), Some(Time::from_us(8_416)));
        s.on_timer(Time::from_us(8_416));
        assert_eq!(s.poll_transmit(Time::from_us(8_416)).unwrap().seq, 1000);
        assert_eq!(s.next_timer(), Some(Time::from_secs_f64(1.0)), "only the RTO until a poll is refused by pacing");
        assert!(s.poll_transmit(Time::from_us(10_000)).is_none());
        assert_eq!(s.next_timer(), Some(Time::from_us(16_832)));
    }
}
