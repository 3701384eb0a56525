//! Strongly typed quantities. Time is integer microseconds so that a run is bit-for-bit
//! reproducible; rates and sizes are integers for the same reason, converted to `f64` only
//! inside estimators.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

/// A point on the simulation (or wall) clock, in microseconds since the run started.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Time(i64);

/// A signed span of time in microseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Duration(i64);

/// A data rate in bit/s.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Bitrate(i64);

/// An amount of data in bytes (signed so that in-flight arithmetic cannot underflow).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Bytes(i64);

impl Time {
    pub const ZERO: Time = Time(0);
    /// Larger than any time a run reaches; used for "never".
    pub const MAX: Time = Time(i64::MAX / 4);
    pub const fn from_us(us: i64) -> Self { Time(us) }
    pub const fn from_ms(ms: i64) -> Self { Time(ms * 1000) }
    pub fn from_secs_f64(s: f64) -> Self { Time((s * 1e6).round() as i64) }
    pub const fn as_us(self) -> i64 { self.0 }
    pub fn as_ms_f64(self) -> f64 { self.0 as f64 / 1e3 }
    pub fn as_secs_f64(self) -> f64 { self.0 as f64 / 1e6 }
    pub fn is_finite(self) -> bool { self < Time::MAX }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(i64::MAX / 4);
    pub const fn from_us(us: i64) -> Self { Duration(us) }
    pub const fn from_ms(ms: i64) -> Self { Duration(ms * 1000) }
    pub const fn from_secs(s: i64) -> Self { Duration(s * 1_000_000) }
    pub fn from_secs_f64(s: f64) -> Self { Duration((s * 1e6).round() as i64) }
    pub fn from_ms_f64(ms: f64) -> Self { Duration((ms * 1e3).round() as i64) }
    pub const fn as_us(self) -> i64 { self.0 }
    pub fn as_ms_f64(self) -> f64 { self.0 as f64 / 1e3 }
    pub fn as_secs_f64(self) -> f64 { self.0 as f64 / 1e6 }
    pub fn abs(self) -> Self { Duration(self.0.abs()) }
    pub fn clamp(self, lo: Duration, hi: Duration) -> Duration { Duration(self.0.clamp(lo.0, hi.0)) }
    pub fn is_finite(self) -> bool { self < Duration::MAX }
}

impl Bitrate {
    pub const ZERO: Bitrate = Bitrate(0);
    /// "No limit".
    pub const INFINITY: Bitrate = Bitrate(i64::MAX / 4);
    pub const fn from_bps(bps: i64) -> Self { Bitrate(bps) }
    pub const fn from_kbps(kbps: i64) -> Self { Bitrate(kbps * 1000) }
    pub fn from_bps_f64(bps: f64) -> Self {
        if bps.is_nan() { return Bitrate(0); }
        Bitrate(bps.round().clamp(0.0, (i64::MAX / 4) as f64) as i64)
    }
    pub fn from_kbps_f64(kbps: f64) -> Self { Self::from_bps_f64(kbps * 1e3) }
    pub const fn bps(self) -> i64 { self.0 }
    pub fn bps_f64(self) -> f64 { self.0 as f64 }
    pub fn kbps_f64(self) -> f64 { self.0 as f64 / 1e3 }
    pub fn is_finite(self) -> bool { self < Bitrate::INFINITY }
    pub fn is_zero(self) -> bool { self.0 <= 0 }
    pub fn scale(self, f: f64) -> Bitrate { Bitrate::from_bps_f64(self.0 as f64 * f) }
    pub fn saturating_sub(self, o: Bitrate) -> Bitrate { Bitrate((self.0 - o.0).max(0)) }
}

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    /// "No limit" (e.g. an unset congestion window).
    pub const INFINITY: Bytes = Bytes(i64::MAX / 4);
    pub const fn new(b: i64) -> Self { Bytes(b) }
    pub const fn get(self) -> i64 { self.0 }
    pub fn as_f64(self) -> f64 { self.0 as f64 }
    pub fn bits(self) -> i64 { self.0 * 8 }
    pub fn is_finite(self) -> bool { self < Bytes::INFINITY }
    pub fn saturating_sub(self, o: Bytes) -> Bytes { Bytes((self.0 - o.0).max(0)) }
}

macro_rules! arith {
    ($t:ident) => {
        impl Add for $t { type Output = $t; fn add(self, o: $t) -> $t { $t(self.0.saturating_add(o.0)) } }
        impl Sub for $t { type Output = $t; fn sub(self, o: $t) -> $t { $t(self.0.saturating_sub(o.0)) } }
        impl AddAssign for $t { fn add_assign(&mut self, o: $t) { self.0 = self.0.saturating_add(o.0) } }
        impl SubAssign for $t { fn sub_assign(&mut self, o: $t) { self.0 = self.0.saturating_sub(o.0) } }
        impl Mul<i64> for $t { type Output = $t; fn mul(self, k: i64) -> $t { $t(self.0.saturating_mul(k)) } }
        impl Div<i64> for $t { type Output = $t; fn div(self, k: i64) -> $t { $t(if k == 0 { 0 } else { self.0 / k }) } }
        impl Mul<f64> for $t { type Output = $t; fn mul(self, k: f64) -> $t { $t((self.0 as f64 * k).round() as i64) } }
        impl std::iter::Sum for $t { fn sum<I: Iterator<Item = $t>>(it: I) -> $t { it.fold($t(0), |a, b| a + b) } }
    };
}
arith!(Duration);
arith!(Bitrate);
arith!(Bytes);

impl Neg for Duration { type Output = Duration; fn neg(self) -> Duration { Duration(-self.0) } }
impl Add<Duration> for Time { type Output = Time; fn add(self, d: Duration) -> Time { Time(self.0.saturating_add(d.0)) } }
impl Sub<Duration> for Time { type Output = Time; fn sub(self, d: Duration) -> Time { Time(self.0.saturating_sub(d.0)) } }
impl AddAssign<Duration> for Time { fn add_assign(&mut self, d: Duration) { self.0 = self.0.saturating_add(d.0) } }
impl Sub for Time { type Output = Duration; fn sub(self, o: Time) -> Duration { Duration(self.0.saturating_sub(o.0)) } }
impl Div for Duration { type Output = f64; fn div(self, o: Duration) -> f64 { self.0 as f64 / o.0 as f64 } }
impl Div for Bitrate { type Output = f64; fn div(self, o: Bitrate) -> f64 { self.0 as f64 / o.0 as f64 } }
impl Div for Bytes { type Output = f64; fn div(self, o: Bytes) -> f64 { self.0 as f64 / o.0 as f64 } }

/// `n / d` truncated toward zero, exactly as i128 division, but in 64-bit arithmetic when both
/// fit: the 128-bit division is a library call several times slower, and the unit conversions
/// below run once or more per packet (issue 16 profile).
#[inline]
pub fn div_i128(n: i128, d: i128) -> i128 {
    match (i64::try_from(n), i64::try_from(d)) {
        (Ok(a), Ok(b)) if b != 0 && !(a == i64::MIN && b == -1) => (a / b) as i128,
        _ => n / d,
    }
}

/// rate × time = data (rounded down to whole bytes).
impl Mul<Duration> for Bitrate {
    type Output = Bytes;
    fn mul(self, d: Duration) -> Bytes { Bytes(div_i128(self.0 as i128 * d.0 as i128, 8_000_000) as i64) }
}
/// data / time = rate. A zero or negative span gives zero (no rate can be measured).
impl Div<Duration> for Bytes {
    type Output = Bitrate;
    fn div(self, d: Duration) -> Bitrate {
        if d.0 <= 0 { return Bitrate(0); }
        Bitrate(div_i128(self.0 as i128 * 8_000_000, d.0 as i128) as i64)
    }
}
/// data / rate = time to send it, rounded up to whole microseconds. A zero rate gives `Duration::MAX`.
impl Div<Bitrate> for Bytes {
    type Output = Duration;
    fn div(self, r: Bitrate) -> Duration {
        if r.0 <= 0 { return Duration::MAX; }
        let num = self.0 as i128 * 8_000_000;
        Duration(div_i128(num + r.0 as i128 - 1, r.0 as i128) as i64)
    }
}

impl fmt::Debug for Time { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{:.6}s", self.as_secs_f64()) } }
impl fmt::Display for Time { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{:.6}s", self.as_secs_f64()) } }
impl fmt::Debug for Duration { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{:.3}ms", self.as_ms_f64()) } }
impl fmt::Display for Duration { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{:.3}ms", self.as_ms_f64()) } }
impl fmt::Debug for Bitrate { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{:.1}kbps", self.kbps_f64()) } }
impl fmt::Display for Bitrate { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{:.1}kbps", self.kbps_f64()) } }
impl fmt::Debug for Bytes { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{}B", self.0) } }
impl fmt::Display for Bytes { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{}B", self.0) } }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_64_bit_division_path_equals_128_bit_division() {
        let cases: [i128; 12] = [0, 1, -1, 7, -7, 8_000_000, i64::MAX as i128, i64::MIN as i128, i64::MAX as i128 + 1,
                                 (i64::MIN as i128) - 1, i128::MAX / 3, -(i128::MAX / 5)];
        for &n in &cases {
            for &d in &cases {
                if d != 0 { assert_eq!(div_i128(n, d), n / d, "{n} / {d}"); }
            }
        }
    }

    #[test]
    fn rate_time_size_arithmetic() {
        // 1200 bytes at 1 Mbit/s take 9.6 ms.
        assert_eq!(Bytes::new(1200) / Bitrate::from_kbps(1000), Duration::from_us(9600));
        // rounding up: 1 byte at 3 bit/s = 2.666.. s -> 2_666_667 us
        assert_eq!(Bytes::new(1) / Bitrate::from_bps(3), Duration::from_us(2_666_667));
        assert_eq!(Bitrate::from_kbps(2000) * Duration::from_ms(100), Bytes::new(25_000));
        assert_eq!(Bytes::new(25_000) / Duration::from_ms(100), Bitrate::from_kbps(2000));
        assert_eq!(Bytes::new(10) / Duration::ZERO, Bitrate::ZERO);
        assert_eq!(Bytes::new(10) / Bitrate::ZERO, Duration::MAX);
    }

    #[test]
    fn time_ops_saturate() {
        let t = Time::from_ms(5) + Duration::from_ms(10);
        assert_eq!(t.as_us(), 15_000);
        assert_eq!(t - Time::from_ms(20), Duration::from_ms(-5));
        assert!(Time::MAX + Duration::MAX > Time::MAX);
        assert_eq!(Bitrate::from_bps_f64(f64::NAN), Bitrate::ZERO);
        assert_eq!(Bitrate::from_bps_f64(-5.0), Bitrate::ZERO);
    }
}
