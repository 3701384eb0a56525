//! `congestion_window_pushback_controller_unittest.cc` (defaults: MinBitrate 30 kbit/s).

use ratelab_core::controllers::gcc::cwnd::CongestionWindow;
use ratelab_core::units::{Bitrate, Bytes, Duration};

fn controller() -> CongestionWindow { CongestionWindow::new(Duration::from_ms(350), Bitrate::from_kbps(30)) }
fn bps(v: i64) -> Bitrate { Bitrate::from_bps(v) }

#[test]
fn full_congestion_window() {
    let mut c = controller();
    c.set_outstanding(Bytes::new(100_000));
    c.set_data_window(Bytes::new(50_000));
    let b = c.pushback(bps(80_000));
    assert_eq!(b, bps(72_000));
    c.set_data_window(Bytes::new(50_000));
    assert_eq!(c.pushback(b), bps((72_000.0 * 0.9 * 0.9) as i64));
}

#[test]
fn normal_congestion_window() {
    let mut c = controller();
    c.set_outstanding(Bytes::new(199_999));
    c.set_data_window(Bytes::new(200_000));
    assert_eq!(c.pushback(bps(80_000)), bps(80_000));
}

#[test]
fn low_bitrate() {
    let mut c = controller();
    c.set_outstanding(Bytes::new(100_000));
    c.set_data_window(Bytes::new(50_000));
    let b = c.pushback(bps(35_000));
    assert_eq!(b, bps((35_000.0 * 0.9) as i64));
    c.set_data_window(Bytes::new(20_000));
    assert_eq!(c.pushback(b), bps(30_000));
}

#[test]
fn no_pushback_on_data_window_unset() {
    let mut c = controller();
    c.set_outstanding(Bytes::new(100_000_000));
    assert_eq!(c.pushback(bps(80_000)), bps(80_000));
}

#[test]
fn pushback_on_inititial_data_window() {
    // `InitWin:100000` presets the window before any RTT is known.
    let mut c = controller();
    c.set_data_window(Bytes::new(100_000));
    c.set_outstanding(Bytes::new(100_000_000));
    assert!(c.pushback(bps(80_000)) < bps(80_000));
}

#[test]
fn pushback_drop_frame() {
    // DropFrame changes what goog_cc does with the result (tests/…/goog_cc.rs), not the ratio.
    let mut c = controller();
    c.set_outstanding(Bytes::new(100_000_000));
    c.set_data_window(Bytes::new(50_000));
    assert!(c.pushback(bps(80_000)) < bps(80_000));
}
