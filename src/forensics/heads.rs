//! Heads: each session's and the claims log's record count and chain head, recorded now so a
//! later copy of the root can be checked against them (`makalog heads`, `verify --against`).

use super::chains::{claims_chain, Chain};
use crate::error::Result;
use crate::format::chain::chain_hex;
use crate::format::ChainValue;
use crate::root::read_marker;
use crate::segment::check::check_session;
use crate::segment::layout::list_sessions;
use crate::segment::load::scan_session_files;
use crate::storage::Storage;
use serde::{Deserialize, Serialize};

/// The head of one log's valid prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHead {
    pub records: u64,
    /// Sequence number of the last record (0 when none).
    pub head_seq: u64,
    /// The chain value after it (the genesis value when none).
    pub chain: ChainValue,
}

/// Every head of a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootHeads {
    pub root_id: String,
    /// By session id, in listing order.
    pub sessions: Vec<(String, LogHead)>,
    /// The claims log's, when the root has one.
    pub claims: Option<LogHead>,
    /// The logs whose valid prefix ends at damage (their head is the prefix's), by name; not
    /// part of a heads file.
    pub damaged: Vec<String>,
}

/// The heads of every session's and the claims log's valid prefix, as `verify` computes them
/// (a session that cannot be listed has no head here; `verify` reports it).
pub fn read_heads(storage: &dyn Storage) -> Result<RootHeads> {
    let marker = read_marker(storage)?;
    let (ids, _) = list_sessions(storage)?;
    let mut sessions = Vec::with_capacity(ids.len());
    let mut damaged = Vec::new();
    let live = storage
        .is_locked(std::path::Path::new(crate::root::LOCK_FILE))
        .unwrap_or(false);
    for id in ids {
        let (head, at_damage) = session_head(storage, &id, live);
        if at_damage {
            damaged.push(id.clone());
        }
        sessions.extend(head.map(|h| (id, h)));
    }
    let (claims, at_damage) = claims_head(storage, live)?;
    if at_damage {
        damaged.push(crate::claims::CLAIMS_FILE.to_owned());
    }
    Ok(RootHeads {
        root_id: marker.root_id,
        sessions,
        claims,
        damaged,
    })
}

/// The head of session `id`'s valid prefix (none when its files cannot be scanned), and whether
/// that prefix ends at damage. With `live` (a process owns the root), a torn tail or torn create
/// at the end of the log is a write in flight, not damage.
pub fn session_head(storage: &dyn Storage, id: &str, live: bool) -> (Option<LogHead>, bool) {
    let Ok((_, scanned)) = scan_session_files(storage, id, None) else {
        return (None, true);
    };
    let check = check_session(id, &scanned, None);
    // As verify judges them: a session created and never written, or a write in flight at
    // the end of a live owner's log, is no damage.
    let only_segment = scanned.len() == 1;
    let benign = check
        .problems
        .iter()
        .all(|p| p.is_harmless(live, only_segment));
    let head = LogHead {
        records: check.record_count,
        head_seq: check.head.0,
        chain: check.head.1,
    };
    (Some(head), !benign)
}

/// The head of the claims log's valid prefix (none when the root has no claims log), and
/// whether that prefix ends at damage (never, with `live`: a write may be in flight).
pub fn claims_head(storage: &dyn Storage, live: bool) -> Result<(Option<LogHead>, bool)> {
    let claims = claims_chain(storage)?;
    let at_damage = claims.as_ref().is_some_and(|c| c.stopped.is_some()) && !live;
    Ok((claims.as_ref().map(head_of), at_damage))
}

fn head_of(chain: &Chain) -> LogHead {
    LogHead {
        records: chain.links.len() as u64,
        head_seq: chain.head_seq(),
        chain: chain.head_chain(),
    }
}

/// The heads file: `{"format":"makalog-heads/1","rootId":…,"sessions":[…],"claims":…}` plus
/// what the writer adds (tool, madeAt), which a reader ignores.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadsFile {
    format: String,
    root_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    made_at: Option<String>,
    sessions: Vec<HeadEntry>,
    claims: Option<HeadEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HeadEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    records: u64,
    head_seq: u64,
    chain: String,
}

/// The heads file's format name and version.
pub const HEADS_FORMAT: &str = "makalog-heads/1";

impl HeadEntry {
    fn of(session: Option<&str>, h: &LogHead) -> HeadEntry {
        HeadEntry {
            session: session.map(str::to_owned),
            records: h.records,
            head_seq: h.head_seq,
            chain: chain_hex(&h.chain),
        }
    }

    fn head(&self) -> std::result::Result<LogHead, String> {
        let chain = crate::format::parse_hex32(&self.chain)
            .ok_or_else(|| format!("chain {:?} is not 64 hex digits", self.chain))?;
        Ok(LogHead {
            records: self.records,
            head_seq: self.head_seq,
            chain,
        })
    }
}

impl RootHeads {
    /// The heads as JSON, with the tool that made them and when.
    pub fn to_json(&self, tool: &str, made_at: &str) -> serde_json::Value {
        let file = HeadsFile {
            format: HEADS_FORMAT.into(),
            root_id: self.root_id.clone(),
            tool: Some(tool.into()),
            made_at: Some(made_at.into()),
            sessions: self
                .sessions
                .iter()
                .map(|(id, h)| HeadEntry::of(Some(id), h))
                .collect(),
            claims: self.claims.as_ref().map(|h| HeadEntry::of(None, h)),
        };
        serde_json::to_value(file).expect("heads serialize")
    }

    /// Reads a heads file; the reason when it is not one.
    pub fn from_json(text: &str) -> std::result::Result<RootHeads, String> {
        let file: HeadsFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.format != HEADS_FORMAT {
            return Err(format!("format {:?} is not {HEADS_FORMAT:?}", file.format));
        }
        let mut sessions = Vec::with_capacity(file.sessions.len());
        // Each session once: one named again would be read and checked again.
        let mut named = std::collections::HashSet::new();
        for e in &file.sessions {
            let id = e
                .session
                .clone()
                .ok_or("a session entry without \"session\"")?;
            if !named.insert(id.clone()) {
                return Err(format!("it names session {id} more than once"));
            }
            sessions.push((id, e.head()?));
        }
        let claims = file.claims.as_ref().map(HeadEntry::head).transpose()?;
        Ok(RootHeads {
            root_id: file.root_id,
            sessions,
            claims,
            damaged: Vec::new(),
        })
    }
}
