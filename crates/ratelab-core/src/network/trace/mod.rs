//! Bandwidth traces: piecewise-constant link capacity (plus optional loss and delay) over time.
//!
//! Sans-IO: everything parses from a `&str`; reading files is the caller's job.
//!
//! Three input formats are understood (see [`TraceFormat`]):
//!
//! * **csv**, the ratelab common format:
//!   ```text
//!   time_s,capacity_kbps,loss_rate,delay_ms
//!   0,12360,,
//!   0.1,15840,0.01,
//!   0.2,15840,0.01,
//!   ```
//!   A row's values apply from its `time_s` up to the next row's `time_s` (step semantics).
//!   **The final row only marks the end:** its `time_s` is the trace duration and its values are
//!   ignored (by convention they repeat the previous row). `loss_rate` and `delay_ms` may be
//!   empty or left out of the header.
//! * **mahimahi**: one integer millisecond timestamp per line, each one opportunity to deliver
//!   one 1500-byte packet; the trace loops with a period equal to the last timestamp. It is
//!   turned into piecewise-constant capacity by counting opportunities in bins
//!   ([`parse_mahimahi`]).
//! * **opennetlab**: the AlphaRTC gym JSON, `{"uplink": {"trace_pattern": [{"duration": ms,
//!   "capacity": kbps, "loss": fraction, "rtt": ms}, ...]}}`.
//!
//! Every parse error names the line it comes from (when there is one), e.g.
//! `line 17: time_s 3.2 is not after the previous row (3.4)`.

use crate::units::{Bitrate, Duration, Time};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// Header of the ratelab common CSV format.
pub const CSV_HEADER: &str = "time_s,capacity_kbps,loss_rate,delay_ms";
/// Bytes one mahimahi delivery opportunity can carry.
pub const MAHIMAHI_PACKET_BYTES: i64 = 1500;
/// Default bin width for turning mahimahi delivery opportunities into capacity.
pub const DEFAULT_MAHIMAHI_BIN: Duration = Duration::from_ms(100);

/// Largest accepted time (about 31.7 years): keeps all arithmetic far from overflow.
const MAX_TIME_S: f64 = 1e9;
/// Largest accepted capacity: 1 Pbit/s.
const MAX_CAPACITY_KBPS: f64 = 1e12;
/// Largest accepted one-way delay (about 11.6 days).
const MAX_DELAY_MS: f64 = 1e9;
/// How much of an offending value an error message quotes.
const QUOTE_CHARS: usize = 40;

/// A parse or validation error. `line` is 1-based and counts every physical line of the input
/// (header and blank lines included).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}{message}", match line { Some(l) => format!("line {l}: "), None => String::new() })]
pub struct TraceError {
    pub line: Option<usize>,
    pub message: String,
}

impl TraceError {
    /// An error that belongs to no particular line.
    pub fn new(message: impl Into<String>) -> Self { TraceError { line: None, message: message.into() } }
    /// An error on `line` (1-based).
    pub fn at(line: usize, message: impl Into<String>) -> Self { TraceError { line: Some(line), message: message.into() } }
}

/// Input format for [`parse_trace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Decide from the content (see [`detect_format`]).
    #[default]
    Auto,
    /// The ratelab common CSV format (`time_s,capacity_kbps,loss_rate,delay_ms`).
    Csv,
    /// mahimahi delivery-opportunity timestamps, binned at [`DEFAULT_MAHIMAHI_BIN`].
    Mahimahi,
    /// OpenNetLab (AlphaRTC) gym JSON.
    OpenNetLab,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 4] = [TraceFormat::Auto, TraceFormat::Csv, TraceFormat::Mahimahi, TraceFormat::OpenNetLab];
    /// The name used in configuration files (`auto`, `csv`, `mahimahi`, `opennetlab`).
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Auto => "auto",
            TraceFormat::Csv => "csv",
            TraceFormat::Mahimahi => "mahimahi",
            TraceFormat::OpenNetLab => "opennetlab",
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { f.write_str(self.name()) }
}

impl FromStr for TraceFormat {
    type Err = TraceError;
    fn from_str(s: &str) -> Result<Self, TraceError> {
        TraceFormat::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(s.trim())).ok_or_else(|| {
            TraceError::new(format!("unknown trace format `{}` (expected auto, csv, mahimahi or opennetlab)", quote(s)))
        })
    }
}

/// One step of a trace: these values hold from `start` until the next sample's `start` (or the
/// trace's end).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraceSample {
    pub start: Time,
    pub capacity: Bitrate,
    /// Random loss probability in [0, 1]; `None` when the trace does not say.
    pub loss: Option<f64>,
    /// One-way delay; `None` when the trace does not say.
    pub delay: Option<Duration>,
}

impl TraceSample {
    /// Same capacity, loss and delay (the start is not compared).
    pub fn same_values(&self, o: &TraceSample) -> bool { self.capacity == o.capacity && self.loss == o.loss && self.delay == o.delay }
}

/// A piecewise-constant trace. `samples` are sorted by strictly increasing `start`, the first at
/// time zero; `duration` is the end marker (greater than the last start) and the period when the
/// trace is looped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub samples: Vec<TraceSample>,
    pub duration: Duration,
}

/// One step of a trace with its end, as yielded by [`Trace::segments`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment<'a> {
    pub start: Time,
    pub end: Time,
    pub sample: &'a TraceSample,
}

impl Trace {
    /// Build a trace, checking the invariants (see [`Trace::validate`]).
    pub fn new(samples: Vec<TraceSample>, duration: Duration) -> Result<Self, TraceError> {
        let t = Trace { samples, duration };
        t.validate()?;
        Ok(t)
    }

    /// A constant capacity with no loss or delay information, lasting `duration`.
    pub fn constant(capacity: Bitrate, duration: Duration) -> Self {
        Trace { samples: vec![TraceSample { start: Time::ZERO, capacity, loss: None, delay: None }], duration }
    }

    /// Check the invariants: at least one sample, the first at time zero, strictly increasing
    /// starts, `duration` after the last start, capacity ≥ 0, loss in [0, 1], delay ≥ 0.
    /// The parsers only return traces that pass.
    pub fn validate(&self) -> Result<(), TraceError> {
        let first = self.samples.first().ok_or_else(|| TraceError::new("empty trace: no samples"))?;
        if first.start != Time::ZERO {
            return Err(TraceError::new(format!("the first sample must start at 0, not {}", first.start)));
        }
        for (i, s) in self.samples.iter().enumerate() {
            if i > 0 && s.start <= self.samples[i - 1].start {
                return Err(TraceError::new(format!("sample {i} starts at {}, not after the previous sample ({})", s.start, self.samples[i - 1].start)));
            }
            if s.capacity < Bitrate::ZERO {
                return Err(TraceError::new(format!("sample {i}: capacity {} is negative", s.capacity)));
            }
            if let Some(l) = s.loss {
                if !(0.0..=1.0).contains(&l) {
                    return Err(TraceError::new(format!("sample {i}: loss {l} is outside [0, 1]")));
                }
            }
            if let Some(d) = s.delay {
                if d < Duration::ZERO {
                    return Err(TraceError::new(format!("sample {i}: delay {d} is negative")));
                }
            }
        }
        let last = self.samples[self.samples.len() - 1].start;
        if self.end() <= last {
            return Err(TraceError::new(format!("the duration {} must end after the last sample's start ({last})", self.duration)));
        }
        Ok(())
    }

    /// When the trace ends (time zero plus `duration`).
    pub fn end(&self) -> Time { Time::ZERO + self.duration }

    /// Index of the sample in force at `t`. With `looped`, time wraps with period `duration`;
    /// without, a time before zero gets the first sample and a time at or after the end gets
    /// the last (the last values are held). `None` only for a trace with no samples.
    pub fn index_at(&self, t: Time, looped: bool) -> Option<usize> {
        if self.samples.is_empty() {
            return None;
        }
        let local = self.local_time(t, looped);
        let p = self.samples.partition_point(|s| s.start.as_us() <= local);
        Some(p.saturating_sub(1))
    }

    /// The sample in force at `t` (see [`Trace::index_at`]).
    pub fn sample_at(&self, t: Time, looped: bool) -> Option<&TraceSample> { self.index_at(t, looped).map(|i| &self.samples[i]) }

    /// Capacity in force at `t` (binary search; see [`Trace::index_at`] for the time rules).
    /// Zero for a trace with no samples.
    pub fn capacity_at(&self, t: Time, looped: bool) -> Bitrate { self.sample_at(t, looped).map_or(Bitrate::ZERO, |s| s.capacity) }

    /// Time-weighted mean capacity over one period `[0, duration)`.
    pub fn mean_capacity(&self) -> Bitrate {
        let total = self.duration.as_us();
        if total <= 0 {
            return Bitrate::ZERO;
        }
        let bit_us: i128 = self.segments().map(|s| s.sample.capacity.bps() as i128 * (s.end - s.start).as_us().max(0) as i128).sum();
        Bitrate::from_bps(((bit_us + total as i128 / 2) / total as i128) as i64)
    }

    /// The same trace with every capacity multiplied by `factor` (rounded to whole bit/s).
    /// A negative or NaN factor gives zero capacity.
    pub fn scaled(&self, factor: f64) -> Trace {
        Trace { samples: self.samples.iter().map(|s| TraceSample { capacity: s.capacity.scale(factor), ..*s }).collect(), duration: self.duration }
    }

    /// The first time after `t` (strictly) at which capacity, loss or delay changes, or `None`
    /// when they never change again. Boundaries between samples with equal values are skipped.
    /// Without `looped` the last values are held forever after the end; with `looped` the
    /// wrap-around at each multiple of `duration` counts as a change when the first sample
    /// differs from the last.
    pub fn next_change_after(&self, t: Time, looped: bool) -> Option<Time> {
        let i = self.index_at(t, looped)?;
        let cur = &self.samples[i];
        if let Some(s) = self.samples[i + 1..].iter().find(|s| !s.same_values(cur)) {
            return Some(self.period_base(t, looped) + (s.start - Time::ZERO));
        }
        if !self.loops(looped) {
            return None;
        }
        let next_base = self.period_base(t, looped) + self.duration;
        self.samples[..i].iter().find(|s| !s.same_values(cur)).map(|s| next_base + (s.start - Time::ZERO))
    }

    /// The steps of one period, each with its end (the next start, or [`Trace::end`]).
    pub fn segments(&self) -> impl Iterator<Item = Segment<'_>> + '_ {
        let end = self.end();
        self.samples.iter().enumerate().map(move |(i, s)| Segment { start: s.start, end: self.samples.get(i + 1).map_or(end, |n| n.start), sample: s })
    }

    /// Write the trace in the ratelab common CSV format, end row included. Times are written
    /// to the microsecond and rates to the bit/s, so [`parse_csv`] gives the same trace back.
    pub fn to_csv(&self) -> String {
        let mut out = String::with_capacity(32 * (self.samples.len() + 2));
        out.push_str(CSV_HEADER);
        out.push('\n');
        let row = |out: &mut String, t: i64, s: &TraceSample| {
            out.push_str(&fixed(t, 6));
            out.push(',');
            out.push_str(&fixed(s.capacity.bps(), 3));
            out.push(',');
            if let Some(l) = s.loss {
                out.push_str(&l.to_string());
            }
            out.push(',');
            if let Some(d) = s.delay {
                out.push_str(&fixed(d.as_us(), 3));
            }
            out.push('\n');
        };
        for s in &self.samples {
            row(&mut out, s.start.as_us(), s);
        }
        if let Some(last) = self.samples.last() {
            row(&mut out, self.duration.as_us(), last);
        }
        out
    }

    fn loops(&self, looped: bool) -> bool { looped && self.duration > Duration::ZERO }

    /// `t` mapped into one period (µs) when looping, else `t` itself.
    fn local_time(&self, t: Time, looped: bool) -> i64 {
        if self.loops(looped) { t.as_us().rem_euclid(self.duration.as_us()) } else { t.as_us() }
    }

    /// Start of the period that contains `t` (zero when not looping).
    fn period_base(&self, t: Time, looped: bool) -> Time {
        if self.loops(looped) { Time::from_us(t.as_us() - t.as_us().rem_euclid(self.duration.as_us())) } else { Time::ZERO }
    }
}

/// `v / 10^decimals` written exactly, without trailing zeros (`fixed(1500, 3)` = `1.5`).
fn fixed(v: i64, decimals: u32) -> String {
    let scale = 10i64.pow(decimals);
    let (sign, a) = if v < 0 { ("-", v.unsigned_abs()) } else { ("", v as u64) };
    let (int, frac) = (a / scale as u64, a % scale as u64);
    if frac == 0 {
        return format!("{sign}{int}");
    }
    let frac = format!("{frac:0width$}", width = decimals as usize);
    format!("{sign}{int}.{}", frac.trim_end_matches('0'))
}

/// At most [`QUOTE_CHARS`] characters of `s`, for error messages.
fn quote(s: &str) -> String {
    let mut q: String = s.chars().take(QUOTE_CHARS).collect();
    if s.chars().nth(QUOTE_CHARS).is_some() {
        q.push('…');
    }
    q
}

fn strip_bom(s: &str) -> &str { s.strip_prefix('\u{feff}').unwrap_or(s) }

/// Non-blank lines, trimmed, with their 1-based line numbers. Handles `\n` and `\r\n`.
fn content_lines(s: &str) -> impl Iterator<Item = (usize, &str)> {
    strip_bom(s).lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty())
}

/// Parse a trace in `format` ([`TraceFormat::Auto`] detects it with [`detect_format`];
/// mahimahi is binned at [`DEFAULT_MAHIMAHI_BIN`]).
pub fn parse_trace(content: &str, format: TraceFormat) -> Result<Trace, TraceError> {
    match format {
        TraceFormat::Auto => parse_trace(content, detect_format(content)?),
        TraceFormat::Csv => parse_csv(content),
        TraceFormat::Mahimahi => parse_mahimahi(content, DEFAULT_MAHIMAHI_BIN),
        TraceFormat::OpenNetLab => parse_opennetlab(content),
    }
}

/// Guess the format from the first non-blank line: `{` starts OpenNetLab gym JSON, a first
/// field `time_s` is the CSV header, and a whole number is a mahimahi timestamp.
pub fn detect_format(content: &str) -> Result<TraceFormat, TraceError> {
    let (line, first) = content_lines(content).next().ok_or_else(|| TraceError::new("empty trace: the input has no data"))?;
    if first.starts_with('{') {
        Ok(TraceFormat::OpenNetLab)
    } else if first.split(',').next().map(str::trim) == Some("time_s") {
        Ok(TraceFormat::Csv)
    } else if first.bytes().all(|b| b.is_ascii_digit()) {
        Ok(TraceFormat::Mahimahi)
    } else {
        Err(TraceError::at(
            line,
            format!(
                "cannot tell the trace format from `{}`: expected the CSV header `{CSV_HEADER}`, a JSON object (OpenNetLab gym) or a whole number of milliseconds (mahimahi)",
                quote(first)
            ),
        ))
    }
}

// Value checks shared by the parsers: each names the field and the offending value.

pub(super) fn check_capacity(kbps: f64, what: &str) -> Result<Bitrate, String> {
    if kbps < 0.0 {
        Err(format!("{what} {kbps} is negative"))
    } else if kbps > MAX_CAPACITY_KBPS {
        Err(format!("{what} {kbps} is too large (at most {MAX_CAPACITY_KBPS} kbit/s)"))
    } else {
        Ok(Bitrate::from_kbps_f64(kbps))
    }
}

pub(super) fn check_loss(loss: f64, what: &str) -> Result<f64, String> {
    if (0.0..=1.0).contains(&loss) { Ok(loss) } else { Err(format!("{what} {loss} is outside [0, 1]")) }
}

pub(super) fn check_delay_ms(ms: f64, what: &str) -> Result<Duration, String> {
    if ms < 0.0 {
        Err(format!("{what} {ms} is negative"))
    } else if ms > MAX_DELAY_MS {
        Err(format!("{what} {ms} is too large (at most {MAX_DELAY_MS} ms)"))
    } else {
        Ok(Duration::from_ms_f64(ms))
    }
}

mod csv;
mod mahimahi;
mod opennetlab;
#[cfg(test)]
mod tests;

pub use csv::parse_csv;
pub use mahimahi::parse_mahimahi;
pub use opennetlab::parse_opennetlab;
