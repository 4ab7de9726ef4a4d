//! Appending frames to a file durably: the file with its zero-filled space ahead, and group
//! commit. Shared by the segment writer and the claims log.

mod append_file;
mod group;

pub(crate) use append_file::{AppendFile, Prealloc};
pub(crate) use group::{GroupCommit, Pending, Sink};
