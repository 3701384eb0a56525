//! ratelab live mode: the core's controllers over real UDP.
//!
//! The simulator is one driver of the `Controller` interface; this crate is another. It owns
//! the I/O the core leaves out — wall clock, sockets, threads — and reuses everything else from
//! `ratelab-core` unchanged: the encoder model, packetizer, pacer, send history, feedback
//! generator, frame receiver, metrics, link model, and the wire formats in `ratelab_core::wire`.
//!
//! * [`sender::Sender`]: encoder → pacer → RTP over UDP; RTCP feedback → controller.
//! * [`receiver::Receiver`]: RTP → frames, metrics, TWCC / RFC 8888 feedback, REMB.
//! * [`emulator::Emulator`]: a UDP relay applying the link model in real time, both directions.
//! * [`run::live_run`]: all three on loopback for one scenario, with the simulator's outputs.

pub mod emulator;
pub mod flags;
pub mod net;
pub mod payload;
pub mod pcap;
pub mod receiver;
pub mod run;
pub mod sender;

use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Raised to stop a running component from another thread (Ctrl-C, end of a run).
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn new() -> Self { Self::default() }
    pub fn raise(&self) { self.0.store(true, Ordering::SeqCst) }
    pub fn is_raised(&self) -> bool { self.0.load(Ordering::Relaxed) }
    /// The flag itself, for a component that stops the run from outside (a failing user
    /// controller in the binding).
    pub fn shared(&self) -> Arc<AtomicBool> { self.0.clone() }
}

/// Summary of a distribution (count, mean, percentiles, max) in the unit recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Quantiles {
    pub n: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Quantiles {
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Quantiles {
        if h.is_empty() { return Quantiles::default(); }
        Quantiles {
            n: h.len(), mean: h.mean(), p50: h.value_at_quantile(0.5) as f64, p90: h.value_at_quantile(0.9) as f64, p95: h.value_at_quantile(0.95) as f64,
            p99: h.value_at_quantile(0.99) as f64, max: h.max() as f64,
        }
    }
    pub fn scaled(self, f: f64) -> Quantiles {
        Quantiles { n: self.n, mean: self.mean * f, p50: self.p50 * f, p90: self.p90 * f, p95: self.p95 * f, p99: self.p99 * f, max: self.max * f }
    }
}
