//! The media endpoint, sans-IO (in the spirit of quinn-proto's `Connection`): the sender's
//! whole media pipeline and controller calls in one type that every driver — the simulator,
//! live mode's UDP loop, the RL environment — feeds with time and feedback and drains of
//! packets. Keeping one copy keeps the drivers from drifting apart.
//!
//! Surface: events in ([`MediaSender::handle_timeout`], [`MediaSender::handle_feedback`],
//! [`MediaSender::handle_remote_estimate`], [`MediaSender::handle_route_change`]); out
//! ([`MediaSender::poll_transmit`], [`MediaSender::poll_timeout`]).

pub mod rate;
pub mod sender;

pub use rate::{cwnd_drop_interval, AudioStream};
pub use sender::{MediaSender, SenderParts, SenderTimer, Transmit};
