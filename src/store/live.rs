//! A session as the runtime-event store holds it open for writing: its writer, and its view in
//! memory with the id table of the sidecar it was loaded from mapped.

use super::stored::stored_event;
use crate::error::{Error, Result};
use crate::index::{
    catch_up, decode_sidecar_header, encode_sidecar, find_ids, id_entries, id_hash, rebuild,
    resume_point, section, section_unchecked, trusted_sidecar, IdEntry, RuntimeInvocation,
    SessionIndex, SIDECAR_FILE,
};
use crate::root::Owner;
use crate::segment::layout::session_dir;
use crate::segment::{FramesAt, SegmentWriter, WriterConfig};
use crate::storage::{replace_cache_file, FileBytes, Storage};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// A session open for writing.
pub(crate) struct SessionEvents {
    pub writer: SegmentWriter,
    pub state: Mutex<LiveView>,
}

/// A session's view: in memory, plus the id table of the sidecar it was loaded from.
pub(crate) struct LiveView {
    pub view: SessionIndex,
    base: Option<BaseIds>,
    /// True when the view holds records the sidecar on disk does not.
    pub dirty: bool,
    /// The invocations as last listed, until an opening or terminal event changes them.
    pub listed: Option<Vec<RuntimeInvocation>>,
    /// The canonical JSON of openings and terminal events appended since the sidecar was last
    /// written, by record number: a listing reads the rest back from the log, but these may
    /// still be queued for writing.
    pub pending: HashMap<u64, String>,
    /// The record number of the last immutable event applied: its appender waits until it is
    /// durable, and a reader waits for that too, so reads see only durable events.
    pub fact_seq: u64,
}

/// The id section of a mapped sidecar.
struct BaseIds {
    path: PathBuf,
    bytes: FileBytes,
    start: usize,
    end: usize,
    /// The section's CRC, checked on first use.
    crc: u32,
    checked: bool,
}

impl BaseIds {
    fn body(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    fn find(&self, id: &str) -> Result<Vec<IdEntry>> {
        find_ids(self.body(), id_hash(id)).map_err(|e| Error::corrupt(&self.path, 0, e.what))
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn sidecar_path(session_id: &str) -> PathBuf {
    session_dir(session_id).join(SIDECAR_FILE)
}

impl LiveView {
    /// The session's invocations: openings and terminals appended since the sidecar from
    /// memory, the others read back from the log.
    pub fn invocations(&self, storage: &dyn Storage) -> Result<Vec<RuntimeInvocation>> {
        let mut frames = FramesAt::new(storage, &self.view.session_id);
        self.view
            .invocations(&mut |at| match self.pending.get(&at.record_seq) {
                Some(json) => Ok(json.clone()),
                None => frames
                    .payload(at.ordinal, at.offset, at.record_seq)
                    .and_then(|p| utf8(p, &self.view.session_id, at.offset)),
            })
    }

    /// Checks the mapped id table once; a damaged one means the sidecar cannot be trusted, so
    /// the view is rebuilt from the segments and its sidecar rewritten. The caller holds the
    /// session's state lock, so nothing new is queued while `writer` is synced for the rebuild.
    pub fn check_base(&mut self, storage: &dyn Storage, writer: &SegmentWriter) -> Result<()> {
        let Some(base) = self.base.as_mut() else {
            return Ok(());
        };
        if base.checked {
            return Ok(());
        }
        if crc32fast::hash(base.body()) == base.crc {
            base.checked = true;
            return Ok(());
        }
        writer.sync()?;
        self.view = rebuild(storage, &self.view.session_id)?;
        self.base = None;
        self.listed = None;
        self.dirty = true;
        // The sidecar only caches the log: if it cannot be rewritten now, the view rebuilt in
        // memory serves, and the next close tries again. An append never fails for it.
        let _ = write_sidecar(storage, self);
        Ok(())
    }

    /// The entries that may be the stored event with this id: the view's own, or the sidecar's
    /// with the same id hash (each to be confirmed by reading the event back).
    pub fn candidates(&self, id: &str) -> Result<Vec<IdEntry>> {
        if let Some(e) = self.view.ids.get(id) {
            return Ok(vec![*e]);
        }
        match &self.base {
            Some(base) => base.find(id),
            None => Ok(Vec::new()),
        }
    }
}

/// Opens a session for writing: loads its sidecar if it still describes the segments, recovers
/// the log after what it covers, and catches the view up. A missing, damaged or foreign sidecar
/// is rebuilt from the segments, and written if the log holds records (a new session's first
/// sidecar waits for its close, so creating a session costs only its log's syncs).
pub(crate) fn open_for_writing(
    owner: &Owner,
    config: &WriterConfig,
    session_id: &str,
) -> Result<SessionEvents> {
    let storage = &**owner.storage();
    // The sidecar is read once: a trusted one says where the log resumes; one that no longer
    // vouches for the log still says how far it was durable.
    let (loaded, resume, durable) = match read_sidecar(storage, session_id)? {
        SidecarFile::Trusted(live) => {
            let resume = resume_point(&live.view);
            (Some(*live), resume, resume)
        }
        SidecarFile::Untrusted(bytes) => (None, None, recorded_durable(&bytes, session_id)),
        SidecarFile::Absent => (None, None, None),
    };
    let (writer, _) =
        SegmentWriter::open_guarded(owner, session_id, config.clone(), resume, durable)?;
    let mut live = match loaded {
        Some(mut live) => {
            let before = live.view.covers.clone();
            caught_up(storage, &mut live)?;
            live.dirty = live.view.covers != before;
            live
        }
        None => {
            // A log with no record (a session created just now) has nothing to rebuild from.
            let view = if writer.next_seq() == 1 {
                SessionIndex::new(session_id)
            } else {
                rebuild(storage, session_id)?
            };
            let mut live = LiveView {
                pending: HashMap::new(),
                fact_seq: 0,
                dirty: true,
                view,
                base: None,
                listed: None,
            };
            // Written now so the rebuilt ids need not stay in memory; if it cannot be, the
            // session opens all the same (the sidecar only caches the log) and its close
            // tries again.
            if !live.view.covers.is_empty() {
                let _ = write_sidecar(storage, &mut live);
            }
            live
        }
    };
    // Everything recovered is durable.
    live.fact_seq = writer.next_seq() - 1;
    Ok(SessionEvents {
        writer,
        state: Mutex::new(live),
    })
}

/// Applies the records after what a loaded view covers; ids the sidecar holds are confirmed by
/// reading the stored event back.
pub(crate) fn caught_up(storage: &dyn Storage, live: &mut LiveView) -> Result<()> {
    let base = live.base.take();
    let session_id = live.view.session_id.clone();
    let known = |id: &str| {
        base.as_ref().is_some_and(|b| {
            b.find(id)
                .unwrap_or_default()
                .iter()
                .any(|e| stored_event(storage, &session_id, e, id).is_ok_and(|p| p.is_some()))
        })
    };
    catch_up(storage, &mut live.view, &known)?;
    live.base = base;
    Ok(())
}

/// Syncs a session, writes its sidecar if it is behind the log, and closes its writer (cutting
/// the zeros ahead of the data): what closing the store or evicting the session does.
pub(crate) fn close_session(storage: &dyn Storage, session: SessionEvents) -> Result<()> {
    session.writer.sync()?;
    let mut st = lock(&session.state);
    st.check_base(storage, &session.writer)?;
    if st.dirty {
        store_sidecar(storage, &mut st)?;
    }
    drop(st);
    session.writer.close()
}

/// Where the session's sidecar, if it decodes and is this session's, says the log was durable,
/// whether or not its covers still hold.
fn recorded_durable(bytes: &[u8], session_id: &str) -> Option<crate::segment::Resume> {
    let header = decode_sidecar_header(bytes).ok()?;
    let view = crate::index::decode_sidecar_state(bytes, &header).ok()?;
    (view.session_id == session_id)
        .then(|| resume_point(&view))
        .flatten()
}

/// The session's sidecar, if present, whole, of this session and still true of its segments;
/// `None` means rebuild.
pub(crate) fn load_sidecar(storage: &dyn Storage, session_id: &str) -> Result<Option<LiveView>> {
    Ok(match read_sidecar(storage, session_id)? {
        SidecarFile::Trusted(live) => Some(*live),
        SidecarFile::Untrusted(_) | SidecarFile::Absent => None,
    })
}

/// What a session's sidecar file came to.
enum SidecarFile {
    /// None could be read.
    Absent,
    /// Its bytes, which do not vouch for the log as it is now.
    Untrusted(FileBytes),
    /// Whole, of this session and still true of its segments.
    Trusted(Box<LiveView>),
}

fn read_sidecar(storage: &dyn Storage, session_id: &str) -> Result<SidecarFile> {
    let path = sidecar_path(session_id);
    let bytes = match storage.map_file(&path) {
        Ok(b) => b,
        Err(_) => return Ok(SidecarFile::Absent),
    };
    let Some((view, header)) = trusted_sidecar(storage, session_id, &bytes)? else {
        return Ok(SidecarFile::Untrusted(bytes));
    };
    let ids = section_unchecked(&bytes, &header, 2);
    let start = ids.as_ptr() as usize - bytes.as_ptr() as usize;
    let end = start + ids.len();
    Ok(SidecarFile::Trusted(Box::new(LiveView {
        view,
        base: Some(BaseIds {
            path,
            bytes,
            start,
            end,
            crc: header.sections[2].crc,
            checked: false,
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
    });
    live.view.ids = Default::default();
    live.pending.clear();
    Ok(())
}

/// Writes the view's sidecar atomically, merging the mapped sidecar's ids; returns its path.
/// What a close does: the view is dropped next, so the new file is not mapped.
fn store_sidecar(storage: &dyn Storage, live: &mut LiveView) -> Result<PathBuf> {
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

/// A stored event's bytes as text.
pub(crate) fn utf8(bytes: Vec<u8>, session_id: &str, offset: u64) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        Error::corrupt(
            session_dir(session_id),
            offset,
            "runtime event is not UTF-8",
        )
    })
}
