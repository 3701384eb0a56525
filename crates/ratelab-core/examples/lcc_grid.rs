//! Grid search for LCC's open constants (spec 3.5/3.6: ε, α, δ, R, M, bandwidths and the
//! readings of 3.6), over several developer traces and the paper's lcc-loss scenario — never
//! over a single scenario.
//!
//! ```text
//! cargo run --release -p ratelab-core --example lcc_grid            # all stages
//! cargo run --release -p ratelab-core --example lcc_grid -- A B     # some stages
//! ```
//!
//! Scenario set (every combination runs all of them):
//! * lcc-loss (paper 000 III-B): 1 Mbit/s, 50 ms one-way, unlimited queue, random loss
//!   0/2/5/10 %, 100 s, seeds 1–4 (the seed also sets the encoder's frame phase);
//! * six shipped traces (`python/ratelab/traces`): 3G bus/car/metro/tram (Pensieve) and
//!   OpenNetLab 4G 700 kbit/s and wired 900 kbit/s, 60 s each, 50 ms one-way, drop-tail queue
//!   of 1 s at the trace's mean capacity, seeds 1 and 2.
//!
//! Score of a run: `U − max(0, T_q − 25 ms)/100 ms`, where U is the flow's throughput over the
//! mean capacity and T_q its mean queuing delay: LCC's own target is 25 ms of queue
//! (paper II-C), so delay above it costs 0.1 utilization per 10 ms. The score of a combination
//! is the mean over all runs. The kernel shape stays the product kernel of spec 3.4 step 7 (the
//! full-covariance option is evaluated once at the chosen point, for information). Stages are a coordinate search: each stage is a full grid over
//! its parameters, all other parameters held at the best values found so far; all stages run
//! a second time (A2–F2) after the first pass.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use serde_json::{json, Map, Value};
use std::path::PathBuf;

const TRACES: &[&str] = &[
    "pensieve-bus.ljansbakken-oslo-report.2010-09-28_1407CEST.csv",
    "pensieve-car.aarnes-elverum-report.2011-02-10_1611CET.csv",
    "pensieve-metro.kalbakken-jernbanetorget-report.2010-10-18_0951CEST.csv",
    "pensieve-tram.jernbanetorget-ljabru-report.2010-12-09_1222CET.csv",
    "opennetlab-4G_700kbps.csv",
    "opennetlab-WIRED_900kbs.csv",
];

struct Case {
    name: String,
    scenario: Value,
    seeds: Vec<u64>,
}

fn traces_dir() -> PathBuf { PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python/ratelab/traces") }

/// Mean capacity of a `time_s,capacity_kbps,...` trace over its first `dur` seconds.
fn mean_kbps(content: &str, dur: f64) -> f64 {
    let rows: Vec<(f64, f64)> = content.lines().skip(1).filter_map(|l| {
        let mut f = l.split(',');
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    }).collect();
    let (mut acc, mut t_used) = (0.0, 0.0);
    for (i, (t, c)) in rows.iter().enumerate() {
        if *t >= dur { break; }
        let end = rows.get(i + 1).map_or(dur, |n| n.0.min(dur));
        acc += c * (end - t);
        t_used += end - t;
    }
    if t_used > 0.0 { acc / t_used } else { 1000.0 }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for loss in [0.0, 0.02, 0.05, 0.10] {
        v.push(Case {
            name: format!("loss{}", (loss * 100.0) as u32),
            scenario: json!({
                "name": "lcc-loss", "duration_s": 100,
                "link": {"capacity_kbps": 1000, "loss": loss},
                "flows": [{"kind": "media", "one_way_delay_ms": 50, "media": {"min_kbps": 50, "max_kbps": 2500, "start_kbps": 300}}],
                "metrics": {"packet_log": false}
            }),
            seeds: vec![1, 2, 3, 4],
        });
    }
    for t in TRACES {
        let path = traces_dir().join(t);
        let content = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mean = mean_kbps(&content, 60.0);
        v.push(Case {
            name: t.trim_end_matches(".csv").chars().take(24).collect(),
            scenario: json!({
                "name": "lcc-trace", "duration_s": 60,
                "link": {"trace": path.display().to_string(), "trace_content": content, "queue": {"ms": 1000, "rate_kbps": mean}},
                "flows": [{"kind": "media", "one_way_delay_ms": 50, "media": {"min_kbps": 50, "max_kbps": 6000, "start_kbps": 300}}],
                "metrics": {"packet_log": false}
            }),
            seeds: vec![1, 2],
        });
    }
    v
}

#[derive(Clone, Debug, Default)]
struct Eval {
    /// (case index, U, T_q mean, T_q p95) per run.
    runs: Vec<(usize, f64, f64, f64)>,
}

impl Eval {
    fn score(&self) -> f64 {
        let n = self.runs.len().max(1) as f64;
        self.runs.iter().map(|(_, u, q, _)| u - (q - 25.0).max(0.0) / 100.0).sum::<f64>() / n
    }
    fn mean_u(&self, cases: &[usize]) -> f64 {
        let xs: Vec<f64> = self.runs.iter().filter(|r| cases.contains(&r.0)).map(|r| r.1).collect();
        xs.iter().sum::<f64>() / xs.len().max(1) as f64
    }
    fn mean_q(&self) -> f64 { self.runs.iter().map(|r| r.2).sum::<f64>() / self.runs.len().max(1) as f64 }
    fn mean_p95(&self) -> f64 { self.runs.iter().map(|r| r.3).sum::<f64>() / self.runs.len().max(1) as f64 }
}

fn evaluate(cases: &[Case], controller: &str, params: &Value) -> Eval {
    let mut ev = Eval::default();
    for (i, c) in cases.iter().enumerate() {
        let mut sc = c.scenario.clone();
        sc["flows"][0]["controller"] = json!(controller);
        sc["flows"][0]["params"] = params.clone();
        let sc = Scenario::from_json(&sc.to_string()).expect("scenario");
        for &seed in &c.seeds {
            let mut sim = build_simulation(&sc, seed, None).expect("build");
            sim.run_to_end();
            let s = sim.summary();
            let f = &s.flows[0];
            ev.runs.push((i, f.utilization, f.queue_delay_ms_mean.unwrap_or(0.0), f.queue_delay_ms_p95.unwrap_or(0.0)));
        }
    }
    ev
}

fn row(label: &str, ev: &Eval, cases: &[Case]) -> String {
    let per_loss: Vec<String> = (0..4).map(|i| format!("{:.3}", ev.mean_u(&[i]))).collect();
    let traces: Vec<usize> = (4..cases.len()).collect();
    format!("| {label} | {} | {:.3} | {:.1} | {:.1} | {:.4} |", per_loss.join(" | "), ev.mean_u(&traces), ev.mean_q(), ev.mean_p95(), ev.score())
}

fn header() -> String {
    "| parameters | U 0 % | U 2 % | U 5 % | U 10 % | U traces | T_q mean (ms) | T_q p95 (ms) | score |\n|---|---|---|---|---|---|---|---|---|".into()
}

/// A stage: its name and the parameters it grids over (full cartesian product), with values.
type Stage<'a> = (&'a str, Vec<(&'a str, Vec<Value>)>);

/// All combinations of the stage's parameter values.
fn combinations(grid: &[(&str, Vec<Value>)]) -> Vec<Vec<(String, Value)>> {
    let mut out: Vec<Vec<(String, Value)>> = vec![vec![]];
    for (name, values) in grid {
        out = out.into_iter().flat_map(|c| values.iter().map(move |v| {
            let mut c = c.clone();
            c.push((name.to_string(), v.clone()));
            c
        })).collect();
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let j = |v: &[Value]| v.to_vec();
    let first: Vec<Stage> = vec![
        ("A", vec![("delta", j(&[json!(0.02), json!(0.05), json!(0.1), json!(0.2)])), ("explore_gain", j(&[json!(0.0), json!(0.005), json!(0.01), json!(0.02)]))]),
        ("B", vec![("epoch_ms", j(&[json!(25), json!(50), json!(100)])), ("alpha", j(&[json!(0.1), json!(0.2), json!(0.5)]))]),
        ("C", vec![("exorbitant_ratio", j(&[json!(1.5), json!(2.0), json!(3.0)])), ("backoff", j(&[json!(0.5), json!(0.7), json!(0.85)])), ("backoff_once_per_rtt", j(&[json!(false), json!(true)]))]),
        ("D", vec![("bandwidth_scale", j(&[json!(0.5), json!(1.0), json!(2.0)])), ("min_bandwidth_ms", j(&[json!(0.5), json!(2.0)]))]),
        ("E", vec![("tc_clamp", j(&[json!("none"), json!("band"), json!("data")])), ("pairing", j(&[json!("send-aligned"), json!("literal")]))]),
        ("F", vec![("rate_source", j(&[json!("measured"), json!("target")])), ("rate_window_ms", j(&[json!(0), json!(100), json!(250)]))]),
    ];
    // a second pass over every stage, since the winners depend on each other
    let second: Vec<Stage> = first.iter().map(|(n, g)| (match *n { "A" => "A2", "B" => "B2", "C" => "C2", "D" => "D2", "E" => "E2", _ => "F2" }, g.clone())).collect();
    let stages: Vec<Stage> = first.into_iter().chain(second).collect();
    let selected: Vec<&str> = if args.is_empty() { stages.iter().map(|s| s.0).collect() } else { args.iter().map(|s| s.as_str()).collect() };
    let cases = cases();
    println!("Scenario set: {}", cases.iter().map(|c| format!("{} (seeds {:?})", c.name, c.seeds)).collect::<Vec<_>>().join(", "));
    println!();
    println!("Reference: GCC profile m60 on the same set");
    println!("{}", header());
    println!("{}", row("gcc m60", &evaluate(&cases, "gcc", &json!({"profile": "m60"})), &cases));
    // start: spec 3.5's proposals (ε 50, α 0.2, δ 0.1, R 2, M 0.5, Scott bandwidth) and the
    // readings of spec 3.6 (send-aligned pairs, one-epoch measured rate), without exploration
    let mut best: Map<String, Value> = serde_json::from_value(json!({
        "epoch_ms": 50, "alpha": 0.2, "delta": 0.1, "exorbitant_ratio": 2.0, "backoff": 0.5,
        "bandwidth_scale": 1.0, "min_bandwidth_ms": 0.5, "kernel": "product", "tc_clamp": "data",
        "pairing": "send-aligned", "rate_source": "measured", "rate_window_ms": 0, "pacing_factor": 2.5,
        "explore_gain": 0.0, "backoff_once_per_rtt": false
    })).unwrap_or_default();
    for (name, grid) in &stages {
        if !selected.contains(name) { continue; }
        println!();
        println!("Stage {name}: {} (others: {})", grid.iter().map(|g| g.0).collect::<Vec<_>>().join(" × "), Value::Object(best.clone()));
        println!("{}", header());
        let mut stage_best: Option<(f64, Map<String, Value>)> = None;
        for combo in combinations(grid) {
            let mut p = best.clone();
            for (k, v) in &combo { p.insert(k.clone(), v.clone()); }
            let ev = evaluate(&cases, "lcc", &Value::Object(p.clone()));
            let label = combo.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ");
            println!("{}", row(&label, &ev, &cases));
            let sc = ev.score();
            if stage_best.as_ref().is_none_or(|(s, _)| sc > *s) { stage_best = Some((sc, p)); }
        }
        if let Some((s, p)) = stage_best {
            println!("best of stage {name}: score {s:.4}");
            best = p;
        }
    }
    println!();
    println!("chosen: {}", Value::Object(best.clone()));
    // the kernel shape is fixed to the product kernel of spec 3.4 step 7; for information, the
    // full-covariance kernel at the chosen point
    println!();
    println!("For comparison, the chosen point with the other kernel shape:");
    println!("{}", header());
    let mut full = best.clone();
    full.insert("kernel".into(), json!("full"));
    println!("{}", row("kernel=\"full\"", &evaluate(&cases, "lcc", &Value::Object(full)), &cases));
}
