//! The bodies of makalog's fuzz targets. Each is a plain function of the input bytes that must
//! return for every input: a decoder may refuse, never panic, hang or allocate beyond what the
//! bytes hold, and what it accepts must agree with itself (re-encoding, re-scanning, the
//! canonical form decoding to itself, reads that write nothing). A broken rule panics, which
//! is what libFuzzer reports and `cargo test` fails on.
//!
//! `fuzz/fuzz_targets/<name>.rs` hands libFuzzer's input to the body of that name; the replay
//! test runs every file of `fuzz/corpus/<name>/` and `tests/fuzz-regressions/<name>/` through
//! it on the stable toolchain.

mod archive;
mod format;
mod model;
mod payloads;
mod root_dir;
mod sim_root;

pub use archive::{pack, unpack, MAX_ENTRIES};
pub use format::{
    claims_log, frame_stream, open_runs, root_marker, seal_footer, segment_header, sidecar,
};
pub use model::model;
pub use payloads::{admission, message, run_event, run_header, runtime_event, session_header};
pub use root_dir::root_dir;

/// A target's body.
pub type Body = fn(&[u8]);

/// Every target: its name (the file under `fuzz/fuzz_targets/` and the folder of its corpus)
/// and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("segment_header", segment_header),
    ("frame_stream", frame_stream),
    ("seal_footer", seal_footer),
    ("claims_log", claims_log),
    ("sidecar", sidecar),
    ("root_marker", root_marker),
    ("open_runs", open_runs),
    ("runtime_event", runtime_event),
    ("session_header", session_header),
    ("message", message),
    ("run_header", run_header),
    ("run_event", run_event),
    ("admission", admission),
    ("root_dir", root_dir),
    ("model", model),
];
