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
