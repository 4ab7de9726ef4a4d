//! A session's sidecar file as the store reads and writes it: read once on open (trusted, or
//! only saying how far the log was durable), its id section kept mapped, and rewritten by
//! rename from the view in memory.

use super::live::LiveView;
use crate::error::{Error, Result};
use crate::index::{
    decode_sidecar_header, encode_sidecar, find_ids, id_entries, id_hash, section,
    section_unchecked, trusted_sidecar, IdEntry, SIDECAR_FILE,
};
use crate::segment::layout::session_dir;
use crate::storage::{replace_cache_file, FileBytes, Storage};
use std::collections::HashMap;
use std::path::PathBuf;

/// The id section of a mapped sidecar.
pub(super) struct BaseIds {
    path: PathBuf,
    bytes: FileBytes,
    start: usize,
    end: usize,
    /// The section's CRC, checked on first use.
    pub crc: u32,
    pub checked: bool,
    /// The last record the sidecar's covers vouch for: no entry may name a later one
    /// (FORMAT.md, ids), whatever the view caught up to before the first use.
    pub vouched: u64,
}

impl BaseIds {
    pub fn body(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    pub fn find(&self, id: &str) -> Result<Vec<IdEntry>> {
        find_ids(self.body(), id_hash(id)).map_err(|e| Error::corrupt(&self.path, 0, e.what))
    }
}

pub(crate) fn sidecar_path(session_id: &str) -> PathBuf {
    session_dir(session_id).join(SIDECAR_FILE)
}

/// What a session's sidecar file came to.
pub(super) enum SidecarFile {
    /// None could be read.
    Absent,
    /// Its bytes, which do not vouch for the log as it is now.
    Untrusted(FileBytes),
    /// Whole, of this session and still true of its segments.
    Trusted(Box<LiveView>),
}

pub(super) fn read_sidecar(storage: &dyn Storage, session_id: &str) -> Result<SidecarFile> {
    match storage.map_file(&sidecar_path(session_id)) {
        Ok(bytes) => sidecar_of(storage, session_id, bytes),
        Err(_) => Ok(SidecarFile::Absent),
    }
}

/// What a session's sidecar comes to, from its bytes already read.
pub(super) fn sidecar_of(
    storage: &dyn Storage,
    session_id: &str,
    bytes: FileBytes,
) -> Result<SidecarFile> {
    let path = sidecar_path(session_id);
    let Some((view, header)) = trusted_sidecar(storage, session_id, &bytes)? else {
        return Ok(SidecarFile::Untrusted(bytes));
    };
    let ids = section_unchecked(&bytes, &header, 2);
    let start = ids.as_ptr() as usize - bytes.as_ptr() as usize;
    let end = start + ids.len();
    let vouched = view.covers.last().map_or(0, |c| c.last_seq);
    Ok(SidecarFile::Trusted(Box::new(LiveView {
        view,
        base: Some(BaseIds {
            path,
            bytes,
            start,
            end,
            crc: header.sections[2].crc,
            checked: false,
            vouched,
        }),
        dirty: false,
        listed: None,
        pending: HashMap::new(),
        fact_seq: 0,
    })))
}

/// Writes the view's sidecar atomically, merging the mapped sidecar's ids, and maps the new one.
pub(crate) fn write_sidecar(storage: &dyn Storage, live: &mut LiveView) -> Result<()> {
    let path = store_sidecar(storage, live)?;
    let mapped = storage
        .map_file(&path)
        .map_err(|e| Error::io(&path, "map", e))?;
    let header = decode_sidecar_header(&mapped)
        .map_err(|e| Error::corrupt(&path, e.offset as u64, e.what))?;
    let ids =
        section(&mapped, &header, 2).map_err(|e| Error::corrupt(&path, e.offset as u64, e.what))?;
    let start = ids.as_ptr() as usize - mapped.as_ptr() as usize;
    let end = start + ids.len();
    let crc = header.sections[2].crc;
    live.base = Some(BaseIds {
        path,
        bytes: mapped,
        start,
        end,
        crc,
        checked: true,
        vouched: live.view.covers.last().map_or(0, |c| c.last_seq),
    });
    live.view.ids = Default::default();
    live.pending.clear();
    Ok(())
}

/// Writes the view's sidecar atomically, merging the mapped sidecar's ids; returns its path.
/// What a close does: the view is dropped next, so the new file is not mapped.
pub(super) fn store_sidecar(storage: &dyn Storage, live: &mut LiveView) -> Result<PathBuf> {
    let path = sidecar_path(&live.view.session_id);
    let base_ids = match &live.base {
        Some(b) if b.checked => {
            id_entries(b.body()).map_err(|e| Error::corrupt(&path, 0, e.what))?
        }
        Some(_) => {
            return Err(Error::corrupt(
                &path,
                0,
                "the sidecar's ids were not checked",
            ))
        }
        None => Vec::new(),
    };
    let bytes =
        encode_sidecar(&live.view, &base_ids).map_err(|e| Error::corrupt(&path, 0, e.what))?;
    replace_cache_file(storage, &path, &bytes)?;
    live.dirty = false;
    Ok(path)
}
