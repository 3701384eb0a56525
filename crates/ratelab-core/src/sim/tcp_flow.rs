//! A bulk TCP flow: the sans-IO TCP sender/receiver pair plus the timer bookkeeping the
//! event loop needs (pending wake-ups, older events are stale).

use crate::transport::tcp::{TcpReceiver, TcpSender};
use crate::units::{Duration, Time};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

pub struct TcpFlow {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    /// Pending sender timer event (RTO or pacing release).
    pub sender_wake: Option<Time>,
    /// Pending receiver (delayed-ACK) timer event.
    pub receiver_wake: Option<Time>,
    /// On/off pattern (RFC 8867 5.7), if any.
    pub on_off: Option<OnOff>,
}

/// Files of `file_bytes` separated by exponential OFF times.
pub struct OnOff {
    pub file_bytes: u64,
    pub off_mean_s: f64,
    pub initially_on: bool,
    pub rng: ChaCha8Rng,
    /// An ON event is scheduled (the current file is done).
    pub waiting: bool,
    /// Files started so far.
    pub files: u64,
}

impl OnOff {
    /// Draw the next OFF time (exponential with mean `off_mean_s`).
    pub fn off_time(&mut self) -> Duration {
        let u: f64 = self.rng.gen();
        Duration::from_secs_f64(-self.off_mean_s * (1.0 - u).ln())
    }
}
