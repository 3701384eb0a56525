//! The network: bottleneck link, capacity schedules, loss models and traces.

pub mod capacity;
pub mod link;
pub mod loss;
pub mod packet;
pub mod trace;
