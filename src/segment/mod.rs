//! The per-session segment log: layout, scanning, cross-segment checks, recovery, writer, reader.

pub mod check;
pub mod frames_at;
pub mod layout;
pub mod load;
pub mod reader;
pub mod record;
pub mod scan;
pub mod writer;

pub use check::{check_session, ScannedSegment, SessionCheck};
pub use frames_at::{FramesAt, WINDOW};
pub use reader::{Record, SessionReader};
pub use scan::{scan_segment, scan_segment_tail, Resume, ScanResult, SegmentScan};
pub use writer::{Appended, Durability, SegmentWriter, WriterConfig};
