//! mahimahi traces: one delivery opportunity per line, binned into piecewise-constant capacity.

use super::*;

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
