//! Compound RTCP demultiplexing: never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ratelab_core::wire::is_rtcp(data);
    let _ = ratelab_core::wire::parse_rtcp(data);
});
