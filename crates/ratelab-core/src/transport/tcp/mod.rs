//! Bulk TCP flows (spec `algorithms.md` §14): a sans-IO sender and receiver, and the
//! window congestion-control abstraction that NewReno, CUBIC, Vegas and BBRv1 implement
//! (`docs/controllers/tcp.md`).
//!
//! # Driving the state machines
//!
//! The driver (simulator) owns the clock and the wire:
//!
//! * after every event handed to the [`TcpSender`] (`on_ack`, `on_timer`, or at start), call
//!   [`TcpSender::poll_transmit`] until it returns `None` and put each [`Segment`] on the wire;
//! * keep one timer per side at [`TcpSender::next_timer`] / [`TcpReceiver::next_timer`] and call
//!   `on_timer` when it is due (an early or spurious call is harmless);
//! * hand every arriving segment to [`TcpReceiver::on_segment`] and send back the [`Ack`] it
//!   returns, if any.
//!
//! # Sequence numbers
//!
//! `Segment::seq`, `Ack::cumulative` and SACK block edges are **byte offsets** into the flow's
//! byte stream, starting at 0 (no SYN, so no ISN). Segment boundaries are fixed: segment `i`
//! covers bytes `[i·MSS, min((i+1)·MSS, total))`, and a retransmission reuses the boundaries of
//! the original, so `seq / mss` is the segment number.
//!
//! # Timestamps
//!
//! Segments carry their send time and the receiver echoes one (RFC 7323 `TS.Recent` rules) in
//! [`Ack::ts_echo`]; sender and receiver are assumed to share the simulation clock.

use crate::error::ConfigError;
use crate::units::{Bytes, Duration, Time};
use serde::{Deserialize, Serialize};

pub mod bbr;
pub mod cc;
pub mod cubic;
pub mod newreno;
pub mod receiver;
pub mod rtt;
pub mod sender;
pub mod vegas;

#[cfg(test)]
mod tests;

pub use bbr::Bbr;
pub use cc::{AckSample, CaState, CongestionEvent, RateSample, RoundCounter, RtoEvent, WindowCongestionControl};
pub use cubic::Cubic;
pub use newreno::NewReno;
pub use receiver::TcpReceiver;
pub use rtt::RttEstimator;
pub use sender::TcpSender;
pub use vegas::Vegas;

/// Parameters of one TCP flow (both ends). Missing fields take the defaults; unknown fields are
/// an error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Congestion control, by registry name (see [`TCP_CC_NAMES`]): `newreno` (alias `reno`),
    /// `cubic` (RFC 9438), `vegas`, `bbr` (BBRv1).
    pub cc: String,
    /// Sender maximum segment size (payload bytes per segment). 1448 = 1500-byte packets with
    /// 52 bytes of IPv4 + TCP + timestamp headers; the RMCAT (cisco ns-3) suite uses 1000.
    pub mss_bytes: u32,
    /// Header bytes added to every segment and ACK on the wire (IPv4 20 + TCP 20 + timestamps 12).
    pub header_bytes: u32,
    /// Initial window in segments (RFC 6928: 10; RFC 5681 "classic": 2–4).
    pub initial_window_segments: u32,
    /// Lower bound of the retransmission timeout in ms (RFC 6298 says 1000; Linux uses 200).
    pub min_rto_ms: f64,
    /// Upper bound of the retransmission timeout in ms (RFC 6298: at least 60 s).
    pub max_rto_ms: f64,
    /// Retransmission timeout before the first RTT sample, in ms (RFC 6298: 1 s).
    pub initial_rto_ms: f64,
    /// Use SACK information for loss detection and recovery (RFC 6675 loss marking, pipe-based
    /// sending, no window inflation). `false` gives pure RFC 6582 NewReno on cumulative ACKs,
    /// with `cwnd = ssthresh + 3·SMSS` inflation. The receiver always sends SACK blocks.
    pub sack: bool,
    /// Number of duplicate ACKs (or SACKed segments above a hole) that declares a loss.
    pub dupack_threshold: u32,
    /// Receiver: acknowledge every second full segment (RFC 5681 / RFC 1122 delayed ACK)
    /// instead of every segment. Out-of-order segments are always acknowledged at once.
    pub delayed_ack: bool,
    /// Receiver: delayed-ACK timer in ms (Linux minimum 40; ns-3 default 200).
    pub delayed_ack_timeout_ms: f64,
    /// Total payload bytes to send; `None` = greedy sender with an infinite backlog.
    pub max_bytes: Option<u64>,
    /// `cubic` only: leave the initial slow start with RFC 9406 HyStart++ (delay-increase exit
    /// into Conservative Slow Start). Off by default, so that CUBIC's slow start is the RFC 5681
    /// one (Linux and ns-3 enable their HyStart by default; spec 14.2).
    pub hystart: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: "newreno".to_string(),
            mss_bytes: 1448,
            header_bytes: 52,
            initial_window_segments: 10,
            min_rto_ms: 200.0,
            max_rto_ms: 60_000.0,
            initial_rto_ms: 1000.0,
            sack: true,
            dupack_threshold: 3,
            delayed_ack: false,
            delayed_ack_timeout_ms: 40.0,
            max_bytes: None,
            hystart: false,
        }
    }
}

impl TcpConfig {
    /// Check ranges; the error names the offending field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.mss_bytes == 0 || self.mss_bytes > 65_535 {
            return Err(ConfigError::new("mss_bytes", "must be in 1..=65535"));
        }
        if self.header_bytes > 65_535 {
            return Err(ConfigError::new("header_bytes", "must be at most 65535"));
        }
        if self.initial_window_segments == 0 {
            return Err(ConfigError::new("initial_window_segments", "must be at least 1"));
        }
        if self.dupack_threshold == 0 {
            return Err(ConfigError::new("dupack_threshold", "must be at least 1"));
        }
        let pos = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 { Ok(()) } else { Err(ConfigError::new(name, "must be a positive number of ms")) }
        };
        pos("min_rto_ms", self.min_rto_ms)?;
        pos("max_rto_ms", self.max_rto_ms)?;
        pos("initial_rto_ms", self.initial_rto_ms)?;
        pos("delayed_ack_timeout_ms", self.delayed_ack_timeout_ms)?;
        if self.max_rto_ms < self.min_rto_ms {
            return Err(ConfigError::new("max_rto_ms", "must not be below min_rto_ms"));
        }
        if let Some(m) = self.max_bytes {
            if m > (i64::MAX / 8) as u64 {
                return Err(ConfigError::new("max_bytes", "too large"));
            }
        }
        build_tcp_cc(&self.cc, self, 0).map(|_| ()).map_err(|e| ConfigError::new("cc", e))
    }

    pub fn mss(&self) -> Bytes { Bytes::new(self.mss_bytes as i64) }
    pub fn header(&self) -> Bytes { Bytes::new(self.header_bytes as i64) }
    pub fn min_rto(&self) -> Duration { Duration::from_ms_f64(self.min_rto_ms) }
    pub fn max_rto(&self) -> Duration { Duration::from_ms_f64(self.max_rto_ms) }
    pub fn initial_rto(&self) -> Duration { Duration::from_ms_f64(self.initial_rto_ms) }
    pub fn delayed_ack_timeout(&self) -> Duration { Duration::from_ms_f64(self.delayed_ack_timeout_ms) }
}

/// Names accepted by [`build_tcp_cc`], in listing order.
pub const TCP_CC_NAMES: &[&str] = &["newreno", "reno", "cubic", "vegas", "bbr"];

/// Build a window congestion controller by name. `cfg` supplies SMSS, header size, the initial
/// window and algorithm-specific switches (`hystart`); `seed` feeds the controller's random
/// stream (only BBR draws from it: its initial ProbeBW phase). `reno` is an alias of `newreno`:
/// the window arithmetic is the same, and the recovery procedure lives in the sender.
pub fn build_tcp_cc(name: &str, cfg: &TcpConfig, seed: u64) -> Result<Box<dyn WindowCongestionControl>, String> {
    match name {
        "newreno" | "reno" => Ok(Box::new(NewReno::new(cfg.mss(), cfg.initial_window_segments))),
        "cubic" => Ok(Box::new(Cubic::new(cfg.mss(), cfg.initial_window_segments, cfg.hystart))),
        "vegas" => Ok(Box::new(Vegas::new(cfg.mss(), cfg.initial_window_segments))),
        "bbr" => Ok(Box::new(Bbr::new(cfg.mss(), cfg.header(), cfg.initial_window_segments, seed))),
        _ => Err(format!("unknown TCP congestion control '{name}' (known: {})", TCP_CC_NAMES.join(", "))),
    }
}

/// One TCP data segment on the wire (`Copy`, no heap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Byte offset of the first payload byte (see the module docs).
    pub seq: u64,
    /// Payload bytes.
    pub len: Bytes,
    /// Bytes on the wire: payload + headers.
    pub wire_size: Bytes,
    /// True if this byte range was sent before.
    pub is_retransmit: bool,
    /// When the sender put it on the wire (the TSval the receiver may echo).
    pub send_time: Time,
}

impl Segment {
    /// One past the last payload byte.
    pub fn end(&self) -> u64 { self.seq + self.len.get().max(0) as u64 }
}

/// A received byte range `[start, end)` reported in a SACK option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// Most SACK blocks one ACK carries (3 fit next to the timestamp option, RFC 2018).
pub const MAX_SACK_BLOCKS: usize = 3;

/// Up to [`MAX_SACK_BLOCKS`] SACK blocks, inline (no heap). The first block holds the most
/// recently received segment (RFC 2018).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlocks {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    pub const EMPTY: SackBlocks = SackBlocks { blocks: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS], len: 0 };

    /// Build from a slice; blocks beyond [`MAX_SACK_BLOCKS`] are dropped.
    pub fn from_slice(blocks: &[SackBlock]) -> Self {
        let mut s = SackBlocks::EMPTY;
        for b in blocks.iter().take(MAX_SACK_BLOCKS) {
            s.push(*b);
        }
        s
    }
    /// Append a block; returns false (and drops it) when full.
    pub fn push(&mut self, b: SackBlock) -> bool {
        if (self.len as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.len as usize] = b;
            self.len += 1;
            true
        } else {
            false
        }
    }
    pub fn len(&self) -> usize { self.len as usize }
    pub fn is_empty(&self) -> bool { self.len == 0 }
    pub fn as_slice(&self) -> &[SackBlock] { &self.blocks[..self.len as usize] }
    pub fn iter(&self) -> impl Iterator<Item = &SackBlock> { self.as_slice().iter() }
}

/// A TCP acknowledgement (`Copy`, no heap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// Next byte the receiver expects: everything below was received in order.
    pub cumulative: u64,
    /// Out-of-order ranges held by the receiver (all above `cumulative`).
    pub sack: SackBlocks,
    /// Echoed send time (RFC 7323 TSecr) for RTT sampling; `None` models a peer without
    /// timestamps, in which case the sender samples RTT from its own records with Karn's rule.
    pub ts_echo: Option<Time>,
    /// Bytes on the wire (headers + SACK option).
    pub wire_size: Bytes,
}

impl Ack {
    /// A plain cumulative ACK without SACK blocks or timestamp (for tests and simple drivers).
    pub fn new(cum: u64) -> Self {
        Ack { cumulative: cum, sack: SackBlocks::EMPTY, ts_echo: None, wire_size: Bytes::new(52) }
    }
}

#[cfg(test)]
mod config_tests {
    use super::*;

    #[test]
    fn defaults_round_trip_and_unknown_fields_fail() {
        let d = TcpConfig::default();
        assert!(d.validate().is_ok());
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["cc"], "newreno");
        assert_eq!(v["mss_bytes"], 1448);
        assert_eq!(v["max_bytes"], serde_json::Value::Null);
        let back: TcpConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
        let partial: TcpConfig = serde_json::from_str(r#"{"mss_bytes": 1000, "delayed_ack": true, "max_bytes": 5000}"#).unwrap();
        assert_eq!((partial.mss_bytes, partial.delayed_ack, partial.max_bytes, partial.header_bytes), (1000, true, Some(5000), 52));
        let err = serde_json::from_str::<TcpConfig>(r#"{"msss": 1000}"#).unwrap_err();
        assert!(err.to_string().contains("msss"), "{err}");
    }

    #[test]
    fn validation_names_the_field() {
        let bad = |f: fn(&mut TcpConfig), field: &str| {
            let mut c = TcpConfig::default();
            f(&mut c);
            assert_eq!(c.validate().unwrap_err().field, field);
        };
        bad(|c| c.mss_bytes = 0, "mss_bytes");
        bad(|c| c.initial_window_segments = 0, "initial_window_segments");
        bad(|c| c.min_rto_ms = -1.0, "min_rto_ms");
        bad(|c| c.max_rto_ms = 100.0, "max_rto_ms");
        bad(|c| c.cc = "cubicc".into(), "cc");
        assert!(TcpSender::new(&TcpConfig { cc: "vegass".into(), ..TcpConfig::default() }).is_err());
        for name in TCP_CC_NAMES {
            assert!(TcpSender::new(&TcpConfig { cc: name.to_string(), ..TcpConfig::default() }).is_ok(), "{name}");
        }
    }

    #[test]
    fn registry_builds_every_controller() {
        let cfg = TcpConfig { mss_bytes: 1000, initial_window_segments: 4, ..TcpConfig::default() };
        for name in TCP_CC_NAMES {
            let cc = build_tcp_cc(name, &cfg, 7).unwrap();
            let expected = if *name == "reno" { "newreno" } else { name };
            assert_eq!(cc.name(), expected);
            assert_eq!(cc.cwnd(), Bytes::new(4000), "{name}");
            assert_eq!(cc.ssthresh(), Bytes::INFINITY, "{name}");
            assert!(cc.in_slow_start(), "{name}");
            // Only BBR paces (the others are unpaced, spec 14).
            assert_eq!(cc.pacing_rate().is_some(), *name == "bbr", "{name}");
            assert_eq!(cc.wants_recovery_inflation(), *name != "bbr", "{name}");
        }
        let err = build_tcp_cc("bbr2", &cfg, 0).err().unwrap();
        assert!(err.contains("newreno") && err.contains("cubic"), "{err}");
    }

    #[test]
    fn sack_blocks_are_bounded_and_inline() {
        let mut s = SackBlocks::EMPTY;
        for i in 0..5u64 {
            s.push(SackBlock { start: i * 10, end: i * 10 + 5 });
        }
        assert_eq!(s.len(), MAX_SACK_BLOCKS);
        assert_eq!(s.as_slice()[2], SackBlock { start: 20, end: 25 });
        assert_eq!(SackBlocks::from_slice(&[SackBlock { start: 1, end: 2 }]).len(), 1);
    }
}
