//! Which logs earn a sidecar (format/FORMAT.md, "When a session has a sidecar"). A sidecar
//! caches what a rebuild of the log would find; for a log whose records end within the first
//! page of its first segment, the rebuild reads that one page, no more than the sidecar would,
//! while the sidecar costs a file (an inode and a block) beside it. Most sessions of a host
//! are small and idle (a subagent holding its header), so such a session is its segment alone.

use super::view::Cover;

/// The offset in a session's first segment up to which its records may end with no sidecar.
pub const SMALL_LOG: u64 = 4096;

/// Whether a log covered as `covers` says is past [`SMALL_LOG`], so a close writes its sidecar.
pub fn earns_sidecar(covers: &[Cover]) -> bool {
    match covers {
        [] => false,
        [only] => only.data_end > SMALL_LOG,
        _ => true,
    }
}
