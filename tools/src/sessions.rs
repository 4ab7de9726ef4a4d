//! `makalog sessions ROOT`, `makalog runs ROOT --session ID` and `makalog messages ROOT
//! --session ID [--turn T]`: the session tree, a session's runs and its messages, read from the
//! root's files (no lease, nothing written).

use crate::time::iso8601;
use makalog::model::{SessionHeader, StoredMessage};
use makalog::root::read_marker;
use makalog::storage::{RealStorage, Storage};
use makalog::store::{ReadOnlySessions, Sidecars};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::ExitCode;

fn failed(e: makalog::Error) -> ExitCode {
    tell!("makalog: {e}");
    ExitCode::from(1)
}

/// Every session, subagents under their parents, with status, name and last activity; each
/// session that cannot be read is named on standard error (exit 1) and the others listed.
pub fn list(root: &Path, json: bool, sidecars: Sidecars) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    if let Err(e) = read_marker(&storage) {
        return crate::usage_error(e);
    }
    let (headers, unreadable) =
        match ReadOnlySessions::with(&storage, sidecars).list_readable_sessions() {
            Ok(listed) => listed,
            Err(e) => return failed(e),
        };
    // Each session that cannot be read is named, its directory first (an error read from a
    // sidecar's record may name no file), and the others listed.
    for (id, e) in &unreadable {
        tell!("makalog: sessions/{id}: {e}");
    }
    let code = match unreadable.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    };
    if json {
        for h in &headers {
            say!("{}", h.canonical_json());
        }
        return code;
    }
    // Children by parent, in listing order; a session whose parent is not here is a root.
    let known: HashSet<&str> = headers.iter().map(SessionHeader::id).collect();
    let mut children: BTreeMap<&str, Vec<&SessionHeader>> = BTreeMap::new();
    let mut roots = Vec::new();
    for h in &headers {
        match h.subagent_parent_session() {
            Some(p) if known.contains(&p) && p != h.id() => children.entry(p).or_default().push(h),
            _ => roots.push(h),
        }
    }
    let width = known.iter().map(|id| id.len()).max().unwrap_or(2).max(2) + 2;
    say!(
        "{:<width$} {:<17} {:<24} NAME",
        "SESSION",
        "STATUS",
        "LAST ACTIVITY (UTC)"
    );
    // Sessions whose parents form a cycle (only a hostile root has them) are reached from no
    // root: each is then listed as one, after the others, and every session once.
    let mut listed: HashSet<&str> = HashSet::new();
    let unreached = headers.iter().rev().map(|h| (h, 0));
    let mut stack: Vec<(&SessionHeader, usize)> = unreached.collect();
    stack.extend(roots.into_iter().rev().map(|h| (h, 0)));
    while let Some((h, depth)) = stack.pop() {
        if !listed.insert(h.id()) {
            continue;
        }
        // Indented by depth up to a bound, then saying it: a hostile root's chain of parents
        // would otherwise make the listing grow with the square of its length.
        let id = if depth <= MAX_INDENT {
            format!("{}{}", "  ".repeat(depth), h.id())
        } else {
            format!("{}[{depth}] {}", "  ".repeat(MAX_INDENT), h.id())
        };
        let last = h.value()["lastUsedAt"]
            .as_f64()
            .map(iso8601)
            .unwrap_or_default();
        let name = h.value()["name"].as_str().unwrap_or_default();
        say!("{id:<width$} {:<17} {last:<24} {name}", h.status());
        if let Some(kids) = children.get(h.id()) {
            stack.extend(kids.iter().rev().map(|k| (*k, depth + 1)));
        }
    }
    match unreadable.len() {
        0 => say!("{} sessions", headers.len()),
        n => say!("{} sessions, and {n} that could not be read", headers.len()),
    }
    code
}

/// The deepest a session is indented under its parents in the tree.
const MAX_INDENT: usize = 32;

/// A session's messages in append order, or one turn's.
pub fn messages(
    root: &Path,
    session: &str,
    turn: Option<&str>,
    json: bool,
    sidecars: Sidecars,
) -> ExitCode {
    match session_root(root, session, sidecars) {
        Ok(storage) => print_messages(&storage, session, turn, json, sidecars),
        Err(code) => code,
    }
}

/// Prints a session's messages as read from `storage`.
pub fn print_messages(
    storage: &dyn Storage,
    session: &str,
    turn: Option<&str>,
    json: bool,
    sidecars: Sidecars,
) -> ExitCode {
    let sessions = ReadOnlySessions::with(storage, sidecars);
    let messages = match sessions.read_messages(session, turn) {
        Ok(m) => m,
        Err(e) => return failed(e),
    };
    for m in &messages {
        if json {
            say!("{}", m.canonical_json());
        } else {
            let ts = m.value()["ts"].as_f64().map(iso8601).unwrap_or_default();
            say!(
                "{ts:<24} {:<19} {:<14} {}",
                m.message_type(),
                m.turn_id().unwrap_or("-"),
                summary(m)
            );
        }
    }
    if !json {
        say!("{} messages", messages.len());
    }
    ExitCode::SUCCESS
}

/// A session's runs by createdAt: status, turn, when created and how long they took, and their
/// events.
pub fn runs(root: &Path, session: &str, json: bool, sidecars: Sidecars) -> ExitCode {
    match session_root(root, session, sidecars) {
        Ok(storage) => print_runs(&storage, session, json, sidecars),
        Err(code) => code,
    }
}

/// Prints a session's runs and their events as read from `storage`.
pub fn print_runs(
    storage: &dyn Storage,
    session: &str,
    json: bool,
    sidecars: Sidecars,
) -> ExitCode {
    let sessions = ReadOnlySessions::with(storage, sidecars);
    let runs = match sessions.list_session_runs_with_events(session) {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let w = runs
        .iter()
        .map(|(r, _)| r.run_id().len())
        .max()
        .unwrap_or(0)
        .max(3);
    if !json {
        say!(
            "{:<w$} {:<17} {:<24} {:>12}  EVENTS",
            "RUN",
            "STATUS",
            "CREATED (UTC)",
            "DURATION"
        );
    }
    for (run, events) in &runs {
        if json {
            let listed: Vec<serde_json::Value> = events
                .iter()
                .map(|(n, e)| serde_json::json!({"sequence": n, "event": e.value()}))
                .collect();
            say!(
                "{}",
                serde_json::json!({"run": run.value(), "events": listed})
            );
            continue;
        }
        let v = run.value();
        let created = v["createdAt"].as_f64();
        let took = match (created, v["completedAt"].as_f64()) {
            (Some(a), Some(b)) if b >= a => crate::time::duration(b - a),
            _ => "-".to_owned(),
        };
        let kinds: Vec<&str> = events.iter().map(|(_, e)| e.event_type()).collect();
        say!(
            "{:<w$} {:<17} {:<24} {took:>12}  {}",
            run.run_id(),
            run.status(),
            created.map(iso8601).unwrap_or_default(),
            kinds.join(", ")
        );
    }
    if !json {
        say!("{} runs", runs.len());
    }
    ExitCode::SUCCESS
}

/// The root's storage once it is a root holding session `session`; otherwise the exit code
/// that says why not (a usage error, no such session, or damage).
pub(crate) fn session_root(
    root: &Path,
    session: &str,
    sidecars: Sidecars,
) -> Result<RealStorage, ExitCode> {
    let storage = RealStorage::unmapped(root);
    if let Err(e) = read_marker(&storage) {
        return Err(crate::usage_error(e));
    }
    if let Err(why) = makalog::format::validate_session_id(session) {
        return Err(crate::usage_error(why));
    }
    match ReadOnlySessions::with(&storage, sidecars).read_session(session) {
        Ok(Some(_)) => Ok(storage),
        Ok(None) => {
            tell!("makalog: {}: no session {session}", root.display());
            Err(ExitCode::from(1))
        }
        Err(e) => Err(failed(e)),
    }
}

/// One line about a message: its text, tool, decision or status.
fn summary(m: &StoredMessage) -> String {
    let v = m.value();
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let text = match m.message_type() {
        "user" => match v["attachments"].as_array() {
            Some(files) if !files.is_empty() => {
                let names: Vec<&str> = files.iter().filter_map(|a| a["name"].as_str()).collect();
                format!("{} [attached: {}]", s("text"), names.join(", "))
            }
            _ => s("text"),
        },
        "assistant" => s("text"),
        "tool_call" => s("toolName"),
        "tool_result" => format!("{} error={}", s("toolUseId"), v["isError"]),
        "permission_decision" => format!("{} {}", s("toolName"), s("decision")),
        "token_usage" => format!("in {} out {}", v["input"], v["output"]),
        "turn_state" => s("status"),
        _ => s("kind"),
    };
    let line = text.replace('\n', " ");
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}
