//! Transport-wide feedback: the receiver's report generator and the sender's send history
//! that matches reports to sent packets.

pub mod generator;
pub mod history;
