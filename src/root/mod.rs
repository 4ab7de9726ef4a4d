//! A storage root: its marker file, created once and validated on every open, and the
//! single-owner lease that alone opens it for writing.

mod marker;
mod owner;

pub use marker::{create_or_open_root, read_marker, RootMarker, MARKER_FILE, ROOT_KIND};
pub use owner::{try_acquire_owner, Lease, LogHold, Owner, LOCK_FILE};
pub(crate) use owner::{FailureMark, Unsynced};
