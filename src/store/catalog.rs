//! The owner's catalog of session headers: what `list_sessions` answers from, so listing costs
//! a copy of the headers rather than two file reads a session.
//!
//! It is materialized from the sessions on first use (every session directory, as the
//! read-only listing reads them) and kept by invalidation: a header record queued for a session
//! marks that session's entry stale, under the session's lock, before anything can read it, and
//! the next listing reads a stale entry again from the session's view (which answers only what
//! is durable). An answer read while the entry went stale again is not kept, so the catalog
//! never holds a header older than one already queued. It lives in memory only: a new owner
//! builds it again, so nothing on disk has to be checked against the sessions.

use super::live::lock;
use crate::error::Result;
use crate::model::SessionHeader;
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Default)]
pub(super) struct HeaderCatalog {
    /// `None` until first built; then every session directory seen, and every session a header
    /// was queued for since.
    entries: Mutex<Option<BTreeMap<String, Entry>>>,
}

#[derive(Clone)]
enum Entry {
    /// The session's latest durable header (none for a directory without one), as of
    /// `version`.
    Fresh(Option<SessionHeader>, u64),
    /// To be read again: a header was queued after `version - 1`.
    Stale(u64),
}

impl Entry {
    fn version(&self) -> u64 {
        match self {
            Entry::Fresh(_, v) | Entry::Stale(v) => *v,
        }
    }
}

impl HeaderCatalog {
    /// Marks `session_id`'s entry stale: called with a header record queued for it, under the
    /// session's lock. Before the catalog is built there is nothing to mark: building lists
    /// every directory, and a session's directory exists before its first header is queued.
    pub fn header_queued(&self, session_id: &str) {
        if let Some(entries) = lock(&self.entries).as_mut() {
            let version = entries.get(session_id).map_or(0, Entry::version) + 1;
            entries.insert(session_id.to_owned(), Entry::Stale(version));
        }
    }

    /// Every session's latest header, by `createdAt` then id. `sessions` lists the session
    /// directories (to build the catalog), `header_of` reads one session's header from its view.
    pub fn list(
        &self,
        sessions: impl FnOnce() -> Result<Vec<String>>,
        header_of: impl Fn(&str) -> Result<Option<SessionHeader>>,
    ) -> Result<Vec<SessionHeader>> {
        // What the catalog holds now: the fresh headers, and the entries to read again.
        let (mut headers, stale) = {
            let mut guard = lock(&self.entries);
            let entries = match guard.as_mut() {
                Some(entries) => entries,
                None => guard.insert(
                    sessions()?
                        .into_iter()
                        .map(|id| (id, Entry::Stale(0)))
                        .collect(),
                ),
            };
            let mut fresh = Vec::with_capacity(entries.len());
            let mut stale = Vec::new();
            for (id, e) in entries.iter() {
                match e {
                    Entry::Fresh(header, _) => fresh.extend(header.clone()),
                    Entry::Stale(v) => stale.push((id.clone(), *v)),
                }
            }
            (fresh, stale)
        };
        let mut read = Vec::with_capacity(stale.len());
        for (id, version) in stale {
            read.push((header_of(&id)?, id, version));
        }
        let mut guard = lock(&self.entries);
        let entries = guard.get_or_insert_with(BTreeMap::new);
        for (header, id, version) in read {
            // Kept only if no header was queued since the read began.
            if entries.get(&id).is_some_and(|e| e.version() == version) {
                entries.insert(id, Entry::Fresh(header.clone(), version));
            }
            headers.extend(header);
        }
        drop(guard);
        sort_headers(&mut headers);
        Ok(headers)
    }
}

/// Sorts headers by `createdAt`, then id: the order `list_sessions` answers in. Each key is
/// looked up once, not at every comparison.
pub(super) fn sort_headers(headers: &mut Vec<SessionHeader>) {
    let mut order: Vec<(f64, &str, usize)> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| (h.value()["createdAt"].as_f64().unwrap_or(0.0), h.id(), i))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    let order: Vec<usize> = order.into_iter().map(|(.., i)| i).collect();
    let mut taken: Vec<Option<SessionHeader>> =
        std::mem::take(headers).into_iter().map(Some).collect();
    headers.extend(order.into_iter().filter_map(|i| taken[i].take()));
}
