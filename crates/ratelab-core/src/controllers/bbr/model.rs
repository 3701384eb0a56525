//! The BBRv1 model as in libwebrtc's `bbr_network_controller.cc` (spec 7.2–7.4): delivery-rate
//! sampler, bandwidth and ack-height max filters over round trips, min RTT with expiry, round
//! counting, loss recovery, STARTUP → DRAIN → PROBE_BW ⇄ PROBE_RTT, the pacing rate and the
//! congestion window. [`super::webrtc::BbrWebrtc`] drives it as shipped; [`super::rbbr::Rbbr`]
//! drives it with RBBR's settings (spec 6) and replaces the outputs.

use crate::controller::{Diagnostics, SentPacket, TransportFeedback};
use crate::controllers::common::{AckClock, BandwidthSampler, RoundCounter, RoundWindowedFilter};
use crate::units::{Bitrate, Bytes, Duration, Time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// 2/ln 2, the STARTUP pacing and cwnd gain (spec 7.3).
pub const HIGH_GAIN: f64 = 2.885;
/// TCP MSS used for window arithmetic (spec 7.3: windows in units of 1460 B).
pub const MSS: Bytes = Bytes::new(1460);
/// Largest packet (spec 7.3: 1452 B); PROBE_RTT waits for in-flight < min cwnd + this.
pub const MAX_PACKET: Bytes = Bytes::new(1452);
/// RTT assumed before any measurement (QUIC/libwebrtc `RttStats`: 100 ms).
pub const INITIAL_RTT: Duration = Duration::from_ms(100);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode { Startup, Drain, ProbeBw, ProbeRtt }

impl Mode {
    pub fn code(self) -> f64 { match self { Mode::Startup => 0.0, Mode::Drain => 1.0, Mode::ProbeBw => 2.0, Mode::ProbeRtt => 3.0 } }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery { NotInRecovery, Conservation, Growth }

/// Settings of the model (not user-facing: the controllers build it from their parameters).
#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// PROBE_BW pacing gains, one phase per min RTT (spec 7.3: 1.25, 0.75, 1 ×6; RBBR 6.1:
    /// 1.125, 0.875, 1, 1). Phase 1 must be the drain phase that follows the probe.
    pub gain_cycle: Vec<f64>,
    /// Bandwidth (and ack-height) filter length in round trips (spec 7.3: 10).
    pub bw_window_rounds: u64,
    /// min RTT expiry that triggers PROBE_RTT (spec 7.3: 10 s; RBBR 6.1: 5 s).
    pub min_rtt_expiry: Duration,
    /// Time spent in PROBE_RTT once it may exit (spec 7.3: 200 ms).
    pub probe_rtt_time: Duration,
    /// PROBE_RTT waits for in-flight < `min_cwnd + MAX_PACKET` before starting its timer
    /// (window-based BBR, spec 7.4 step 6). RBBR has no window and starts the timer at once.
    pub probe_rtt_waits_for_inflight: bool,
    pub high_gain: f64,
    pub drain_gain: f64,
    /// STARTUP exits after this many rounds without `startup_growth` bandwidth growth (3).
    pub startup_rounds: u32,
    pub startup_growth: f64,
    /// Leave STARTUP on loss recovery too (`exit_startup_on_loss = true`).
    pub exit_startup_on_loss: bool,
    pub initial_cwnd: Bytes,
    pub min_cwnd: Bytes,
    pub max_cwnd: Bytes,
    /// PROBE_BW congestion-window gain (2.0).
    pub probe_bw_cwnd_gain: f64,
    /// Ack time of the delivery-rate samples (libwebrtc: the feedback arrival time).
    /// Note: libwebrtc never calls BBR's `OnApplicationLimited`, so only PROBE_RTT marks samples
    /// app-limited; the lab does the same.
    pub ack_clock: AckClock,
}

/// What one feedback changed, for the controllers' window/rate computations.
#[derive(Clone, Copy, Debug, Default)]
pub struct FeedbackOutcome {
    pub data_acked: Bytes,
    pub data_lost: Bytes,
    pub round_start: bool,
}

pub struct BbrModel {
    pub cfg: ModelConfig,
    rng: ChaCha8Rng,
    pub mode: Mode,
    sampler: BandwidthSampler,
    rounds: RoundCounter,
    max_bw: RoundWindowedFilter<Bitrate>,
    max_ack_height: RoundWindowedFilter<Bytes>,
    agg_epoch_start: Option<Time>,
    agg_epoch_bytes: Bytes,
    /// Filtered min RTT (zero = none yet) and when it was last set.
    min_rtt: Duration,
    min_rtt_stamp: Time,
    last_rtt: Duration,
    /// `RttStats::min_rtt` (never expires; feeds the first pacing rate).
    stats_min_rtt: Duration,
    pub pacing_gain: f64,
    cwnd_gain: f64,
    pub cycle_offset: usize,
    last_cycle_start: Time,
    full_bw: bool,
    rounds_without_gain: u32,
    bw_at_last_round: Bitrate,
    exiting_quiescence: bool,
    exit_probe_rtt_at: Option<Time>,
    probe_rtt_round_passed: bool,
    last_sample_app_limited: bool,
    pub recovery: Recovery,
    end_recovery_at: Option<u64>,
    recovery_window: Bytes,
    congestion_window: Bytes,
    pacing_rate: Bitrate,
    /// Count of PROBE_RTT entries (diagnostics and tests).
    pub probe_rtt_count: u64,
}

impl BbrModel {
    pub fn new(cfg: ModelConfig, seed: u64) -> Self {
        let w = cfg.bw_window_rounds.max(1);
        let max_cwnd = cfg.max_cwnd;
        let mut m = BbrModel {
            rng: ChaCha8Rng::seed_from_u64(seed),
            mode: Mode::Startup,
            sampler: BandwidthSampler::new(),
            rounds: RoundCounter::new(),
            max_bw: RoundWindowedFilter::max(w),
            max_ack_height: RoundWindowedFilter::max(w),
            agg_epoch_start: None,
            agg_epoch_bytes: Bytes::ZERO,
            min_rtt: Duration::ZERO,
            min_rtt_stamp: Time::ZERO,
            last_rtt: Duration::ZERO,
            stats_min_rtt: Duration::ZERO,
            pacing_gain: 1.0,
            cwnd_gain: 1.0,
            cycle_offset: 0,
            last_cycle_start: Time::ZERO,
            full_bw: false,
            rounds_without_gain: 0,
            bw_at_last_round: Bitrate::ZERO,
            exiting_quiescence: false,
            exit_probe_rtt_at: None,
            probe_rtt_round_passed: false,
            last_sample_app_limited: false,
            recovery: Recovery::NotInRecovery,
            end_recovery_at: None,
            recovery_window: max_cwnd,
            congestion_window: cfg.initial_cwnd,
            pacing_rate: Bitrate::ZERO,
            probe_rtt_count: 0,
            cfg,
        };
        m.enter_startup();
        m
    }

    // ---- accessors -------------------------------------------------------------------------

    /// The bandwidth estimate (`BtlBw`); zero before the first sample.
    pub fn bandwidth(&self) -> Bitrate { self.max_bw.get().unwrap_or(Bitrate::ZERO) }
    /// `GetMinRtt`: the filtered min RTT, or 100 ms before any sample.
    pub fn min_rtt(&self) -> Duration { if self.min_rtt > Duration::ZERO { self.min_rtt } else { INITIAL_RTT } }
    pub fn is_at_full_bandwidth(&self) -> bool { self.full_bw }
    pub fn in_recovery(&self) -> bool { self.recovery != Recovery::NotInRecovery }
    pub fn round_count(&self) -> u64 { self.rounds.count() }
    /// PROBE_BW with gain > 1, or STARTUP (libwebrtc pads while probing).
    pub fn is_probing_for_bandwidth(&self) -> bool { (self.mode == Mode::ProbeBw && self.pacing_gain > 1.0) || self.mode == Mode::Startup }

    /// `gain · BW · min_rtt`, or `gain · initial_cwnd` without a bandwidth sample; at least the
    /// minimum window (spec 7.4 step 8).
    pub fn target_cwnd(&self, gain: f64) -> Bytes {
        let bdp = self.bandwidth() * self.min_rtt();
        let mut w = bdp * gain;
        if w <= Bytes::ZERO { w = self.cfg.initial_cwnd * gain; }
        w.max(self.cfg.min_cwnd)
    }

    /// `PacingRate()`: before the first pacing computation `high_gain · initial_cwnd / min_rtt`.
    pub fn pacing_rate(&self) -> Bitrate {
        if self.pacing_rate.is_zero() { return (self.cfg.initial_cwnd * self.cfg.high_gain) / self.min_rtt(); }
        self.pacing_rate
    }

    /// `GetCongestionWindow()` (spec 7.5): PROBE_RTT → min window; recovery → min(cwnd, recovery window).
    pub fn congestion_window(&self) -> Bytes {
        if self.mode == Mode::ProbeRtt { return self.cfg.min_cwnd; }
        if self.in_recovery() { return self.congestion_window.min(self.recovery_window); }
        self.congestion_window
    }

    /// The model's state as diagnostics, in this order: `bbr_mode` ([`Mode::code`]),
    /// `bbr_bw_kbps` ([`Self::bandwidth`]), `bbr_min_rtt_ms` ([`Self::min_rtt`]) and
    /// `bbr_pacing_gain`. Both BBR controllers push these first, then their own entries.
    pub fn push_diagnostics(&self, out: &mut Diagnostics) {
        out.push(("bbr_mode", self.mode.code()));
        out.push(("bbr_bw_kbps", self.bandwidth().kbps_f64()));
        out.push(("bbr_min_rtt_ms", self.min_rtt().as_ms_f64()));
        out.push(("bbr_pacing_gain", self.pacing_gain));
    }

    /// libwebrtc BBR's `Reset` on a route change: full-bandwidth detection starts over in
    /// STARTUP; the bandwidth filter and the filtered min RTT stay (libwebrtc keeps
    /// `max_bandwidth_` and `min_rtt_`), the `RttStats` min RTT is forgotten
    /// (`OnConnectionMigration`).
    pub fn reset_for_route_change(&mut self) {
        self.rounds_without_gain = 0;
        self.full_bw = false;
        self.stats_min_rtt = Duration::ZERO;
        self.enter_startup();
    }

    fn gain_at(&self, offset: usize) -> f64 { self.cfg.gain_cycle.get(offset).copied().unwrap_or(1.0) }

    // ---- mode changes ----------------------------------------------------------------------

    fn enter_startup(&mut self) {
        self.mode = Mode::Startup;
        self.pacing_gain = self.cfg.high_gain;
        self.cwnd_gain = self.cfg.high_gain;
    }

    fn enter_probe_bw(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        self.cwnd_gain = self.cfg.probe_bw_cwnd_gain;
        // Random start phase, never phase 1 (the drain phase must follow the probe phase).
        let n = self.cfg.gain_cycle.len().max(1);
        self.cycle_offset = if n <= 2 { 0 } else {
            let k = self.rng.gen_range(0..n - 1);
            if k >= 1 { k + 1 } else { k }
        };
        self.last_cycle_start = now;
        self.pacing_gain = self.gain_at(self.cycle_offset);
    }

    // ---- events ----------------------------------------------------------------------------

    pub fn on_packet_sent(&mut self, p: &SentPacket) {
        self.rounds.on_packet_sent(p.seq);
        if (p.data_in_flight - p.size) <= Bytes::ZERO && self.sampler.is_app_limited() { self.exiting_quiescence = true; }
        if self.agg_epoch_start.is_none() { self.agg_epoch_start = Some(p.send_time); }
        self.sampler.on_packet_sent(p);
    }

    /// Spec 7.4, steps 1–6 (model update and mode transitions) followed by the pacing-rate,
    /// congestion-window and recovery-window updates (7.4 steps 7–8). `pacing_discount`
    /// multiplies the pacing rate at full bandwidth (RBBR's pacing discount; 1 for WebRTC-BBR).
    pub fn on_feedback(&mut self, fb: &TransportFeedback, pacing_discount: f64) -> FeedbackOutcome {
        let now = fb.feedback_time;
        // 1. RTT stats from the last packet of the feedback (naive: includes hold time).
        if let Some(last) = fb.packets.last() {
            let d = now - last.sent.send_time;
            if d > Duration::ZERO && (self.stats_min_rtt.is_zero_dur() || d < self.stats_min_rtt) { self.stats_min_rtt = d; }
        }
        let acked_before = self.sampler.total_acked();
        let has_losses = fb.lost().next().is_some();
        let data_lost: Bytes = fb.lost().map(|p| p.sent.size).sum();
        let mut round_start = false;
        let mut min_rtt_expired = false;
        let largest_acked = fb.received().map(|p| p.sent.seq).max();
        for p in fb.lost() { self.sampler.on_packet_lost(p.sent.seq); }
        if let Some(last_acked) = largest_acked {
            round_start = self.rounds.on_ack(last_acked);
            min_rtt_expired = self.update_bandwidth_and_min_rtt(fb);
            self.update_recovery_state(last_acked, has_losses, round_start);
            let newly = self.sampler.total_acked() - acked_before;
            self.update_ack_aggregation(now, newly);
        }
        if self.mode == Mode::ProbeBw { self.update_gain_cycle(now, fb.prior_in_flight, has_losses); }
        if round_start && !self.full_bw { self.check_full_bandwidth(); }
        self.maybe_exit_startup_or_drain(now, fb.data_in_flight);
        self.maybe_enter_or_exit_probe_rtt(now, fb.data_in_flight, round_start, min_rtt_expired);
        let data_acked = self.sampler.total_acked() - acked_before;
        self.calculate_pacing_rate(pacing_discount);
        self.calculate_cwnd(data_acked);
        self.calculate_recovery_window(data_acked, data_lost, fb.data_in_flight);
        if let Some(l) = largest_acked { self.sampler.remove_obsolete(l); }
        FeedbackOutcome { data_acked, data_lost, round_start }
    }

    fn update_bandwidth_and_min_rtt(&mut self, fb: &TransportFeedback) -> bool {
        let now = fb.feedback_time;
        let mut sample_rtt = Duration::MAX;
        for p in fb.received() {
            let t = match self.cfg.ack_clock { AckClock::FeedbackArrival => now, AckClock::ReceiveTime => p.recv_time.unwrap_or(now) };
            let Some(s) = self.sampler.on_packet_acked(t, p.sent.seq) else {
                // libwebrtc: an empty sample (bandwidth 0, not app-limited) still resets the flag.
                self.last_sample_app_limited = false;
                continue;
            };
            self.last_sample_app_limited = s.is_app_limited;
            if s.rtt > Duration::ZERO { sample_rtt = sample_rtt.min(s.rtt); }
            if !s.is_app_limited || s.bandwidth > self.bandwidth() {
                self.max_bw.update(self.rounds.count(), s.bandwidth);
            }
        }
        if sample_rtt >= Duration::MAX { return false; }
        self.last_rtt = sample_rtt;
        let expired = self.min_rtt > Duration::ZERO && now > self.min_rtt_stamp + self.cfg.min_rtt_expiry;
        if expired || sample_rtt < self.min_rtt || self.min_rtt.is_zero_dur() {
            self.min_rtt = sample_rtt;
            self.min_rtt_stamp = now;
        }
        expired
    }

    fn update_recovery_state(&mut self, last_acked: u64, has_losses: bool, round_start: bool) {
        if has_losses { self.end_recovery_at = self.rounds.last_sent(); }
        match self.recovery {
            Recovery::NotInRecovery => {
                if has_losses {
                    self.recovery = Recovery::Conservation;
                    self.recovery_window = Bytes::ZERO;
                    // Conservation lasts a whole round from now.
                    self.rounds.extend_round();
                }
            }
            Recovery::Conservation | Recovery::Growth => {
                if self.recovery == Recovery::Conservation && round_start { self.recovery = Recovery::Growth; }
                if !has_losses && self.end_recovery_at.is_none_or(|e| last_acked > e) { self.recovery = Recovery::NotInRecovery; }
            }
        }
    }

    fn update_ack_aggregation(&mut self, ack_time: Time, newly_acked: Bytes) {
        let Some(start) = self.agg_epoch_start else { return };
        let expected = self.bandwidth() * (ack_time - start).max(Duration::ZERO);
        if self.agg_epoch_bytes <= expected {
            self.agg_epoch_bytes = newly_acked;
            self.agg_epoch_start = Some(ack_time);
            return;
        }
        self.agg_epoch_bytes += newly_acked;
        self.max_ack_height.update(self.rounds.count(), self.agg_epoch_bytes - expected);
    }

    fn update_gain_cycle(&mut self, now: Time, prior_in_flight: Bytes, has_losses: bool) {
        let mut advance = now - self.last_cycle_start > self.min_rtt();
        // A probe phase lasts until in-flight reaches gain·BDP (unless losses say the buffer
        // cannot hold it); a drain phase ends early once in-flight is down to the BDP.
        if self.pacing_gain > 1.0 && !has_losses && prior_in_flight < self.target_cwnd(self.pacing_gain) { advance = false; }
        if self.pacing_gain < 1.0 && prior_in_flight <= self.target_cwnd(1.0) { advance = true; }
        if advance {
            let n = self.cfg.gain_cycle.len().max(1);
            self.cycle_offset = (self.cycle_offset + 1) % n;
            self.last_cycle_start = now;
            self.pacing_gain = self.gain_at(self.cycle_offset);
        }
    }

    fn check_full_bandwidth(&mut self) {
        if self.last_sample_app_limited { return; }
        let target = self.bw_at_last_round.scale(self.cfg.startup_growth);
        if self.bandwidth() >= target {
            self.bw_at_last_round = self.bandwidth();
            self.rounds_without_gain = 0;
            return;
        }
        self.rounds_without_gain += 1;
        if self.rounds_without_gain >= self.cfg.startup_rounds || (self.cfg.exit_startup_on_loss && self.in_recovery()) {
            self.full_bw = true;
        }
    }

    fn maybe_exit_startup_or_drain(&mut self, now: Time, in_flight: Bytes) {
        if self.mode == Mode::Startup && self.full_bw {
            self.mode = Mode::Drain;
            self.pacing_gain = self.cfg.drain_gain;
            self.cwnd_gain = self.cfg.high_gain;
        }
        if self.mode == Mode::Drain && in_flight <= self.target_cwnd(1.0) { self.enter_probe_bw(now); }
    }

    fn maybe_enter_or_exit_probe_rtt(&mut self, now: Time, in_flight: Bytes, round_start: bool, min_rtt_expired: bool) {
        if min_rtt_expired && !self.exiting_quiescence && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.exit_probe_rtt_at = None;
            self.probe_rtt_count += 1;
            if !self.cfg.probe_rtt_waits_for_inflight {
                self.exit_probe_rtt_at = Some(now + self.cfg.probe_rtt_time);
                self.probe_rtt_round_passed = false;
            }
        }
        if self.mode == Mode::ProbeRtt {
            self.sampler.on_app_limited();
            match self.exit_probe_rtt_at {
                None => {
                    if in_flight < self.cfg.min_cwnd + MAX_PACKET {
                        self.exit_probe_rtt_at = Some(now + self.cfg.probe_rtt_time);
                        self.probe_rtt_round_passed = false;
                    }
                }
                Some(at) => {
                    if round_start { self.probe_rtt_round_passed = true; }
                    if now >= at && self.probe_rtt_round_passed {
                        self.min_rtt_stamp = now;
                        if !self.full_bw { self.enter_startup(); } else { self.enter_probe_bw(now); }
                    }
                }
            }
        }
        self.exiting_quiescence = false;
    }

    fn calculate_pacing_rate(&mut self, discount: f64) {
        let bw = self.bandwidth();
        if bw.is_zero() { return; }
        let target = bw.scale(self.pacing_gain);
        if self.full_bw {
            self.pacing_rate = target.scale(discount);
            return;
        }
        // First pacing rate: initial window per measured RTT.
        if self.pacing_rate.is_zero() && self.stats_min_rtt > Duration::ZERO {
            self.pacing_rate = self.cfg.initial_cwnd / self.stats_min_rtt;
            return;
        }
        // Never decrease during STARTUP.
        self.pacing_rate = self.pacing_rate.max(target);
    }

    fn calculate_cwnd(&mut self, acked: Bytes) {
        if self.mode == Mode::ProbeRtt { return; }
        let mut target = self.target_cwnd(self.cwnd_gain);
        if self.full_bw { target += self.max_ack_height.get().unwrap_or(Bytes::ZERO); }
        if self.full_bw {
            self.congestion_window = target.min(self.congestion_window + acked);
        } else if self.congestion_window < target || self.sampler.total_acked() < self.cfg.initial_cwnd {
            self.congestion_window += acked;
        }
        self.congestion_window = self.congestion_window.max(self.cfg.min_cwnd).min(self.cfg.max_cwnd);
    }

    fn calculate_recovery_window(&mut self, acked: Bytes, lost: Bytes, in_flight: Bytes) {
        if self.recovery == Recovery::NotInRecovery { return; }
        if self.recovery_window <= Bytes::ZERO {
            self.recovery_window = (in_flight + acked).max(self.cfg.min_cwnd);
            return;
        }
        self.recovery_window = if self.recovery_window >= lost { self.recovery_window - lost } else { MSS };
        if self.recovery == Recovery::Growth { self.recovery_window += acked; }
        self.recovery_window = self.recovery_window.max(in_flight + acked).max(self.cfg.min_cwnd);
    }

    // ---- test hooks ------------------------------------------------------------------------

    #[cfg(test)]
    pub(crate) fn force_full_bandwidth(&mut self) { self.full_bw = true; }
}

trait DurExt { fn is_zero_dur(&self) -> bool; }
impl DurExt for Duration { fn is_zero_dur(&self) -> bool { *self <= Duration::ZERO } }
