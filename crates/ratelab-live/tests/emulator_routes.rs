//! The emulator with explicit routes (the browser harness's use): two senders share the
//! forward bottleneck; what each route delivers and drops, and the per-datagram records, follow
//! the link model computed by hand.

use ratelab_live::emulator::{Emulator, EmulatorOptions, Fate, Recorder, RouteConfig};
use ratelab_live::net::LiveClock;
use ratelab_live::StopFlag;
use std::net::UdpSocket;
use std::time::Duration;

fn sock() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    s
}

/// An RTP datagram of `len` bytes (SSRC, sequence number), as SRTP leaves the header in clear.
fn rtp(ssrc: u32, seq: u16, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    d[0] = 0x80;
    d[1] = 96;
    d[2..4].copy_from_slice(&seq.to_be_bytes());
    d[8..12].copy_from_slice(&ssrc.to_be_bytes());
    d
}

fn recv_all(s: &UdpSocket) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok((n, _)) = s.recv_from(&mut buf) { out.push(buf[..n].to_vec()); }
    out
}

#[test]
fn two_routes_share_the_bottleneck_as_the_link_model_says() {
    // 1000 kbit/s, room for 4 waiting packets, 10 ms after the bottleneck; the return path
    // has no bottleneck and 5 ms. (Waking 200 µs early and spinning changes no outcome.) A datagram of 1172 bytes is 1200 on the wire: 9.6 ms.
    let opts: EmulatorOptions = serde_json::from_value(serde_json::json!({
        "link": {"capacity_kbps": 1000, "queue": {"packets": 4}, "delay_ms": 10},
        "reverse_delay_ms": 5, "series_interval_ms": 10, "spin_us": 200,
    })).unwrap();
    let (a, b, c, d) = (sock(), sock(), sock(), sock());
    let cfg = |s: &UdpSocket, r: &UdpSocket| RouteConfig {
        sender: Some(s.local_addr().unwrap().to_string()), receiver: r.local_addr().unwrap().to_string(),
        direction: Default::default(), data_delay_ms: None, return_delay_ms: None,
    };
    let routes = opts.routes(&[cfg(&a, &b), cfg(&c, &d)]).unwrap();
    assert_eq!(routes[0].data_delay.as_ms_f64(), 10.0);
    assert_eq!(routes[0].return_delay.as_ms_f64(), 5.0);
    let stop = StopFlag::new();
    let rec = Recorder::new(1000);
    let emu = Emulator::new(opts, "127.0.0.1:0".parse().unwrap(), routes[0].receiver, LiveClock::new(), stop.clone()).unwrap()
        .with_routes(routes).with_recorder(rec.clone());
    let at = emu.local_addr().unwrap();
    let th = std::thread::spawn(move || emu.run());

    // A burst far shorter than one transmission: 1 packet in service, 4 waiting, 5 dropped.
    for seq in 0..6 { a.send_to(&rtp(0xA, seq, 1172), at).unwrap(); }
    for seq in 0..4 { c.send_to(&rtp(0xC, seq, 1172), at).unwrap(); }
    let got_b = recv_all(&b);
    assert_eq!(got_b.len(), 5);
    assert!(recv_all(&d).is_empty());
    // Feedback goes back to each route's sender, D's too (it received nothing, but is known).
    b.send_to(b"fb-b", at).unwrap();
    d.send_to(b"fb-d", at).unwrap();
    assert_eq!(recv_all(&a), vec![b"fb-b".to_vec()]);
    assert_eq!(recv_all(&c), vec![b"fb-d".to_vec()]);
    stop.raise();
    let res = th.join().unwrap();

    let s = &res.stats;
    let (r0, r1) = (&s.routes[0], &s.routes[1]);
    assert_eq!((r0.data.arrived_packets, r0.data.delivered_packets, r0.data.queue_drops), (6, 5, 1));
    assert_eq!((r1.data.arrived_packets, r1.data.delivered_packets, r1.data.queue_drops), (4, 0, 4));
    assert_eq!((r0.feedback.delivered_packets, r1.feedback.delivered_packets), (1, 1));
    assert_eq!((s.forward.queue_drops, s.forward.delivered_packets, s.reverse.delivered_packets), (5, 5, 2));
    assert_eq!(s.foreign_datagrams, 0);

    let (p, links, discarded) = rec.drain();
    assert_eq!((p.len(), discarded), (10, 0));
    let delivered: Vec<usize> = (0..p.len()).filter(|&i| p.fate[i] == Fate::Delivered).collect();
    assert_eq!(delivered.len(), 5);
    for (k, &i) in delivered.iter().enumerate() {
        assert_eq!((p.route[i], p.ssrc[i], p.seq[i], p.size[i]), (0, 0xA, k as i32, 1200));
        // Waits for the k packets before it (less the time between arrivals, << 1 ms).
        assert!((p.queue_ms[i] - 9.6 * k as f64).abs() < 1.0, "{k}: {}", p.queue_ms[i]);
        // Delivered exactly queue + transmission + propagation after arrival (model time).
        let model = p.arrival_s[i] + (p.queue_ms[i] + 9.6 + 10.0) / 1e3;
        assert!((p.delivered_s[i] - model).abs() < 2e-6, "{k}: {} vs {model}", p.delivered_s[i]);
    }
    let drops: Vec<(u32, i32)> = (0..p.len()).filter(|&i| p.fate[i] == Fate::Queue).map(|i| (p.route[i], p.seq[i])).collect();
    assert_eq!(drops, vec![(0, 5), (1, 0), (1, 1), (1, 2), (1, 3)]);
    assert!(p.delivered_s.iter().zip(&p.fate).all(|(t, f)| (*f == Fate::Delivered) == t.is_finite()));
    // The link series: both links every 10 ms, the forward one at 1000 kbit/s.
    assert!(links.t_s.len() >= 2 * 20, "{}", links.t_s.len());
    assert!(links.link.iter().zip(&links.capacity_kbps).all(|(l, c)| *l != 0 || *c == 1000.0));
    assert!(links.queue_bytes.iter().any(|q| *q > 0));
}

#[test]
fn routes_are_checked_and_named() {
    let opts = EmulatorOptions::default();
    let r = |d: Option<f64>, dir: &str| RouteConfig {
        sender: None, receiver: "127.0.0.1:9".into(), direction: serde_json::from_value(serde_json::json!(dir)).unwrap(), data_delay_ms: d, return_delay_ms: None,
    };
    assert_eq!(opts.routes(&[]).unwrap_err().field, "routes");
    assert_eq!(opts.routes(&[r(None, "forward"), r(Some(-1.0), "forward")]).unwrap_err().field, "routes[1].data_delay_ms");
    assert_eq!(opts.routes(&[r(None, "reverse")]).unwrap_err().field, "routes[0].direction");
    let bad = RouteConfig { receiver: "no-such-host.invalid:1".into(), ..r(None, "forward") };
    assert_eq!(opts.routes(&[bad]).unwrap_err().field, "routes[0].receiver");
}

/// Whatever is still in the emulator when it stops is recorded as in flight, not lost silently.
#[test]
fn datagrams_held_at_stop_are_recorded_in_flight() {
    let opts: EmulatorOptions = serde_json::from_value(serde_json::json!({"link": {"capacity_kbps": 1000, "delay_ms": 2000}})).unwrap();
    let (a, b) = (sock(), sock());
    let stop = StopFlag::new();
    let rec = Recorder::new(100);
    let emu = Emulator::new(opts, "127.0.0.1:0".parse().unwrap(), b.local_addr().unwrap(), LiveClock::new(), stop.clone()).unwrap().with_recorder(rec.clone());
    let at = emu.local_addr().unwrap();
    let th = std::thread::spawn(move || emu.run());
    for seq in 0..3 { a.send_to(&rtp(7, seq, 100), at).unwrap(); }
    std::thread::sleep(Duration::from_millis(200));
    stop.raise();
    let res = th.join().unwrap();
    assert_eq!(res.stats.forward.delivered_packets, 0);
    let (p, _, _) = rec.drain();
    assert_eq!(p.fate, vec![Fate::InFlight; 3]);
    assert_eq!(p.seq, vec![0, 1, 2]);
}
