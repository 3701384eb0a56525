//! R3Net inference time per 50-ms decision (issue 5 target ≤ 50 µs, issue 12 ≤ 20 µs; paper
//! 004: ~500 µs with ONNX Runtime) with the shipped model as the `r3net` controller runs it
//! (tract-onnx, hidden state carried), plus the RL environment's raw stepping rate (one
//! environment, no Python). Run: `cargo bench -p ratelab-core --bench r3net`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ratelab_core::controllers::r3net::{R3NetPolicy, SHIPPED_MODEL};
use ratelab_core::sim::env::{EnvConfig, RlEnv};
use std::sync::Arc;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("r3net");
    let mut p = R3NetPolicy::load(SHIPPED_MODEL).expect("shipped model loads");
    let obs = [1.2f32, 0.8, 0.01, 1.5];
    g.throughput(Throughput::Elements(1));
    g.bench_function("decision_shipped_model", |b| b.iter(|| black_box(p.step(black_box(&obs)).expect("step"))));
    let mut env = RlEnv::new(EnvConfig::default(), Arc::new(vec![]), 1).expect("env");
    env.reset(Some(1)).expect("reset");
    g.bench_function("env_step_synthetic", |b| b.iter(|| {
        let o = env.step(black_box(0.15)).expect("step");
        if o.truncated { env.reset(None).expect("reset"); }
        o.reward
    }));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
