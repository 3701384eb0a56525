//! OpenNetLab (AlphaRTC gym) JSON traces.

use super::*;

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
