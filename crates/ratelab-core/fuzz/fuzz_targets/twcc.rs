//! TWCC parser: never panics; whatever parses re-encodes and parses to the same value, and
//! the sender-side decoder accepts it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ratelab_core::wire::twcc::{TwccDecoder, TwccFeedback};

fuzz_target!(|data: &[u8]| {
    if let Ok(fb) = TwccFeedback::parse(data) {
        let mut out = Vec::new();
        fb.write(&mut out).expect("a parsed packet can be written");
        assert_eq!(TwccFeedback::parse(&out).expect("re-parse"), fb);
        let _ = TwccDecoder::new().decode(&fb, 1000);
    }
});
