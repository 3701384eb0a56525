//! ratelab core: a sans-IO library (no sockets, no wall clock, no threads, no global RNG).
//!
//! * [`units`]: `Time`, `Duration`, `Bitrate`, `Bytes`.
//! * [`controller`]: the one controller interface (events in, [`controller::Update`] out).
//! * [`controllers`]: every controller, built by name from a registry.
//! * [`network`], [`media`], [`feedback`]: the sans-IO building blocks of a media session.
//! * [`sim`]: the discrete-event simulator that drives them; [`scenario`] describes a run.
//! * [`metrics`]: streamed per-flow statistics and logs.
//! * [`transport`]: competing transport flows (bulk TCP: sender, receiver, window congestion control).
//! * [`wire`]: RTP/RTCP wire formats (TWCC, RFC 8888, REMB) for the live driver, sans-IO.

pub mod controller;
pub mod controllers;
pub mod endpoint;
pub mod error;
pub mod feedback;
pub mod media;
pub mod metrics;
pub mod network;
pub mod scenario;
pub mod sim;
pub mod transport;
pub mod wire;
pub mod units;

pub use controller::{Constraints, Controller, PacketResult, ReceiverEstimator, SentPacket, TransportFeedback, Update};
pub use error::ConfigError;
pub use units::{Bitrate, Bytes, Duration, Time};
