//! A media flow in the simulator: the sans-IO sender (`endpoint::MediaSender`) and the
//! receiver's state (frames, feedback generation, optional receiver-side estimator), which the
//! simulator still drives directly (sim/mod.rs).

use crate::controller::ReceiverEstimator;
use crate::endpoint::MediaSender;
use crate::feedback::generator::FeedbackGenerator;
use crate::media::receiver::FrameReceiver;
use crate::units::Bytes;

pub use crate::endpoint::{cwnd_drop_interval, AudioStream};

pub struct MediaFlow {
    pub sender: MediaSender,
    pub estimator: Option<Box<dyn ReceiverEstimator>>,
    /// Per-packet header bytes (the receiver counts payload).
    pub header: Bytes,
    pub feedback: FeedbackGenerator,
    pub receiver: FrameReceiver,
}
