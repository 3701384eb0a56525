//! Network model.

pub mod trace;
