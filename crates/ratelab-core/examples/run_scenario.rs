//! Run one scenario given as JSON and print each flow's summary (and optionally the series).
//!
//! ```text
//! cargo run -p ratelab-core --example run_scenario -- '<scenario JSON>' [seed] [series period s]
//! ```
//! Used for the measurements quoted in `docs/controllers/{lcc,iris}.md`.
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sc = Scenario::from_json(&args[1]).expect("scenario");
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let every: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let mut sim = build_simulation(&sc, seed, None).expect("build");
    let t = std::time::Instant::now();
    sim.run_to_end();
    let el = t.elapsed();
    let s = sim.take_series();
    if every > 0.0 {
        let mut next = 0.0;
        for i in 0..s.len() {
            if s.t_s[i] >= next {
                println!("t={:6.1} f{} target={:7.0} send={:7.0} recv={:7.0} owd={:6.1} q={:6.1} cap={:6.0}", s.t_s[i], s.flow[i], s.target_kbps[i], s.send_kbps[i], s.recv_kbps[i], s.owd_ms[i], s.queue_ms[i], s.capacity_kbps[i]);
                if s.flow[i] as usize + 1 >= sc.flows.iter().map(|f| f.count as usize).sum::<usize>() { next += every; }
            }
        }
    }
    let sum = sim.summary();
    for f in &sum.flows {
        println!("{} {}: util {:.3} thr {:.0} kbps qdelay {:.1} ms p95 {:.1} loss {:.3} frame_delay {:.1} freeze {:.3}", f.label, f.controller, f.utilization, f.throughput_kbps, f.queue_delay_ms_mean.unwrap_or(f64::NAN), f.queue_delay_ms_p95.unwrap_or(f64::NAN), f.loss_rate, f.frame_delay_ms_mean.unwrap_or(f64::NAN), f.freeze_ratio.unwrap_or(f64::NAN));
    }
    println!("link util {:.3} jain {:.3} ({} ms)", sum.link.utilization, sum.link.jain_index, el.as_millis());
}
