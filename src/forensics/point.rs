//! A session as it stood at a point in its history: the root seen through a [`CutView`] in
//! which the session's log ends after the record at that point and its sidecar is hidden, so
//! every store read rebuilds from the log prefix alone and answers as it would have then.
//!
//! A point is a sequence number, or a time. A record's time is the latest instant it states
//! (the largest of its top-level `ts`, `createdAt`, `updatedAt`, `completedAt`, `lastUsedAt`,
//! `lastMessageAt`, `statusUpdatedAt`, `admittedAt`, `claimedAt`); the prefix at a time is the
//! longest prefix none of whose records states a later instant (a record that states none
//! goes with the one before it). The claims log is cut the same way, at the latest instant
//! the session's prefix holds, so the claims shown are the ones known then.

use super::chains::Link;
use crate::claims::{replay_claims_visiting, CLAIMS_FILE};
use crate::error::{Error, Result};
use crate::format::ClaimKind;
use crate::root::read_marker;
use crate::segment::layout::{list_session, session_dir};
use crate::segment::SessionReader;
use crate::storage::{Cut, CutView, Storage};
use std::path::{Path, PathBuf};

/// Where to stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Point {
    /// After the record with this sequence number.
    Seq(u64),
    /// After the last record of the prefix stating no instant later than this (ms since epoch).
    Time(f64),
}

/// The root at a point of one session's history.
pub struct PointView<'a> {
    /// The root, cut: read it with the stores' read-only APIs.
    pub view: CutView<'a>,
    /// The last record kept (`None`: the point is before the first record).
    pub last: Option<Link>,
    /// The records the session holds in all.
    pub total: u64,
    /// The latest instant the kept records state.
    pub as_of: Option<f64>,
    /// Claims-log records kept, of how many.
    pub claims_kept: u64,
    pub claims_total: u64,
}

const TIME_KEYS: [&str; 9] = [
    "ts",
    "createdAt",
    "updatedAt",
    "completedAt",
    "lastUsedAt",
    "lastMessageAt",
    "statusUpdatedAt",
    "admittedAt",
    "claimedAt",
];

/// The latest instant a JSON payload states at its top level. Read with the ledger's own
/// reader, which takes every nesting the ledger does (serde_json's stops at 128 levels).
pub fn stated_time(payload: &[u8]) -> Option<f64> {
    let v = crate::event::parse::parse(std::str::from_utf8(payload).ok()?).ok()?;
    TIME_KEYS
        .iter()
        .filter_map(|k| v.get(k).and_then(serde_json::Value::as_f64))
        .reduce(f64::max)
}

/// The root as it stood at `point` of `session_id`'s history. `Err` when the session is not
/// there, or `point` is a sequence number past its valid prefix.
pub fn view_at<'a>(
    storage: &'a dyn Storage,
    session_id: &str,
    point: Point,
) -> Result<PointView<'a>> {
    let listing = list_session(storage, session_id)?;
    let mut last: Option<Link> = None;
    let mut as_of: Option<f64> = None;
    let mut total = 0;
    let mut stopped = false;
    for record in SessionReader::open(storage, session_id, 1)? {
        let Ok(r) = record else { break };
        total = r.seq;
        if stopped {
            continue;
        }
        let time = stated_time(&r.payload);
        let keep = match point {
            Point::Seq(seq) => r.seq <= seq,
            Point::Time(t) => time.is_none_or(|x| x <= t),
        };
        if !keep {
            stopped = true;
            continue;
        }
        as_of = match (as_of, time) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        last = Some(Link::of(&r));
    }
    if let Point::Seq(seq) = point {
        if seq > total {
            return Err(Error::InvalidInput(format!(
                "session {session_id} holds {total} valid records; there is no seq {seq}"
            )));
        }
    }
    let mut view = CutView::new(storage);
    // The sidecar may cover more than the prefix: every read rebuilds from the log instead.
    view.cut(
        session_dir(session_id).join(crate::index::SIDECAR_FILE),
        Cut::Hidden,
    );
    let keep_file: Option<PathBuf> = last.as_ref().map(|l| l.file.clone());
    let mut past = false;
    for seg in &listing.segments {
        if past || keep_file.is_none() {
            view.cut(&seg.path, Cut::Hidden);
        } else if Some(&seg.path) == keep_file.as_ref() {
            let end = last.as_ref().map_or(0, |l| l.end);
            view.cut(&seg.path, Cut::At(end));
            past = true;
        }
    }
    let (claims_kept, claims_total) = cut_claims(storage, &mut view, as_of)?;
    Ok(PointView {
        view,
        last,
        total,
        as_of,
        claims_kept,
        claims_total,
    })
}

/// Cuts the claims log after the longest prefix stating no instant later than `as_of`.
fn cut_claims(
    storage: &dyn Storage,
    view: &mut CutView<'_>,
    as_of: Option<f64>,
) -> Result<(u64, u64)> {
    let root_id = read_marker(storage)?.root_id_bytes()?;
    let bytes = match crate::storage::data_end::read_data(storage, Path::new(CLAIMS_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(e) => return Err(Error::io(CLAIMS_FILE, "read", e)),
    };
    let header_end = crate::format::CLAIMS_HEADER_LEN as u64;
    let (mut kept, mut total, mut end, mut stopped) = (0, 0, header_end, false);
    replay_claims_visiting(&bytes, &root_id, &mut |l, payload| {
        total += 1;
        if stopped {
            return;
        }
        let time = match l.kind {
            ClaimKind::GraphIntentClaim | ClaimKind::SessionCreateClaim => stated_time(payload),
            ClaimKind::GraphIntentStatus | ClaimKind::SubagentSpawnClaim => None,
        };
        if matches!((time, as_of), (Some(t), Some(at)) if t > at) || as_of.is_none() {
            stopped = true;
            return;
        }
        kept += 1;
        end = l.end;
    });
    view.cut(CLAIMS_FILE, Cut::At(end));
    Ok((kept, total))
}

#[cfg(test)]
mod tests {
    use super::stated_time;

    /// A record nested as deep as the ledger takes still states its time: read with the
    /// ledger's own reader, not one that stops at 128 levels.
    #[test]
    fn a_deeply_nested_record_states_its_time() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let payload = format!(r#"{{"createdAt":5,"n":{deep},"updatedAt":7}}"#);
        assert_eq!(stated_time(payload.as_bytes()), Some(7.0));
        assert_eq!(stated_time(b"{\"createdAt\":5}"), Some(5.0));
        assert_eq!(stated_time(b"not json"), None);
        assert_eq!(stated_time(b"\xff"), None);
    }
}
