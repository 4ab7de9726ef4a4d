//! Checking a root against heads recorded earlier: for each log, was it left alone, did it
//! only grow, or was its history changed or cut? Only a record kept elsewhere can tell a
//! rewrite whose CRCs and later chain values were all recomputed from the original.

use super::chains::{claims_chain, session_chain, Chain};
use super::heads::{LogHead, RootHeads};
use crate::error::Result;
use crate::root::read_marker;
use crate::segment::layout::list_sessions;
use crate::storage::Storage;
use std::collections::HashSet;

/// What became of one log since its head was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadVerdict {
    /// The same head.
    Unchanged,
    /// The recorded head is still on the chain at its sequence number; `added` records follow.
    Grew { added: u64 },
    /// The chain at the recorded sequence number differs: history up to it was changed.
    Rewritten { seq: u64 },
    /// The log's valid prefix ends before the recorded head.
    Lost { recorded: u64, holds: u64 },
    /// The session is gone.
    Missing,
    /// A session the heads do not name (it came later).
    New { records: u64 },
}

impl HeadVerdict {
    /// True for what says the evidence was altered or lost.
    pub fn is_finding(&self) -> bool {
        matches!(
            self,
            HeadVerdict::Rewritten { .. } | HeadVerdict::Lost { .. } | HeadVerdict::Missing
        )
    }

    /// One word for it, as `verify --against --json` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            HeadVerdict::Unchanged => "unchanged",
            HeadVerdict::Grew { .. } => "grew",
            HeadVerdict::Rewritten { .. } => "rewritten",
            HeadVerdict::Lost { .. } => "lost",
            HeadVerdict::Missing => "missing",
            HeadVerdict::New { .. } => "new",
        }
    }

    /// A sentence for a person.
    pub fn describe(&self) -> String {
        match self {
            HeadVerdict::Unchanged => "unchanged".into(),
            HeadVerdict::Grew { added } => {
                format!("grew: the recorded head is still on its chain, {added} records after it")
            }
            HeadVerdict::Rewritten { seq } => format!(
                "rewritten: the chain at seq {seq} differs from the recorded head (history up to it was changed)"
            ),
            HeadVerdict::Lost { recorded, holds } => format!(
                "lost records: {recorded} recorded, the valid prefix now holds {holds}"
            ),
            HeadVerdict::Missing => "missing: the session is gone".into(),
            HeadVerdict::New { records } => {
                format!("new: not in the recorded heads ({records} records)")
            }
        }
    }
}

/// Each log named by `recorded`, and each session it does not name, with its verdict: by
/// session id, then `claims.log` for the claims log. `Err` when the root cannot be read or
/// the heads were recorded from another root.
pub fn compare_heads(
    storage: &dyn Storage,
    recorded: &RootHeads,
) -> Result<Vec<(String, HeadVerdict)>> {
    let marker = read_marker(storage)?;
    if marker.root_id != recorded.root_id {
        return Err(crate::Error::InvalidInput(format!(
            "the heads were recorded from root {}, this is root {}",
            recorded.root_id, marker.root_id
        )));
    }
    let (ids, _) = list_sessions(storage)?;
    // Sets, not lists searched: a crafted heads file of a million sessions against a root of
    // as many would otherwise cost their product.
    let present: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let named: HashSet<&str> = recorded.sessions.iter().map(|(r, _)| r.as_str()).collect();
    let mut out = Vec::new();
    for (id, head) in &recorded.sessions {
        let verdict = if present.contains(id.as_str()) {
            judge(head, &session_chain(storage, id)?)
        } else {
            HeadVerdict::Missing
        };
        out.push((id.clone(), verdict));
    }
    for id in ids.iter().filter(|id| !named.contains(id.as_str())) {
        let records = session_chain(storage, id)?.links.len() as u64;
        out.push((id.clone(), HeadVerdict::New { records }));
    }
    if let Some(head) = &recorded.claims {
        let verdict = match claims_chain(storage)? {
            Some(chain) => judge(head, &chain),
            None => HeadVerdict::Missing,
        };
        out.push((crate::claims::CLAIMS_FILE.to_owned(), verdict));
    }
    Ok(out)
}

/// The verdict for one log whose head was `recorded` and whose valid prefix is now `now`.
pub fn judge(recorded: &LogHead, now: &Chain) -> HeadVerdict {
    let held = if recorded.head_seq == 0 {
        Some(now.genesis)
    } else {
        now.at(recorded.head_seq).map(|l| l.chain)
    };
    match held {
        None => HeadVerdict::Lost {
            recorded: recorded.records,
            holds: now.links.len() as u64,
        },
        Some(chain) if chain != recorded.chain => HeadVerdict::Rewritten {
            seq: recorded.head_seq,
        },
        Some(_) if now.head_seq() == recorded.head_seq => HeadVerdict::Unchanged,
        Some(_) => HeadVerdict::Grew {
            added: now.head_seq() - recorded.head_seq,
        },
    }
}
