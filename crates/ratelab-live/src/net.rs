//! Wall clock mapped to the core's [`Time`], and waiting on a UDP socket with a precise
//! timeout (`ppoll`, µs resolution; `SO_RCVTIMEO` would round to scheduler ticks).

use ratelab_core::{Duration, Time};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A monotonic clock whose zero is the moment it was created, also tied to UNIX time so that
/// two processes on one host can compare send and receive stamps.
#[derive(Clone, Copy, Debug)]
pub struct LiveClock {
    origin: Instant,
    origin_unix_us: i64,
}

impl Default for LiveClock {
    fn default() -> Self { Self::new() }
}

impl LiveClock {
    pub fn new() -> Self {
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0);
        LiveClock { origin: Instant::now(), origin_unix_us: unix }
    }
    pub fn now(&self) -> Time { Time::from_us(self.origin.elapsed().as_micros() as i64) }
    /// UNIX time (µs) of a clock reading.
    pub fn unix_us(&self, t: Time) -> i64 { self.origin_unix_us + t.as_us() }
    /// Clock reading of a UNIX time (µs).
    pub fn from_unix_us(&self, unix_us: i64) -> Time { Time::from_us(unix_us - self.origin_unix_us) }
    /// NTP time (µs since 1900) of the clock's origin, for RTCP report timestamps.
    pub fn origin_ntp_us(&self) -> i64 { self.origin_unix_us + 2_208_988_800 * 1_000_000 }
}

/// Ask the kernel for precise timer wake-ups on this thread (Linux `PR_SET_TIMERSLACK` = 1 ns;
/// the default slack is 50 µs). Harmless elsewhere.
pub fn precise_timers() {
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
    }
}

/// Ask for real-time scheduling of this thread (`SCHED_FIFO`, low priority 10): it then runs as
/// soon as its timer fires instead of waiting for a busy CPU's slice to end. Needs
/// `CAP_SYS_NICE` or an `RLIMIT_RTPRIO`; returns whether it was granted. The thread sleeps
/// between deliveries, and the kernel's real-time throttling bounds it in any case.
pub fn realtime_priority() -> bool {
    #[cfg(target_os = "linux")]
    unsafe {
        let p = libc::sched_param { sched_priority: 10 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Socket buffer size asked for: 4 MiB rides out a few ms of descheduling at 100+ Mbit/s.
pub const SOCKET_BUFFER: usize = 4 << 20;

/// Bind a non-blocking UDP socket with large send/receive buffers.
pub fn bind(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind(addr)?;
    s.set_nonblocking(true)?;
    set_buffers(&s, SOCKET_BUFFER);
    Ok(s)
}

/// Best effort: `SO_RCVBUF`/`SO_SNDBUF` (capped by the kernel's `rmem_max`/`wmem_max`), then the
/// `FORCE` variants, which a privileged process may use to exceed the cap.
fn set_buffers(sock: &UdpSocket, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let v = bytes as libc::c_int;
        let fd = sock.as_raw_fd();
        for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF, libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
            // SAFETY: valid fd, pointer to a c_int of the size given.
            unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, opt, &v as *const libc::c_int as *const libc::c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t); }
        }
    }
    #[cfg(not(target_os = "linux"))]
    { let _ = (sock, bytes); }
}

/// Wait until the socket is readable or `timeout` has passed. Returns true if readable.
pub fn wait_readable(sock: &UdpSocket, timeout: Duration) -> bool {
    let us = timeout.as_us().max(0);
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut fds = libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ts = libc::timespec { tv_sec: (us / 1_000_000) as libc::time_t, tv_nsec: ((us % 1_000_000) * 1000) as libc::c_long };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let r = unsafe { libc::ppoll(&mut fds, 1, &ts, std::ptr::null()) };
        r > 0 && fds.revents & libc::POLLIN != 0
    }
    #[cfg(not(unix))]
    {
        let _ = sock;
        std::thread::sleep(std::time::Duration::from_micros(us as u64));
        true
    }
}

/// CPU time (user + system) used by the calling thread so far, in µs.
pub fn thread_cpu_us() -> i64 {
    #[cfg(target_os = "linux")]
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) == 0 {
            return ru.ru_utime.tv_sec as i64 * 1_000_000 + ru.ru_utime.tv_usec as i64 + ru.ru_stime.tv_sec as i64 * 1_000_000 + ru.ru_stime.tv_usec as i64;
        }
    }
    0
}

/// Controllers that name files (ONNX models) read them through this (the live driver does I/O).
pub fn file_reader() -> ratelab_core::controllers::FileReader {
    std::sync::Arc::new(|path: &str| std::fs::read(path).map_err(|e| e.to_string()))
}

/// Resolve `host:port` to one socket address (first result).
pub fn resolve(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs().map_err(|e| format!("cannot resolve '{s}': {e}"))?.next().ok_or_else(|| format!("'{s}' resolves to no address"))
}

/// Histogram of µs values (timer errors, delays), 3 significant digits up to 100 s.
pub fn us_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 100_000_000, 3).expect("static histogram bounds are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_maps_unix_time_both_ways() {
        let c = LiveClock::new();
        let t = Time::from_ms(1234);
        assert_eq!(c.from_unix_us(c.unix_us(t)), t);
        assert!(c.now() >= Time::ZERO);
        assert_eq!(c.origin_ntp_us() - c.unix_us(Time::ZERO), 2_208_988_800_000_000);
    }

    #[test]
    fn wait_times_out_then_sees_a_datagram() {
        let a = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let b = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let t0 = Instant::now();
        assert!(!wait_readable(&a, Duration::from_ms(5)));
        assert!(t0.elapsed() >= std::time::Duration::from_millis(5));
        b.send_to(b"x", a.local_addr().unwrap()).unwrap();
        assert!(wait_readable(&a, Duration::from_ms(1000)));
    }
}
