//! A bulk TCP flow: the sans-IO TCP sender/receiver pair plus the timer bookkeeping the
//! event loop needs (pending wake-ups, older events are stale).

use crate::transport::tcp::{TcpReceiver, TcpSender};
use crate::units::Time;

pub struct TcpFlow {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    /// Pending sender timer event (RTO or pacing release).
    pub sender_wake: Option<Time>,
    /// Pending receiver (delayed-ACK) timer event.
    pub receiver_wake: Option<Time>,
}
