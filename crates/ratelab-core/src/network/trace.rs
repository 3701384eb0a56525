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

// ---------------------------------------------------------------------------------------------
// CSV

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Time,
    Capacity,
    Loss,
    Delay,
}

impl Column {
    const ALL: [Column; 4] = [Column::Time, Column::Capacity, Column::Loss, Column::Delay];
    fn name(self) -> &'static str {
        match self {
            Column::Time => "time_s",
            Column::Capacity => "capacity_kbps",
            Column::Loss => "loss_rate",
            Column::Delay => "delay_ms",
        }
    }
}

struct CsvRow {
    line: usize,
    time_s: f64,
    sample: TraceSample,
}

/// Parse the ratelab common CSV format (see the module docs). The header must name `time_s`
/// and `capacity_kbps`; `loss_rate` and `delay_ms` are optional, in any order. Blank lines,
/// surrounding whitespace, CRLF line ends and a UTF-8 byte-order mark are tolerated.
pub fn parse_csv(content: &str) -> Result<Trace, TraceError> {
    let mut lines = content_lines(content);
    let (hline, header) = lines.next().ok_or_else(|| TraceError::new("empty trace: no header and no rows"))?;
    let columns = parse_header(hline, header)?;
    let mut rows = Vec::new();
    for (line, text) in lines {
        rows.push(parse_row(line, text, &columns)?);
    }
    if rows.is_empty() {
        return Err(TraceError::at(hline, "empty trace: the header is not followed by any rows"));
    }
    if rows[0].time_s != 0.0 {
        return Err(TraceError::at(rows[0].line, format!("the first row must be at time_s 0, not {}", rows[0].time_s)));
    }
    let n = rows.len();
    for i in 1..n {
        let (prev, row) = (&rows[i - 1], &rows[i]);
        if row.sample.start > prev.sample.start {
            continue;
        }
        // A final row that repeats the previous row exactly is a duplicated end marker.
        if i == n - 1 && row.sample.start == prev.sample.start && row.sample.same_values(&prev.sample) && n > 2 {
            rows.pop();
            break;
        }
        let rounding = if row.time_s > prev.time_s { " (times are rounded to whole microseconds)" } else { "" };
        return Err(TraceError::at(row.line, format!("time_s {} is not after the previous row ({}){rounding}", row.time_s, prev.time_s)));
    }
    if rows.len() < 2 {
        return Err(TraceError::at(
            rows[0].line,
            "a trace needs at least two rows: the samples, then an end row whose time_s is the duration",
        ));
    }
    let end = rows.pop().expect("two rows or more");
    Ok(Trace { samples: rows.into_iter().map(|r| r.sample).collect(), duration: end.sample.start - Time::ZERO })
}

/// Map each known column to its position in the header.
fn parse_header(line: usize, header: &str) -> Result<[Option<usize>; 4], TraceError> {
    let mut pos = [None; 4];
    for (i, name) in header.split(',').map(str::trim).enumerate() {
        let Some(c) = Column::ALL.iter().position(|c| c.name() == name) else {
            let hint = if i == 0 && name.parse::<f64>().is_ok() {
                format!("the first line must be the header `{CSV_HEADER}`, found `{}`", quote(header))
            } else {
                format!("unknown column `{}` in the header (expected `{CSV_HEADER}`)", quote(name))
            };
            return Err(TraceError::at(line, hint));
        };
        if pos[c].is_some() {
            return Err(TraceError::at(line, format!("column `{name}` appears twice in the header")));
        }
        pos[c] = Some(i);
    }
    for c in [Column::Time, Column::Capacity] {
        if pos[c as usize].is_none() {
            return Err(TraceError::at(line, format!("the header has no `{}` column (expected `{CSV_HEADER}`)", c.name())));
        }
    }
    Ok(pos)
}

fn parse_row(line: usize, text: &str, columns: &[Option<usize>; 4]) -> Result<CsvRow, TraceError> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    let ncols = columns.iter().flatten().count();
    if fields.len() > ncols {
        return Err(TraceError::at(line, format!("the row has {} fields but the header has {ncols} columns", fields.len())));
    }
    // The field of column `c`, `None` when it is empty or left out.
    let field = |c: Column| columns[c as usize].and_then(|i| fields.get(i).copied()).filter(|f| !f.is_empty());
    let required = |c: Column| field(c).ok_or_else(|| TraceError::at(line, format!("{} is missing", c.name())));
    let number = |c: Column, s: &str| parse_number(s, c.name()).map_err(|m| TraceError::at(line, m));

    let time_s = number(Column::Time, required(Column::Time)?)?;
    if time_s < 0.0 {
        return Err(TraceError::at(line, format!("time_s {time_s} is negative")));
    }
    if time_s > MAX_TIME_S {
        return Err(TraceError::at(line, format!("time_s {time_s} is too large (at most {MAX_TIME_S} s)")));
    }
    let kbps = number(Column::Capacity, required(Column::Capacity)?)?;
    let capacity = check_capacity(kbps, "capacity_kbps").map_err(|m| TraceError::at(line, m))?;
    let loss = match field(Column::Loss) {
        Some(s) => Some(check_loss(number(Column::Loss, s)?, "loss_rate").map_err(|m| TraceError::at(line, m))?),
        None => None,
    };
    let delay = match field(Column::Delay) {
        Some(s) => Some(check_delay_ms(number(Column::Delay, s)?, "delay_ms").map_err(|m| TraceError::at(line, m))?),
        None => None,
    };
    Ok(CsvRow { line, time_s, sample: TraceSample { start: Time::from_secs_f64(time_s), capacity, loss, delay } })
}

fn parse_number(s: &str, what: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{what} `{}` is not a number", quote(s)))?;
    if !v.is_finite() {
        return Err(format!("{what} is `{}`, not a finite number", quote(s)));
    }
    Ok(v)
}

fn check_capacity(kbps: f64, what: &str) -> Result<Bitrate, String> {
    if kbps < 0.0 {
        Err(format!("{what} {kbps} is negative"))
    } else if kbps > MAX_CAPACITY_KBPS {
        Err(format!("{what} {kbps} is too large (at most {MAX_CAPACITY_KBPS} kbit/s)"))
    } else {
        Ok(Bitrate::from_kbps_f64(kbps))
    }
}

fn check_loss(loss: f64, what: &str) -> Result<f64, String> {
    if (0.0..=1.0).contains(&loss) { Ok(loss) } else { Err(format!("{what} {loss} is outside [0, 1]")) }
}

fn check_delay_ms(ms: f64, what: &str) -> Result<Duration, String> {
    if ms < 0.0 {
        Err(format!("{what} {ms} is negative"))
    } else if ms > MAX_DELAY_MS {
        Err(format!("{what} {ms} is too large (at most {MAX_DELAY_MS} ms)"))
    } else {
        Ok(Duration::from_ms_f64(ms))
    }
}

// ---------------------------------------------------------------------------------------------
// mahimahi

/// Parse a mahimahi trace: one whole-millisecond timestamp per line (non-decreasing; repeats
/// mean several packets in the same millisecond), each one opportunity to deliver a
/// [`MAHIMAHI_PACKET_BYTES`]-byte packet. mahimahi loops the trace with a period equal to the
/// last timestamp T, so `duration` = T (which must be > 0).
///
/// Opportunities are counted in bins `[k·bin, (k+1)·bin)`; the last bin is cut at T and an
/// opportunity at exactly T counts in it. A bin's capacity is `count × 1500 × 8 bit / its
/// length` (a full 100 ms bin gives count × 120 kbit/s). Adjacent bins with equal capacity are
/// merged into one sample, so the trace holds only actual changes (and its size is bounded by
/// the input's, however long the empty stretches). Loss and delay are `None`.
pub fn parse_mahimahi(content: &str, bin: Duration) -> Result<Trace, TraceError> {
    if bin <= Duration::ZERO {
        return Err(TraceError::new(format!("the mahimahi bin width must be positive, not {bin}")));
    }
    const MAX_MS: u64 = (MAX_TIME_S as u64) * 1000;
    let bin_us = bin.as_us() as u64;
    // (bin index, opportunities) for the non-empty bins, in order.
    let mut bins: Vec<(u64, u64)> = Vec::new();
    let mut last: Option<(usize, u64)> = None;
    for (line, text) in content_lines(content) {
        let ms: u64 = text.parse().map_err(|_| {
            let what = if text.strip_prefix('-').is_some_and(|r| r.parse::<u64>().is_ok()) { "is negative" } else { "is not a whole number of milliseconds" };
            TraceError::at(line, format!("timestamp `{}` {what}", quote(text)))
        })?;
        if ms > MAX_MS {
            return Err(TraceError::at(line, format!("timestamp {ms} ms is too large (at most {MAX_MS} ms)")));
        }
        if let Some((_, prev)) = last {
            if ms < prev {
                return Err(TraceError::at(line, format!("timestamp {ms} is before the previous one ({prev}); mahimahi timestamps must not decrease")));
            }
        }
        last = Some((line, ms));
        let k = ms * 1000 / bin_us;
        match bins.last_mut() {
            Some((b, n)) if *b == k => *n += 1,
            _ => bins.push((k, 1)),
        }
    }
    let Some((last_line, t_ms)) = last else { return Err(TraceError::new("empty trace: no timestamps")) };
    if t_ms == 0 {
        return Err(TraceError::at(last_line, "the last timestamp is 0, so the trace lasts no time (mahimahi loops with the last timestamp as its period)"));
    }
    let end_us = t_ms * 1000;
    let nbins = end_us.div_ceil(bin_us);
    // Opportunities at exactly T fall in bin `nbins` when T is a multiple of the bin: move
    // them into the last bin.
    if let Some(&(k, n)) = bins.last() {
        if k >= nbins {
            bins.pop();
            match bins.last_mut() {
                Some((b, m)) if *b == nbins - 1 => *m += n,
                _ => bins.push((nbins - 1, n)),
            }
        }
    }

    let mut samples: Vec<TraceSample> = Vec::new();
    let mut push = |start_us: u64, capacity: Bitrate| {
        if samples.last().is_none_or(|s| s.capacity != capacity) {
            samples.push(TraceSample { start: Time::from_us(start_us as i64), capacity, loss: None, delay: None });
        }
    };
    let mut next = 0u64; // first bin not yet covered
    for (k, n) in bins {
        if k > next {
            push(next * bin_us, Bitrate::ZERO);
        }
        let start = k * bin_us;
        let len = bin_us.min(end_us - start) as u128;
        let bits_us = n as u128 * (MAHIMAHI_PACKET_BYTES as u128 * 8) * 1_000_000;
        let bps = (bits_us + len / 2) / len;
        if bps as f64 > MAX_CAPACITY_KBPS * 1e3 {
            return Err(TraceError::new(format!("{n} opportunities in the bin at {} ms give a capacity above {MAX_CAPACITY_KBPS} kbit/s", start as f64 / 1e3)));
        }
        push(start, Bitrate::from_bps(bps as i64));
        next = k + 1;
    }
    if next < nbins {
        push(next * bin_us, Bitrate::ZERO);
    }
    Ok(Trace { samples, duration: Duration::from_us(end_us as i64) })
}

// ---------------------------------------------------------------------------------------------
// OpenNetLab gym JSON

/// A serde_json error as a [`TraceError`] on its line, prefixed with the JSON path when known.
fn json_error(path: &str, e: serde_json::Error) -> TraceError {
    let (line, col) = (e.line(), e.column());
    let mut msg = e.to_string();
    if let Some(m) = msg.strip_suffix(&format!(" at line {line} column {col}")) {
        msg = m.to_string();
    }
    let msg = if path.is_empty() || path == "." || path == "?" { msg } else { format!("{path}: {msg}") };
    if line > 0 { TraceError::at(line, msg) } else { TraceError::new(msg) }
}

#[derive(Deserialize)]
struct GymFile {
    #[serde(default)]
    uplink: Option<GymLink>,
}

#[derive(Deserialize)]
struct GymLink {
    #[serde(default)]
    trace_pattern: Option<Vec<GymSegment>>,
}

/// One gym segment. `jitter` and any other field are ignored. The checks run while
/// deserializing so that serde_json reports the line of the offending value.
#[derive(Deserialize)]
struct GymSegment {
    #[serde(deserialize_with = "de_segment_duration")]
    duration: f64,
    #[serde(deserialize_with = "de_capacity")]
    capacity: Bitrate,
    #[serde(default, deserialize_with = "de_loss")]
    loss: Option<f64>,
    #[serde(default, deserialize_with = "de_rtt")]
    rtt: Option<f64>,
}

fn de_segment_duration<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let ms = f64::deserialize(d)?;
    if ms < 0.001 {
        return Err(serde::de::Error::custom(format!("duration {ms} ms must be at least 0.001 ms")));
    }
    if ms > MAX_TIME_S * 1e3 {
        return Err(serde::de::Error::custom(format!("duration {ms} ms is too large")));
    }
    Ok(ms)
}

fn de_capacity<'de, D: Deserializer<'de>>(d: D) -> Result<Bitrate, D::Error> {
    check_capacity(f64::deserialize(d)?, "capacity (kbit/s)").map_err(serde::de::Error::custom)
}

fn de_loss<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)?.map(|l| check_loss(l, "loss")).transpose().map_err(serde::de::Error::custom)
}

fn de_rtt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let rtt = Option::<f64>::deserialize(d)?;
    if let Some(ms) = rtt {
        check_delay_ms(ms, "rtt (ms)").map_err(serde::de::Error::custom)?;
    }
    Ok(rtt)
}

/// Parse an OpenNetLab (AlphaRTC) gym trace: `{"uplink": {"trace_pattern": [{"duration": ms,
/// "capacity": kbit/s, "loss": fraction, "rtt": ms, "jitter": ms}, ...]}}`, the pattern the gym
/// applies on the sender's link. Each segment becomes one sample starting at the sum of the
/// previous durations; `loss` becomes the loss rate and `rtt` (ms) a one-way delay of rtt/2,
/// as in the gym; `jitter`, `type` and `downlink` are ignored. The duration is the sum of all
/// segment durations. Values are not clipped.
pub fn parse_opennetlab(content: &str) -> Result<Trace, TraceError> {
    let mut de = serde_json::Deserializer::from_str(strip_bom(content));
    let file: GymFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        json_error(&path, e.into_inner())
    })?;
    de.end().map_err(|e| json_error("", e))?;
    let pattern = file.uplink.and_then(|u| u.trace_pattern).ok_or_else(|| {
        TraceError::new(r#"no `uplink.trace_pattern` list: an OpenNetLab gym trace looks like {"uplink": {"trace_pattern": [{"duration": 200, "capacity": 1000}, ...]}}"#)
    })?;
    if pattern.is_empty() {
        return Err(TraceError::new("empty trace: `uplink.trace_pattern` has no segments"));
    }
    let mut samples: Vec<TraceSample> = Vec::with_capacity(pattern.len());
    let mut elapsed_ms = 0.0f64;
    for (i, seg) in pattern.iter().enumerate() {
        let start = Time::ZERO + Duration::from_ms_f64(elapsed_ms);
        if samples.last().is_some_and(|p| p.start >= start) {
            return Err(TraceError::new(format!("uplink.trace_pattern[{}]: the segment is shorter than 1 µs after rounding", i - 1)));
        }
        samples.push(TraceSample { start, capacity: seg.capacity, loss: seg.loss, delay: seg.rtt.map(|r| Duration::from_ms_f64(r / 2.0)) });
        elapsed_ms += seg.duration;
    }
    if elapsed_ms > MAX_TIME_S * 1e3 {
        return Err(TraceError::new(format!("the segments last {elapsed_ms} ms in all, too long (at most {MAX_TIME_S} s)")));
    }
    let duration = Duration::from_ms_f64(elapsed_ms);
    if Time::ZERO + duration <= samples[samples.len() - 1].start {
        return Err(TraceError::new(format!("uplink.trace_pattern[{}]: the segment is shorter than 1 µs after rounding", samples.len() - 1)));
    }
    Ok(Trace { samples, duration })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(x: f64) -> Time { Time::from_secs_f64(x) }
    fn kbps(k: i64) -> Bitrate { Bitrate::from_kbps(k) }
    fn sample(start_s: f64, k: i64) -> TraceSample { TraceSample { start: s(start_s), capacity: kbps(k), loss: None, delay: None } }

    /// The error of parsing `content` as `format`, checked to name `line` in both the field and
    /// the Display text.
    fn err_at(content: &str, format: TraceFormat, line: usize) -> String {
        let e = parse_trace(content, format).expect_err("should fail");
        assert_eq!(e.line, Some(line), "wrong line in `{e}`");
        let text = e.to_string();
        assert!(text.starts_with(&format!("line {line}: ")), "{text}");
        text
    }

    const CSV: &str = "time_s,capacity_kbps,loss_rate,delay_ms\n0,1000,,\n0.5,2000,0.1,20\n1.5,500,,\n2,500,,\n";

    #[test]
    fn trace_csv_hand_computed() {
        let t = parse_trace(CSV, TraceFormat::Csv).unwrap();
        assert_eq!(
            t.samples,
            vec![
                sample(0.0, 1000),
                TraceSample { start: s(0.5), capacity: kbps(2000), loss: Some(0.1), delay: Some(Duration::from_ms(20)) },
                sample(1.5, 500),
            ]
        );
        assert_eq!(t.duration, Duration::from_secs(2));
        assert_eq!(t.end(), s(2.0));
        // (1000·0.5 + 2000·1 + 500·0.5) / 2 = 1375
        assert_eq!(t.mean_capacity(), kbps(1375));
        assert_eq!(parse_trace(CSV, TraceFormat::Auto).unwrap(), t);
        t.validate().unwrap();
    }

    #[test]
    fn trace_capacity_at_step_semantics_and_looping() {
        let t = parse_csv(CSV).unwrap();
        for (at, k) in [(0.0, 1000), (0.499999, 1000), (0.5, 2000), (1.499999, 2000), (1.5, 500)] {
            assert_eq!(t.capacity_at(s(at), false), kbps(k), "t={at}");
            assert_eq!(t.capacity_at(s(at), true), kbps(k), "looped t={at}");
        }
        // Past the end: held without looping, wrapped with period 2 s when looping.
        for (at, held, looped) in [(2.0, 500, 1000), (2.6, 500, 2000), (5.5, 500, 500), (100.2, 500, 1000), (-0.5, 1000, 500), (-1.0, 1000, 2000)] {
            assert_eq!(t.capacity_at(s(at), false), kbps(held), "t={at}");
            assert_eq!(t.capacity_at(s(at), true), kbps(looped), "looped t={at}");
        }
        assert_eq!(t.sample_at(s(0.7), false).unwrap().loss, Some(0.1));
        assert_eq!(t.sample_at(s(2.7), true).unwrap().delay, Some(Duration::from_ms(20)));
        assert_eq!(t.index_at(s(1.0), false), Some(1));
        let empty = Trace { samples: vec![], duration: Duration::ZERO };
        assert_eq!(empty.capacity_at(s(1.0), true), Bitrate::ZERO);
        assert_eq!(empty.next_change_after(s(1.0), true), None);
        assert_eq!(empty.mean_capacity(), Bitrate::ZERO);
    }

    #[test]
    fn trace_next_change_after() {
        let t = parse_csv(CSV).unwrap();
        assert_eq!(t.next_change_after(s(0.0), false), Some(s(0.5)));
        assert_eq!(t.next_change_after(s(0.5), false), Some(s(1.5)));
        assert_eq!(t.next_change_after(s(-3.0), false), Some(s(0.5)));
        assert_eq!(t.next_change_after(s(1.6), false), None);
        assert_eq!(t.next_change_after(s(1.6), true), Some(s(2.0)));
        assert_eq!(t.next_change_after(s(2.0), true), Some(s(2.5)));
        assert_eq!(t.next_change_after(s(7.5), true), Some(s(8.0)));
        assert_eq!(t.next_change_after(s(-0.2), true), Some(s(0.0)));

        // Boundaries between equal samples are skipped; so is the wrap when the last sample
        // equals the first.
        let t = Trace::new(vec![sample(0.0, 100), sample(1.0, 100), sample(2.0, 300), sample(3.0, 100)], Duration::from_secs(4)).unwrap();
        assert_eq!(t.next_change_after(s(0.0), false), Some(s(2.0)));
        assert_eq!(t.next_change_after(s(3.5), true), Some(s(6.0)));
        assert_eq!(t.next_change_after(s(2.5), true), Some(s(3.0)));
        // A trace that never changes.
        let c = Trace::constant(kbps(800), Duration::from_secs(10));
        assert_eq!(c.next_change_after(s(3.0), true), None);
        assert_eq!(c.next_change_after(s(3.0), false), None);
        // Loss alone changing counts as a change.
        let l = Trace::new(vec![sample(0.0, 100), TraceSample { loss: Some(0.5), ..sample(1.0, 100) }], Duration::from_secs(2)).unwrap();
        assert_eq!(l.next_change_after(s(0.2), false), Some(s(1.0)));
        assert_eq!(l.next_change_after(s(1.2), true), Some(s(2.0)));
    }

    #[test]
    fn trace_segments_scaled_and_csv_round_trip() {
        let t = parse_csv(CSV).unwrap();
        let seg: Vec<(Time, Time, Bitrate)> = t.segments().map(|g| (g.start, g.end, g.sample.capacity)).collect();
        assert_eq!(seg, vec![(s(0.0), s(0.5), kbps(1000)), (s(0.5), s(1.5), kbps(2000)), (s(1.5), s(2.0), kbps(500))]);
        let h = t.scaled(0.5);
        assert_eq!(h.samples.iter().map(|x| x.capacity).collect::<Vec<_>>(), vec![kbps(500), kbps(1000), kbps(250)]);
        assert_eq!(h.mean_capacity(), Bitrate::from_bps(687_500));
        assert_eq!(h.samples[1].loss, Some(0.1));
        assert_eq!(h.duration, t.duration);
        assert_eq!(t.scaled(-1.0).mean_capacity(), Bitrate::ZERO);
        assert_eq!(
            t.to_csv(),
            "time_s,capacity_kbps,loss_rate,delay_ms\n0,1000,,\n0.5,2000,0.1,20\n1.5,500,,\n2,500,,\n"
        );
        assert_eq!(parse_csv(&t.to_csv()).unwrap(), t);
        let odd = Trace::new(
            vec![TraceSample { start: Time::ZERO, capacity: Bitrate::from_bps(1), loss: Some(1e-7), delay: Some(Duration::from_us(1)) }],
            Duration::from_us(1),
        )
        .unwrap();
        assert_eq!(odd.to_csv(), "time_s,capacity_kbps,loss_rate,delay_ms\n0,0.001,0.0000001,0.001\n0.000001,0.001,0.0000001,0.001\n");
        assert_eq!(parse_csv(&odd.to_csv()).unwrap(), odd);
    }

    #[test]
    fn trace_csv_tolerates_bom_crlf_blank_lines_whitespace_and_column_order() {
        let messy = "\u{feff}time_s, capacity_kbps ,loss_rate,delay_ms  \r\n\r\n0,1000,, \r\n  \r\n0.5 , 2000 ,0.1,20\r\n1.5,500,,\r\n2,500,,\r\n\r\n";
        assert_eq!(parse_trace(messy, TraceFormat::Auto).unwrap(), parse_csv(CSV).unwrap());
        // Optional columns left out, or in another order.
        let short = parse_csv("time_s,capacity_kbps\n0,100\n1,200\n3,200\n").unwrap();
        assert_eq!(short.samples, vec![sample(0.0, 100), sample(1.0, 200)]);
        assert_eq!(short.duration, Duration::from_secs(3));
        let reordered = parse_csv("delay_ms,time_s,capacity_kbps\n5,0,100\n,1,100\n").unwrap();
        assert_eq!(reordered.samples[0].delay, Some(Duration::from_ms(5)));
        // Rows may stop before the empty optional fields.
        assert_eq!(parse_csv("time_s,capacity_kbps,loss_rate,delay_ms\n0,100\n1,100,\n").unwrap().samples, vec![sample(0.0, 100)]);
        // Fractional kbps keep their bits.
        assert_eq!(parse_csv("time_s,capacity_kbps\n0,1398.56\n5,1398.56\n").unwrap().samples[0].capacity, Bitrate::from_bps(1_398_560));
    }

    #[test]
    fn trace_csv_end_row() {
        // The end row's values are not used; it only gives the duration.
        let t = parse_csv("time_s,capacity_kbps\n0,100\n1,200\n1.5,999\n").unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 100), sample(1.0, 200)]);
        assert_eq!(t.duration, Duration::from_ms(1500));
        // A final row that repeats the previous row exactly (time and values) is a duplicated
        // end marker.
        let d = parse_csv("time_s,capacity_kbps\n0,100\n1,200\n2,200\n2,200\n").unwrap();
        assert_eq!(d.samples, vec![sample(0.0, 100), sample(1.0, 200)]);
        assert_eq!(d.duration, Duration::from_secs(2));
        // ... but not with different values, nor anywhere but at the end.
        assert_eq!(err_at("time_s,capacity_kbps\n0,100\n1,200\n2,200\n2,300\n", TraceFormat::Csv, 5), "line 5: time_s 2 is not after the previous row (2)");
        err_at("time_s,capacity_kbps\n0,100\n1,200\n1,200\n2,200\n", TraceFormat::Csv, 4);
        err_at("time_s,capacity_kbps\n0,100\n0,100\n", TraceFormat::Csv, 3);
    }

    #[test]
    fn trace_csv_errors_name_the_line() {
        let h = "time_s,capacity_kbps,loss_rate,delay_ms\n";
        let case = |rows: &str, line: usize| err_at(&format!("{h}{rows}"), TraceFormat::Csv, line);
        assert_eq!(case("0,100,,\n1,100,,\n3.4,100,,\n3.2,100,,\n4,100,,\n", 5), "line 5: time_s 3.2 is not after the previous row (3.4)");
        assert_eq!(case("0,100,,\n1,abc,,\n2,100,,\n", 3), "line 3: capacity_kbps `abc` is not a number");
        assert_eq!(case("0,100,,\nx,100,,\n", 3), "line 3: time_s `x` is not a number");
        assert_eq!(case("0,100,,\n1,-5,,\n2,100,,\n", 3), "line 3: capacity_kbps -5 is negative");
        assert_eq!(case("0,100,1.5,\n1,100,,\n", 2), "line 2: loss_rate 1.5 is outside [0, 1]");
        assert_eq!(case("0,100,-0.1,\n1,100,,\n", 2), "line 2: loss_rate -0.1 is outside [0, 1]");
        assert_eq!(case("0,100,,-3\n1,100,,\n", 2), "line 2: delay_ms -3 is negative");
        assert_eq!(case("0,100,,x\n1,100,,\n", 2), "line 2: delay_ms `x` is not a number");
        assert_eq!(case("0,NaN,,\n1,100,,\n", 2), "line 2: capacity_kbps is `NaN`, not a finite number");
        assert_eq!(case("0,100,,\ninf,100,,\n", 3), "line 3: time_s is `inf`, not a finite number");
        assert_eq!(case("0,100,nan,\n1,100,,\n", 2), "line 2: loss_rate is `nan`, not a finite number");
        assert_eq!(case("0,100,,\n-1,100,,\n", 3), "line 3: time_s -1 is negative");
        assert_eq!(case("0,1e13,,\n1,100,,\n", 2), "line 2: capacity_kbps 10000000000000 is too large (at most 1000000000000 kbit/s)");
        assert_eq!(case("0.5,100,,\n1,100,,\n", 2), "line 2: the first row must be at time_s 0, not 0.5");
        assert_eq!(case("0,100,,\n1,100,,,\n", 3), "line 3: the row has 5 fields but the header has 4 columns");
        assert_eq!(case("0,,,\n1,100,,\n", 2), "line 2: capacity_kbps is missing");
        assert_eq!(case("0,100,,\n", 2), "line 2: a trace needs at least two rows: the samples, then an end row whose time_s is the duration");
        assert_eq!(case("0,100,,\n0.0000001,100,,\n", 3), "line 3: time_s 0.0000001 is not after the previous row (0) (times are rounded to whole microseconds)");
        // Blank lines count in the line numbers.
        assert_eq!(case("\n0,100,,\n\n1,-1,,\n", 5), "line 5: capacity_kbps -1 is negative");
        // Header problems.
        assert_eq!(err_at("time_s,capacity_kbps\n", TraceFormat::Csv, 1), "line 1: empty trace: the header is not followed by any rows");
        assert_eq!(
            err_at("0,100\n1,100\n", TraceFormat::Csv, 1),
            "line 1: the first line must be the header `time_s,capacity_kbps,loss_rate,delay_ms`, found `0,100`"
        );
        assert_eq!(
            err_at("time_s,capacity_kbsp\n0,1\n1,1\n", TraceFormat::Auto, 1),
            "line 1: unknown column `capacity_kbsp` in the header (expected `time_s,capacity_kbps,loss_rate,delay_ms`)"
        );
        assert_eq!(err_at("time_s,loss_rate\n0,0\n1,0\n", TraceFormat::Csv, 1), "line 1: the header has no `capacity_kbps` column (expected `time_s,capacity_kbps,loss_rate,delay_ms`)");
        assert_eq!(err_at("time_s,capacity_kbps,time_s\n", TraceFormat::Csv, 1), "line 1: column `time_s` appears twice in the header");
        // No line at all.
        for empty in ["", "\u{feff}", "\n\r\n  \n"] {
            let e = parse_trace(empty, TraceFormat::Csv).unwrap_err();
            assert_eq!(e.line, None);
            assert!(e.to_string().starts_with("empty trace"), "{e}");
            assert_eq!(parse_trace(empty, TraceFormat::Auto).unwrap_err().to_string(), "empty trace: the input has no data");
        }
    }

    #[test]
    fn trace_mahimahi_hand_computed() {
        // 100 ms bins over T = 420 ms: [0,100) 4 opportunities → 4·12000 bit / 0.1 s = 480 kbit/s,
        // [100,200) 2 → 240, [200,300) 3 → 360, [300,400) 0, [400,420) holds the one at T = 420:
        // 12000 bit / 0.02 s = 600 kbit/s.
        let text = "0\n0\n50\n99\n100\n150\n250\n250\n250\n420\n";
        let t = parse_trace(text, TraceFormat::Mahimahi).unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 480), sample(0.1, 240), sample(0.2, 360), sample(0.3, 0), sample(0.4, 600)]);
        assert_eq!(t.duration, Duration::from_ms(420));
        assert_eq!(parse_trace(text, TraceFormat::Auto).unwrap(), t);
        // (480·100 + 240·100 + 360·100 + 600·20) / 420 = 285.714… kbit/s
        assert_eq!(t.mean_capacity(), Bitrate::from_bps(285_714));
        // 200 ms bins: 6 → 360 kbit/s, 3 → 180, and [400,420) 1 → 600.
        let t = parse_mahimahi(text, Duration::from_ms(200)).unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 360), sample(0.2, 180), sample(0.4, 600)]);
        // T a multiple of the bin: the opportunity at T counts in the last bin.
        let t = parse_mahimahi("0\n100\n200\n", DEFAULT_MAHIMAHI_BIN).unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 120), sample(0.1, 240)]);
        assert_eq!(t.duration, Duration::from_ms(200));
        // Equal adjacent bins merge; empty stretches become one zero sample.
        let t = parse_mahimahi("0\n1\n100\n101\n300\n", DEFAULT_MAHIMAHI_BIN).unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 240), sample(0.2, 120)]);
        let t = parse_mahimahi("0\n1000\n", DEFAULT_MAHIMAHI_BIN).unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 120), sample(0.1, 0), sample(0.9, 120)]);
        assert_eq!(t.next_change_after(s(0.05), true), Some(s(0.1)));
        assert_eq!(t.next_change_after(s(0.95), true), Some(s(1.1)));
        // A huge gap costs no memory.
        let t = parse_mahimahi("0\n999999999999\n", Duration::from_us(1)).unwrap();
        assert_eq!(t.samples.len(), 3);
        // Non-round bins: 1 opportunity in 3 ms = 4 Mbit/s, 2 in 3 ms = 8 Mbit/s, 1 in 1 ms.
        let t = parse_mahimahi("0\n3\n4\n7\n", Duration::from_ms(3)).unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 4000), sample(0.003, 8000), sample(0.006, 12000)]);
        // CRLF, BOM, blank lines and whitespace.
        let messy = "\u{feff}0\r\n0 \r\n\r\n50\r\n 99\r\n100\r\n150\r\n250\r\n250\r\n250\r\n420\r\n\r\n";
        assert_eq!(parse_trace(messy, TraceFormat::Auto).unwrap(), parse_mahimahi(text, DEFAULT_MAHIMAHI_BIN).unwrap());
    }

    #[test]
    fn trace_mahimahi_errors() {
        let m = TraceFormat::Mahimahi;
        assert_eq!(err_at("0\n5\n7\n3\n9\n", m, 4), "line 4: timestamp 3 is before the previous one (7); mahimahi timestamps must not decrease");
        assert_eq!(err_at("0\n5\n7.5\n", m, 3), "line 3: timestamp `7.5` is not a whole number of milliseconds");
        assert_eq!(err_at("0\n-5\n", m, 2), "line 2: timestamp `-5` is negative");
        assert_eq!(err_at("0\n\n0\n", m, 3), "line 3: the last timestamp is 0, so the trace lasts no time (mahimahi loops with the last timestamp as its period)");
        assert_eq!(err_at("0\n10000000000000\n", m, 2), "line 2: timestamp 10000000000000 ms is too large (at most 1000000000000 ms)");
        assert_eq!(parse_trace("", m).unwrap_err(), TraceError::new("empty trace: no timestamps"));
        assert_eq!(parse_mahimahi("0\n10\n", Duration::ZERO).unwrap_err().to_string(), "the mahimahi bin width must be positive, not 0.000ms");
        // Auto detection routes a bad line of a mahimahi file to the mahimahi parser.
        err_at("0\n1\nx\n", TraceFormat::Auto, 3);
    }

    const GYM: &str = r#"{
  "type": "video",
  "downlink": {},
  "uplink": {
    "trace_pattern": [
      {"duration": 200, "capacity": 300, "loss": 0.0, "jitter": 0.0},
      {"duration": 350.5, "capacity": 2.4, "loss": 0.25, "rtt": 40},
      {"duration": 449.5, "capacity": 0}
    ]
  }
}"#;

    #[test]
    fn trace_opennetlab_hand_computed() {
        let t = parse_trace(GYM, TraceFormat::OpenNetLab).unwrap();
        assert_eq!(
            t.samples,
            vec![
                TraceSample { start: Time::ZERO, capacity: kbps(300), loss: Some(0.0), delay: None },
                TraceSample { start: s(0.2), capacity: Bitrate::from_bps(2400), loss: Some(0.25), delay: Some(Duration::from_ms(20)) },
                TraceSample { start: s(0.5505), capacity: Bitrate::ZERO, loss: None, delay: None },
            ]
        );
        assert_eq!(t.duration, Duration::from_secs(1));
        assert_eq!(parse_trace(GYM, TraceFormat::Auto).unwrap(), t);
        assert_eq!(parse_trace(&format!("\u{feff}{}", GYM.replace('\n', "\r\n")), TraceFormat::Auto).unwrap(), t);
        // (300·200 + 2.4·350.5) / 1000 = 60.8412 kbit/s
        assert_eq!(t.mean_capacity(), Bitrate::from_bps(60_841));
        // Minimal form, as in most gym files.
        let t = parse_opennetlab(r#"{"uplink":{"trace_pattern":[{"capacity":0,"duration":200},{"capacity":1720,"duration":199}]}}"#).unwrap();
        assert_eq!(t.samples, vec![sample(0.0, 0), sample(0.2, 1720)]);
        assert_eq!(t.duration, Duration::from_ms(399));
    }

    #[test]
    fn trace_opennetlab_errors() {
        let o = TraceFormat::OpenNetLab;
        let seg = |body: &str| format!("{{\"uplink\": {{\"trace_pattern\": [\n  {{\"duration\": 200, \"capacity\": 5}},\n  {body}\n]}}}}");
        assert_eq!(err_at(&seg(r#"{"duration": 200, "capacity": -5}"#), o, 3), "line 3: uplink.trace_pattern[1].capacity: capacity (kbit/s) -5 is negative");
        assert_eq!(err_at(&seg(r#"{"duration": 200, "capacity": 5, "loss": 1.5}"#), o, 3), "line 3: uplink.trace_pattern[1].loss: loss 1.5 is outside [0, 1]");
        assert_eq!(err_at(&seg(r#"{"duration": 0, "capacity": 5}"#), o, 3), "line 3: uplink.trace_pattern[1].duration: duration 0 ms must be at least 0.001 ms");
        assert_eq!(err_at(&seg(r#"{"duration": 10, "capacity": 5, "rtt": -2}"#), o, 3), "line 3: uplink.trace_pattern[1].rtt: rtt (ms) -2 is negative");
        assert_eq!(err_at(&seg(r#"{"duration": 10, "capacity": "x"}"#), o, 3), "line 3: uplink.trace_pattern[1].capacity: invalid type: string \"x\", expected f64");
        assert_eq!(err_at(&seg(r#"{"capacity": 5}"#), o, 3), "line 3: uplink.trace_pattern[1]: missing field `duration`");
        assert_eq!(err_at(&seg(r#"{"duration": 10, "capacity": 5}"#).replace("]}}", "]}} trailing"), o, 4), "line 4: trailing characters");
        assert_eq!(err_at("{\n\"uplink\": {\"trace_pattern\": [\n", o, 3), "line 3: uplink.trace_pattern: EOF while parsing a list");
        let e = parse_trace(r#"{"downlink": {"trace_pattern": []}}"#, o).unwrap_err();
        assert_eq!(e.line, None);
        assert!(e.to_string().starts_with("no `uplink.trace_pattern` list"), "{e}");
        assert_eq!(parse_trace(r#"{"uplink": {"trace_pattern": []}}"#, o).unwrap_err().to_string(), "empty trace: `uplink.trace_pattern` has no segments");
        assert_eq!(
            parse_trace(r#"{"uplink": {"trace_pattern": [{"duration": 1e12, "capacity": 1}, {"duration": 1e12, "capacity": 1}]}}"#, o).unwrap_err().to_string(),
            "the segments last 2000000000000 ms in all, too long (at most 1000000000 s)"
        );
    }

    #[test]
    fn trace_format_detection_and_names() {
        assert_eq!(detect_format("time_s,capacity_kbps\n0,1\n1,1").unwrap(), TraceFormat::Csv);
        assert_eq!(detect_format("\u{feff}\n  {\"uplink\": {}}").unwrap(), TraceFormat::OpenNetLab);
        assert_eq!(detect_format("\r\n12\n13\n").unwrap(), TraceFormat::Mahimahi);
        let e = detect_format("\n# comment\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.to_string().starts_with("line 2: cannot tell the trace format from `# comment`"), "{e}");
        for (f, name) in [(TraceFormat::Auto, "auto"), (TraceFormat::Csv, "csv"), (TraceFormat::Mahimahi, "mahimahi"), (TraceFormat::OpenNetLab, "opennetlab")] {
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<TraceFormat>(&format!("\"{name}\"")).unwrap(), f);
            assert_eq!(name.parse::<TraceFormat>().unwrap(), f);
            assert_eq!(f.to_string(), name);
        }
        assert!(serde_json::from_str::<TraceFormat>("\"OpenNetLab\"").is_err());
        assert_eq!("OpenNetLab".parse::<TraceFormat>().unwrap(), TraceFormat::OpenNetLab);
        assert!("json".parse::<TraceFormat>().is_err());
        assert_eq!(TraceFormat::default(), TraceFormat::Auto);
    }

    #[test]
    fn trace_validate_and_error_display() {
        assert_eq!(TraceError::new("x").to_string(), "x");
        assert_eq!(TraceError::at(17, "x").to_string(), "line 17: x");
        assert!(Trace::new(vec![], Duration::from_secs(1)).is_err());
        assert!(Trace::new(vec![sample(0.5, 1)], Duration::from_secs(1)).is_err());
        assert!(Trace::new(vec![sample(0.0, 1), sample(0.0, 2)], Duration::from_secs(1)).is_err());
        assert!(Trace::new(vec![sample(0.0, 1), sample(1.0, 2)], Duration::from_secs(1)).is_err());
        assert!(Trace::new(vec![sample(0.0, -1)], Duration::from_secs(1)).is_err());
        assert!(Trace::new(vec![TraceSample { loss: Some(2.0), ..sample(0.0, 1) }], Duration::from_secs(1)).is_err());
        assert!(Trace::new(vec![TraceSample { delay: Some(Duration::from_ms(-1)), ..sample(0.0, 1) }], Duration::from_secs(1)).is_err());
        assert!(Trace::new(vec![sample(0.0, 1), sample(0.5, 2)], Duration::from_secs(1)).is_ok());
    }

    /// A valid trace: up to 20 samples with strictly increasing starts.
    fn arb_trace() -> impl Strategy<Value = Trace> {
        let one = (1i64..5_000_000, 0i64..100_000_000_000, proptest::option::of(0.0f64..=1.0), proptest::option::of(0i64..10_000_000));
        (proptest::collection::vec(one, 1..20), 1i64..5_000_000).prop_map(|(v, tail)| {
            let mut start = 0;
            let mut samples = Vec::new();
            for (gap, bps, loss, delay_us) in v {
                samples.push(TraceSample { start: Time::from_us(start), capacity: Bitrate::from_bps(bps), loss, delay: delay_us.map(Duration::from_us) });
                start += gap;
            }
            let last = samples.last().unwrap().start.as_us();
            Trace { samples, duration: Duration::from_us(last + tail) }
        })
    }

    /// Exercise every query on a parsed trace; none may panic and the invariants must hold.
    fn exercise(t: &Trace, probe: i64) {
        t.validate().unwrap();
        for looped in [false, true] {
            let at = Time::from_us(probe);
            let c = t.capacity_at(at, looped);
            assert!(c >= Bitrate::ZERO);
            if let Some(n) = t.next_change_after(at, looped) {
                assert!(n > at);
                assert_ne!(t.sample_at(n, looped).map(|x| (x.capacity, x.delay)), None);
            }
        }
        let _ = (t.mean_capacity(), t.scaled(1.5), t.to_csv());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn trace_garbage_never_panics(text in any::<String>(), probe in any::<i64>(), bin_us in 1i64..10_000_000) {
            for f in TraceFormat::ALL {
                if let Ok(t) = parse_trace(&text, f) { exercise(&t, probe); }
            }
            if let Ok(t) = parse_mahimahi(&text, Duration::from_us(bin_us)) { exercise(&t, probe); }
        }

        #[test]
        fn trace_near_miss_garbage_never_panics(
            lines in proptest::collection::vec("[0-9 .,eE+\\-naifNI\\r{}\\[\\]:\"a-z_]{0,24}", 0..12),
            header in prop::sample::select(vec!["", "time_s,capacity_kbps,loss_rate,delay_ms\n", "time_s,capacity_kbps\n", "{\"uplink\":{\"trace_pattern\":[\n"]),
            probe in any::<i64>(),
            bin_us in 1i64..1_000_000,
        ) {
            let text = format!("{header}{}", lines.join("\n"));
            for f in TraceFormat::ALL {
                if let Ok(t) = parse_trace(&text, f) { exercise(&t, probe); }
            }
            if let Ok(t) = parse_mahimahi(&text, Duration::from_us(bin_us)) { exercise(&t, probe); }
        }

        #[test]
        fn trace_mahimahi_random_stamps(mut stamps in proptest::collection::vec(0u64..5_000, 1..200), bin_ms in 1i64..300, probe in any::<i64>()) {
            stamps.sort_unstable();
            let text: String = stamps.iter().map(|s| format!("{s}\n")).collect();
            let last = *stamps.last().unwrap();
            match parse_mahimahi(&text, Duration::from_ms(bin_ms)) {
                Ok(t) => {
                    exercise(&t, probe);
                    prop_assert_eq!(t.duration, Duration::from_ms(last as i64));
                    // Every opportunity is accounted for: capacity × time = packets × 1500 B.
                    let bits: i128 = t.segments().map(|g| g.sample.capacity.bps() as i128 * (g.end - g.start).as_us() as i128).sum();
                    let want = stamps.len() as i128 * 12_000 * 1_000_000;
                    prop_assert!((bits - want).abs() <= t.samples.len() as i128 * 1_000_000, "{} vs {}", bits, want);
                }
                Err(e) => prop_assert_eq!(last, 0, "{}", e),
            }
        }

        #[test]
        fn trace_csv_round_trip(t in arb_trace(), probe in any::<i64>()) {
            let back = parse_csv(&t.to_csv()).unwrap();
            prop_assert_eq!(&back, &t);
            exercise(&back, probe);
            // capacity_at agrees with a linear scan.
            let local = probe.rem_euclid(t.duration.as_us());
            let want = t.samples.iter().rev().find(|x| x.start.as_us() <= local).unwrap().capacity;
            prop_assert_eq!(t.capacity_at(Time::from_us(probe), true), want);
        }
    }
}
