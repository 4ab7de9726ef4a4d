//! A root a live process owns, as far as its logs are valid now: each session's log and the
//! claims log cut at the end of their valid prefix (later segments hidden), so a copy taken while the owner
//! writes holds no half-written record. Bytes before a valid prefix's end never change (the
//! logs are append-only), so what the view shows stays true while the owner goes on. Each
//! session's sidecar is hidden: one the owner writes after the cut would record as durable
//! records the cut leaves out, and a reader of the copy would refuse the session for the loss
//! (FORMAT.md, "What a sidecar recorded as durable is never cut"); a copy's reader rebuilds it.

use super::chains::{claims_chain, session_chain};
use crate::claims::CLAIMS_FILE;
use crate::error::Result;
use crate::index::SIDECAR_FILE;
use crate::segment::layout::{list_session, list_sessions, session_dir};
use crate::storage::{Cut, CutView, Storage};

/// The view, and how many logs it cut.
pub fn durable_view(storage: &dyn Storage) -> Result<(CutView<'_>, usize)> {
    let mut view = CutView::new(storage);
    let mut cut = 0;
    for id in list_sessions(storage)?.0 {
        view.cut(session_dir(&id).join(SIDECAR_FILE), Cut::Hidden);
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
