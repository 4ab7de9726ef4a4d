//! `makalog claims ROOT [--graph ID] [--json]`: the claims of a root, read-only.

use makalog::claims::{replay_claims, ClaimTables, ClaimsReplay, CLAIMS_FILE};
use makalog::root::read_marker;
use makalog::storage::{RealStorage, Storage};
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, graph: Option<&str>, json: bool) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    let replay = match read_claims(&storage) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let tables = replay
        .as_ref()
        .map(|r| r.tables.clone())
        .unwrap_or_default();
    if json {
        for line in tables.to_json_lines(graph) {
            say!("{line}");
        }
    } else {
        print_text(&tables, graph);
    }
    let problems = replay.map(|r| r.problems).unwrap_or_default();
    for p in &problems {
        tell!("makalog: {}", p.describe());
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The claims log of the root `storage` is rooted at, replayed read-only (`None` when there
/// is none); the exit code when it is not a root or the log cannot be read.
pub fn read_claims(storage: &dyn Storage) -> Result<Option<ClaimsReplay>, ExitCode> {
    let marker = read_marker(storage).map_err(crate::usage_error)?;
    // A log that is there is replayed, an empty one too (a torn create, as verify finds it).
    let bytes = match makalog::storage::data_end::read_data(storage, Path::new(CLAIMS_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            tell!("makalog: {CLAIMS_FILE}: {e}");
            return Err(ExitCode::from(1));
        }
    };
    let id = marker.root_id_bytes().map_err(crate::usage_error)?;
    Ok(Some(replay_claims(&bytes, &id)))
}

/// The claims that name `session`: graph intents it is the target of, spawns it is the parent
/// or child of, and its own session-create claim; as JSON lines.
pub fn claims_of(tables: &ClaimTables, session: &str) -> Vec<serde_json::Value> {
    claims_by_session(tables)
        .remove(session)
        .unwrap_or_default()
}

/// [`claims_of`] every session at once: each claim converted once and filed under every
/// session it names (a report of many sessions asks for each).
pub fn claims_by_session(
    tables: &ClaimTables,
) -> std::collections::HashMap<String, Vec<serde_json::Value>> {
    let mut by_session: std::collections::HashMap<String, Vec<serde_json::Value>> =
        std::collections::HashMap::new();
    for line in tables.to_json_lines(None) {
        let c = &line["claim"];
        let mut named: Vec<&str> = [
            "targetSessionId",
            "parentSessionId",
            "childSessionId",
            "sessionId",
        ]
        .iter()
        .filter_map(|k| c[*k].as_str())
        .collect();
        named.sort_unstable();
        named.dedup();
        for session in named {
            by_session
                .entry(session.to_owned())
                .or_default()
                .push(line.clone());
        }
    }
    by_session
}

fn print_text(tables: &ClaimTables, graph: Option<&str>) {
    for c in tables.graph_claims(graph) {
        let k = &c.claim;
        let reason = c
            .cancel_reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        say!(
            "graph {} intent {} claim {} {:?}{reason} target {}/{}/{} operator {} claimed {}",
            k.graph_id,
            k.intent_id,
            k.claim_id,
            c.status,
            k.target_session_id,
            k.target_turn_id,
            k.target_run_id,
            k.target_operator_id,
            crate::time::iso8601(k.claimed_at as f64)
        );
    }
    if graph.is_some() {
        return;
    }
    for c in tables.spawn_claims() {
        let k = &c.claim;
        let swarm = if k.swarm_id.is_empty() {
            String::new()
        } else {
            format!(" swarm {}/{}", k.swarm_id, k.item_id)
        };
        say!(
            "spawn parent {}/{} tool {}{swarm} child {} fingerprint {}",
            k.parent_session_id,
            k.parent_run_id,
            k.tool_call_id,
            k.child_session_id,
            k.request_fingerprint
        );
    }
    for c in tables.session_claims() {
        say!(
            "session {} created {}",
            c.claim.session_id,
            crate::time::iso8601(c.claim.created_at as f64)
        );
    }
}
