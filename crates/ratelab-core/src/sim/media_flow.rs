//! A media flow in the simulator: the two sans-IO endpoints, which the simulator drives
//! (sim/mod.rs) and connects through its network.

use crate::endpoint::{MediaReceiver, MediaSender};

pub use crate::endpoint::{cwnd_drop_interval, AudioStream};

pub struct MediaFlow {
    pub sender: MediaSender,
    pub receiver: MediaReceiver,
}
