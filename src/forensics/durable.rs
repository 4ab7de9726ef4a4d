//! A root a live process owns, as far as its logs are valid now: each session's log and the
//! claims log cut at the end of their valid prefix (later segments hidden), so a copy taken while the owner
//! writes holds no half-written record. Bytes before a valid prefix's end never change (the
//! logs are append-only), so what the view shows stays true while the owner goes on. Each
//! session's sidecar is hidden: one the owner writes after the cut would record as durable
//! records the cut leaves out, and a reader of the copy would refuse the session for the loss
//! (FORMAT.md, "What a sidecar recorded as durable is never cut"); a copy's reader rebuilds it.
//! The sessions' directories are closed as they stand: a session or a segment created later
//! (a roll after a log was cut before its seal) is not in the view.

use super::chains::{claims_chain, session_chain};
use crate::claims::CLAIMS_FILE;
use crate::error::Result;
use crate::index::SIDECAR_FILE;
use crate::segment::layout::{list_session, list_sessions, session_dir, SESSIONS_DIR};
use crate::storage::{Cut, CutView, Storage};
use std::path::Path;

/// The view, and how many logs it cut.
pub fn durable_view(storage: &dyn Storage) -> Result<(CutView<'_>, usize)> {
    let mut view = CutView::new(storage);
    let mut cut = 0;
    // What the owner creates from now on (a session, a segment a roll makes after a log was
    // cut before its seal) is not in the view.
    view.close_dir(SESSIONS_DIR, names_in(storage, Path::new(SESSIONS_DIR))?);
    for id in list_sessions(storage)?.0 {
        let dir = session_dir(&id);
        view.close_dir(&dir, names_in(storage, &dir)?);
        view.cut(dir.join(SIDECAR_FILE), Cut::Hidden);
        let segments = list_session(storage, &id)?.segments;
        let chain = session_chain(storage, &id)?;
        // A session with no valid record yet is left as it is: there is nothing to cut to.
        let Some(last) = chain.links.last() else {
            continue;
        };
        let mut past = false;
        for seg in &segments {
            if past {
                view.cut(&seg.path, Cut::Hidden);
            } else if seg.path == last.file {
                view.cut(&seg.path, Cut::At(last.end));
                past = true;
            }
        }
        cut += 1;
    }
    if let Some(chain) = claims_chain(storage)? {
        let end = chain
            .links
            .last()
            .map_or(crate::format::CLAIMS_HEADER_LEN as u64, |l| l.end);
        view.cut(CLAIMS_FILE, Cut::At(end));
        cut += 1;
    }
    Ok((view, cut))
}

/// The names in `dir` now (none when it is not there yet).
fn names_in(storage: &dyn Storage, dir: &Path) -> Result<Vec<String>> {
    match storage.list_dir(dir) {
        Ok(entries) => Ok(entries.into_iter().map(|e| e.name).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(crate::error::Error::io(dir, "list directory", e)),
    }
}
