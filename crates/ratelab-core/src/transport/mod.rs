//! Transport-layer models that share the bottleneck with the media flows.
//!
//! Everything here is sans-IO like the rest of the core: state machines that take events with
//! an explicit `now` and hand back what should go on the wire. The simulator owns the links,
//! queues and the clock.
//!
//! * [`tcp`]: bulk TCP flows (window-based senders with pluggable congestion control).

pub mod tcp;
