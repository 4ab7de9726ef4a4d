//! Offline forensics over a root someone else wrote: the chain of every log, heads recorded
//! and checked later, two copies compared, a session as it stood at a point in its history,
//! and the valid prefix of a damaged root salvaged into a new one. Read-only on its input.

pub mod against;
pub mod chains;
pub mod diff;
pub mod durable;
pub mod heads;
pub mod point;
pub mod salvage;
pub mod sidecar;

pub use against::{compare_heads, HeadVerdict};
pub use chains::{claims_chain, session_chain, Chain, Link};
pub use diff::{diff_chains, diff_roots, LogDiff};
pub use durable::durable_view;
pub use heads::{claims_head, read_heads, session_head, LogHead, RootHeads, HEADS_FORMAT};
pub use point::{stated_time, view_at, Point, PointView};
pub use sidecar::{sidecar_standing, SidecarStanding};
