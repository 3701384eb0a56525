//! CPU-time timing loops for the ONNX numbers in docs/benchmarks.md (no Python involved; the
//! process's CPU clock, so a loaded host's wait for a core is left out):
//!
//! ```text
//! cargo run --release -p ratelab-core --example onnx_timing -- step MODEL.onnx [N]   # µs per decision
//! cargo run --release -p ratelab-core --example onnx_timing -- sim SCENARIO.json [R]  # run_to_end, best of R
//! cargo run --release -p ratelab-core --example onnx_timing -- r3net [N]  # µs per decision of the shipped R3Net
//! ```
//! `SCENARIO.json` is a scenario as `ratelab.scenario.load_scenario(...).to_json()` writes it;
//! model paths in it are read from disk.
use ratelab_core::controllers::onnx::{features::OBS_LEN, model::OnnxEstimatorModel};
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation_with;
use std::sync::Arc;

/// Seconds of CPU time used by this process (Linux: CLOCK_PROCESS_CPUTIME_ID).
#[cfg(target_os = "linux")]
fn cpu() -> f64 {
    #[repr(C)]
    struct Timespec { s: i64, ns: i64 }
    extern "C" { fn clock_gettime(clock: i32, t: *mut Timespec) -> i32; }
    let mut ts = Timespec { s: 0, ns: 0 };
    // SAFETY: clock_gettime writes one timespec into the pointer it is given.
    unsafe { clock_gettime(2, &mut ts) };
    ts.s as f64 + ts.ns as f64 * 1e-9
}

/// Elsewhere: wall-clock seconds since the first call.
#[cfg(not(target_os = "linux"))]
fn cpu() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map(String::as_str).unwrap_or("");
    match what {
        "step" => {
            let bytes = std::fs::read(&args[2]).unwrap();
            let mut m = OnnxEstimatorModel::load(&bytes).unwrap().unwrap();
            let n: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(20000);
            let mut obs = [0f32; OBS_LEN];
            for (i, o) in obs.iter_mut().enumerate() { *o = (i as f32 * 37.7) % 1000.0; }
            let mut acc = 0.0;
            for _ in 0..1000 { acc += m.step(&obs).unwrap(); }
            for _ in 0..5 {
                let t = cpu();
                for k in 0..n { obs[k % OBS_LEN] += 1.0; acc += m.step(&obs).unwrap(); }
                println!("step: {:.2} us cpu", (cpu() - t) / n as f64 * 1e6);
            }
            println!("{acc}");
        }
        "sim" => {
            let json = std::fs::read_to_string(&args[2]).unwrap();
            let sc = Scenario::from_json(&json).unwrap();
            let reps: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(7);
            let rf: ratelab_core::controllers::FileReader = Arc::new(|p: &str| std::fs::read(p).map_err(|e| e.to_string()));
            let mut best = f64::INFINITY;
            for _ in 0..reps {
                let mut sim = build_simulation_with(&sc, 1, None, Some(rf.clone())).unwrap();
                let t = cpu();
                sim.run_to_end();
                let el = cpu() - t;
                best = best.min(el);
                let s = sim.summary();
                println!("cpu {:.2} ms  {:.0}x  thr {:.3}", el * 1e3, sc.duration_s / el, s.flows[0].throughput_kbps);
            }
            println!("best {:.2} ms {:.0}x", best * 1e3, sc.duration_s / best);
        }
        "r3net" => {
            // The `r3net` controller's policy (tract-onnx), its hidden state carried step to step.
            use ratelab_core::controllers::r3net::{R3NetPolicy, SHIPPED_MODEL};
            let n: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(100000);
            let mut p = R3NetPolicy::load(SHIPPED_MODEL).unwrap();
            let obs = [1.2f32, 0.8, 0.01, 1.5];
            let mut acc = 0f32;
            for _ in 0..5 {
                let t = cpu();
                for _ in 0..n { acc += p.step(std::hint::black_box(&obs)).unwrap(); }
                println!("r3net {:.2} us cpu", (cpu() - t) / n as f64 * 1e6);
            }
            println!("{acc}");
        }
        _ => { eprintln!("usage: onnx_timing step MODEL [N] | sim SCENARIO.json [R] | r3net [N]"); std::process::exit(2) }
    }
}
