//! The `pcc-allegro` controller: PCC as in the NSDI'15 paper (§2.3) with the constants of its
//! public code (modong/pcc, `sender/app/cc.h`, `sender/src/core.cpp`).
//!
//! Time is cut into back-to-back monitor intervals (MIs) of 1.5–1.7 × RTT, each sent at one
//! rate; a completed MI's utility ([`super::utility`]) drives a three-state machine:
//! * **Starting**: every MI doubles the rate; at the first MI whose utility is not above the best
//!   so far, return to that best MI's rate and go to Decision making.
//! * **Decision making**: randomized controlled trials — two pairs of MIs at `r(1 + ε)` and
//!   `r(1 − ε)`, each pair in random order (the flow's seeded RNG). If both pairs favour the same
//!   side, move to `r(1 ± ε)` and go to Rate adjusting; otherwise keep r, `ε += ε_min` (up to
//!   `ε_max`) and run new trials.
//! * **Rate adjusting**: `r_n = r_{n−1}·(1 + n·ε_min·dir)`, one measured MI per step, while
//!   utility does not fall; at the first fall, back to `r_{n−1}` and Decision making.
//!
//! While a decision waits for feedback the MIs in between run at the current rate and are not
//! scored. Every plan carries a generation number, so results of MIs planned before a state
//! change are ignored.

use super::monitor::MonitorInterval;
use super::utility::{utility, MiStats, UtilityKind, UtilityParams};
use crate::controller::{Constraints, Controller, Diagnostics, SentPacket, TransportFeedback, Update};
use crate::controllers::common::{max_recv_time, packet_rtt};
use crate::controller::BuildContext;
use crate::units::{Bitrate, Duration, Time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AllegroConfig {
    /// `loss` (the paper's default utility) or `latency` (modong/pcc's code as shipped; the
    /// Iris paper's PCC).
    pub utility: UtilityKind,
    /// Rate of the first Starting MI, kbit/s. Unset: the flow's start rate. (The paper starts at
    /// 2·MSS/RTT; modong/pcc's code at 2 Mbit/s whatever the path.)
    pub start_kbps: Option<f64>,
    /// Smallest trial step ε_min, also the step unit of rate adjusting (paper and code: 0.01).
    pub epsilon_min: f64,
    /// Largest trial step ε_max (paper: 0.05; code: 5 × 0.01).
    pub epsilon_max: f64,
    /// Pairs of trials per decision (paper: 2, i.e. four MIs; code: NUMBER_OF_PROBE = 4); at most 16.
    pub trial_pairs: usize,
    /// Steepness α of the loss sigmoid (paper and code: 100).
    pub loss_alpha: f64,
    /// Loss threshold of the sigmoid (paper and code: 0.05).
    pub loss_threshold: f64,
    /// Steepness of the RTT-ratio sigmoid of the latency utility (code, `cc.h`: 10).
    pub rtt_alpha: f64,
    /// MI length drawn uniformly from [`mi_rtt_min`, `mi_rtt_max`] × smoothed RTT (code:
    /// `RTT·(1.5 + {0, 0.1, 0.2})`).
    pub mi_rtt_min: f64,
    pub mi_rtt_max: f64,
    /// When an RTT holds fewer than this many packets, the MI is this many packets long instead
    /// (code: 10)…
    pub mi_min_packets: f64,
    /// …but at least this long, ms (code: 5 ms).
    pub mi_min_ms: f64,
    /// Initial smoothed RTT, ms (UDT: 10 × the 10 ms SYN interval = 100 ms).
    pub initial_rtt_ms: f64,
    /// Weight of a new RTT sample (UDT: 1/8).
    pub rtt_gain: f64,
    /// An MI whose feedback is still incomplete this many RTTs after its end is scored with its
    /// unreported packets counted as lost (lab choice; modong/pcc waits for ever). Only once an
    /// RTT has been measured: UDT knows the RTT from its handshake, the lab's sender does not,
    /// and the 100 ms guess must not turn a long path's first MIs into losses.
    pub timeout_rtts: f64,
    /// …and never sooner than this, ms.
    pub timeout_min_ms: f64,
    /// Send padding up to the MI rate, so that an MI's rate is actually sent (PCC is a bulk
    /// sender; a video encoder alone does not hold a rate exactly).
    pub padding: bool,
}

impl Default for AllegroConfig {
    fn default() -> Self {
        AllegroConfig {
            utility: UtilityKind::Loss, start_kbps: None, epsilon_min: 0.01, epsilon_max: 0.05, trial_pairs: 2, loss_alpha: 100.0,
            loss_threshold: 0.05, rtt_alpha: 10.0, mi_rtt_min: 1.5, mi_rtt_max: 1.7, mi_min_packets: 10.0, mi_min_ms: 5.0,
            initial_rtt_ms: 100.0, rtt_gain: 0.125, timeout_rtts: 4.0, timeout_min_ms: 500.0, padding: true,
        }
    }
}

impl AllegroConfig {
    fn utility_params(&self) -> UtilityParams {
        UtilityParams { kind: self.utility, loss_alpha: self.loss_alpha, loss_threshold: self.loss_threshold, rtt_alpha: self.rtt_alpha }
    }
}

/// Pending MIs beyond this are scored as lost, oldest first: a memory bound for a sender that
/// never hears back (no RTT measured, so no timeout yet).
const MAX_PENDING_MIS: usize = 200;

/// Upper bound on `trial_pairs` (a decision of more than 32 MIs would take minutes).
const MAX_TRIAL_PAIRS: usize = 16;

/// What an MI was sent for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role {
    /// Starting state: one doubling step.
    Start,
    /// Decision making: trial `i` (pairs are `2k`, `2k + 1`).
    Trial(usize),
    /// Rate adjusting: the measured MI of a step.
    Adjust,
    /// Sent at the current rate while results are awaited; not scored.
    Hold,
}

#[derive(Clone, Debug, PartialEq)]
pub enum State {
    Starting { next_rate: f64, best: Option<(f64, f64)> },
    Deciding { eps: f64, trials: Vec<f64>, results: Vec<Option<f64>>, next_trial: usize },
    /// `prev`: rate and utility of the last measured step; `measure`: the next MI is scored.
    Adjusting { dir: f64, n: u32, prev: Option<(f64, f64)>, measure: bool },
}

/// A state change decided from a scored MI.
enum Next {
    /// Trials around this rate with this ε.
    Decide(f64, f64),
    /// Move to this rate in this direction.
    Adjust(f64, f64),
}

#[derive(Clone, Debug)]
pub(super) struct Mi {
    pub(super) stats: MonitorInterval,
    pub(super) role: Role,
    pub(super) generation: u64,
}

pub struct Allegro {
    cfg: AllegroConfig,
    lo: f64,
    hi: f64,
    /// The base rate r, bit/s.
    pub(super) rate: f64,
    pub(super) state: State,
    pub(super) generation: u64,
    /// MIs started and not yet scored, oldest first; the last one is running.
    pub(super) mis: VecDeque<Mi>,
    srtt: f64,
    /// Whether `srtt` holds a measurement (not the initial guess).
    rtt_measured: bool,
    prev_mi_rtt: Option<f64>,
    packet_bytes: f64,
    rng: ChaCha8Rng,
    last_output: Option<Bitrate>,
    last_utility: f64,
    decisions: u64,
    timeouts: u64,
}

impl Allegro {
    pub fn new(cfg: AllegroConfig, cx: &BuildContext) -> Self {
        Allegro {
            lo: 0.0, hi: f64::INFINITY, rate: 300e3, state: State::Starting { next_rate: 300e3, best: None }, generation: 0,
            mis: VecDeque::new(), srtt: cfg.initial_rtt_ms.max(0.1) / 1e3, rtt_measured: false, prev_mi_rtt: None, packet_bytes: 1200.0,
            rng: ChaCha8Rng::seed_from_u64(cx.seed ^ 0x5043_4341_4c4c_4547), last_output: None, last_utility: 0.0,
            decisions: 0, timeouts: 0, cfg,
        }
    }

    pub fn state(&self) -> &State { &self.state }
    pub fn rate(&self) -> Bitrate { Bitrate::from_bps_f64(self.rate) }
    pub fn srtt(&self) -> Duration { Duration::from_secs_f64(self.srtt) }
    /// Decisions taken (Starting exits, trial verdicts, adjusting steps) and MI timeouts.
    pub fn counters(&self) -> (u64, u64) { (self.decisions, self.timeouts) }

    fn clamp(&self, r: f64) -> f64 { if r.is_finite() { r.clamp(self.lo, self.hi.max(self.lo)) } else { self.lo } }

    fn phase_code(&self) -> f64 {
        match self.state { State::Starting { .. } => 0.0, State::Deciding { .. } => 1.0, State::Adjusting { .. } => 2.0 }
    }

    /// A fresh set of trials around the base rate: `pairs` pairs at `r(1 ± ε)`, each in random order.
    pub(super) fn deciding(&mut self, eps: f64) -> State {
        let mut trials = Vec::new();
        for _ in 0..self.cfg.trial_pairs.clamp(1, MAX_TRIAL_PAIRS) {
            let (up, down) = (self.clamp(self.rate * (1.0 + eps)), self.clamp(self.rate * (1.0 - eps)));
            if self.rng.gen::<bool>() { trials.extend([up, down]) } else { trials.extend([down, up]) }
        }
        let n = trials.len();
        State::Deciding { eps, trials, results: vec![None; n], next_trial: 0 }
    }

    pub(super) fn enter(&mut self, s: State) {
        self.state = s;
        self.generation += 1;
    }

    /// Length of the next MI: a random 1.5–1.7 RTTs, or 10 packets (≥ 5 ms) when an RTT is
    /// shorter than ~10 packets at this rate (modong/pcc `start_monitor`).
    fn mi_duration(&mut self, rate: f64) -> Duration {
        let pkt_s = self.packet_bytes * 8.0 / rate.max(1.0);
        let d = if self.srtt * 1.1 > self.cfg.mi_min_packets * pkt_s {
            let (a, b) = (self.cfg.mi_rtt_min.max(0.01), self.cfg.mi_rtt_max.max(self.cfg.mi_rtt_min.max(0.01)));
            self.srtt * if b > a { self.rng.gen_range(a..=b) } else { a }
        } else {
            (self.cfg.mi_min_packets * pkt_s).max(self.cfg.mi_min_ms / 1e3)
        };
        Duration::from_secs_f64(d.clamp(1e-3, 60.0))
    }

    /// The role and rate of the next MI, as the state plans it.
    pub(super) fn plan_next(&mut self) -> (Role, f64) {
        let base = self.rate;
        let hi = self.hi;
        match &mut self.state {
            State::Starting { next_rate, .. } => {
                let r = *next_rate;
                *next_rate = (r * 2.0).min(hi);
                (Role::Start, r)
            }
            State::Deciding { trials, next_trial, .. } if *next_trial < trials.len() => {
                *next_trial += 1;
                (Role::Trial(*next_trial - 1), trials[*next_trial - 1])
            }
            State::Adjusting { measure, .. } if *measure => {
                *measure = false;
                (Role::Adjust, base)
            }
            _ => (Role::Hold, base),
        }
    }

    /// Start the next MI once the running one has ended (called for every sent packet).
    fn advance(&mut self, now: Time) {
        let due = self.mis.back().is_none_or(|m| now > m.stats.end());
        if !due { return; }
        let (role, rate) = self.plan_next();
        let rate = self.clamp(rate);
        let d = self.mi_duration(rate);
        // starts just before `now`, so the packet that triggered it is its first
        let start = now - Duration::from_us(1);
        self.mis.push_back(Mi { stats: MonitorInterval::new(rate, start, d), role, generation: self.generation });
    }

    /// Score the oldest MIs that are complete (or timed out).
    fn score_completed(&mut self, now: Time) {
        let timeout = Duration::from_secs_f64((self.srtt * self.cfg.timeout_rtts.max(0.5)).max(self.cfg.timeout_min_ms.max(1.0) / 1e3));
        let overflow = self.mis.len().saturating_sub(MAX_PENDING_MIS);
        for m in self.mis.iter_mut().take(overflow) {
            m.stats.close_unreported_as_lost();
            self.timeouts += 1;
        }
        while let Some(front) = self.mis.front_mut() {
            let ended = now > front.stats.end();
            if self.rtt_measured && !front.stats.is_done() && ended && now - front.stats.end() >= timeout {
                front.stats.close_unreported_as_lost();
                self.timeouts += 1;
            }
            if !front.stats.is_done() { break; }
            let Some(mi) = self.mis.pop_front() else { break };
            self.on_mi_scored(mi);
        }
    }

    pub(super) fn on_mi_scored(&mut self, mi: Mi) {
        let rtt = mi.stats.mean_rtt_s().unwrap_or(self.srtt);
        let stats = MiStats { rate_mbps: mi.stats.rate_bps / 1e6, loss: mi.stats.loss_rate(), rtt_s: rtt, prev_rtt_s: self.prev_mi_rtt.unwrap_or(rtt) };
        self.prev_mi_rtt = Some(rtt);
        let u = utility(&stats, &self.cfg.utility_params());
        if mi.generation != self.generation || mi.role == Role::Hold { return; }
        self.last_utility = u;
        let r = mi.stats.rate_bps;
        let next = match (&mut self.state, mi.role) {
            (State::Starting { best, .. }, Role::Start) => match *best {
                // utility stopped rising: back to the best rate, then trials
                Some((br, bu)) if u <= bu => Some(Next::Decide(br, self.cfg.epsilon_min)),
                _ => {
                    *best = Some((r, u));
                    self.rate = r;
                    // at the rate limit there is nothing higher to try
                    (r >= self.hi).then_some(Next::Decide(r, self.cfg.epsilon_min))
                }
            },
            (State::Deciding { eps, trials, results, .. }, Role::Trial(i)) => {
                if let Some(slot) = results.get_mut(i) { *slot = Some(u); }
                if results.iter().any(|x| x.is_none()) { return; }
                // each pair votes for the side whose utility is higher (0: a tie)
                let votes: Vec<f64> = trials.chunks(2).zip(results.chunks(2)).map(|(t, v)| match (t, v) {
                    ([ra, rb], [Some(ua), Some(ub)]) => ((ra - rb) * (ua - ub)).signum() * f64::from(u8::from(ra != rb && ua != ub)),
                    _ => 0.0,
                }).collect();
                if votes[0] != 0.0 && votes.iter().all(|&v| v == votes[0]) {
                    Some(Next::Adjust(self.rate * (1.0 + votes[0] * *eps), votes[0]))
                } else {
                    // inconclusive: same rate, larger trials
                    Some(Next::Decide(self.rate, (*eps + self.cfg.epsilon_min).min(self.cfg.epsilon_max.max(self.cfg.epsilon_min))))
                }
            }
            (State::Adjusting { dir, n, prev, measure }, Role::Adjust) => match *prev {
                // utility fell: back to the previous step's rate, then trials
                Some((pr, pu)) if u < pu => Some(Next::Decide(pr, self.cfg.epsilon_min)),
                _ => {
                    *prev = Some((r, u));
                    *n += 1;
                    let step = self.rate * (1.0 + f64::from(*n) * self.cfg.epsilon_min * *dir);
                    let step = if step.is_finite() { step.clamp(self.lo, self.hi.max(self.lo)) } else { self.lo };
                    if step == self.rate {
                        // pinned at a rate limit: nothing further to try in this direction
                        Some(Next::Decide(step, self.cfg.epsilon_min))
                    } else {
                        self.rate = step;
                        *measure = true;
                        None
                    }
                }
            },
            _ => return,
        };
        self.decisions += 1;
        match next {
            Some(Next::Decide(rate, eps)) => {
                self.rate = self.clamp(rate);
                let s = self.deciding(eps);
                self.enter(s);
            }
            Some(Next::Adjust(rate, dir)) => {
                self.rate = self.clamp(rate);
                self.enter(State::Adjusting { dir, n: 0, prev: None, measure: true });
            }
            None => {}
        }
    }

    /// The rate to send at now: the running MI's (the base rate before the first MI).
    fn sending_rate(&self) -> f64 { self.mis.back().map_or(self.rate, |m| m.stats.rate_bps) }

    fn output(&mut self) -> Update {
        let r = Bitrate::from_bps_f64(self.clamp(self.sending_rate())).max(Bitrate::from_kbps(1));
        if self.last_output == Some(r) { return Update::default(); }
        self.last_output = Some(r);
        Update { target_rate: Some(r), pacing_rate: Some(r), padding_rate: Some(if self.cfg.padding { r } else { Bitrate::ZERO }), ..Update::default() }
    }

    fn set_constraints(&mut self, c: Constraints) {
        self.lo = c.min_rate.bps_f64();
        self.hi = c.max_rate.bps_f64().max(self.lo);
        self.rate = self.clamp(self.rate);
        if let Some(m) = self.mis.back_mut() { m.stats.rate_bps = m.stats.rate_bps.clamp(self.lo, self.hi); }
        self.last_output = None;
    }
}

impl Controller for Allegro {
    fn on_start(&mut self, _now: Time, c: Constraints) -> Update {
        self.set_constraints(c);
        self.rate = self.clamp(self.cfg.start_kbps.filter(|k| k.is_finite() && *k > 0.0).map_or(c.start_rate.bps_f64(), |k| k * 1e3));
        self.state = State::Starting { next_rate: self.rate, best: None };
        self.output()
    }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.set_constraints(c);
        if let State::Starting { next_rate, .. } = &mut self.state { *next_rate = next_rate.clamp(self.lo, self.hi); }
        self.output()
    }

    fn on_packet_sent(&mut self, sp: &SentPacket) -> Update {
        self.packet_bytes = 0.9 * self.packet_bytes + 0.1 * sp.size.as_f64().max(1.0);
        self.advance(sp.send_time);
        if let Some(m) = self.mis.back_mut() { m.stats.on_sent(sp); }
        self.score_completed(sp.send_time);
        self.output()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        if fb.packets.is_empty() { return Update::default(); }
        // smoothed RTT from the newest received packet (UDT: one sample per ACK)
        if let Some(max_recv) = max_recv_time(fb) {
            let newest = fb.received().filter(|p| p.recv_time == Some(max_recv)).last();
            if let Some(s) = newest.and_then(|p| packet_rtt(fb, p, max_recv)) {
                let g = self.cfg.rtt_gain.clamp(0.0, 1.0);
                let s = s.as_secs_f64();
                self.srtt = if self.rtt_measured { (1.0 - g) * self.srtt + g * s } else { s }.clamp(1e-4, 60.0);
                self.rtt_measured = true;
            }
        }
        for m in self.mis.iter_mut() {
            if m.stats.is_done() { continue; }
            m.stats.on_feedback(fb);
            if !m.stats.is_done() { break; }
        }
        self.score_completed(fb.feedback_time);
        Update::default()
    }

    fn on_tick(&mut self, now: Time) -> Update {
        // MIs start only with a sent packet: an idle sender must not score empty MIs as loss-free
        self.score_completed(now);
        self.output()
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("pcc_rate_kbps", self.rate / 1e3));
        out.push(("pcc_state", self.phase_code()));
        out.push(("pcc_epsilon", if let State::Deciding { eps, .. } = self.state { eps } else { 0.0 }));
        out.push(("pcc_rtt_ms", self.srtt * 1e3));
        out.push(("pcc_utility", self.last_utility));
    }
}
