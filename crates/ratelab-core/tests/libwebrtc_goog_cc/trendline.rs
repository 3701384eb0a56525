//! `trendline_estimator_unittest.cc`: 25 packets, 1200 B (or 100 B), sent every 20 ms.

use ratelab_core::controllers::gcc::trendline::{BandwidthUsage, Trendline, DEFAULT_WINDOW};

const PACKETS: usize = 25;

struct Fixture {
    send: Vec<i64>,
    recv: Vec<i64>,
    est: Trendline,
    count: usize,
}

impl Fixture {
    /// `PacketTimeGenerator`: `initial + spacing × k`, truncated to int64 ms.
    fn new(recv_spacing: f64) -> Self {
        let send = (0..PACKETS).map(|k| 123_456_789 + (20.0 * k as f64) as i64).collect();
        let recv = (0..PACKETS).map(|k| (987_654_321.0 + recv_spacing * k as f64) as i64).collect();
        Fixture { send, recv, est: Trendline::new(DEFAULT_WINDOW), count: 1 }
    }
    fn run_until_state_change(&mut self) {
        let initial = self.est.state();
        while self.count < PACKETS {
            let c = self.count;
            let recv_delta = (self.recv[c] - self.recv[c - 1]) as f64;
            let send_delta = (self.send[c] - self.send[c - 1]) as f64;
            self.est.update(recv_delta, send_delta, self.recv[c] as f64, true);
            if self.est.state() != initial {
                // libwebrtc returns before its loop increments `count`, so the next run
                // feeds this packet once more.
                return;
            }
            self.count += 1;
        }
    }
}

#[test]
fn normal() {
    let mut f = Fixture::new(20.0);
    assert_eq!(f.est.state(), BandwidthUsage::Normal);
    f.run_until_state_change();
    assert_eq!(f.est.state(), BandwidthUsage::Normal);
    assert_eq!(f.count, PACKETS);
}

fn overuse_case(recv_spacing: f64, want: BandwidthUsage) {
    let mut f = Fixture::new(recv_spacing);
    assert_eq!(f.est.state(), BandwidthUsage::Normal);
    f.run_until_state_change();
    assert_eq!(f.est.state(), want);
    f.run_until_state_change();
    assert_eq!(f.est.state(), want);
    assert_eq!(f.count, PACKETS);
}

#[test]
fn overusing() { overuse_case(1.1 * 20.0, BandwidthUsage::Overusing); }

#[test]
fn underusing() { overuse_case(0.85 * 20.0, BandwidthUsage::Underusing); }

#[test]
fn includes_small_packets_by_default() {
    // Packet size does not enter ratelab's trendline (no small-packet filter): 100 B packets
    // behave as 1200 B ones, which is what the default configuration asserts.
    overuse_case(1.1 * 20.0, BandwidthUsage::Overusing);
}
