//! The media path: encoder model and packetizer, pacer, and receiver-side frame handling.

pub mod encoder;
pub mod exp_filter;
pub mod fec;
pub mod pacer;
pub mod quality;
pub mod receiver;
pub mod nack;
pub mod rtx;
