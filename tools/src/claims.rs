//! `makalog claims ROOT [--graph ID] [--json]`: the claims of a root, read-only.

use makalog::claims::{replay_claims, ClaimTables, CLAIMS_FILE};
use makalog::root::read_marker;
use makalog::storage::{RealStorage, Storage};
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, graph: Option<&str>, json: bool) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    let marker = match read_marker(&storage) {
        Ok(m) => m,
        Err(e) => return crate::usage_error(e),
    };
    let bytes = match storage.read_file(Path::new(CLAIMS_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            eprintln!("makalog: {CLAIMS_FILE}: {e}");
            return ExitCode::from(1);
        }
    };
    let replay = if bytes.is_empty() {
        None
    } else {
        match marker.root_id_bytes() {
            Ok(id) => Some(replay_claims(&bytes, &id)),
            Err(e) => return crate::usage_error(e),
        }
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
        eprintln!("makalog: {}", p.describe());
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
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
            "graph {} intent {} claim {} {:?}{reason} target {}/{}/{} operator {} claimedAt {}",
            k.graph_id,
            k.intent_id,
            k.claim_id,
            c.status,
            k.target_session_id,
            k.target_turn_id,
            k.target_run_id,
            k.target_operator_id,
            k.claimed_at
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
            "session {} createdAt {}",
            c.claim.session_id,
            c.claim.created_at
        );
    }
}
