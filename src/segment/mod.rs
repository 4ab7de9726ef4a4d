//! The per-session segment log: layout, scanning, cross-segment checks, recovery, writer, reader.

pub mod check;
pub mod layout;
pub mod load;
pub mod reader;
pub mod recovery;
pub mod scan;
pub mod writer;

pub use check::{check_session, Problem, ScannedSegment, SessionCheck};
pub use reader::{Record, SessionReader};
pub use recovery::{RecoveryReport, Repair};
pub use scan::{scan_segment, FrameCursor, ScanResult, SegmentEnd, SegmentScan};
pub use writer::{Appended, Durability, SegmentWriter, WriterConfig};
