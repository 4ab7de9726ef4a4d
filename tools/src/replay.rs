//! `makalog replay ROOT --session ID (--until SEQ | --at TIME) [--json]`: a session as the
//! stores would have answered at that point, rebuilt from the log prefix alone.

use crate::time::iso8601;
use makalog::forensics::{view_at, Point, PointView};
use makalog::storage::Storage;
use makalog::storage::{EntryKind, RealStorage};
use makalog::store::{ReadOnlySessions, Sidecars};
use makalog::Error;
use serde_json::{json, Value};
use std::path::Path;
use std::process::ExitCode;

pub fn run(
    root: &Path,
    session: &str,
    until: Option<u64>,
    at: Option<&str>,
    json: bool,
) -> ExitCode {
    let point = match (until, at.map(crate::time::parse_time)) {
        (Some(seq), None) => Point::Seq(seq),
        (None, Some(Ok(t))) => Point::Time(t),
        (None, Some(Err(why))) => return crate::usage_error(why),
        _ => return crate::usage_error("give one of --until SEQ and --at TIME"),
    };
    let storage = match session_dir_of(root, session) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let at = match view_at(&storage, session, point) {
        Ok(v) => v,
        Err(e @ Error::InvalidInput(_)) => return crate::usage_error(e),
        Err(e) => return failed(e),
    };
    let result = if json {
        as_json(&at, session).map(|text| {
            say!("{text}");
            true
        })
    } else {
        print(&at, session)
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        // A part that could not be read said why as it was printed.
        Ok(false) => ExitCode::from(1),
        Err(e) => failed(e),
    }
}

/// The root's storage once it is a root with a directory for `session`; otherwise the exit code
/// that says why not. Nothing of the session is read here: the replay reads its log alone, so
/// neither a sidecar nor damage past the point decides whether there is a session to replay.
fn session_dir_of(root: &Path, session: &str) -> Result<RealStorage, ExitCode> {
    let storage = RealStorage::unmapped(root);
    if let Err(e) = makalog::root::read_marker(&storage) {
        return Err(crate::usage_error(e));
    }
    if let Err(why) = makalog::format::validate_session_id(session) {
        return Err(crate::usage_error(why));
    }
    let dir = makalog::segment::layout::session_dir(session);
    match storage.entry_kind(&dir) {
        Ok(Some(EntryKind::Dir)) => Ok(storage),
        Ok(_) => {
            tell!("makalog: {}: no session {session}", root.display());
            Err(ExitCode::from(1))
        }
        Err(e) => Err(failed(Error::io(&dir, "stat", e))),
    }
}

fn failed(e: Error) -> ExitCode {
    tell!("makalog: {e}");
    ExitCode::from(1)
}

fn point_line(at: &PointView<'_>, session: &str) -> String {
    let upto = at.last.as_ref().map_or(0, |l| l.seq);
    let as_of = at.as_of.map(iso8601).unwrap_or_else(|| "-".into());
    format!(
        "session {session} at seq {upto} of {} (as of {as_of}), rebuilt from the log prefix alone; claims known then: {} of {} claims-log records",
        at.total, at.claims_kept, at.claims_total
    )
}

/// Prints the session at the point; false when a part of it could not be read (each part
/// printed says why).
fn print(at: &PointView<'_>, session: &str) -> makalog::Result<bool> {
    say!("{}", point_line(at, session));
    let view: &dyn Storage = &at.view;
    let Some(header) = ReadOnlySessions::new(view).read_session(session)? else {
        say!("no session header yet at this point");
        return Ok(true);
    };
    let h = header.value();
    say!("");
    say!(
        "HEADER  status {}  name {:?}  created {}  last activity {}",
        header.status(),
        h["name"].as_str().unwrap_or_default(),
        h["createdAt"].as_f64().map(iso8601).unwrap_or_default(),
        h["lastUsedAt"].as_f64().map(iso8601).unwrap_or_default()
    );
    say!("");
    say!("RUNS");
    let runs = crate::sessions::print_runs(view, session, false, Sidecars::Trusted);
    say!("");
    say!("MESSAGES");
    let messages = crate::sessions::print_messages(view, session, None, false, Sidecars::Trusted);
    say!("");
    say!("INVOCATIONS");
    let invocations =
        crate::invocations::print_invocations(view, session, false, Sidecars::Trusted);
    say!("");
    say!("CLAIMS KNOWN THEN");
    let claims = claims(view, session);
    for c in &claims {
        say!("{}", claim_line(c));
    }
    say!("{} claims", claims.len());
    Ok([runs, messages, invocations]
        .iter()
        .all(|code| *code == ExitCode::SUCCESS))
}

/// The claims naming the session in the cut claims log.
fn claims(view: &dyn Storage, session: &str) -> Vec<Value> {
    match crate::claims::read_claims(view) {
        Ok(Some(replay)) => {
            let mut c = crate::claims::claims_of(&replay.tables, session);
            c.sort_by_key(|v| v["seq"].as_u64());
            c
        }
        _ => Vec::new(),
    }
}

fn claim_line(c: &Value) -> String {
    let k = &c["claim"];
    let s = |key: &str| k[key].as_str().unwrap_or_default().to_owned();
    let seq = c["seq"].as_u64().unwrap_or_default();
    match c["type"].as_str().unwrap_or_default() {
        "graph_intent_claim" => format!(
            "seq {seq:>4}  graph intent  {}/{}  {}  target {}/{}  claimed {}",
            s("graphId"),
            s("intentId"),
            c["status"].as_str().unwrap_or_default(),
            s("targetTurnId"),
            s("targetRunId"),
            k["claimedAt"].as_f64().map(iso8601).unwrap_or_default()
        ),
        "subagent_spawn_claim" => format!(
            "seq {seq:>4}  spawn         {} -> {}  tool call {}",
            s("parentSessionId"),
            s("childSessionId"),
            s("toolCallId")
        ),
        _ => format!(
            "seq {seq:>4}  session       {}  created {}",
            s("sessionId"),
            k["createdAt"].as_f64().map(iso8601).unwrap_or_default()
        ),
    }
}

/// The session at the point as one JSON object. Its invocations are what `invocations --json`
/// prints, placed as they are printed: an invocation's canonical JSON may nest deeper than
/// serde_json reads (128 levels), so it is never parsed again.
fn as_json(at: &PointView<'_>, session: &str) -> makalog::Result<String> {
    let view: &dyn Storage = &at.view;
    let sessions = ReadOnlySessions::new(view);
    let header = sessions.read_session(session)?;
    let mut out = json!({
        "session": session,
        "untilSeq": at.last.as_ref().map_or(0, |l| l.seq),
        "records": at.total,
        "asOf": at.as_of,
        "claimsKept": at.claims_kept,
        "claimsTotal": at.claims_total,
        "header": header.as_ref().map(|h| h.value().clone()),
        "runs": [], "messages": [],
        "claims": claims(view, session),
    });
    if header.is_none() {
        return Ok(with_raw_array(&out, "invocations", &[]));
    }
    let mut runs = Vec::new();
    for (run, events) in sessions.list_session_runs_with_events(session)? {
        let events: Vec<Value> = events
            .iter()
            .map(|(n, e)| json!({"sequence": n, "event": e.value()}))
            .collect();
        runs.push(json!({"run": run.value(), "events": events}));
    }
    out["runs"] = json!(runs);
    out["messages"] = json!(sessions
        .read_messages(session, None)?
        .iter()
        .map(|m| m.value().clone())
        .collect::<Vec<_>>());
    let (invocations, unopened) = crate::invocations::listed(view, session, Sidecars::Trusted)?;
    let lines = crate::invocations::json_lines(&invocations, &unopened);
    Ok(with_raw_array(&out, "invocations", &lines))
}

/// `object` printed with one more member, `key`, an array of the JSON texts `items` as they
/// are.
fn with_raw_array(object: &Value, key: &str, items: &[String]) -> String {
    debug_assert!(object
        .as_object()
        .is_some_and(|o| !o.is_empty() && !o.contains_key(key)));
    let mut text = object.to_string();
    text.pop();
    text.push_str(&format!(",{}:[{}]}}", Value::from(key), items.join(",")));
    text
}
