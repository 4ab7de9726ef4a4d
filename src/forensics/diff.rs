//! Comparing two copies of a root log by log: how much history they share, where their
//! chains part, and the records each holds that the other does not.

use super::chains::{claims_chain, session_chain, Chain, Link};
use crate::error::Result;
use crate::segment::layout::list_sessions;
use crate::storage::Storage;

/// How one log differs between copy A and copy B.
#[derive(Debug, Clone)]
pub struct LogDiff {
    /// The session id, or `claims.log`.
    pub name: String,
    pub in_a: bool,
    pub in_b: bool,
    /// Records both hold, with the same chain: the common prefix.
    pub common: u64,
    /// The first sequence number both hold with different chain values: history parted there.
    pub diverges_at: Option<u64>,
    /// Records after the common prefix in each.
    pub only_a: Vec<Link>,
    pub only_b: Vec<Link>,
    /// Damage that ended either valid prefix early.
    pub a_stopped: Option<String>,
    pub b_stopped: Option<String>,
}

impl LogDiff {
    /// True when both copies hold the same log: the same records, and no damage in either
    /// (what follows damage is unknown, so two damaged copies are never known the same).
    pub fn is_same(&self) -> bool {
        self.in_a
            && self.in_b
            && self.only_a.is_empty()
            && self.only_b.is_empty()
            && self.a_stopped.is_none()
            && self.b_stopped.is_none()
    }
}

/// The difference of two valid prefixes. Equal chain values at a sequence number mean equal
/// histories up to it, so the common prefix is the longest run of equal chain values.
pub fn diff_chains(name: &str, a: Option<&Chain>, b: Option<&Chain>) -> LogDiff {
    let empty = Chain::default();
    let (ca, cb) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    let common = ca
        .links
        .iter()
        .zip(&cb.links)
        .take_while(|(x, y)| x.chain == y.chain)
        .count();
    let both_go_on = common < ca.links.len() && common < cb.links.len();
    LogDiff {
        name: name.to_owned(),
        in_a: a.is_some(),
        in_b: b.is_some(),
        common: common as u64,
        diverges_at: both_go_on.then_some(common as u64 + 1),
        only_a: ca.links[common..].to_vec(),
        only_b: cb.links[common..].to_vec(),
        a_stopped: ca.stopped.clone(),
        b_stopped: cb.stopped.clone(),
    }
}

/// Every session of either root (or only `session`), then the claims log, compared.
pub fn diff_roots(a: &dyn Storage, b: &dyn Storage, session: Option<&str>) -> Result<Vec<LogDiff>> {
    crate::root::read_marker(a)?;
    crate::root::read_marker(b)?;
    let mut names: Vec<String> = match session {
        Some(id) => vec![id.to_owned()],
        None => {
            let mut all = list_sessions(a)?.0;
            all.extend(list_sessions(b)?.0);
            all
        }
    };
    names.sort();
    names.dedup();
    let chain = |s: &dyn Storage, id: &str| -> Result<Option<Chain>> {
        let dir = crate::segment::layout::session_dir(id);
        let kind = s
            .entry_kind(&dir)
            .map_err(|e| crate::Error::io(&dir, "stat", e))?;
        if kind != Some(crate::storage::EntryKind::Dir) {
            return Ok(None);
        }
        session_chain(s, id).map(Some)
    };
    let mut out = Vec::with_capacity(names.len() + 1);
    for id in &names {
        let (ca, cb) = (chain(a, id)?, chain(b, id)?);
        out.push(diff_chains(id, ca.as_ref(), cb.as_ref()));
    }
    if session.is_none() {
        let (ca, cb) = (claims_chain(a)?, claims_chain(b)?);
        if ca.is_some() || cb.is_some() {
            out.push(diff_chains(
                crate::claims::CLAIMS_FILE,
                ca.as_ref(),
                cb.as_ref(),
            ));
        }
    }
    Ok(out)
}
