//! Parses every bandwidth trace shipped with ratelab (`python/ratelab/traces/`) and the parser
//! fixtures in `tests/data/` (see `tests/data/NOTICE`).

use ratelab_core::network::trace::{parse_csv, parse_mahimahi, parse_opennetlab, parse_trace, Trace, TraceFormat, TraceSample, DEFAULT_MAHIMAHI_BIN};
use ratelab_core::units::{Bitrate, Duration, Time};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

fn crate_dir() -> PathBuf { PathBuf::from(env!("CARGO_MANIFEST_DIR")) }
fn shipped_dir() -> PathBuf { crate_dir().join("../../python/ratelab/traces") }
fn read(path: PathBuf) -> String { fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) }
fn fixture(name: &str) -> String { read(crate_dir().join("tests/data").join(name)) }

/// Split one CSV record (double-quoted fields may hold commas; `""` is a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// `index.csv` as file name → (column → value).
fn index() -> BTreeMap<String, BTreeMap<String, String>> {
    let text = read(shipped_dir().join("index.csv"));
    let mut lines = text.lines();
    let header = csv_fields(lines.next().unwrap());
    lines
        .map(|l| {
            let f = csv_fields(l);
            assert_eq!(f.len(), header.len(), "index.csv: {l}");
            let row: BTreeMap<String, String> = header.iter().cloned().zip(f).collect();
            (row["file"].clone(), row)
        })
        .collect()
}

fn kbps(k: i64) -> Bitrate { Bitrate::from_kbps(k) }
fn at(s: f64, k: i64) -> TraceSample { TraceSample { start: Time::from_secs_f64(s), capacity: kbps(k), loss: None, delay: None } }

#[test]
fn shipped_traces_all_parse_and_match_index() {
    let index = index();
    let files: BTreeSet<String> = fs::read_dir(shipped_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".csv") && n != "index.csv" && n != "split.csv") // metadata beside the traces
        .collect();
    assert_eq!(files.len(), 40);
    assert_eq!(files, index.keys().cloned().collect::<BTreeSet<_>>(), "index.csv must list exactly the shipped files");
    for name in &files {
        let row = &index[name];
        assert!(["pensieve", "opennetlab"].contains(&row["source"].as_str()), "{name}: only MIT and BSD-3-Clause sources are shipped");
        let text = read(shipped_dir().join(name));
        let t = parse_trace(&text, TraceFormat::Auto).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(parse_csv(&text).unwrap(), t, "{name}");
        t.validate().unwrap();
        let num = |c: &str| row[c].parse::<f64>().unwrap_or_else(|_| panic!("{name}: {c}"));
        assert_eq!(t.duration, Duration::from_secs_f64(num("duration_s")), "{name}");
        assert_eq!(t.samples.len() + 1, num("rows") as usize, "{name}: rows include the end row");
        assert!((t.mean_capacity().kbps_f64() - num("mean_kbps")).abs() <= 0.05 + 1e-9, "{name}: mean {} vs {}", t.mean_capacity(), num("mean_kbps"));
        let max = t.samples.iter().map(|s| s.capacity).max().unwrap();
        assert!((max.kbps_f64() - num("max_kbps")).abs() <= 0.05 + 1e-9, "{name}: max {max} vs {}", num("max_kbps"));
        // Queries hold up on real data: each step is found by capacity_at, and the next change
        // after a step's start is a later step's start.
        for (i, s) in t.samples.iter().enumerate() {
            assert_eq!(t.capacity_at(s.start, false), s.capacity, "{name} sample {i}");
            assert_eq!(t.capacity_at(s.start + t.duration, true), s.capacity, "{name} sample {i}, second lap");
            if let Some(n) = t.next_change_after(s.start, false) {
                assert!(n > s.start && t.sample_at(n, false).is_some_and(|x| !x.same_values(s)), "{name} sample {i}");
            }
        }
    }
}

#[test]
fn opennetlab_trace_fixtures_match_shipped_csv() {
    for name in ["WIRED_900kbs", "4G_3mbps"] {
        let json = fixture(&format!("opennetlab/{name}.json"));
        let t = parse_trace(&json, TraceFormat::Auto).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(parse_opennetlab(&json).unwrap(), t);
        let csv = parse_csv(&read(shipped_dir().join(format!("opennetlab-{name}.csv")))).unwrap();
        assert_eq!(t, csv, "{name}: the JSON original and the shipped CSV must give the same trace");
    }
    // Hand-checked against the files: the first segments of WIRED_900kbs are 504 ms at 790,
    // 507 ms at 900 and then 879 kbit/s, all with "loss": 0.0; 114 segments, 57 626 ms in all.
    let w = parse_opennetlab(&fixture("opennetlab/WIRED_900kbs.json")).unwrap();
    assert_eq!(w.samples.len(), 114);
    assert_eq!(w.duration, Duration::from_ms(57_626));
    let lossless = |s: TraceSample| TraceSample { loss: Some(0.0), ..s };
    assert_eq!(&w.samples[..3], &[lossless(at(0.0, 790)), lossless(at(0.504, 900)), lossless(at(1.011, 879))]);
    assert_eq!(w.capacity_at(Time::from_ms(1000), false), kbps(900));
    // 4G_3mbps: compact segments without loss, 306 segments, 60 889 ms, one 8 Gbit/s artefact.
    let g = parse_opennetlab(&fixture("opennetlab/4G_3mbps.json")).unwrap();
    assert_eq!(g.samples.len(), 306);
    assert_eq!(g.duration, Duration::from_ms(60_889));
    assert_eq!(&g.samples[..2], &[at(0.0, 0), at(0.2, 1720)]);
    assert_eq!(g.samples.iter().map(|s| s.capacity).max(), Some(kbps(8_039_999)));
    assert!(g.samples.iter().all(|s| s.loss.is_none() && s.delay.is_none()));
}

#[test]
fn mahimahi_trace_fixture_hand_computed() {
    let text = fixture("mahimahi/synthetic-420ms.trace");
    // Timestamps 0 0 50 99 | 100 150 | 250 250 250 | - | 420, T = 420 ms. With 100 ms bins:
    // 4 × 12 000 bit / 0.1 s = 480 kbit/s, then 240, 360, 0, and the last bin [400, 420) holds
    // the opportunity at T: 12 000 bit / 0.02 s = 600 kbit/s.
    let t = parse_trace(&text, TraceFormat::Auto).unwrap();
    assert_eq!(t, parse_mahimahi(&text, DEFAULT_MAHIMAHI_BIN).unwrap());
    assert_eq!(t.samples, vec![at(0.0, 480), at(0.1, 240), at(0.2, 360), at(0.3, 0), at(0.4, 600)]);
    assert_eq!(t.duration, Duration::from_ms(420));
    assert_eq!(t.mean_capacity(), Bitrate::from_bps(285_714)); // 120 000 kbit·ms / 420 ms
    // mahimahi loops with period T.
    assert_eq!(t.capacity_at(Time::from_ms(420 + 150), true), kbps(240));
    assert_eq!(t.next_change_after(Time::from_ms(410), true), Some(Time::from_ms(420)));
    // 50 ms bins: [0,50) 2 → 480, [50,100) 2 → 480 (merged), [100,150) 1 → 240,
    // [150,200) 1 → 240 (merged), [200,250) 0, [250,300) 3 → 720, [300,400) 0, [400,420) 1 → 600.
    let t: Trace = parse_mahimahi(&text, Duration::from_ms(50)).unwrap();
    assert_eq!(t.samples, vec![at(0.0, 480), at(0.1, 240), at(0.2, 0), at(0.25, 720), at(0.3, 0), at(0.4, 600)]);
}
