//! A minimal pcap writer (classic format, LINKTYPE_IPV4) so that live traffic can be decoded
//! by independent tools (tshark). Each datagram is wrapped in a synthesized IPv4 + UDP header
//! with the real addresses and ports; the UDP checksum is left 0 (allowed for IPv4, RFC 768).

use std::io::{BufWriter, Write};
use std::net::SocketAddr;

/// LINKTYPE_IPV4 (raw IPv4, no link-layer header).
const LINKTYPE_IPV4: u32 = 228;

pub struct PcapWriter {
    out: BufWriter<std::fs::File>,
    /// Datagrams written; IPv6 endpoints are skipped.
    pub written: u64,
    ip_id: u16,
}

impl PcapWriter {
    pub fn create(path: &str) -> std::io::Result<PcapWriter> {
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        out.write_all(&0xa1b2_c3d4u32.to_le_bytes())?; // magic (µs timestamps), little-endian file
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?; // thiszone
        out.write_all(&0u32.to_le_bytes())?; // sigfigs
        out.write_all(&65_535u32.to_le_bytes())?; // snaplen
        out.write_all(&LINKTYPE_IPV4.to_le_bytes())?;
        Ok(PcapWriter { out, written: 0, ip_id: 0 })
    }

    /// Record one datagram seen at UNIX time `unix_us`.
    pub fn write(&mut self, unix_us: i64, src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> std::io::Result<()> {
        let (SocketAddr::V4(s), SocketAddr::V4(d)) = (src, dst) else { return Ok(()) };
        let len = 20 + 8 + payload.len();
        if len > 65_535 { return Ok(()); }
        let mut ip = [0u8; 20];
        ip[0] = 0x45; // version 4, IHL 5
        ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&self.ip_id.to_be_bytes());
        self.ip_id = self.ip_id.wrapping_add(1);
        ip[6] = 0x40; // don't fragment
        ip[8] = 64; // TTL
        ip[9] = 17; // UDP
        ip[12..16].copy_from_slice(&s.ip().octets());
        ip[16..20].copy_from_slice(&d.ip().octets());
        let sum = checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let mut udp = [0u8; 8];
        udp[0..2].copy_from_slice(&s.port().to_be_bytes());
        udp[2..4].copy_from_slice(&d.port().to_be_bytes());
        udp[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        let (sec, usec) = (unix_us.div_euclid(1_000_000), unix_us.rem_euclid(1_000_000));
        self.out.write_all(&(sec as u32).to_le_bytes())?;
        self.out.write_all(&(usec as u32).to_le_bytes())?;
        self.out.write_all(&(len as u32).to_le_bytes())?;
        self.out.write_all(&(len as u32).to_le_bytes())?;
        self.out.write_all(&ip)?;
        self.out.write_all(&udp)?;
        self.out.write_all(payload)?;
        self.written += 1;
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<u64> { self.out.flush()?; Ok(self.written) }
}

/// The Internet checksum (RFC 1071) of a header.
fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = b.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum();
    while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16); }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_header_checksum_verifies_to_zero() {
        // RFC 1071-style check: the checksum of a header including its checksum is 0.
        let mut ip = [0x45, 0, 0, 0x1c, 0, 1, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&ip), 0);
    }

    #[test]
    fn writes_a_readable_file() {
        let dir = std::env::temp_dir().join(format!("ratelab-pcap-{}", std::process::id()));
        let path = dir.to_string_lossy().to_string() + ".pcap";
        let mut w = PcapWriter::create(&path).unwrap();
        w.write(1_700_000_000_123_456, "127.0.0.1:5000".parse().unwrap(), "127.0.0.1:6000".parse().unwrap(), b"hello").unwrap();
        assert_eq!(w.finish().unwrap(), 1);
        let b = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(b.len(), 24 + 16 + 20 + 8 + 5);
        assert_eq!(&b[20..24], &228u32.to_le_bytes());
        assert_eq!(&b[28..32], &123_456u32.to_le_bytes());
        assert_eq!(&b[24 + 16 + 20..24 + 16 + 22], &5000u16.to_be_bytes());
        assert_eq!(&b[b.len() - 5..], b"hello");
    }
}
