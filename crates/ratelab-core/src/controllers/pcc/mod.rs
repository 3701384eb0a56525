//! The PCC family (Performance-oriented Congestion Control): senders that learn their rate from
//! the utility of monitor intervals. [`monitor`] holds the monitor interval shared with `vivace`
//! (PCC Vivace, `controllers/vivace.rs`); [`allegro`] and [`utility`] are PCC Allegro (NSDI'15,
//! controller `pcc-allegro`, docs/controllers/pcc-allegro.md).

pub mod allegro;
pub mod monitor;
pub mod utility;
#[cfg(test)]
mod tests;

pub use allegro::{Allegro, AllegroConfig};
