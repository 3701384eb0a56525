//! Small helpers shared by the ported test files.

use ratelab_core::controller::{PacketResult, SentPacket};
use ratelab_core::units::{Bitrate, Bytes, Time};

pub fn packet(seq: u64, size: i64, send: Time, recv: Option<Time>) -> PacketResult {
    PacketResult {
        sent: SentPacket { seq, size: Bytes::new(size), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
        recv_time: recv,
    }
}

/// libwebrtc `DataRate::BytesPerSec`.
pub fn bytes_per_sec(v: i64) -> Bitrate { Bitrate::from_bps(8 * v) }

/// `EXPECT_NEAR(a, b, tol)` on bytes per second.
pub fn assert_near_bytes_per_sec(r: Option<Bitrate>, want: f64, tol: f64) {
    let got = r.expect("an estimate").bps_f64() / 8.0;
    assert!((got - want).abs() <= tol, "{got} B/s, want {want} ± {tol}");
}
