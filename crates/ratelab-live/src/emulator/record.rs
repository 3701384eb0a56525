//! What the emulator did to each datagram of a route's data leg, and the links' state over time,
//! handed to another thread (the browser harness streams them to Parquet) through a bounded
//! buffer: the relay appends, the reader takes everything at once; when nobody reads, records
//! beyond the cap are counted and discarded instead of growing memory.

use std::sync::{Arc, Mutex};

/// Why a datagram was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Delivered,
    /// The bottleneck queue was full (drop-tail).
    Queue,
    /// Random or bursty loss of the link model.
    Random,
    /// More than `max_held` datagrams were held.
    Overflow,
    /// Still queued or propagating when the emulator stopped.
    InFlight,
}

impl Fate {
    pub fn as_str(self) -> &'static str {
        match self { Fate::Delivered => "", Fate::Queue => "queue", Fate::Random => "random", Fate::Overflow => "overflow", Fate::InFlight => "in_flight" }
    }
}

/// Columns of per-datagram records, in the order the datagrams' fates were decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketColumns {
    pub route: Vec<u32>,
    /// Arrival at the emulator, s since it started.
    pub arrival_s: Vec<f64>,
    /// Datagram bytes + 28 (IPv4/UDP), as the link model counts them.
    pub size: Vec<i64>,
    /// Waiting time in the bottleneck queue, ms (NaN when dropped before leaving it).
    pub queue_ms: Vec<f64>,
    /// Written to the receiver at (model time), s since start; NaN if not delivered.
    pub delivered_s: Vec<f64>,
    pub fate: Vec<Fate>,
    /// RTP SSRC, sequence number, payload type, marker bit and timestamp when the datagram is
    /// RTP (headers are clear under SRTP), else -1. The timestamp and marker tell a frame's media
    /// packets from the ULPFEC packets libwebrtc sends after them under the same timestamp.
    pub ssrc: Vec<i64>,
    pub seq: Vec<i32>,
    pub pt: Vec<i16>,
    pub marker: Vec<i8>,
    pub timestamp: Vec<i64>,
}

impl PacketColumns {
    pub fn len(&self) -> usize { self.route.len() }
    pub fn is_empty(&self) -> bool { self.route.is_empty() }
}

/// The link series: one row per link per interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkColumns {
    pub t_s: Vec<f64>,
    /// 0: forward (`link`), 1: reverse.
    pub link: Vec<u8>,
    pub capacity_kbps: Vec<f64>,
    pub queue_bytes: Vec<i64>,
    /// Queuing delay of the latest datagram to leave the bottleneck, ms.
    pub queue_ms: Vec<f64>,
}

#[derive(Default)]
struct Inner {
    packets: PacketColumns,
    links: LinkColumns,
    /// Packet records discarded because the buffer was full.
    discarded: u64,
    /// When the first media datagram arrived (s since start), once it has: see
    /// `EmulatorOptions::align_media_s`.
    media_start: Option<f64>,
}

/// The shared buffer (clone it: both ends hold the same one).
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    cap: usize,
}

/// The fixed RTP header fields the record keeps (RFC 3550 §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpHeader {
    pub ssrc: u32,
    pub seq: u16,
    pub pt: u8,
    pub marker: bool,
    pub timestamp: u32,
}

/// The header of an RTP datagram: version 2 and not an RTCP packet type (RFC 5761 §4).
pub fn rtp_header(d: &[u8]) -> Option<RtpHeader> {
    if d.len() < 12 || d[0] >> 6 != 2 || (192..=223).contains(&d[1]) { return None; }
    Some(RtpHeader {
        ssrc: u32::from_be_bytes([d[8], d[9], d[10], d[11]]),
        seq: u16::from_be_bytes([d[2], d[3]]),
        pt: d[1] & 0x7f,
        marker: d[1] & 0x80 != 0,
        timestamp: u32::from_be_bytes([d[4], d[5], d[6], d[7]]),
    })
}

impl Recorder {
    /// Holds at most `cap` packet records (and as many link rows) between two drains.
    pub fn new(cap: usize) -> Self { Recorder { inner: Arc::new(Mutex::new(Inner::default())), cap } }

    /// The relay saw the first media datagram at `t_s` (s since start).
    pub fn media_started(&self, t_s: f64) { self.lock().media_start = Some(t_s); }

    /// When the first media datagram arrived (s since start), if it has.
    pub fn media_start_s(&self) -> Option<f64> { self.lock().media_start }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> { self.inner.lock().unwrap_or_else(|e| e.into_inner()) }

    #[allow(clippy::too_many_arguments)]
    pub fn packet(&self, route: usize, arrival_s: f64, size: i64, queue_ms: f64, delivered_s: f64, fate: Fate, datagram: &[u8]) {
        let mut g = self.lock();
        if g.packets.len() >= self.cap { g.discarded += 1; return; }
        let h = rtp_header(datagram);
        let p = &mut g.packets;
        p.route.push(route as u32);
        p.arrival_s.push(arrival_s);
        p.size.push(size);
        p.queue_ms.push(queue_ms);
        p.delivered_s.push(delivered_s);
        p.fate.push(fate);
        p.ssrc.push(h.map_or(-1, |h| h.ssrc as i64));
        p.seq.push(h.map_or(-1, |h| h.seq as i32));
        p.pt.push(h.map_or(-1, |h| h.pt as i16));
        p.marker.push(h.map_or(-1, |h| h.marker as i8));
        p.timestamp.push(h.map_or(-1, |h| h.timestamp as i64));
    }

    pub fn link(&self, t_s: f64, link: u8, capacity_kbps: f64, queue_bytes: i64, queue_ms: f64) {
        let mut g = self.lock();
        if g.links.t_s.len() >= self.cap { return; }
        let l = &mut g.links;
        l.t_s.push(t_s);
        l.link.push(link);
        l.capacity_kbps.push(capacity_kbps);
        l.queue_bytes.push(queue_bytes);
        l.queue_ms.push(queue_ms);
    }

    /// Everything recorded since the last drain, and how many packet records were discarded.
    pub fn drain(&self) -> (PacketColumns, LinkColumns, u64) {
        let mut g = self.lock();
        (std::mem::take(&mut g.packets), std::mem::take(&mut g.links), g.discarded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtp_is_told_from_rtcp_stun_and_dtls() {
        let mut rtp = [0u8; 12];
        rtp[0] = 0x90; // version 2, extension bit
        rtp[1] = 0x80 | 96; // marker, payload type 96
        rtp[2..4].copy_from_slice(&513u16.to_be_bytes());
        rtp[4..8].copy_from_slice(&90_000u32.to_be_bytes());
        rtp[8..12].copy_from_slice(&0xDEAD_BEEFu32.to_be_bytes());
        assert_eq!(rtp_header(&rtp), Some(RtpHeader { ssrc: 0xDEAD_BEEF, seq: 513, pt: 96, marker: true, timestamp: 90_000 }));
        let mut no_marker = rtp;
        no_marker[1] = 97;
        assert_eq!(rtp_header(&no_marker).map(|h| (h.pt, h.marker)), Some((97, false)));
        let mut rtcp = rtp;
        rtcp[1] = 205; // transport feedback
        assert_eq!(rtp_header(&rtcp), None);
        let mut stun = rtp;
        stun[0] = 0x00;
        assert_eq!(rtp_header(&stun), None);
        let mut dtls = rtp;
        dtls[0] = 22;
        assert_eq!(rtp_header(&dtls), None);
        assert_eq!(rtp_header(&rtp[..11]), None);
    }

    #[test]
    fn a_full_buffer_counts_what_it_discards_and_a_drain_empties_it() {
        let r = Recorder::new(2);
        for i in 0..5 { r.packet(0, i as f64, 100, 1.0, 2.0, Fate::Delivered, b"x"); }
        let (p, _, discarded) = r.drain();
        assert_eq!((p.len(), discarded), (2, 3));
        assert_eq!((p.ssrc, p.pt, p.marker, p.timestamp), (vec![-1, -1], vec![-1, -1], vec![-1, -1], vec![-1, -1]));
        r.packet(1, 9.0, 100, f64::NAN, f64::NAN, Fate::Queue, b"x");
        let (p, _, discarded) = r.drain();
        assert_eq!((p.route, p.fate, discarded), (vec![1], vec![Fate::Queue], 3));
        assert!(r.drain().0.is_empty());
    }
}
