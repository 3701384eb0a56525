//! Small estimators that several controllers share (spec 1.3): windowed min/max filters
//! (over time or over round trips), a sliding-window rate meter, the RTT flavours one can read
//! off a transport feedback, the BBR/QUIC delivery-rate sampler ([`BandwidthSampler`]) and the
//! BBR round-trip counter ([`RoundCounter`]), and the decision-epoch clock of LCC and Iris
//! ([`next_epoch_boundary`], [`EpochClock`]) with their controller shell ([`EpochController`]).

use crate::controller::{Constraints, Controller, Diagnostics, PacketResult, SentPacket, TransportFeedback, Update};
use crate::units::{Bitrate, Bytes, Duration, Time};
use std::collections::{BTreeMap, VecDeque};

/// Exact time-windowed extremum (monotonic deque): `max` keeps the largest value of the last
/// `window`, `min` the smallest. O(1) amortised per sample.
#[derive(Clone, Debug)]
pub struct WindowedFilter<T> {
    window: Duration,
    keep_max: bool,
    samples: VecDeque<(Time, T)>,
}

impl<T: PartialOrd + Copy> WindowedFilter<T> {
    pub fn max(window: Duration) -> Self { WindowedFilter { window, keep_max: true, samples: VecDeque::new() } }
    pub fn min(window: Duration) -> Self { WindowedFilter { window, keep_max: false, samples: VecDeque::new() } }

    pub fn set_window(&mut self, window: Duration) { self.window = window; }

    pub fn update(&mut self, now: Time, v: T) {
        while let Some(&(_, back)) = self.samples.back() {
            let dominated = if self.keep_max { back <= v } else { back >= v };
            if dominated { self.samples.pop_back(); } else { break; }
        }
        self.samples.push_back((now, v));
        self.expire(now);
    }

    /// Drop samples older than the window (the newest sample is always kept).
    pub fn expire(&mut self, now: Time) {
        while self.samples.len() > 1 && self.samples.front().is_some_and(|(t, _)| now - *t > self.window) {
            self.samples.pop_front();
        }
    }

    pub fn get(&self) -> Option<T> { self.samples.front().map(|(_, v)| *v) }
    pub fn reset(&mut self) { self.samples.clear(); }
}

/// Bytes per time over a sliding window (receive rate, send rate).
#[derive(Clone, Debug)]
pub struct RateMeter {
    window: Duration,
    samples: VecDeque<(Time, Bytes)>,
    sum: Bytes,
}

impl RateMeter {
    pub fn new(window: Duration) -> Self { RateMeter { window, samples: VecDeque::new(), sum: Bytes::ZERO } }

    /// Change the window (e.g. to follow a smoothed RTT); takes effect at the next `add`/`rate`.
    pub fn set_window(&mut self, window: Duration) { self.window = window.max(Duration::from_us(1)); }
    pub fn window(&self) -> Duration { self.window }

    pub fn add(&mut self, now: Time, size: Bytes) {
        self.samples.push_back((now, size));
        self.sum += size;
        self.expire(now);
    }

    fn expire(&mut self, now: Time) {
        while let Some(&(t, b)) = self.samples.front() {
            if now - t >= self.window { self.samples.pop_front(); self.sum -= b; } else { break; }
        }
    }

    /// Rate over the window ending at `now`.
    pub fn rate(&mut self, now: Time) -> Bitrate {
        self.expire(now);
        self.sum / self.window
    }
}

/// RTT flavours of spec 1.3 for one feedback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeedbackRtt {
    /// min over packets of `t_f − t_s` (includes the receiver's hold time).
    pub naive_min: Duration,
    /// max over packets of `t_f − t_s`.
    pub naive_max: Duration,
    /// goog_cc's propagation RTT: `min_p [(t_f − t_s(p)) − (max_recv − t_r(p))]`.
    pub propagation: Duration,
    /// Exact RTT of the newest packet when the report time is known (RFC 8888 style).
    pub exact: Option<Duration>,
}

/// RTTs readable from a feedback; `None` if it reports no received packet.
pub fn feedback_rtt(fb: &TransportFeedback) -> Option<FeedbackRtt> {
    let max_recv = fb.received().filter_map(|p| p.recv_time).max()?;
    let (mut nmin, mut nmax, mut prop) = (Duration::MAX, Duration::from_us(i64::MIN / 4), Duration::MAX);
    let mut newest: Option<(Time, Time)> = None;
    for p in fb.received() {
        let r = p.recv_time?;
        let naive = fb.feedback_time - p.sent.send_time;
        nmin = nmin.min(naive);
        nmax = nmax.max(naive);
        prop = prop.min(naive - (max_recv - r));
        if newest.is_none_or(|(nr, _)| r >= nr) { newest = Some((r, p.sent.send_time)); }
    }
    let exact = match (fb.report_time, newest) {
        (Some(rt), Some((r, s))) => Some((fb.feedback_time - s) - (rt - r)),
        _ => None,
    };
    Some(FeedbackRtt { naive_min: nmin, naive_max: nmax, propagation: prop.max(Duration::ZERO), exact })
}


/// Windowed extremum over *round trips* instead of time (BBR's bandwidth and ack-height filters,
/// spec 7.2: window of 10 rounds). Exact (monotonic deque, via [`WindowedFilter`] on a round
/// clock), not the Nichols 3-best approximation of QUIC/Linux; spec 1.3 allows either and asks
/// to say which: this one is exact. A sample of round `r` expires once the current round exceeds
/// `r + window` (QUIC/Linux expiry rule).
#[derive(Clone, Debug)]
pub struct RoundWindowedFilter<T> {
    inner: WindowedFilter<T>,
}

impl<T: PartialOrd + Copy> RoundWindowedFilter<T> {
    pub fn max(window_rounds: u64) -> Self { RoundWindowedFilter { inner: WindowedFilter::max(Self::span(window_rounds)) } }
    pub fn min(window_rounds: u64) -> Self { RoundWindowedFilter { inner: WindowedFilter::min(Self::span(window_rounds)) } }
    fn span(rounds: u64) -> Duration { Duration::from_us(rounds.min(i64::MAX as u64 / 8) as i64) }
    fn at(round: u64) -> Time { Time::from_us(round.min(i64::MAX as u64 / 8) as i64) }
    pub fn update(&mut self, round: u64, v: T) { self.inner.update(Self::at(round), v); }
    pub fn get(&self) -> Option<T> { self.inner.get() }
    /// Forget everything and start again from `v` (e.g. Cross's bandwidth reset, spec 5.7).
    pub fn reset_to(&mut self, round: u64, v: T) { self.inner.reset(); self.inner.update(Self::at(round), v); }
}

/// BBR's round-trip counter (spec 7.2): a round ends when a packet sent after the previous
/// round's end is acknowledged.
#[derive(Clone, Debug, Default)]
pub struct RoundCounter {
    count: u64,
    /// Largest sequence number sent when the current round started (`None`: no round yet).
    round_end: Option<u64>,
    last_sent: Option<u64>,
}

impl RoundCounter {
    pub fn new() -> Self { Self::default() }
    pub fn on_packet_sent(&mut self, seq: u64) { self.last_sent = Some(self.last_sent.map_or(seq, |s| s.max(seq))); }
    /// The largest acknowledged sequence number of a feedback; true if a new round starts.
    pub fn on_ack(&mut self, largest_acked: u64) -> bool {
        if self.round_end.is_none_or(|e| largest_acked > e) {
            self.count += 1;
            self.round_end = Some(self.last_sent.unwrap_or(largest_acked).max(largest_acked));
            return true;
        }
        false
    }
    /// Make the current round last until everything sent so far is acknowledged
    /// (BBR does this on entering loss recovery).
    pub fn extend_round(&mut self) { if let Some(s) = self.last_sent { self.round_end = Some(s); } }
    pub fn count(&self) -> u64 { self.count }
    pub fn last_sent(&self) -> Option<u64> { self.last_sent }
}

/// One delivery-rate sample (spec 1.3), produced when a packet is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    pub seq: u64,
    /// `min(send_rate, ack_rate)`, the BBR bandwidth sample.
    pub bandwidth: Bitrate,
    /// Rate at which data was sent between the previously acknowledged packet (at this
    /// packet's send time) and this packet. `None` = no send-rate constraint ("infinite": the
    /// packet opened a transmission after the pipe was empty).
    pub send_rate: Option<Bitrate>,
    /// Rate at which acknowledgements arrived over the same span.
    pub ack_rate: Bitrate,
    /// `t_ack − t_s`: with the feedback-arrival ack clock this is the naive feedback RTT of
    /// spec 1.3; with the receive-time clock it is the one-way delay.
    pub rtt: Duration,
    /// The packet was sent during an application-limited phase.
    pub is_app_limited: bool,
}

/// Which time stands for "acknowledged" in the sampler (spec 1.3: with feedback-batched acks
/// WebRTC-BBR uses the feedback arrival time for every packet of the feedback).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AckClock {
    /// `t_ack = t_f`, shared by all packets of one feedback (libwebrtc BBR).
    #[default]
    FeedbackArrival,
    /// `t_ack = t_r`, the receiver's arrival time of each packet (receive-rate flavour).
    ReceiveTime,
}

#[derive(Clone, Copy, Debug)]
struct SendSnapshot {
    send_time: Time,
    size: Bytes,
    total_sent: Bytes,
    total_sent_at_last_acked: Bytes,
    last_acked_send_time: Option<Time>,
    last_acked_ack_time: Option<Time>,
    total_acked_at_send: Bytes,
    app_limited: bool,
}

/// The BBR/QUIC "BandwidthSampler" (spec 1.3), shared by feedback-batched controllers
/// (WebRTC-BBR, RBBR, Cross). On send it snapshots the connection state; on acknowledgement
/// it returns `send_rate`, `ack_rate`, `bandwidth = min(send_rate, ack_rate)`, the RTT sample and
/// the app-limited flag. Sending into an empty pipe (zero bytes in flight before the packet)
/// starts a fresh measurement point, as in QUIC (the lab's `SentPacket::data_in_flight`
/// includes the packet itself, so "empty" means `data_in_flight − size ≤ 0`).
#[derive(Clone, Debug)]
pub struct BandwidthSampler {
    total_sent: Bytes,
    total_acked: Bytes,
    total_sent_at_last_acked: Bytes,
    last_acked_send_time: Option<Time>,
    last_acked_ack_time: Option<Time>,
    last_sent_seq: Option<u64>,
    app_limited: bool,
    end_of_app_limited: u64,
    packets: BTreeMap<u64, SendSnapshot>,
    max_tracked: usize,
}

impl Default for BandwidthSampler {
    fn default() -> Self { Self::new() }
}

impl BandwidthSampler {
    /// At most this many unacknowledged packets are remembered (libwebrtc: 10 000); older
    /// ones are forgotten and give no sample.
    pub const MAX_TRACKED: usize = 10_000;

    pub fn new() -> Self {
        BandwidthSampler {
            total_sent: Bytes::ZERO, total_acked: Bytes::ZERO, total_sent_at_last_acked: Bytes::ZERO,
            last_acked_send_time: None, last_acked_ack_time: None, last_sent_seq: None,
            app_limited: false, end_of_app_limited: 0, packets: BTreeMap::new(), max_tracked: Self::MAX_TRACKED,
        }
    }

    pub fn on_packet_sent(&mut self, p: &SentPacket) {
        self.last_sent_seq = Some(p.seq);
        self.total_sent += p.size;
        if (p.data_in_flight - p.size) <= Bytes::ZERO {
            // Empty pipe: this send is the "A_0" point of a new measurement.
            self.last_acked_ack_time = Some(p.send_time);
            self.last_acked_send_time = Some(p.send_time);
            self.total_sent_at_last_acked = self.total_sent;
        }
        if self.packets.contains_key(&p.seq) { return; }
        self.packets.insert(p.seq, SendSnapshot {
            send_time: p.send_time,
            size: p.size,
            total_sent: self.total_sent,
            total_sent_at_last_acked: self.total_sent_at_last_acked,
            last_acked_send_time: self.last_acked_send_time,
            last_acked_ack_time: self.last_acked_ack_time,
            total_acked_at_send: self.total_acked,
            app_limited: self.app_limited,
        });
        while self.packets.len() > self.max_tracked { self.packets.pop_first(); }
    }

    /// Packet `seq` was acknowledged at `ack_time`. `None` if the packet is unknown (never
    /// sent, already settled, forgotten) or no rate can be computed yet.
    pub fn on_packet_acked(&mut self, ack_time: Time, seq: u64) -> Option<RateSample> {
        let s = self.packets.remove(&seq)?;
        self.total_acked += s.size;
        self.total_sent_at_last_acked = s.total_sent;
        self.last_acked_send_time = Some(s.send_time);
        self.last_acked_ack_time = Some(ack_time);
        if self.app_limited && seq > self.end_of_app_limited { self.app_limited = false; }
        let (Some(prev_send), Some(prev_ack)) = (s.last_acked_send_time, s.last_acked_ack_time) else { return None };
        let send_rate = (s.send_time > prev_send).then(|| (s.total_sent - s.total_sent_at_last_acked) / (s.send_time - prev_send));
        if ack_time <= prev_ack { return None; }
        let ack_rate = (self.total_acked - s.total_acked_at_send) / (ack_time - prev_ack);
        let bandwidth = send_rate.map_or(ack_rate, |r| r.min(ack_rate));
        Some(RateSample { seq, bandwidth, send_rate, ack_rate, rtt: ack_time - s.send_time, is_app_limited: s.app_limited })
    }

    /// Packet `seq` was reported lost: it will give no sample.
    pub fn on_packet_lost(&mut self, seq: u64) { self.packets.remove(&seq); }

    /// The sender has nothing to send: packets sent from now until one sent later is
    /// acknowledged carry the app-limited mark.
    pub fn on_app_limited(&mut self) {
        self.app_limited = true;
        self.end_of_app_limited = self.last_sent_seq.unwrap_or(0);
    }

    /// Forget packets below `least_unacked` that no feedback covered.
    pub fn remove_obsolete(&mut self, least_unacked: u64) {
        while self.packets.first_key_value().is_some_and(|(s, _)| *s < least_unacked) { self.packets.pop_first(); }
    }

    /// Apply a whole feedback: lost packets first, then received ones in sequence order.
    /// Returns the samples in sequence order.
    pub fn on_feedback(&mut self, fb: &TransportFeedback, clock: AckClock) -> Vec<RateSample> {
        for p in fb.lost() { self.on_packet_lost(p.sent.seq); }
        let mut out = Vec::new();
        for p in fb.received() {
            let t = match clock { AckClock::FeedbackArrival => fb.feedback_time, AckClock::ReceiveTime => p.recv_time.unwrap_or(fb.feedback_time) };
            if let Some(s) = self.on_packet_acked(t, p.sent.seq) { out.push(s); }
        }
        out
    }

    pub fn total_sent(&self) -> Bytes { self.total_sent }
    pub fn total_acked(&self) -> Bytes { self.total_acked }
    pub fn is_app_limited(&self) -> bool { self.app_limited }
    pub fn tracked(&self) -> usize { self.packets.len() }
}

/// The `a/b` quantile of `samples` as `sorted[⌊n·a/b⌋]` (index clamped to the last element);
/// sorts in place. `None` for an empty slice. Cross's Eq. 5 (spec 5.2).
pub fn quantile_floor(samples: &mut [Duration], num: u32, den: u32) -> Option<Duration> {
    if samples.is_empty() { return None; }
    samples.sort_unstable();
    let n = samples.len();
    let idx = if den == 0 { n - 1 } else { ((n as u64 * num as u64) / den as u64).min(n as u64 - 1) as usize };
    Some(samples[idx])
}
/// RTT of one reported packet (spec 1.3): exact when the feedback carries the receiver's report
/// time (`(t_f − t_s) − (report − t_r)`), otherwise goog_cc-style with the hold time measured
/// against the newest arrival in the feedback (`(t_f − t_s) − (max_recv − t_r)`).
/// `None` for a packet reported lost.
pub fn packet_rtt(fb: &TransportFeedback, p: &PacketResult, max_recv: Time) -> Option<Duration> {
    let r = p.recv_time?;
    let hold = match fb.report_time { Some(rt) => rt - r, None => max_recv - r };
    Some(((fb.feedback_time - p.sent.send_time) - hold).max(Duration::ZERO))
}

/// Latest arrival time in a feedback (the reference for [`packet_rtt`]).
pub fn max_recv_time(fb: &TransportFeedback) -> Option<Time> { fb.received().filter_map(|p| p.recv_time).max() }

/// The next decision-epoch boundary after `now`, for epochs of length `epoch` laid out from
/// `t0` (boundaries at `t0 + k·epoch`): `t0 + (⌊(now − t0)/epoch⌋ + 1)·epoch` in whole µs, the
/// first boundary strictly after `now` when `now ≥ t0`. A late or irregular tick thus skips
/// the boundaries it missed instead of catching up one epoch per tick. LCC and Iris decide
/// once per epoch on the tick that reaches this time. An epoch under 1 µs counts as 1 µs, and
/// the product saturates, so no input panics.
pub fn next_epoch_boundary(t0: Time, epoch: Duration, now: Time) -> Time {
    let e = epoch.as_us().max(1);
    let k = (now - t0).as_us() / e + 1;
    t0 + Duration::from_us(k.saturating_mul(e))
}

/// The epochs of an epoch controller: length, origin (the start time), and the next boundary
/// at which a decision is due (none before the start).
#[derive(Clone, Copy, Debug)]
pub struct EpochClock {
    pub epoch: Duration,
    /// The start time; epoch `k` is `[t0 + k·epoch, t0 + (k+1)·epoch)`.
    pub t0: Time,
    next: Option<Time>,
}

impl EpochClock {
    pub fn new(epoch: Duration) -> Self { EpochClock { epoch, t0: Time::ZERO, next: None } }
    pub fn start(&mut self, now: Time) {
        self.t0 = now;
        self.next = Some(now + self.epoch);
    }
    pub fn started(&self) -> bool { self.next.is_some() }
    /// Whether a tick at `now` ends an epoch (once started, `now` has reached the next
    /// boundary); if so the boundary moves to the first one after `now` ([`next_epoch_boundary`]).
    pub fn due(&mut self, now: Time) -> bool {
        match self.next {
            Some(b) if now >= b => {
                self.next = Some(next_epoch_boundary(self.t0, self.epoch, now));
                true
            }
            _ => false,
        }
    }
}

/// The controller shell of the epoch controllers (LCC, Iris): a rate held within the
/// constraints, decided once per epoch on the tick that reaches the boundary, and handed out
/// as an [`Update`] after the start, each decision and each change of constraints. Every such
/// type is a [`Controller`] through the blanket impl below, which holds that plumbing once
/// instead of in each controller (both once restated it line for line); an implementor states
/// only what differs: its start, what it records from sends and feedback, its decision, and
/// how the rate becomes an update. Sends and feedback before the start are ignored.
pub trait EpochController: Send {
    fn clock(&self) -> &EpochClock;
    fn clock_mut(&mut self) -> &mut EpochClock;
    /// The rate in force and the constraints, both kept by the implementor.
    fn rate_and_constraints(&mut self) -> (&mut Bitrate, &mut Constraints);
    /// The flow starts (the clock has just started at `now`): take `c`, set the initial rate.
    fn start(&mut self, now: Time, c: Constraints);
    fn packet_sent(&mut self, _p: &SentPacket) {}
    fn feedback(&mut self, _fb: &TransportFeedback) {}
    /// The epoch ending at `now` is over: decide the next rate.
    fn end_epoch(&mut self, now: Time);
    /// The rates to hand out for the current rate.
    fn output(&self) -> Update;
    fn epoch_diagnostics(&self, _out: &mut Diagnostics) {}
}

impl<T: EpochController> Controller for T {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        self.clock_mut().start(now);
        self.start(now, c);
        self.output()
    }

    fn on_packet_sent(&mut self, p: &SentPacket) -> Update {
        if self.clock().started() { self.packet_sent(p); }
        Update::default()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        if self.clock().started() { self.feedback(fb); }
        Update::default()
    }

    fn on_tick(&mut self, now: Time) -> Update {
        if !self.clock_mut().due(now) { return Update::default(); }
        self.end_epoch(now);
        self.output()
    }

    fn tick_interval(&self) -> Duration { self.clock().epoch }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        let (rate, constraints) = self.rate_and_constraints();
        *constraints = c;
        *rate = (*rate).max(c.min_rate).min(c.max_rate);
        self.output()
    }

    fn diagnostics(&self, out: &mut Diagnostics) { self.epoch_diagnostics(out); }
}

#[cfg(test)]
mod tests;
