//! A storage root: its marker file, created once and validated on every open.

mod marker;

pub use marker::{create_or_open_root, read_marker, RootMarker, MARKER_FILE, ROOT_KIND};
