//! REMB parser: never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ratelab_core::wire::remb::Remb;

fuzz_target!(|data: &[u8]| {
    let _ = Remb::is_remb(data);
    if let Ok(r) = Remb::parse(data) {
        let mut out = Vec::new();
        r.write(&mut out).expect("a parsed packet can be written");
        assert_eq!(Remb::parse(&out).expect("re-parse").ssrcs, r.ssrcs);
    }
});
