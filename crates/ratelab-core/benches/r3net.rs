//! R3Net inference time per 50-ms decision (issue 5 target ≤ 50 µs; paper 004: ~500 µs with
//! ONNX Runtime) with the shipped model and ratelab's pure-Rust ONNX runtime, plus the RL
//! environment's raw stepping rate (one environment, no Python).
//! The same decision with `tract-onnx` (the runtime of the `onnx` controller) decides whether
//! `r3net` moves onto tract (target ≤ 20 µs per decision; docs/benchmarks.md).
//! Run: `cargo bench -p ratelab-core --bench r3net`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ratelab_core::controllers::r3net::{R3NetPolicy, SHIPPED_MODEL};
use ratelab_core::sim::env::{EnvConfig, RlEnv};
use std::sync::Arc;
use tract_onnx::prelude::*;

/// The shipped R3Net model prepared by tract (typed, optimised plan, one reusable state).
fn tract_r3net(hidden: usize) -> TypedSimpleState {
    let model = tract_onnx::onnx().model_for_read(&mut std::io::Cursor::new(SHIPPED_MODEL)).expect("tract reads r3net.onnx")
        .with_input_fact(0, f32::fact([1, 4]).into()).expect("obs fact")
        .with_input_fact(1, f32::fact([1, 1, hidden]).into()).expect("h fact")
        .into_optimized().expect("optimise")
        .into_runnable().expect("plan");
    model.spawn().expect("state")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("r3net");
    let mut p = R3NetPolicy::load(SHIPPED_MODEL).expect("shipped model loads");
    let obs = [1.2f32, 0.8, 0.01, 1.5];
    g.throughput(Throughput::Elements(1));
    g.bench_function("decision_shipped_model", |b| b.iter(|| black_box(p.step(black_box(&obs)).expect("step"))));
    let hidden = p.hidden_size();
    let mut state = tract_r3net(hidden);
    let mut h = vec![0f32; hidden];
    // Same outputs as the hand-written runtime (action mean first, new h last).
    let mut q = R3NetPolicy::load(SHIPPED_MODEL).expect("shipped model loads");
    let mut tract_step = |h: &mut Vec<f32>| -> f32 {
        let out = state.run(tvec![
            Tensor::from_shape(&[1, 4], &obs).expect("obs").into_tvalue(),
            Tensor::from_shape(&[1, 1, hidden], h).expect("h").into_tvalue(),
        ]).expect("tract step");
        h.copy_from_slice(out.last().expect("h out").try_as_plain_ram().expect("plain").as_slice::<f32>().expect("f32"));
        out[0].try_as_plain_ram().expect("plain").as_slice::<f32>().expect("f32")[0]
    };
    for _ in 0..3 {
        let (a, b) = (tract_step(&mut h), q.step(&obs).expect("step"));
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1e-3), "tract {a} vs hand-written {b}");
    }
    g.bench_function("decision_shipped_model_tract", |b| b.iter(|| black_box(tract_step(&mut h))));
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
