//! The media endpoints, sans-IO (in the spirit of quinn-proto's `Connection`): the sender's
//! whole media pipeline and controller calls in one type, the receiver's frame rendering,
//! feedback and receiver-side estimator in another, which every driver — the simulator, live
//! mode's UDP loops, the RL environment — feeds with time and packets and drains of output.
//! Keeping one copy of each keeps the drivers from drifting apart.
//!
//! Sender: events in ([`MediaSender::handle_timeout`], [`MediaSender::handle_feedback`],
//! [`MediaSender::handle_remote_estimate`], [`MediaSender::handle_route_change`]); out
//! ([`MediaSender::poll_transmit`], [`MediaSender::poll_timeout`]).
//! Receiver: in ([`MediaReceiver::handle_packet`], [`MediaReceiver::handle_timeout`]); out
//! ([`MediaReceiver::poll_transmit`]: feedback reports and estimates, [`MediaReceiver::poll_timeout`]).

pub mod rate;
pub mod receiver;
pub mod send_clock;
pub mod sender;

pub use rate::{cwnd_drop_interval, AudioStream};
pub use sender::{MediaSender, SenderParts, SenderTimer, Transmit};
pub use receiver::{Arrival, FramePart, MediaReceiver, ReceiverTimer, ReceiverTransmit};
