//! One session of the source as a plan: its header, how its id is claimed (with its spawn for
//! a subagent), and every record of it in the order they are written.

use super::order::{merge, Timed};
use super::report::Report;
use super::sql::{claim_time, json, key_part, select, text, time};
use super::{events, lifecycle, messages, rows};
use makalog::claims::{validate_spawn_claim, ClaimRecord, SubagentSpawnClaim};
use makalog::format::RecordKind;
use makalog::import::{IdClaim, Planned, SessionPlan};
use makalog::model::SessionHeader;
use rusqlite::types::Value;
use rusqlite::Connection;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A session's header row.
pub(super) const HEADER: &str =
    "SELECT payload_json, created_at FROM session_metadata WHERE session_id = ?1 LIMIT 1";

/// A `subagent_spawns` row.
pub struct SpawnRow {
    pub key: String,
    pub claim: SubagentSpawnClaim,
    pub initial_turn_id: String,
    pub initial_run_id: String,
    pub claimed_at: u64,
}

/// What a session's id claim is made of: the source's create claims and spawns, by session.
pub struct Claims {
    /// By id, so the ids without a session are claimed in one order.
    pub creates: BTreeMap<String, u64>,
    pub spawns: HashMap<String, SpawnRow>,
    /// Deleted sessions' ids, by id, with when each was deleted.
    pub tombstones: BTreeMap<String, u64>,
}

/// The sessions of `session_metadata`, by id, each once: a source without its primary key may
/// hold two rows of one id, of which the first is planned and each later one refused.
pub fn session_ids(conn: &Connection, report: &mut Report) -> rusqlite::Result<Vec<String>> {
    let mut ids: Vec<String> = Vec::new();
    for r in select(
        conn,
        "SELECT session_id FROM session_metadata ORDER BY session_id",
        [],
    )? {
        let id = key_part(&r[0]);
        if ids.last() == Some(&id) {
            let why = "repeats an earlier row of the session, which is the one imported";
            report.refused("session_metadata", id, why.into());
        } else {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// What a session is planned from: the source, its claims, and the format version of the
/// root it is written to.
pub struct Planning<'a> {
    pub conn: &'a Connection,
    pub claims: &'a Claims,
    pub version: u16,
}

/// Plans session `sid`, accounting for each of its rows in `report`; `None` when its header is
/// refused (and with it every row of the session).
pub fn plan(
    source: &Planning,
    sid: &str,
    report: &mut Report,
) -> rusqlite::Result<Option<SessionPlan>> {
    let (conn, claims) = (source.conn, source.claims);
    let (header, created_at) = match header_of(conn, sid)? {
        Ok(h) => h,
        Err(why) => {
            report.refused("session_metadata", sid.to_owned(), why);
            if let Some(spawn) = claims.spawns.get(sid) {
                report.refused(
                    "subagent_spawns",
                    spawn.key.clone(),
                    "its child session's header was not imported".into(),
                );
            }
            if claims.creates.contains_key(sid) {
                report.refused(
                    "session_create_claims",
                    sid.to_owned(),
                    "its session's header was not imported".into(),
                );
            }
            rows::refuse_session(conn, sid, report)?;
            return Ok(None);
        }
    };
    report.imported("session_metadata", 1);
    let id_claim = id_claim(sid, &header, created_at, claims, report);
    let mut streams: Vec<Vec<Timed>> = lifecycle::turns(conn, sid, source.version, report)?;
    streams.extend(lifecycle::runs(conn, sid, report)?);
    streams.push(events::runtime_events(conn, sid, report)?);
    streams.push(messages::messages(conn, sid, report)?);
    let mut records = vec![Planned::Record {
        kind: RecordKind::SessionHeader,
        payload: header.canonical_json().to_owned(),
    }];
    records.extend(merge(streams));
    Ok(Some(SessionPlan {
        session_id: sid.to_owned(),
        id_claim,
        records,
    }))
}

/// The id claim session `sid`'s plan would make, without planning its records (what is checked
/// of every session before anything is written); `None` when its header is refused.
pub fn id_claim_of(
    conn: &Connection,
    sid: &str,
    claims: &Claims,
    scratch: &mut Report,
) -> rusqlite::Result<Option<IdClaim>> {
    Ok(header_of(conn, sid)?
        .ok()
        .map(|(header, created_at)| id_claim(sid, &header, created_at, claims, scratch)))
}

/// Refuses each spawn row whose child is not a session of the source.
pub fn refuse_orphan_spawns(claims: &Claims, planned: &HashSet<&String>, report: &mut Report) {
    let mut orphans: Vec<&SpawnRow> = claims
        .spawns
        .iter()
        .filter(|(child, _)| !planned.contains(child))
        .map(|(_, row)| row)
        .collect();
    orphans.sort_by(|a, b| a.key.cmp(&b.key));
    for row in orphans {
        report.refused(
            "subagent_spawns",
            row.key.clone(),
            "its child session is not in session_metadata".into(),
        );
    }
}

/// Session `sid`'s header and creation time from `session_metadata`, or why it is refused.
fn header_of(
    conn: &Connection,
    sid: &str,
) -> rusqlite::Result<Result<(SessionHeader, u64), String>> {
    let row = select(conn, HEADER, [sid])?;
    Ok(row
        .first()
        .ok_or_else(|| "vanished while read".to_owned())
        .and_then(|r| decode_header(sid, r)))
}

fn decode_header(sid: &str, r: &[Value]) -> Result<(SessionHeader, u64), String> {
    makalog::format::validate_session_id(sid)?;
    let header = SessionHeader::from_value(json(&r[0])?).map_err(|e| e.to_string())?;
    if header.id() != sid {
        return Err(format!("its payload names session {}", header.id()));
    }
    super::order::header_fits(header.canonical_json())?;
    Ok((header, time(&r[1])?.max(0.0) as u64))
}

/// The session's id claim: with its spawn when a `subagent_spawns` row agrees with the
/// header's subagent objects, at the source's claim time (its create claim's, else its
/// spawn's, else its creation).
fn id_claim(
    sid: &str,
    header: &SessionHeader,
    created_at: u64,
    claims: &Claims,
    report: &mut Report,
) -> IdClaim {
    let create = claims.creates.get(sid).copied();
    if create.is_some() {
        report.imported("session_create_claims", 1);
    }
    let Some(spawn) = claims.spawns.get(sid) else {
        return IdClaim::Create {
            at: create.unwrap_or(created_at),
        };
    };
    match spawn_agrees(header, spawn) {
        Ok(claim) => {
            report.imported("subagent_spawns", 1);
            IdClaim::Spawn {
                claim,
                at: create.unwrap_or(spawn.claimed_at),
            }
        }
        Err(why) => {
            report.refused("subagent_spawns", spawn.key.clone(), why);
            IdClaim::Create {
                at: create.unwrap_or(created_at),
            }
        }
    }
}

/// The spawn claim of a `subagent_spawns` row, carrying the child's header, if the row and the
/// header's `subagentParent` and `subagentSpawn` say the same.
fn spawn_agrees(header: &SessionHeader, spawn: &SpawnRow) -> Result<SubagentSpawnClaim, String> {
    let v = header.value();
    let (parent, block) = (&v["subagentParent"], &v["subagentSpawn"]);
    let s = |x: &Json| x.as_str().unwrap_or_default().to_owned();
    let c = &spawn.claim;
    // The key's last two slots (§5): a swarm's ids, a graph operator's `graph:<graphId>` and
    // workId, or empty.
    let (swarm, item) = match parent.get("graph") {
        Some(g) => (format!("graph:{}", s(&g["graphId"])), s(&g["workId"])),
        None => (
            s(&parent["swarm"]["swarmId"]),
            s(&parent["swarm"]["itemId"]),
        ),
    };
    let agrees = s(&parent["parentSessionId"]) == c.parent_session_id
        && s(&parent["spawnedBy"]["parentRunId"]) == c.parent_run_id
        && s(&parent["spawnedBy"]["toolCallId"]) == c.tool_call_id
        && swarm == c.swarm_id
        && item == c.item_id
        && s(&block["requestFingerprint"]) == c.request_fingerprint
        && s(&block["initialTurnId"]) == spawn.initial_turn_id
        && s(&block["initialRunId"]) == spawn.initial_run_id;
    if !agrees {
        return Err("disagrees with its child's subagentParent or subagentSpawn".into());
    }
    let mut claim = c.clone();
    // The canonical form, parsed: what the claims log stores and gives back.
    claim.child_header = serde_json::from_str(header.canonical_json()).ok();
    validate_spawn_claim(&claim).map_err(|e| e.to_string())?;
    // The claim carries the header, so it is longer and one level deeper than the header's
    // record: one may fit a segment while the claims log refuses the other.
    ClaimRecord::Spawn(claim.clone())
        .encode_within(makalog::format::DEFAULT_MAX_PAYLOAD)
        .map_err(|e| format!("its spawn claim, which carries the child's header: {e}"))?;
    Ok(claim)
}

/// Reads `subagent_spawns` and `session_create_claims`.
pub fn claims(conn: &Connection, report: &mut Report) -> rusqlite::Result<Claims> {
    let mut spawns: HashMap<String, SpawnRow> = HashMap::new();
    // The spawn keys taken, by claim time: a source without its primary key may hold two rows
    // of one key, or two spawns of one child; the earlier keeps it, the later is refused (the
    // claims log would refuse it midway, and every rerun then).
    let mut keys: HashSet<[String; 5]> = HashSet::new();
    for r in select(
        conn,
        "SELECT parent_session_id, parent_run_id, tool_call_id, swarm_id, item_id, request_fingerprint, child_session_id, initial_turn_id, initial_run_id, claimed_at FROM subagent_spawns ORDER BY claimed_at, child_session_id",
        [],
    )? {
        let key = super::sql::key(&[&r[0], &r[1], &r[2], &r[3], &r[4]]);
        let row = (|| {
            let t = |i: usize| text(&r[i]).map(str::to_owned);
            Ok::<_, String>(SpawnRow {
                claim: SubagentSpawnClaim {
                    parent_session_id: t(0)?,
                    parent_run_id: t(1)?,
                    tool_call_id: t(2)?,
                    swarm_id: t(3)?,
                    item_id: t(4)?,
                    request_fingerprint: t(5)?,
                    child_session_id: t(6)?,
                    child_header: None,
                },
                initial_turn_id: t(7)?,
                initial_run_id: t(8)?,
                claimed_at: claim_time(&r[9])?,
                key: key.clone(),
            })
        })();
        let row = row.and_then(|row| {
            if spawns.contains_key(&row.claim.child_session_id) {
                return Err("its child is an earlier spawn's of the source".into());
            }
            let c = &row.claim;
            let parts = [
                c.parent_session_id.clone(),
                c.parent_run_id.clone(),
                c.tool_call_id.clone(),
                c.swarm_id.clone(),
                c.item_id.clone(),
            ];
            if !keys.insert(parts) {
                return Err("its spawn key is an earlier spawn's of the source".into());
            }
            Ok(row)
        });
        match row {
            Ok(row) => {
                spawns.insert(row.claim.child_session_id.clone(), row);
            }
            Err(why) => report.refused("subagent_spawns", key, why),
        }
    }
    let mut creates = BTreeMap::new();
    for r in select(
        conn,
        "SELECT session_id, claimed_at FROM session_create_claims ORDER BY claimed_at, session_id",
        [],
    )? {
        match (text(&r[0]), claim_time(&r[1])) {
            (Ok(id), Ok(_)) if creates.contains_key(id) => report.refused(
                "session_create_claims",
                id.to_owned(),
                "repeats an earlier create claim of the id".into(),
            ),
            (Ok(id), Ok(at)) => {
                creates.insert(id.to_owned(), at);
            }
            (Err(why), _) | (_, Err(why)) => {
                report.refused("session_create_claims", key_part(&r[0]), why)
            }
        }
    }
    let mut tombstones = BTreeMap::new();
    for r in select(
        conn,
        "SELECT session_id, deleted_at FROM session_metadata_tombstones",
        [],
    )? {
        match (text(&r[0]), claim_time(&r[1])) {
            (Ok(id), Ok(at)) => {
                if tombstones.insert(id.to_owned(), at).is_some() {
                    // A source without its primary key: one row is kept, the other refused.
                    report.refused(
                        "session_metadata_tombstones",
                        id.to_owned(),
                        "repeats an earlier tombstone of the id".into(),
                    );
                }
            }
            (Err(why), _) | (_, Err(why)) => {
                report.refused("session_metadata_tombstones", key_part(&r[0]), why)
            }
        }
    }
    Ok(Claims {
        creates,
        spawns,
        tombstones,
    })
}
