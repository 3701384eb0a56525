//! BBR version 1 (Cardwell et al., ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00;
//! structure and constants of Linux `net/ipv4/tcp_bbr.c`; spec `algorithms.md` §14.4).
//!
//! Model: `BtlBw` = windowed maximum of the delivery-rate samples over the last 10 round trips
//! (application-limited samples only count if they raise it); `RTprop` = minimum RTT, refreshed
//! when a lower sample arrives or after 10 s. Outputs: pacing rate `= pacing_gain · BtlBw ·
//! (1 − 1 %)` and `cwnd = cwnd_gain · BDP + extra-ACKed allowance + quanta`.
//!
//! State machine (the per-ACK order of `bbr_main`: update bandwidth and rounds, ACK aggregation,
//! gain-cycle phase, full-bandwidth check, drain check, min-RTT / ProbeRTT, gains, then pacing
//! rate and window):
//!
//! * **Startup**: pacing and cwnd gain `2/ln 2`; the pipe is full when `BtlBw` has grown less
//!   than 25 % over 3 consecutive non-app-limited round starts.
//! * **Drain**: pacing gain `ln 2 / 2` (cwnd gain stays `2/ln 2`) until in-flight ≤ BDP.
//! * **ProbeBW**: cwnd gain 2, pacing gain cycling through `[1.25, 0.75, 1, 1, 1, 1, 1, 1]`,
//!   entered at a random phase other than 0.75 (drawn from the controller's seeded stream); a
//!   phase lasts at least `RTprop`; the 1.25 phase also waits for in-flight ≥ 1.25·BDP or a loss;
//!   the 0.75 phase ends early once in-flight ≤ BDP.
//! * **ProbeRTT**: when `RTprop` has not been refreshed for 10 s: cwnd = 4 segments; once the
//!   in-flight data has drained to 4 segments, hold for max(200 ms, one round trip), then leave
//!   (to ProbeBW, or Startup if the pipe was never filled), restoring the saved window. Samples
//!   taken meanwhile are marked application-limited
//!   ([`WindowCongestionControl::forces_app_limited`]).
//!
//! Loss handling as `tcp_bbr.c`: the window drops by the bytes newly marked lost; the first
//! round of fast recovery uses packet conservation (`cwnd = max(cwnd, in_flight + acked)`,
//! starting from `in_flight + acked`); leaving recovery or a timeout restores the window saved
//! on entry; a timeout sets `cwnd = 1·SMSS` and then grows it by the acknowledged bytes toward
//! the model's target. No RFC 6582 inflation.
//!
//! Simplifications (see `docs/controllers/tcp.md`): no long-term (policer) bandwidth mode
//! (Linux default on, spec 14.4 says keep it off); no idle-restart handling (`CA_EVENT_TX_START`:
//! the simulated flows are greedy or finish); no EDT correction of in-flight (the sender paces
//! without an earliest-departure-time queue); no delayed-ACK exemption when refreshing RTprop;
//! `BtlBw` uses an exact windowed maximum rather than Linux's three-sample `minmax`
//! approximation; the gains are the real numbers `2/ln 2` and `ln 2/2` (Linux: 739/256 and
//! 88/256). The pacing rate is reported in wire bits per second (payload rate ×
//! (MSS + header)/MSS) because the sender paces whole packets, while BBR's model is payload:
//! this matches Linux, whose TCP-internal (EDT) pacing spaces payload bytes.

use super::cc::{AckSample, CaState, CongestionEvent, RoundCounter, RtoEvent, WindowCongestionControl};
use crate::controllers::common::WindowedFilter;
use crate::units::{Bitrate, Bytes, Duration, Time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Startup pacing and cwnd gain `2/ln 2` ≈ 2.885 (spec 14.4; Linux `bbr_high_gain`).
pub const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;
/// Drain pacing gain `ln 2 / 2` ≈ 1/2.885 (spec 14.4; Linux `bbr_drain_gain`).
pub const DRAIN_GAIN: f64 = std::f64::consts::LN_2 / 2.0;
/// ProbeBW cwnd gain (spec 14.4; Linux `bbr_cwnd_gain`).
pub const CWND_GAIN: f64 = 2.0;
/// ProbeBW pacing-gain cycle (spec 14.4; Linux `bbr_pacing_gain`).
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Number of cycle phases the random start draws from (Linux `bbr_cycle_rand`): every phase but
/// the 0.75 one.
pub const CYCLE_RAND: u32 = 7;
/// `BtlBw` filter window in round trips (Linux `bbr_bw_rtts` = cycle length + 2; spec 14.4).
pub const BW_FILTER_ROUNDS: i64 = 10;
/// `RTprop` filter window (Linux `bbr_min_rtt_win_sec`; spec 14.4).
pub const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// Minimum time in ProbeRTT at the low window (Linux `bbr_probe_rtt_mode_ms`; spec 14.4).
pub const PROBE_RTT_DURATION: Duration = Duration::from_ms(200);
/// Window floor and ProbeRTT window in segments (Linux `bbr_cwnd_min_target`; spec 14.4).
pub const CWND_MIN_TARGET: i64 = 4;
/// Startup ends when `BtlBw` grows by less than this factor ... (Linux `bbr_full_bw_thresh`).
pub const FULL_BW_THRESH: f64 = 1.25;
/// ... for this many rounds (Linux `bbr_full_bw_cnt`; spec 14.4).
pub const FULL_BW_COUNT: u32 = 3;
/// Pacing slightly below the estimate (Linux `bbr_pacing_margin_percent`; spec 14.4).
pub const PACING_MARGIN: f64 = 0.01;
/// Gain on the extra-ACKed allowance (Linux ≥ 4.19 `bbr_extra_acked_gain` = 1).
pub const EXTRA_ACKED_GAIN: f64 = 1.0;
/// Extra-ACKed maximum filter window in round trips (two halves of 5; Linux `bbr_extra_acked_win_rtts`).
pub const EXTRA_ACKED_WIN_ROUNDS: u32 = 5;
/// Cap on the extra-ACKed allowance: this much time at `BtlBw` (Linux `bbr_extra_acked_max_us`).
pub const EXTRA_ACKED_MAX: Duration = Duration::from_ms(100);
/// ACK-aggregation epoch reset after this many segments (Linux `bbr_ack_epoch_acked_reset_thresh`).
pub const ACK_EPOCH_RESET_SEGMENTS: i64 = 1 << 20;
/// Below this pacing rate one segment per quantum, else two (Linux `bbr_min_tso_rate`).
pub const MIN_TSO_RATE: Bitrate = Bitrate::from_bps(1_200_000);
/// Most segments in one quantum (Linux: 0x7F).
pub const MAX_TSO_SEGMENTS: i64 = 127;

/// Largest window the arithmetic may reach.
const MAX_CWND: i64 = 1 << 46;

/// BBR's operating mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

pub struct Bbr {
    smss: i64,
    header: i64,
    init_cwnd: i64,
    rng: ChaCha8Rng,
    started: bool,

    mode: Mode,
    cwnd: i64,
    ssthresh: i64,
    prior_cwnd: i64,
    /// Payload bit/s.
    pacing_rate: Bitrate,
    has_seen_rtt: bool,
    pacing_gain: f64,
    cwnd_gain: f64,

    /// Max filter over delivery rates, keyed by round count (`Time::from_us(round)`).
    bw: WindowedFilter<Bitrate>,
    rounds: RoundCounter,
    round_start: bool,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Time,

    full_bw: Bitrate,
    full_bw_cnt: u32,
    full_bw_reached: bool,

    cycle_idx: usize,
    cycle_stamp: Time,

    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    probe_rtt_app_limited: bool,

    prev_ca_state: CaState,
    in_recovery: bool,
    packet_conservation: bool,

    extra_acked: [i64; 2],
    extra_acked_win_rounds: u32,
    extra_acked_win_idx: usize,
    ack_epoch_stamp: Time,
    ack_epoch_acked: i64,
}

impl Bbr {
    /// `header`: bytes on the wire per segment besides the payload (pacing is in wire bits);
    /// `iw_segments`: initial window; `seed`: the random stream of the ProbeBW start phase.
    pub fn new(smss: Bytes, header: Bytes, iw_segments: u32, seed: u64) -> Self {
        let smss = smss.get().max(1);
        let init_cwnd = smss * iw_segments.max(1) as i64;
        let mut b = Bbr {
            smss,
            header: header.get().max(0),
            init_cwnd,
            rng: ChaCha8Rng::seed_from_u64(seed),
            started: false,
            mode: Mode::Startup,
            cwnd: init_cwnd,
            ssthresh: Bytes::INFINITY.get(),
            prior_cwnd: 0,
            pacing_rate: Bitrate::ZERO,
            has_seen_rtt: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            bw: WindowedFilter::max(Duration::from_us(BW_FILTER_ROUNDS)),
            rounds: RoundCounter::default(),
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            full_bw: Bitrate::ZERO,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            probe_rtt_app_limited: false,
            prev_ca_state: CaState::Open,
            in_recovery: false,
            packet_conservation: false,
            extra_acked: [0; 2],
            extra_acked_win_rounds: 0,
            extra_acked_win_idx: 0,
            ack_epoch_stamp: Time::ZERO,
            ack_epoch_acked: 0,
        };
        // Before any RTT sample: the initial window at high gain over a nominal 1 ms.
        b.init_pacing_rate(Duration::from_ms(1));
        b
    }

    pub fn mode(&self) -> Mode { self.mode }
    pub fn pacing_gain(&self) -> f64 { self.pacing_gain }
    pub fn cwnd_gain(&self) -> f64 { self.cwnd_gain }
    /// Current phase of the ProbeBW gain cycle (index into [`PACING_GAIN_CYCLE`]).
    pub fn cycle_index(&self) -> usize { self.cycle_idx }
    /// `BtlBw` (payload bit/s).
    pub fn btl_bw(&self) -> Bitrate { self.bw.get().unwrap_or(Bitrate::ZERO) }
    /// `RTprop`.
    pub fn min_rtt(&self) -> Option<Duration> { self.min_rtt }
    /// Round trips counted so far.
    pub fn round_count(&self) -> u64 { self.rounds.count() }
    pub fn full_bw_reached(&self) -> bool { self.full_bw_reached }
    /// Pacing rate of the payload (the model's unit); [`WindowCongestionControl::pacing_rate`]
    /// adds the headers.
    pub fn payload_pacing_rate(&self) -> Bitrate { self.pacing_rate }

    fn ensure_started(&mut self, now: Time) {
        if !self.started {
            self.started = true;
            self.min_rtt_stamp = now;
            self.cycle_stamp = now;
            self.ack_epoch_stamp = now;
        }
    }

    fn pacing_from(&self, bw: Bitrate, gain: f64) -> Bitrate { bw.scale(gain * (1.0 - PACING_MARGIN)) }

    fn init_pacing_rate(&mut self, rtt: Duration) {
        let rtt = rtt.max(Duration::from_us(1));
        let bw = Bytes::new(self.cwnd) / rtt;
        self.pacing_rate = self.pacing_from(bw, HIGH_GAIN);
    }

    /// `ceil(gain · bw · RTprop)` in whole segments, as bytes; the initial window before any
    /// RTT sample (Linux `bbr_bdp`).
    fn bdp(&self, bw: Bitrate, gain: f64) -> i64 {
        let Some(rtt) = self.min_rtt else { return self.init_cwnd };
        let bytes = gain * bw.bps_f64() * rtt.as_secs_f64() / 8.0;
        let segs = (bytes / self.smss as f64).ceil().clamp(0.0, (MAX_CWND / self.smss) as f64) as i64;
        segs * self.smss
    }

    /// Segments per send quantum (Linux `bbr_tso_segs_goal`: about 1 ms of data at the pacing
    /// rate, at least 1 or 2 segments, at most 127 and 64 KB).
    fn tso_segs_goal(&self) -> i64 {
        let bytes = (self.pacing_rate.bps() / 8 / 1024).min(65_535 - 1 - 320);
        let min_segs = if self.pacing_rate < MIN_TSO_RATE { 1 } else { 2 };
        (bytes / self.smss).max(min_segs).min(MAX_TSO_SEGMENTS)
    }

    /// Window allowance for send quanta (Linux `bbr_quantization_budget`), bytes in, bytes out.
    fn quantization_budget(&self, cwnd: i64) -> i64 {
        let mut segs = (cwnd + self.smss - 1) / self.smss + 3 * self.tso_segs_goal();
        segs = (segs + 1) & !1; // round up to even
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            segs += 2;
        }
        (segs * self.smss).min(MAX_CWND)
    }

    /// In-flight target for a gain (Linux `bbr_inflight`).
    fn inflight(&self, bw: Bitrate, gain: f64) -> i64 {
        if self.min_rtt.is_none() {
            return self.init_cwnd;
        }
        self.quantization_budget(self.bdp(bw, gain))
    }

    fn ack_aggregation_cwnd(&self) -> i64 {
        if EXTRA_ACKED_GAIN <= 0.0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.btl_bw() * EXTRA_ACKED_MAX;
        let aggr = (EXTRA_ACKED_GAIN * self.extra_acked[0].max(self.extra_acked[1]) as f64) as i64;
        aggr.min(max_aggr.get())
    }

    fn update_bw(&mut self, s: &AckSample) {
        self.round_start = false;
        let Some(rs) = s.rate else { return };
        if rs.delivered < Bytes::ZERO || rs.interval <= Duration::ZERO {
            return;
        }
        if self.rounds.on_ack(s) {
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = rs.delivery_rate;
        if !rs.is_app_limited || bw >= self.btl_bw() {
            self.bw.update(Time::from_us(self.rounds.count() as i64), bw);
        }
    }

    fn update_ack_aggregation(&mut self, s: &AckSample) {
        let acked = s.newly_acked.get();
        if acked <= 0 || s.rate.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rounds = (self.extra_acked_win_rounds + 1).min(31);
            if self.extra_acked_win_rounds >= EXTRA_ACKED_WIN_ROUNDS {
                self.extra_acked_win_rounds = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let mut expected = (self.btl_bw() * (s.now - self.ack_epoch_stamp).max(Duration::ZERO)).get();
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + acked >= ACK_EPOCH_RESET_SEGMENTS * self.smss {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = s.now;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + acked).min(0xFFFFF * self.smss);
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    fn advance_cycle_phase(&mut self, now: Time) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAIN_CYCLE.len();
        self.cycle_stamp = now;
    }

    fn is_next_cycle_phase(&self, s: &AckSample) -> bool {
        let is_full_length = self.min_rtt.is_some_and(|m| s.now - self.cycle_stamp > m);
        let gain = self.pacing_gain;
        if gain == 1.0 {
            return is_full_length;
        }
        let bw = self.btl_bw();
        let mut inflight = s.prior_in_flight.get();
        if gain > 1.0 {
            inflight += self.tso_segs_goal() * self.smss;
            return is_full_length && (s.newly_lost > Bytes::ZERO || inflight >= self.inflight(bw, gain));
        }
        is_full_length || inflight <= self.inflight(bw, 1.0)
    }

    fn update_cycle_phase(&mut self, s: &AckSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(s) {
            self.advance_cycle_phase(s.now);
        }
    }

    fn check_full_bw_reached(&mut self, s: &AckSample) {
        if self.full_bw_reached || !self.round_start || s.rate.is_none_or(|r| r.is_app_limited) {
            return;
        }
        let bw = self.btl_bw();
        if bw.bps_f64() >= self.full_bw.bps_f64() * FULL_BW_THRESH {
            self.full_bw = bw;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_COUNT;
    }

    fn reset_startup_mode(&mut self) { self.mode = Mode::Startup; }

    fn reset_probe_bw_mode(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        // Linux: cycle_idx = CYCLE_LEN − 1 − rand(bbr_cycle_rand), then advance: the first
        // phase is anything but index 1 (the 0.75 phase).
        self.cycle_idx = PACING_GAIN_CYCLE.len() - 1 - self.rng.gen_range(0..CYCLE_RAND) as usize;
        self.advance_cycle_phase(now);
    }

    fn reset_mode(&mut self, now: Time) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.reset_startup_mode();
        }
    }

    fn check_drain(&mut self, s: &AckSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.btl_bw(), 1.0);
        }
        if self.mode == Mode::Drain && s.in_flight.get() <= self.inflight(self.btl_bw(), 1.0) {
            self.reset_probe_bw_mode(s.now);
        }
    }

    fn save_cwnd(&mut self) {
        if !matches!(self.prev_ca_state, CaState::Recovery | CaState::Loss) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    fn update_min_rtt(&mut self, s: &AckSample) {
        let now = s.now;
        let filter_expired = now > self.min_rtt_stamp + MIN_RTT_WINDOW;
        if let Some(rtt) = s.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || filter_expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if filter_expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // Ignore the low-rate samples of this mode.
            self.probe_rtt_app_limited = true;
            match self.probe_rtt_done_stamp {
                None if s.in_flight.get() <= CWND_MIN_TARGET * self.smss => {
                    self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                    self.probe_rtt_round_done = false;
                    self.rounds.start_round_now(s.delivered);
                }
                None => {}
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now > done {
                        self.min_rtt_stamp = now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        self.reset_mode(now);
                    }
                }
            }
        }
    }

    fn update_gains(&mut self) {
        let (p, c) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (PACING_GAIN_CYCLE[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    fn set_pacing_rate(&mut self, bw: Bitrate, srtt: Option<Duration>) {
        let rate = self.pacing_from(bw, self.pacing_gain);
        if !self.has_seen_rtt {
            if let Some(srtt) = srtt {
                self.has_seen_rtt = true;
                self.init_pacing_rate(srtt);
            }
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: returns the window and whether packet
    /// conservation decides it.
    fn recover_or_restore(&mut self, s: &AckSample, state: CaState, acked: i64) -> (i64, bool) {
        let mut cwnd = self.cwnd;
        let in_flight = s.in_flight.get().max(0);
        if s.newly_lost > Bytes::ZERO {
            cwnd = (cwnd - s.newly_lost.get()).max(self.smss);
        }
        let prev = self.prev_ca_state;
        let was_recovering = matches!(prev, CaState::Recovery | CaState::Loss);
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: packet conservation, and a round starts now.
            self.packet_conservation = true;
            self.rounds.start_round_now(s.delivered);
            cwnd = in_flight + acked;
        } else if was_recovering && state == CaState::Open {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(in_flight + acked), true);
        }
        (cwnd, false)
    }

    fn set_cwnd(&mut self, s: &AckSample, state: CaState, bw: Bitrate) {
        let acked = s.newly_acked.get();
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(s, state, acked);
            cwnd = c;
            if !conserving {
                let target = self.quantization_budget(self.bdp(bw, self.cwnd_gain) + self.ack_aggregation_cwnd());
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || s.delivered.get() < self.init_cwnd {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET * self.smss);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET * self.smss);
        }
        self.cwnd = cwnd.clamp(self.smss, MAX_CWND);
    }
}

impl WindowCongestionControl for Bbr {
    fn name(&self) -> &'static str { "bbr" }

    fn on_ack(&mut self, s: &AckSample) {
        self.ensure_started(s.now);
        self.probe_rtt_app_limited = false;
        // The full ACK that ends a fast recovery arrives with `state = Recovery`, after
        // `on_recovery_exit`: for BBR the connection is open again (as in Linux, where the state
        // changes before `cong_control` runs).
        let state = if s.state == CaState::Recovery && !self.in_recovery { CaState::Open } else { s.state };
        self.update_bw(s);
        self.update_ack_aggregation(s);
        self.update_cycle_phase(s);
        self.check_full_bw_reached(s);
        self.check_drain(s);
        self.update_min_rtt(s);
        self.update_gains();
        let bw = self.btl_bw();
        self.set_pacing_rate(bw, s.srtt);
        self.set_cwnd(s, state, bw);
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent) {
        self.save_cwnd();
        self.in_recovery = true;
    }

    fn on_rto(&mut self, ev: &RtoEvent) {
        if ev.reduces_ssthresh() {
            self.save_cwnd();
        }
        self.cwnd = self.smss;
        self.in_recovery = false;
        // Linux `bbr_set_state(TCP_CA_Loss)`.
        self.prev_ca_state = CaState::Loss;
        self.full_bw = Bitrate::ZERO;
        self.round_start = true;
    }

    fn on_recovery_exit(&mut self, _now: Time) { self.in_recovery = false; }

    fn on_packet_sent(&mut self, now: Time, _bytes: Bytes, _in_flight: Bytes) { self.ensure_started(now); }

    fn cwnd(&self) -> Bytes { Bytes::new(self.cwnd) }
    fn ssthresh(&self) -> Bytes { Bytes::new(self.ssthresh) }
    fn in_slow_start(&self) -> bool { self.mode == Mode::Startup }

    fn pacing_rate(&self) -> Option<Bitrate> {
        let wire = self.pacing_rate.bps_f64() * (self.smss + self.header) as f64 / self.smss as f64;
        Some(Bitrate::from_bps_f64(wire))
    }

    fn wants_recovery_inflation(&self) -> bool { false }
    fn forces_app_limited(&self) -> bool { self.probe_rtt_app_limited }
}

#[cfg(test)]
mod tests;
