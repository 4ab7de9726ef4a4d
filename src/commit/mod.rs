//! Appending frames to a file durably: the file with its zero-filled space ahead, and group
//! commit, and directory syncs shared by concurrent creators. Shared by the segment writer and
//! the claims log.

mod append_file;
mod dir_sync;
mod group;
mod rewrite;

pub(crate) use append_file::{AppendFile, Prealloc};
pub(crate) use dir_sync::SharedDirSync;
pub(crate) use group::{GroupCommit, Pending, Sink};
pub(crate) use rewrite::{rewrite_and_sync, write_back_unpersisted};
