#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| makalog_fuzz_bodies::model(data));
