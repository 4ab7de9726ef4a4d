//! What a sidecar's lists may point at (FORMAT.md, "The index sidecar"): each message, run event
//! and invocation opening or terminal is a record of its own (save that one event may both open
//! and end its invocation), so no two entries name the same record, and each names one the
//! covers vouch for. A sidecar is a cache read before the log:
//! without this rule a crafted one could name one large record a thousand times over and make
//! a read cost a thousand times what the log holds.

use super::view::SessionIndex;
use crate::format::FormatError;

/// Fails unless every position the view's lists hold names a distinct record at or below the
/// last record the covers vouch for.
pub fn check_positions(view: &SessionIndex) -> Result<(), FormatError> {
    let last = view.covers.last().map_or(0, |c| c.last_seq);
    let messages = view.session.messages.iter().map(|m| m.at);
    let events = view
        .session
        .runs
        .values()
        .flat_map(|r| r.events.iter().map(|e| e.at));
    // One event may both open and end its invocation: its opening and terminal are one
    // record, named once here.
    let invocations = view.invocations.values().flat_map(|i| {
        let opening = i.opening.as_ref().map(|k| k.at);
        let terminal = i.terminal.as_ref().map(|k| k.at);
        [opening, terminal.filter(|t| Some(*t) != opening)]
            .into_iter()
            .flatten()
    });
    let mut seqs: Vec<u64> = messages
        .chain(events)
        .chain(invocations)
        .map(|at| at.record_seq)
        .collect();
    seqs.sort_unstable();
    if let Some(&seq) = seqs.last().filter(|&&seq| seq > last) {
        return Err(FormatError::new(
            0,
            format!("sidecar names record {seq}, past the last it covers ({last})"),
        ));
    }
    if let Some(pair) = seqs.windows(2).find(|p| p[0] == p[1]) {
        return Err(FormatError::new(
            0,
            format!("sidecar names record {} twice", pair[0]),
        ));
    }
    Ok(())
}
