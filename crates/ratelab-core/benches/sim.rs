//! Simulator throughput: simulated seconds per wall second for the `ratelab bench` cases.
//! Run: `cargo bench -p ratelab-core --bench sim`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid bench scenario") }

fn cases() -> Vec<(&'static str, Scenario)> {
    let media = |c: &str| serde_json::json!({"kind": "media", "controller": c, "media": {"max_kbps": 10000}});
    vec![
        ("single_gcc_2mbps_60s", scenario(serde_json::json!({
            "name": "bench-single", "duration_s": 60, "link": {"capacity_kbps": 2000, "queue": {"ms": 300}},
            "flows": [media("gcc")], "metrics": {"packet_log": false}}))),
        ("three_gcc_12mbps_60s", scenario(serde_json::json!({
            "name": "bench-three", "duration_s": 60, "link": {"capacity_kbps": 12000, "queue": {"ms": 300}},
            "flows": [media("gcc"), media("gcc"), media("gcc")], "metrics": {"packet_log": false}}))),
        ("single_fixed_2mbps_60s", scenario(serde_json::json!({
            "name": "bench-fixed", "duration_s": 60, "link": {"capacity_kbps": 2000, "queue": {"ms": 300}},
            "flows": [{"kind": "media", "controller": "fixed", "params": {"rate_kbps": 1800}}], "metrics": {"packet_log": false}}))),
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    for (name, sc) in cases() {
        g.throughput(Throughput::Elements(sc.duration_s as u64));
        g.bench_function(name, |b| b.iter(|| {
            let mut sim = build_simulation(&sc, 1, None).expect("bench scenario builds");
            sim.run_to_end();
            sim.summary()
        }));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
