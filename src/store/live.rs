//! A session as the runtime-event store holds it open for writing: its writer, and its view in
//! memory with the id table of the sidecar it was loaded from mapped.

use super::sidecar_file::{read_sidecar, store_sidecar, write_sidecar, BaseIds, SidecarFile};
use super::stored::StoredIds;
use crate::error::{Error, Result};
use crate::index::{catch_up, rebuild, resume_point, IdEntry, RuntimeInvocation, SessionIndex};
use crate::root::Owner;
use crate::segment::layout::session_dir;
use crate::segment::{FramesAt, SegmentWriter, WriterConfig};
use crate::storage::Storage;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// A session open for writing.
pub(crate) struct SessionEvents {
    pub writer: SegmentWriter,
    pub state: Mutex<LiveView>,
}

/// A session's view: in memory, plus the id table of the sidecar it was loaded from.
pub(crate) struct LiveView {
    pub view: SessionIndex,
    pub(super) base: Option<BaseIds>,
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Checks the mapped id table once (its CRC, no more than `MAX_SAME_HASH` entries on one
    /// hash, each naming a record the covers vouch for); a damaged one means the sidecar cannot
    /// be trusted, so
    /// the view is rebuilt from the segments and its sidecar rewritten. The caller holds the
    /// session's state lock, so nothing new is queued while `writer` is synced for the rebuild.
    pub fn check_base(&mut self, storage: &dyn Storage, writer: &SegmentWriter) -> Result<()> {
        let Some(base) = self.base.as_mut() else {
            return Ok(());
        };
        if base.checked {
            return Ok(());
        }
        if crc32fast::hash(base.body()) == base.crc
            && crate::index::ids_within_bounds(base.body(), base.vouched)
        {
            base.checked = true;
            return Ok(());
        }
        self.rebuild_base(storage, writer)
    }

    /// True while ids are looked up in the sidecar's id table.
    pub fn has_base(&self) -> bool {
        self.base.is_some()
    }

    /// Stops trusting the sidecar's id table (it failed a check, or an entry named a frame that
    /// is not there): the view is rebuilt from the segments and the sidecar rewritten. The
    /// caller holds the session's state lock.
    pub fn rebuild_base(&mut self, storage: &dyn Storage, writer: &SegmentWriter) -> Result<()> {
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
        SidecarFile::Untrusted(bytes) => (
            None,
            None,
            crate::index::recorded_durable(&bytes, session_id),
        ),
        SidecarFile::Absent => (None, None, None),
    };
    let (writer, _) =
        SegmentWriter::open_guarded(owner, session_id, config.clone(), resume, durable)?;
    // A sidecar whose ids cost more to confirm than the segments hold is dropped.
    let loaded = match loaded {
        Some(mut live) => {
            let before = live.view.covers.clone();
            caught_up(storage, &mut live)?.then(|| {
                live.dirty = live.view.covers != before;
                live
            })
        }
        None => None,
    };
    let mut live = match loaded {
        Some(live) => live,
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
/// reading the stored event back (each frame once). False when confirming them would have
/// read more than the segments hold ([`StoredIds::exhausted`]): the view is then to be
/// rebuilt from the segments, what was caught up dropped.
pub(crate) fn caught_up(storage: &dyn Storage, live: &mut LiveView) -> Result<bool> {
    let base = live.base.take();
    let session_id = live.view.session_id.clone();
    let stored = StoredIds::new(storage, &session_id);
    let known = |id: &str| {
        base.as_ref().is_some_and(|b| {
            b.find(id)
                .unwrap_or_default()
                .iter()
                .any(|e| stored.holds(e, id))
        })
    };
    let applied = catch_up(storage, &mut live.view, &known);
    if stored.exhausted() {
        return Ok(false);
    }
    applied?;
    live.base = base;
    Ok(true)
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
