//! The shared harness of every fuzz target: each target is one line naming a function of
//! `quakecap::fuzzing`, so the stable corpus replay (`tests/fuzz_corpus.rs`) runs exactly
//! the code the fuzzer ran.
pub use libfuzzer_sys;

/// `target!(name)` defines the libFuzzer entry point calling `quakecap::fuzzing::name`.
#[macro_export]
macro_rules! target {
    ($name:ident) => {
        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            quakecap::fuzzing::$name(data);
        });
    };
}
