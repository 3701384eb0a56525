//! The scenario schema: one bottleneck link and a set of flows. The front end reads TOML,
//! applies `--set` overrides, resolves trace paths and hands the core a JSON document of this
//! shape; unknown keys and wrong types are errors that name the field.

use crate::error::ConfigError;
use crate::media::fec::MAX_OVERHEAD_SHARE;
use crate::media::quality::QualityModel;

pub mod limits;
pub mod presets;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Simulated duration in seconds.
    pub duration_s: f64,
    pub link: LinkConfig,
    /// A second bottleneck in the other direction (RFC 8867 5.3). When present, everything that
    /// travels receiver → sender (media feedback, REMB, TCP ACKs) is a packet that queues on it,
    /// and flows with `direction = "reverse"` send their data over it (their own feedback then
    /// crosses `link`). Absent: the return path is an uncongested delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_link: Option<LinkConfig>,
    pub flows: Vec<FlowConfig>,
    /// Route changes (handovers), in time order: at each, a link is replaced by a new route's
    /// and the senders are told (sim/route.rs, docs/scenarios.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route_changes: Vec<RouteChangeConfig>,
    /// Metrics settings.
    #[serde(default)]
    pub metrics: MetricsConfig,
}

/// Capacity of the bottleneck: exactly one of `capacity_kbps`, `steps`, `trace`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Constant capacity in kbit/s.
    pub capacity_kbps: Option<f64>,
    /// Stepped capacity: `[[time_s, kbps], ...]`, each applying from its time on.
    pub steps: Option<Vec<(f64, f64)>>,
    /// Trace file (absolute path after the front end resolved it).
    pub trace: Option<String>,
    /// Trace content, when the front end has already read the file (takes precedence over `trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_content: Option<String>,
    /// `auto`, `csv`, `mahimahi` or `opennetlab`.
    #[serde(default = "default_trace_format")]
    pub trace_format: String,
    /// Multiply trace capacities by this factor.
    #[serde(default = "one")]
    pub trace_scale: f64,
    /// Replay the trace from the start when it ends.
    #[serde(default = "yes")]
    pub trace_loop: bool,
    /// Bin width for mahimahi delivery-opportunity traces.
    #[serde(default = "default_mahimahi_bin")]
    pub mahimahi_bin_ms: f64,
    /// Drop-tail queue size.
    #[serde(default)]
    pub queue: QueueConfig,
    /// Bernoulli random loss probability applied to every packet entering the link.
    #[serde(default)]
    pub loss: f64,
    /// Time from which random loss applies (seconds).
    #[serde(default)]
    pub loss_start_s: f64,
    /// Apply `loss` / `gilbert_elliott` to packets leaving the bottleneck instead of entering it:
    /// a dropped packet has used its transmission time and queue slot (ns-3's `RateErrorModel`
    /// on the receiving device, the Cross paper's harness, spec 5.9). Trace loss stays at the
    /// entrance.
    #[serde(default)]
    pub loss_after_queue: bool,
    /// Bursty loss (Gilbert-Elliott); replaces `loss` when present.
    pub gilbert_elliott: Option<GilbertElliottConfig>,
    /// Extra one-way delay of the bottleneck itself, added to every flow's propagation delay.
    #[serde(default)]
    pub delay_ms: f64,
}

/// Drop-tail queue size: at most one of the limits; none means unlimited.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    pub bytes: Option<f64>,
    pub packets: Option<f64>,
    /// Queue in milliseconds at `rate_kbps` (default: the capacity at time 0).
    pub ms: Option<f64>,
    pub rate_kbps: Option<f64>,
}

/// A route change (Wi-Fi ↔ cellular, a new ICE candidate pair): from `at_s` on, the link of
/// `direction` is the new route's `link` (capacity, delay, loss and queue all at once; step and
/// trace times count from `at_s`), and the senders of `flows` get
/// [`crate::controller::Controller::on_route_change`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteChangeConfig {
    pub at_s: f64,
    /// The link that changes: `forward` (`link`, default) or `reverse` (`reverse_link`).
    #[serde(default)]
    pub direction: Direction,
    /// The new route.
    pub link: LinkConfig,
    /// Flow ids (after `count` is expanded) whose senders are told; default: every media flow
    /// whose data crosses the link. `[]`: nobody is told (a silent path change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<u32>>,
    /// Packets waiting in the old route's queue: `drop` (default: the old interface is gone,
    /// they are lost) or `carry` (they wait for the new route). Packets already past the
    /// queue (propagating) arrive either way.
    #[serde(default)]
    pub queued: QueuedOnRouteChange,
}

/// What a route change does to the old route's queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueuedOnRouteChange {
    #[default]
    Drop,
    Carry,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottConfig {
    /// P(good → bad) per packet.
    pub p_good_to_bad: f64,
    /// P(bad → good) per packet.
    pub p_bad_to_good: f64,
    #[serde(default)]
    pub loss_good: f64,
    #[serde(default = "one")]
    pub loss_bad: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowKind { Media, Tcp }

/// Which way a flow's data travels: over `link` (forward) or over `reverse_link` (reverse).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Forward,
    Reverse,
}

impl Direction {
    /// Index of the link a flow in this direction sends its data over.
    pub fn index(self) -> usize { self as usize }
    /// The opposite direction (where this flow's feedback travels).
    pub fn other(self) -> Direction { match self { Direction::Forward => Direction::Reverse, Direction::Reverse => Direction::Forward } }
    pub fn name(self) -> &'static str { match self { Direction::Forward => "forward", Direction::Reverse => "reverse" } }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub kind: FlowKind,
    /// `forward` (default): data over `link`; `reverse`: data over `reverse_link`.
    #[serde(default)]
    pub direction: Direction,
    /// Controller name (media flows; `ratelab run -c` replaces it).
    #[serde(default = "default_controller")]
    pub controller: String,
    /// Controller parameters (typed by the controller; unknown names are errors).
    #[serde(default)]
    pub params: serde_json::Value,
    #[serde(default)]
    pub start_s: f64,
    /// Stop time; default: end of the run.
    pub stop_s: Option<f64>,
    /// Forward one-way propagation delay (sender → receiver), excluding the bottleneck.
    #[serde(default = "default_owd")]
    pub one_way_delay_ms: f64,
    /// Feedback path delay (receiver → sender); default: same as `one_way_delay_ms`.
    pub return_delay_ms: Option<f64>,
    /// Number of identical flows this entry creates.
    #[serde(default = "one_u32")]
    pub count: u32,
    /// Label in results (default: `<kind><index>`).
    pub label: Option<String>,
    #[serde(default)]
    pub media: MediaConfig,
    #[serde(default)]
    pub feedback: FeedbackConfig,
    #[serde(default)]
    pub tcp: serde_json::Value,
    /// Media pauses: `[[from_s, to_s], ...]`; the encoder produces no frames inside them (the
    /// pacer drains, the controller keeps its ticks and feedback), as a muted WebRTC track
    /// (RFC 8867 5.8). Media flows only.
    #[serde(default)]
    pub pauses: Vec<(f64, f64)>,
    /// Repeated on/off pattern of a TCP flow (RFC 8867 5.7 short TCP flows).
    pub on_off: Option<OnOffConfig>,
}

/// A TCP flow that alternates between downloading a file (ON) and idling (OFF, exponentially
/// distributed, drawn from the run seed). The same connection is reused: ON adds `file_bytes`
/// (rounded up to whole segments) to the sender's stream; congestion state carries over.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffConfig {
    /// Payload bytes of each ON period's file.
    pub file_bytes: f64,
    /// Mean OFF time in seconds (exponential distribution; 0 = back-to-back files).
    pub off_mean_s: f64,
    /// Start with a file (ON); otherwise start with an OFF period.
    #[serde(default = "yes")]
    pub initially_on: bool,
}

/// Media sender settings (spec 1.4).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MediaConfig {
    pub fps: f64,
    pub min_kbps: f64,
    pub max_kbps: f64,
    pub start_kbps: f64,
    /// Time constant of the encoder's rate control (how fast it follows the target).
    pub encoder_lag_ms: f64,
    /// Relative standard deviation of delta-frame sizes.
    pub frame_size_noise: f64,
    /// Key frame every this many seconds (0: only the first frame). Today's Chromium sends one
    /// every 3000 frames (libwebrtc's VP8 `keyFrameInterval`: 100 s at 30 frames/s) and on
    /// request; docs/fidelity.md.
    pub keyframe_interval_s: f64,
    /// Key frame size as a multiple of an average frame.
    pub keyframe_factor: f64,
    /// Maximum RTP payload per packet.
    pub max_payload_bytes: u32,
    /// IP + UDP + RTP + extension header bytes per packet.
    pub header_bytes: u32,
    /// The part of `header_bytes` the congestion controller does not count: the SRTP
    /// authentication tag (10 bytes with `SRTP_AES128_CM_HMAC_SHA1_80`), which SRTP appends
    /// after libwebrtc has recorded the packet's size for the bandwidth estimator. 0 (the
    /// default): the controller counts every byte on the wire (docs/fidelity.md, round 9).
    pub srtp_tag_bytes: u32,
    /// The resolution of the send times the controller is told: libwebrtc records whole
    /// milliseconds (`SentPacketInfo::send_time_ms`; Chromium: 1). 0 (the default): exact
    /// (endpoint/send_clock.rs, docs/fidelity.md round 10).
    pub send_time_resolution_ms: f64,
    /// The time between consecutive packets of a pacer burst in the send times the controller is
    /// told: a real host spends microseconds on each (Chromium on the fidelity study's host: 38).
    /// 0 (the default): a burst leaves at one instant. The wire is unchanged.
    pub burst_spacing_us: f64,
    /// Pacer queue-time limit (WebRTC 2000 ms).
    pub pacer_queue_limit_ms: f64,
    /// Pacer burst interval: media may leave back to back while the pacer's debt is below this
    /// much sending time (today's libwebrtc: `kDefaultBurstInterval`, 40 ms). 0 (the default):
    /// the pre-2023 pacer of the papers' testbeds, packet by packet (media/pacer.rs,
    /// docs/fidelity.md).
    pub pacer_burst_ms: f64,
    /// Pause the encoder when the pacer's expected queue time exceeds the limit (WebRTC rule).
    pub encoder_pause: bool,
    /// Retransmission on NACK (RFC 4585 generic NACK answered with RFC 4588 RTX), as libwebrtc
    /// does it: the receiver NACKs gaps in the RTP sequence, the sender resends from its packet
    /// history ahead of new video, and a frame waits for the retransmission before it. Off (the
    /// default): a lost packet is never repaired (docs/models/nack.md).
    pub nack: bool,
    /// Subtract per-packet header overhead from the target before it reaches the encoder
    /// (libwebrtc `WebRTC-SendSideBwe-WithOverhead`): the controller's target is a wire rate.
    pub overhead_accounting: bool,
    /// Rate–distortion curve for the receiver's PSNR (`"foreman-cif"` or `"iris-dash"`;
    /// media/quality.rs, docs/video-quality.md).
    pub quality_model: QualityModel,
    /// Optional audio stream beside the video, kbit/s of payload (0: none, the default). An
    /// Opus-like constant-rate stream: one packet of `audio_kbps × audio_frame_ms` payload plus
    /// `header_bytes` every `audio_frame_ms`, sent unpaced (as libwebrtc sends audio) with a
    /// transport-wide sequence number; the video encoder gets the target minus the audio's rate.
    pub audio_kbps: f64,
    /// Audio frame (packet) interval, ms (Opus default: 20).
    pub audio_frame_ms: f64,
    /// libwebrtc's loss protection: ULPFEC in RED under the hybrid NACK/FEC method (the
    /// encoder gets the target less the FEC share sent; FEC packets follow each protected
    /// block; the receiver recovers from them). Off (the default): no protection
    /// (media/fec/, docs/loss-protection.md).
    pub fec: bool,
    /// The largest share of the payload rate loss protection takes off the encoder
    /// (libwebrtc's `kProtectionOverheadRateThreshold`, 0.5, which the field trial
    /// `WebRTC-ProtectionOverheadRateThreshold` replaces). Needs `fec` (docs/fidelity.md,
    /// round 6, for what Chromium does).
    pub fec_overhead_cap: f64,
    /// The encoder at low rates: the smallest delta frame, kbit, at the source resolution
    /// (`width` × `height`), as the encoder's highest quantizer makes it for this content.
    /// Below that budget the encoder drops frames as libvpx does, instead of shrinking them.
    /// 0 (the default): frames shrink to any target (media/encoder/floor.rs,
    /// docs/models/encoder.md).
    pub frame_floor_kbit: f64,
    /// libwebrtc's quality scaler: step the resolution down (3/4, 1/2 of the source, never
    /// below 320x180) while frames are dropped or their QP is high, up when it is low. Needs
    /// `frame_floor_kbit`.
    pub quality_scaler: bool,
    /// libwebrtc's encoder bitrate adjuster (`EncoderBitrateAdjuster`, on by default in today's
    /// libwebrtc): the encoder gets the target divided by the overshoot it measured over the
    /// last 3 s (1.2 for the first 30 frames after each reconfiguration, e.g. a resolution
    /// step), between 1 and 2 (media/encoder/adjuster.rs, docs/models/encoder.md).
    pub bitrate_adjuster: bool,
    /// The source's resolution (used by `frame_floor_kbit` and `quality_scaler`).
    pub width: u32,
    pub height: u32,
    /// The encoder's own minimum rate, kbit/s, when it differs from the controller's
    /// `min_kbps` (unset: the same). Chromium's estimate stays at or above ~150 kbit/s in the
    /// fidelity runs while its encoder, after the FEC share, goes down to libwebrtc's 30 kbit/s
    /// video minimum (docs/fidelity.md, round 3).
    pub encoder_min_kbps: Option<f64>,
    /// The per-packet overhead libwebrtc *expects* and subtracts from the target before the
    /// encoder (`ExpectedPerPacketOverhead`: the RTP header with every registered extension at
    /// its largest, plus the transport's), over its frame-rate packet count
    /// (`RtpVideoSender::CalculateOverheadRate`); the packets then carry `header_bytes`. Unset
    /// (the default): the encoder gets the target less the headers its packets really carry.
    /// Needs `overhead_accounting` (docs/fidelity.md, round 4).
    pub expected_overhead_bytes: Option<f64>,
    /// A named set of the settings above (`"chromium"`: the sender the fidelity study
    /// calibrated against Chromium 156); it fills only the keys the table leaves out
    /// (scenario/presets.rs, docs/fidelity.md).
    pub preset: Option<presets::SenderPreset>,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            fps: 30.0, min_kbps: 150.0, max_kbps: 5000.0, start_kbps: 300.0, encoder_lag_ms: 300.0,
            frame_size_noise: 0.1, keyframe_interval_s: 10.0, keyframe_factor: 4.0,
            max_payload_bytes: 1200, header_bytes: 40, srtp_tag_bytes: 0, send_time_resolution_ms: 0.0, burst_spacing_us: 0.0, pacer_queue_limit_ms: 2000.0, pacer_burst_ms: 0.0, encoder_pause: true, nack: false, overhead_accounting: true,
            quality_model: QualityModel::ForemanCif, audio_kbps: 0.0, audio_frame_ms: 20.0, fec: false, fec_overhead_cap: MAX_OVERHEAD_SHARE,
            frame_floor_kbit: 0.0, quality_scaler: false, bitrate_adjuster: false, width: 640, height: 360, encoder_min_kbps: None, expected_overhead_bytes: None, preset: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeedbackMode {
    /// Transport-wide feedback batches every `interval_ms`.
    Twcc,
    /// One acknowledgement per packet, sent on arrival.
    PerPacket,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeedbackConfig {
    pub mode: FeedbackMode,
    pub interval_ms: f64,
    /// Give the controller each report's generation time, so it can take the receiver's wait
    /// before the report out of RTT samples. RFC 8888 carries it; TWCC on the wire does not
    /// (set `false` to see what a TWCC sender sees; live mode with TWCC never has it).
    pub report_time: bool,
}

impl Default for FeedbackConfig {
    fn default() -> Self { FeedbackConfig { mode: FeedbackMode::Twcc, interval_ms: 50.0, report_time: true } }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// Period of the time series (target rate etc.).
    pub series_interval_ms: f64,
    /// Keep the per-packet log.
    pub packet_log: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self { MetricsConfig { series_interval_ms: 25.0, packet_log: true } }
}

fn default_trace_format() -> String { "auto".into() }
fn default_controller() -> String { "gcc".into() }
fn default_owd() -> f64 { 50.0 }
fn default_mahimahi_bin() -> f64 { 100.0 }
fn one() -> f64 { 1.0 }
fn one_u32() -> u32 { 1 }
fn yes() -> bool { true }

impl Scenario {
    /// Parse from JSON, naming the offending field on error.
    pub fn from_json(s: &str) -> Result<Scenario, ConfigError> {
        let mut doc: serde_json::Value = serde_json::from_str(s).map_err(|e| ConfigError::new("", e.to_string()))?;
        presets::expand(&mut doc);
        let sc: Scenario = serde_path_to_error::deserialize(doc).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::new(if path == "." { String::new() } else { path }, e.into_inner().to_string())
        })?;
        sc.validate()?;
        Ok(sc)
    }

    /// Range checks: every number against its declared range ([`limits::LIMITS`]), then the
    /// relations between fields that a range cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // TCP parameters are a free-form table until the flow is built: parse them here so that
        // an unknown name is reported as such, before its number is range-checked.
        for (i, f) in self.flows.iter().enumerate() {
            if f.kind == FlowKind::Tcp {
                crate::controllers::parse_params::<crate::transport::tcp::TcpConfig>(&f.tcp).map_err(|e| e.prefixed(&format!("flows[{i}].tcp")))?;
            }
        }
        let doc = serde_json::to_value(self).map_err(|e| ConfigError::new("", format!("internal error: {e}")))?;
        limits::check_tree("", &doc)?;
        let flows: u64 = self.flows.iter().map(|f| f.count as u64).sum();
        if flows > limits::MAX_FLOWS {
            return Err(ConfigError::new("flows", format!("{flows} flows (counts included) is more than the limit of {}", limits::MAX_FLOWS)));
        }
        validate_link("link", &self.link)?;
        if let Some(r) = &self.reverse_link { validate_link("reverse_link", r)?; }
        if self.flows.is_empty() { return Err(ConfigError::new("flows", "at least one flow is needed")); }
        for (i, f) in self.flows.iter().enumerate() {
            let p = format!("flows[{i}]");
            if f.direction == Direction::Reverse && self.reverse_link.is_none() {
                return Err(ConfigError::new(format!("{p}.direction"), "\"reverse\" needs a [reverse_link] for the data to cross"));
            }
            if let Some(s) = f.stop_s {
                if s <= f.start_s { return Err(ConfigError::new(format!("{p}.stop_s"), format!("must be after start_s ({}), got {s}", f.start_s))); }
            }
            let m = &f.media;
            if m.max_kbps < m.min_kbps { return Err(ConfigError::new(format!("{p}.media.max_kbps"), "must be ≥ min_kbps")); }
            if m.expected_overhead_bytes.is_some() && !m.overhead_accounting {
                return Err(ConfigError::new(format!("{p}.media.expected_overhead_bytes"), "needs media.overhead_accounting = true (it is how the overhead is taken off)"));
            }
            if let Some(e) = m.encoder_min_kbps {
                if e > m.max_kbps { return Err(ConfigError::new(format!("{p}.media.encoder_min_kbps"), "must be ≤ max_kbps")); }
            }
            if m.fec_overhead_cap != MAX_OVERHEAD_SHARE && !m.fec {
                return Err(ConfigError::new(format!("{p}.media.fec_overhead_cap"), "needs media.fec = true (it caps what the protection takes)"));
            }
            if m.srtp_tag_bytes > m.header_bytes {
                return Err(ConfigError::new(format!("{p}.media.srtp_tag_bytes"), format!("{} is more than media.header_bytes ({}): the tag is part of the header", m.srtp_tag_bytes, m.header_bytes)));
            }
            if m.quality_scaler && m.frame_floor_kbit <= 0.0 {
                return Err(ConfigError::new(format!("{p}.media.quality_scaler"), "needs media.frame_floor_kbit > 0 (the scaler reacts to the frames the floor drops)"));
            }
            if !f.pauses.is_empty() && f.kind != FlowKind::Media { return Err(ConfigError::new(format!("{p}.pauses"), "only media flows can pause")); }
            let mut prev = f64::NEG_INFINITY;
            for (j, (a, b)) in f.pauses.iter().enumerate() {
                let field = format!("{p}.pauses[{j}]");
                if b <= a { return Err(ConfigError::new(field, format!("end {b} must be after start {a}"))); }
                if *a < prev { return Err(ConfigError::new(field, "pauses must be in order and must not overlap")); }
                prev = *b;
            }
            if f.on_off.is_some() && f.kind != FlowKind::Tcp { return Err(ConfigError::new(format!("{p}.on_off"), "only TCP flows have an on/off pattern")); }
        }
        self.validate_route_changes()
    }

    /// Route changes: in time order, on a link that exists, telling media flows. One at or after
    /// the end never happens (as a capacity step there), so that `--set duration_s` can shorten
    /// a scenario.
    fn validate_route_changes(&self) -> Result<(), ConfigError> {
        let kinds: Vec<FlowKind> = self.flows.iter().flat_map(|f| std::iter::repeat_n(f.kind, f.count as usize)).collect();
        let mut prev = f64::NEG_INFINITY;
        for (i, rc) in self.route_changes.iter().enumerate() {
            let p = format!("route_changes[{i}]");
            if rc.at_s < prev { return Err(ConfigError::new(format!("{p}.at_s"), format!("route changes must be in time order ({} s comes after {prev} s)", rc.at_s))); }
            prev = rc.at_s;
            if rc.direction == Direction::Reverse && self.reverse_link.is_none() {
                return Err(ConfigError::new(format!("{p}.direction"), "\"reverse\" needs a [reverse_link] to change"));
            }
            validate_link(&format!("{p}.link"), &rc.link)?;
            for (j, id) in rc.flows.iter().flatten().enumerate() {
                let field = format!("{p}.flows[{j}]");
                match kinds.get(*id as usize) {
                    None => return Err(ConfigError::new(field, format!("no flow {id} (the scenario has {} flows, counts expanded)", kinds.len()))),
                    Some(FlowKind::Tcp) => return Err(ConfigError::new(field, format!("flow {id} is a TCP flow; only media senders are told of a route change"))),
                    Some(FlowKind::Media) => {}
                }
            }
        }
        Ok(())
    }

    /// Every link section: `link`, `reverse_link`, and each route change's new link (for
    /// drivers that load trace files into `trace_content`).
    pub fn links_mut(&mut self) -> impl Iterator<Item = &mut LinkConfig> {
        std::iter::once(&mut self.link).chain(self.reverse_link.as_mut()).chain(self.route_changes.iter_mut().map(|r| &mut r.link))
    }
}

/// Relations between the fields of one link section (`link` or `reverse_link`); their ranges
/// are checked against [`limits::LIMITS`]. Errors name `prefix.field`.
pub fn validate_link(prefix: &str, l: &LinkConfig) -> Result<(), ConfigError> {
    let f = |name: &str| format!("{prefix}.{name}");
    let n = l.capacity_kbps.is_some() as u8 + l.steps.is_some() as u8 + (l.trace.is_some() || l.trace_content.is_some()) as u8;
    if n != 1 { return Err(ConfigError::new(prefix, "give exactly one of capacity_kbps, steps, trace")); }
    if let Some(steps) = &l.steps {
        if steps.is_empty() { return Err(ConfigError::new(f("steps"), "must not be empty")); }
        let mut prev = f64::NEG_INFINITY;
        for (i, (t, _)) in steps.iter().enumerate() {
            if *t <= prev { return Err(ConfigError::new(f(&format!("steps[{i}]")), format!("time {t} s is not after the previous step ({prev} s)"))); }
            prev = *t;
        }
    }
    if !["auto", "csv", "mahimahi", "opennetlab"].contains(&l.trace_format.as_str()) {
        return Err(ConfigError::new(f("trace_format"), format!("unknown format '{}' (auto, csv, mahimahi, opennetlab)", l.trace_format)));
    }
    let q = &l.queue;
    let nq = q.bytes.is_some() as u8 + q.packets.is_some() as u8 + q.ms.is_some() as u8;
    if nq > 1 { return Err(ConfigError::new(f("queue"), "give at most one of bytes, packets, ms")); }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> serde_json::Value {
        serde_json::json!({"name": "t", "duration_s": 10, "link": {"capacity_kbps": 1000}, "flows": [{"kind": "media"}]})
    }

    #[test]
    fn nack_and_fec_are_accepted_alone_and_together() {
        for media in [serde_json::json!({"nack": true}), serde_json::json!({"fec": true}), serde_json::json!({"nack": true, "fec": true})] {
            let mut v = base();
            v["flows"][0]["media"] = media;
            Scenario::from_json(&v.to_string()).unwrap().validate().unwrap();
        }
    }

    #[test]
    fn the_protection_cap_needs_fec_and_a_share() {
        let mut v = base();
        v["flows"][0]["media"] = serde_json::json!({"fec_overhead_cap": 0.6});
        let e = Scenario::from_json(&v.to_string()).unwrap_err();
        assert!(e.to_string().contains("flows[0].media.fec_overhead_cap") && e.to_string().contains("needs media.fec"), "{e}");
        v["flows"][0]["media"]["fec"] = serde_json::json!(true);
        Scenario::from_json(&v.to_string()).unwrap().validate().unwrap();
        v["flows"][0]["media"]["fec_overhead_cap"] = serde_json::json!(0.0);
        assert!(Scenario::from_json(&v.to_string()).is_err(), "0 is outside (0, 1]");
    }

    #[test]
    fn the_srtp_tag_is_part_of_the_header() {
        let mut v = base();
        v["flows"][0]["media"] = serde_json::json!({"header_bytes": 8, "srtp_tag_bytes": 10});
        let e = Scenario::from_json(&v.to_string()).unwrap_err();
        assert!(e.field == "flows[0].media.srtp_tag_bytes" && e.to_string().contains("more than media.header_bytes (8)"), "{e}");
        v["flows"][0]["media"]["header_bytes"] = serde_json::json!(64);
        Scenario::from_json(&v.to_string()).unwrap().validate().unwrap();
    }

    /// `media.preset = "chromium"` is the fifteen settings of docs/fidelity.md, keys set by hand
    /// win, and an unknown name is reported at its path.
    #[test]
    fn a_preset_expands_before_the_schema_and_a_wrong_name_is_named() {
        let mut v = base();
        v["flows"][0]["media"] = serde_json::json!({"preset": "chromium", "fps": 15, "header_bytes": 60});
        let m = Scenario::from_json(&v.to_string()).unwrap().flows[0].media.clone();
        assert_eq!((m.pacer_burst_ms, m.keyframe_interval_s, m.header_bytes, m.expected_overhead_bytes), (40.0, 200.0, 60, Some(90.0)));
        assert!(m.fec && m.nack && m.quality_scaler && m.overhead_accounting && m.bitrate_adjuster);
        assert_eq!((m.encoder_min_kbps, m.frame_floor_kbit, m.preset), (Some(30.0), 27.0, Some(presets::SenderPreset::Chromium)));
        // Chromium's largest packet is 1170 bytes on the wire, whatever header is typed.
        assert_eq!((m.max_payload_bytes, m.srtp_tag_bytes), (1110, 10));
        assert_eq!((m.send_time_resolution_ms, m.burst_spacing_us), (1.0, 38.0));
        // The same as typing the fifteen keys of docs/fidelity.md.
        v["flows"][0]["media"] = serde_json::json!({"fps": 15, "header_bytes": 60, "max_payload_bytes": 1110, "srtp_tag_bytes": 10,
            "send_time_resolution_ms": 1, "burst_spacing_us": 38, "pacer_burst_ms": 40, "keyframe_interval_s": 200, "keyframe_factor": 2,
            "expected_overhead_bytes": 90, "fec": true, "nack": true, "encoder_min_kbps": 30, "frame_floor_kbit": 27, "quality_scaler": true, "bitrate_adjuster": true});
        let typed = Scenario::from_json(&v.to_string()).unwrap().flows[0].media.clone();
        let (mut a, b) = (serde_json::to_value(&m).unwrap(), serde_json::to_value(&typed).unwrap());
        a["preset"] = serde_json::Value::Null;
        assert_eq!(a, b);
        v["flows"][0]["media"] = serde_json::json!({"preset": "firefox"});
        let e = Scenario::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e.field, "flows[0].media.preset", "{e}");
    }

    #[test]
    fn parses_minimal_and_applies_defaults() {
        let sc = Scenario::from_json(&base().to_string()).unwrap();
        assert_eq!(sc.flows[0].controller, "gcc");
        assert_eq!(sc.flows[0].media.fps, 30.0);
        assert_eq!(sc.flows[0].feedback.interval_ms, 50.0);
    }

    #[test]
    fn errors_name_the_field() {
        let mut v = base();
        v["link"]["capacity_kbps"] = serde_json::json!(-5);
        assert_eq!(Scenario::from_json(&v.to_string()).unwrap_err().field, "link.capacity_kbps");
        let mut v = base();
        v["flows"][0]["media"]["fpz"] = serde_json::json!(3);
        let e = Scenario::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e.field, "flows[0].media.fpz");
        assert!(e.message.contains("fpz"), "{e}");
        let mut v = base();
        v["duration_s"] = serde_json::json!("long");
        assert_eq!(Scenario::from_json(&v.to_string()).unwrap_err().field, "duration_s");
        let mut v = base();
        v["link"]["steps"] = serde_json::json!([[0, 100], [0, 200]]);
        assert_eq!(Scenario::from_json(&v.to_string()).unwrap_err().field, "link");
        v["link"]["capacity_kbps"] = serde_json::Value::Null;
        assert_eq!(Scenario::from_json(&v.to_string()).unwrap_err().field, "link.steps[1]");
    }
}
