//! Load generator for the emulator's timekeeping: a sender pushes `--pps` datagrams/s of
//! `--size` bytes through an emulator on loopback (50 Mbit/s, 20 ms each way) to a receiver that
//! answers every 10th datagram with an 80-byte "feedback" datagram (the other direction), for
//! `--seconds`. Prints the process's RSS every `--report-s` seconds, then how late the emulator
//! wrote its deliveries (`send_late_us`, both directions), what it delivered, and the peak RSS.
//!
//! cargo run --release -p ratelab-live --example emulator_load -- --seconds 60 --pps 2500
//! Run another CPU hog beside it to see what a browser call does to the timing.

use ratelab_core::scenario::LinkConfig;
use ratelab_live::emulator::{Emulator, EmulatorOptions};
use ratelab_live::net::LiveClock;
use ratelab_live::StopFlag;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str, default: f64) -> f64 {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("bad {name}: {v}")))
}

/// `VmRSS` / `VmHWM` of this process in KiB (Linux).
fn status_kib(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds = arg(&args, "--seconds", 60.0);
    let pps = arg(&args, "--pps", 2500.0);
    let size = arg(&args, "--size", 1200.0) as usize;
    let report_s = arg(&args, "--report-s", 60.0);
    let realtime = arg(&args, "--realtime", 1.0) != 0.0;

    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let link = LinkConfig { capacity_kbps: Some(50_000.0), trace_format: "auto".into(), trace_scale: 1.0, trace_loop: true, mahimahi_bin_ms: 100.0, delay_ms: 20.0, ..Default::default() };
    let mut opts = EmulatorOptions { link, reverse_delay_ms: 20.0, duration_s: seconds + 0.5, ..Default::default() };
    opts.realtime = realtime;
    opts.keep_series = false;
    let stop = StopFlag::new();
    let emu = Emulator::new(opts, "127.0.0.1:0".parse().unwrap(), rx.local_addr().unwrap(), LiveClock::new(), stop.clone()).expect("emulator");
    let emu_addr = emu.local_addr().unwrap();
    let th = std::thread::spawn(move || emu.run());

    // Receiver: drain, answer every 10th datagram.
    let rstop = stop.clone();
    rx.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let receiver = std::thread::spawn(move || {
        let (mut buf, mut n) = (vec![0u8; 65_536], 0u64);
        while !rstop.is_raised() {
            if rx.recv_from(&mut buf).is_ok() {
                n += 1;
                if n % 10 == 0 { let _ = rx.send_to(&buf[..80], emu_addr); }
            }
        }
        n
    });
    // Sender (main thread): paced on absolute times, reporting RSS.
    let t0 = Instant::now();
    let payload = vec![0x80u8; size];
    let (mut sent, mut next_report) = (0u64, report_s);
    let iv = Duration::from_secs_f64(1.0 / pps);
    let mut tx_drain = [0u8; 2048];
    tx.set_nonblocking(true).unwrap();
    while t0.elapsed().as_secs_f64() < seconds {
        let due = t0 + iv * sent as u32;
        if let Some(w) = due.checked_duration_since(Instant::now()) { std::thread::sleep(w); }
        let _ = tx.send_to(&payload, emu_addr);
        while tx.recv_from(&mut tx_drain).is_ok() {}
        sent += 1;
        let el = t0.elapsed().as_secs_f64();
        if el >= next_report {
            println!("t={el:.0}s sent={sent} rss_kib={}", status_kib("VmRSS:"));
            next_report += report_s;
        }
    }
    let res = th.join().unwrap();
    stop.raise();
    let received = receiver.join().unwrap();
    let s = &res.stats;
    let q = |x: &ratelab_live::Quantiles| format!("n={} p50={} p90={} p99={} max={}", x.n, x.p50, x.p90, x.p99, x.max);
    println!("sent={sent} received={received} forward_delivered={} drops(q/r/overflow)={}/{}/{} realtime={}", s.forward.delivered_packets, s.forward.queue_drops, s.forward.random_drops, s.forward.overflow_drops, s.realtime);
    println!("forward send_late_us: {}", q(&s.forward.send_late_us));
    println!("reverse send_late_us: {}", q(&s.reverse.send_late_us));
    println!("emulator cpu_s={:.2} wall_s={:.1} peak_rss_kib={}", s.cpu_us as f64 * 1e-6, t0.elapsed().as_secs_f64(), status_kib("VmHWM:"));
}
