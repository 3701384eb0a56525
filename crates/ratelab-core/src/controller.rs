//! The one controller interface, modelled on libwebrtc's `NetworkControllerInterface`
//! (spec 1.5). A controller is a pure state machine: timestamped events in, a small
//! [`Update`] out. It never sees simulator internals, so the same object can be driven by the
//! discrete-event simulator or by a live UDP transport.

use crate::error::ConfigError;
use crate::units::{Bitrate, Bytes, Duration, Time};
use std::sync::Arc;

/// What the sender knows about one packet it put on the wire (media, padding or probe).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SentPacket {
    /// Transport-wide sequence number, unwrapped to 64 bits.
    pub seq: u64,
    /// Size on the wire (IP/UDP/RTP headers included).
    pub size: Bytes,
    pub send_time: Time,
    /// Probe cluster this packet belongs to, if it was sent as part of a probe.
    pub probe_cluster: Option<u32>,
    pub is_padding: bool,
    /// Bytes in flight right after this packet was sent (this packet included).
    pub data_in_flight: Bytes,
}

/// The fate of one packet as reported by a feedback message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacketResult {
    pub sent: SentPacket,
    /// Arrival time at the receiver; `None` if the feedback reports it as not received.
    pub recv_time: Option<Time>,
}

impl PacketResult {
    pub fn received(&self) -> bool { self.recv_time.is_some() }
}

/// A transport-wide feedback message (TWCC or RFC 8888 style) after the sender has matched it
/// against its send history. Packets are sorted by sequence number.
#[derive(Clone, Debug, Default)]
pub struct TransportFeedback {
    /// When the feedback reached the sender.
    pub feedback_time: Time,
    /// When the receiver generated it (its own clock), if the format says so (RFC 8888 RTS).
    pub report_time: Option<Time>,
    pub packets: Vec<PacketResult>,
    /// Bytes in flight before this feedback was applied.
    pub prior_in_flight: Bytes,
    /// Bytes in flight after this feedback was applied.
    pub data_in_flight: Bytes,
}

impl TransportFeedback {
    pub fn received(&self) -> impl Iterator<Item = &PacketResult> { self.packets.iter().filter(|p| p.received()) }
    pub fn lost(&self) -> impl Iterator<Item = &PacketResult> { self.packets.iter().filter(|p| !p.received()) }
    /// Packets that arrived, sorted by arrival time (ties by sequence number).
    pub fn received_by_arrival(&self) -> Vec<PacketResult> {
        let mut v: Vec<PacketResult> = self.received().copied().collect();
        v.sort_by_key(|p| (p.recv_time, p.sent.seq));
        v
    }
}

/// What a packet carries, as the receiver can tell from its header (RTP payload type /
/// ratelab's payload flags). A probe is any packet sent as part of a probe cluster, media or
/// padding; the MMSys'24 observation counts video, audio and probing packets separately.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PacketKind {
    #[default]
    Video,
    Audio,
    Probe,
    Padding,
}

/// A packet as seen by the receiver (for receiver-side estimators such as R3Net).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReceivedPacket {
    pub seq: u64,
    pub size: Bytes,
    /// Sender timestamp carried in the packet (abs-send-time style).
    pub send_time: Time,
    pub recv_time: Time,
    pub kind: PacketKind,
}

/// Rate limits from the application (`on_constraints`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constraints {
    pub min_rate: Bitrate,
    pub max_rate: Bitrate,
    pub start_rate: Bitrate,
}

impl Default for Constraints {
    fn default() -> Self {
        Constraints { min_rate: Bitrate::from_kbps(30), max_rate: Bitrate::from_kbps(5000), start_rate: Bitrate::from_kbps(300) }
    }
}

/// A probe request: send at `rate` for at least `min_packets` and `min_duration`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeCluster {
    pub id: u32,
    pub rate: Bitrate,
    pub min_packets: u32,
    pub min_duration: Duration,
}

/// What a controller asks of the sender after an event. `None` fields leave the previous value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    /// Rate for the encoder.
    pub target_rate: Option<Bitrate>,
    /// Rate at which the pacer releases queued packets.
    pub pacing_rate: Option<Bitrate>,
    /// Rate of padding to send when there is no media queued.
    pub padding_rate: Option<Bitrate>,
    /// Congestion window: `Some(Bytes::INFINITY)` removes the window.
    pub cwnd: Option<Bytes>,
    pub probes: Vec<ProbeCluster>,
    /// Congestion-window pushback by frame dropping (libwebrtc `cwnd_reduce_ratio`): the
    /// share of the target the encoder should shed by dropping frames; 0 stops dropping.
    pub cwnd_reduce_ratio: Option<f64>,
}

impl Update {
    pub fn is_empty(&self) -> bool {
        self.target_rate.is_none() && self.pacing_rate.is_none() && self.padding_rate.is_none() && self.cwnd.is_none() && self.probes.is_empty() && self.cwnd_reduce_ratio.is_none()
    }
    /// Fold a later update into this one (later values win, probes accumulate).
    pub fn merge(&mut self, later: Update) {
        if later.target_rate.is_some() { self.target_rate = later.target_rate; }
        if later.pacing_rate.is_some() { self.pacing_rate = later.pacing_rate; }
        if later.padding_rate.is_some() { self.padding_rate = later.padding_rate; }
        if later.cwnd.is_some() { self.cwnd = later.cwnd; }
        if later.cwnd_reduce_ratio.is_some() { self.cwnd_reduce_ratio = later.cwnd_reduce_ratio; }
        self.probes.extend(later.probes);
    }
    /// Target and pacing set together (pacing = factor × target).
    pub fn rates(target: Bitrate, pacing_factor: f64) -> Update {
        Update { target_rate: Some(target), pacing_rate: Some(target.scale(pacing_factor)), ..Update::default() }
    }
}

/// Named diagnostic values a controller exposes for plots (e.g. GCC's delay-based estimate).
pub type Diagnostics = Vec<(&'static str, f64)>;

/// The sender-side controller. All events carry the current time; a controller must not
/// keep any other notion of time.
pub trait Controller: Send {
    /// The network became available: return the initial rates (and start-up probes).
    fn on_start(&mut self, now: Time, constraints: Constraints) -> Update;
    fn on_packet_sent(&mut self, _packet: &SentPacket) -> Update { Update::default() }
    fn on_feedback(&mut self, feedback: &TransportFeedback) -> Update;
    /// Periodic processing; called every [`Controller::tick_interval`].
    fn on_tick(&mut self, _now: Time) -> Update { Update::default() }
    fn tick_interval(&self) -> Duration { Duration::from_ms(25) }
    /// An RTCP-style round-trip time measurement.
    fn on_rtt_update(&mut self, _now: Time, _rtt: Duration) -> Update { Update::default() }
    fn on_constraints(&mut self, _now: Time, _constraints: Constraints) -> Update { Update::default() }
    /// A rate report from a receiver-side estimator (REMB-like).
    fn on_remote_estimate(&mut self, _now: Time, _rate: Bitrate) -> Update { Update::default() }
    /// Bytes of media waiting in the sender's pacer queue (the RTP queue of RFC 8298, the
    /// rate-shaping buffer `L_s` of RFC 8698 §5.2), reported right before every
    /// [`Controller::on_tick`]. Controllers that do not model the sender queue ignore it.
    fn on_sender_queue(&mut self, _now: Time, _queue: Bytes) -> Update { Update::default() }
    /// The network route changed (Wi-Fi ↔ cellular, a new ICE candidate pair: libwebrtc's
    /// `OnNetworkRouteChange`); `constraints` are the application's rate limits, re-sent with
    /// it. Whatever the controller learned about the old path may be wrong for the new one.
    /// Default: nothing (the controller keeps its state and learns the new path from feedback);
    /// each controller's doc says what it does.
    fn on_route_change(&mut self, _now: Time, _constraints: Constraints) -> Update { Update::default() }
    /// Internal values worth plotting; appended to `out`.
    fn diagnostics(&self, _out: &mut Diagnostics) {}
}

/// A receiver-side estimator (R3Net, NADA receiver mode). It sees every arriving packet and
/// periodically reports a rate that travels back to the sender's [`Controller::on_remote_estimate`].
pub trait ReceiverEstimator: Send {
    fn on_packet_received(&mut self, packet: &ReceivedPacket);
    /// Called every [`ReceiverEstimator::tick_interval`]; returns a rate to report, if any.
    fn on_tick(&mut self, now: Time) -> Option<Bitrate>;
    fn tick_interval(&self) -> Duration { Duration::from_ms(50) }
    /// A round-trip time known at the receiver (RTCP-derived in a real stack; the simulator
    /// gives the exact RTT of each arriving packet: its one-way delay plus the return delay).
    fn on_rtt_update(&mut self, _now: Time, _rtt: Duration) {}
}

// --- construction: what a driver hands the registry, and what it gets back ---------------------

/// What the driver offers a controller at construction.
#[derive(Clone)]
pub struct BuildContext {
    /// Seed for any randomness inside the controller (derived from the run seed and flow id).
    pub seed: u64,
    /// Ground truth for reference controllers (`oracle`): this flow's fair share of the
    /// bottleneck at time t. Real controllers must not use it.
    pub fair_share: Option<Arc<dyn Fn(Time) -> Bitrate + Send + Sync>>,
    /// File access injected by the driver (the core itself does no I/O): reads a file a
    /// parameter names, e.g. an ONNX model. `None`: such parameters are an error.
    pub read_file: Option<FileReader>,
    /// Controllers built outside the core (e.g. Python classes, by the binding), tried for a
    /// name the registry does not know. Keeps the core free of any foreign runtime.
    pub external: Option<ExternalFactory>,
    /// The audio stream of the flow the controller will run on (kbit/s; 0: none), when the
    /// driver knows it: a learned estimator trained with audio checks that it gets audio.
    pub audio_kbps: Option<f64>,
}

/// Reads a whole file by path; the error is a message for the user.
pub type FileReader = Arc<dyn Fn(&str) -> Result<Vec<u8>, String> + Send + Sync>;

/// Builds a controller the registry does not know, by name and parameters: `None` when the
/// name is not one of its own either (then the name is reported as unknown).
pub type ExternalFactory = Arc<dyn Fn(&str, &serde_json::Value, &BuildContext) -> Option<Result<Built, ConfigError>> + Send + Sync>;

impl BuildContext {
    pub fn new(seed: u64) -> Self { BuildContext { seed, fair_share: None, read_file: None, external: None, audio_kbps: None } }
}

/// A constructed controller: the sender part, plus a receiver part for receiver-side estimators.
pub struct Built {
    pub sender: Box<dyn Controller>,
    pub receiver: Option<Box<dyn ReceiverEstimator>>,
}

impl Built {
    pub fn sender(c: impl Controller + 'static) -> Self { Built { sender: Box::new(c), receiver: None } }
}
