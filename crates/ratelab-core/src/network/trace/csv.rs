//! The ratelab common CSV format (`time_s,capacity_kbps,loss_rate,delay_ms`, step semantics).

use super::*;

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
