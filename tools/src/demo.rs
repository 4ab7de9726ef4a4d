//! `makalog demo [ROOT]`: writes a few agent sessions of realistic records across several
//! segments through the library's writer, then verifies the root and prints a summary.

mod journey;

use journey::write_journey;
use makalog::claims::{AdmissionStatus, AgentGraphIntentClaimRequest};
use makalog::format::chain::chain_hex;
use makalog::format::hex;
use makalog::root::try_acquire_owner;
use makalog::segment::WriterConfig;
use makalog::storage::RealStorage;
use makalog::store::{open_execution_stores_with, ExecutionStores};
use makalog::verify::verify_root;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::ExitCode;

/// Small segments so that even a short demo rolls and seals several of them.
const DEMO_SEGMENT_SIZE: u64 = 8 << 10;

const TURNS_PER_SESSION: u64 = 3;

const PROMPTS: [&str; 3] = [
    "summarize the failing test in crates/ledger",
    "read src/segment/writer.rs and explain group commit",
    "list the files that mention fdatasync",
];

pub fn run(root: &Path) -> ExitCode {
    match write_demo(root) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("makalog demo: {e}");
            return ExitCode::from(1);
        }
    }
    let storage = RealStorage::new(root);
    let report = match verify_root(&storage) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("makalog demo: verify: {e}");
            return ExitCode::from(1);
        }
    };
    say!("root {} (rootId {})", root.display(), report.marker.root_id);
    for s in &report.sessions {
        say!(
            "  session {}: {} records, head seq {}, chain {}",
            s.session_id,
            s.record_count,
            s.head_seq,
            chain_hex(&s.head_chain)
        );
    }
    for f in &report.findings {
        say!("  finding: {f}");
    }
    if let Some(c) = &report.claims {
        say!(
            "  claims: {} records, chain {}",
            c.record_count,
            chain_hex(&c.head_chain)
        );
    }
    if report.is_clean() {
        say!("verify: clean");
        say!(
            "next: makalog verify {0}; makalog dump {0} --session demo-1; makalog claims {0}",
            root.display()
        );
        ExitCode::SUCCESS
    } else {
        say!("verify: {} findings", report.findings.len());
        ExitCode::from(1)
    }
}

fn write_demo(root: &Path) -> makalog::Result<()> {
    let owner = try_acquire_owner(root)?.ok_or_else(|| makalog::Error::RootBusy {
        path: root.to_owned(),
    })?;
    let config = WriterConfig {
        segment_size: DEMO_SEGMENT_SIZE,
        prealloc_step: 4 << 10,
        ..WriterConfig::default()
    };
    let stores = open_execution_stores_with(&owner, config)?;
    for (i, prompt) in PROMPTS.iter().enumerate() {
        let session = format!("demo-{}", i + 1);
        let done = stores
            .runtime_events
            .list_session_invocations(&session)?
            .len() as u64;
        for turn in 0..TURNS_PER_SESSION {
            let base = 1_800_000_000_000 + (done + turn) * 1_000;
            write_journey(&stores, &session, prompt, base)?;
        }
    }
    write_claims(&stores)?;
    stores.close()
}

/// A graph that fans one intent out to each demo session: the first runs, the second is
/// executing, the third was cancelled; and three helper subagents of demo-1, each created
/// under its spawn claim. Re-running the demo finds every claim already stored (and touches
/// each helper's header).
fn write_claims(stores: &ExecutionStores) -> makalog::Result<()> {
    let claims = &*stores.claims;
    let digest = |s: &str| hex(&Sha256::digest(s.as_bytes()));
    for (i, status) in [
        AdmissionStatus::Claimed,
        AdmissionStatus::Executing,
        AdmissionStatus::Cancelled,
    ]
    .into_iter()
    .enumerate()
    {
        let session = format!("demo-{}", i + 1);
        let intent = format!("graph_intent_{}", &digest(&format!("intent-{i}"))[..32]);
        let request = AgentGraphIntentClaimRequest {
            schema_version: 1,
            claim_id: format!("graph_claim_{}", &digest(&format!("claim-{i}"))[..32]),
            graph_id: "demo-graph".into(),
            intent_id: intent.clone(),
            intent_fingerprint: format!("sha256:{}", digest(&format!("fingerprint-{i}"))),
            readiness_context_fingerprint: format!("sha256:{}", digest("readiness")),
            target_operator_id: "local-read".into(),
            target_session_id: session.clone(),
            target_turn_id: format!("graph-turn-{i}"),
            target_run_id: format!("graph-run-{i}"),
        };
        claims.claim_agent_graph_intent(request)?;
        let current = claims
            .read_agent_graph_intent_claim("demo-graph", &intent)?
            .map(|c| c.status);
        if status >= AdmissionStatus::Executing && current == Some(AdmissionStatus::Claimed) {
            claims.set_agent_graph_intent_status(
                "demo-graph",
                &intent,
                AdmissionStatus::Executing,
                None,
            )?;
        }
        if status == AdmissionStatus::Cancelled {
            claims.set_agent_graph_intent_status(
                "demo-graph",
                &intent,
                status,
                Some("superseded by a newer plan"),
            )?;
        }
        let helper = format!("helper-{i}");
        let header = helper_header(&helper, i, &digest(&format!("spawn-{i}")));
        match stores.sessions.read_session(&helper)? {
            None => drop(stores.sessions.create_subagent(header)?),
            Some(_) => drop(stores.sessions.update_session(header)?),
        }
    }
    Ok(())
}

/// The header of demo-1's helper subagent `id`, spawned by tool call `spawn-tool-{i}`.
fn helper_header(id: &str, i: usize, fingerprint: &str) -> Value {
    json!({
        "id": id, "cwd": "/work/project", "workspaceRoot": "/work/project",
        "name": format!("helper {i} of demo-1"), "backend": "fake", "llmConnectionSlug": "fake",
        "model": "fake-model", "permissionMode": "ask", "status": "active",
        "createdAt": 1_800_000_000_500u64 + i as u64, "lastUsedAt": 1_800_000_000_500u64 + i as u64,
        "titleIsManual": false, "isFlagged": false, "isArchived": false, "hasUnread": false,
        "connectionLocked": true, "labels": ["helper"], "schemaVersion": 1,
        "subagentParent": {
            "kind": "subagent", "parentSessionId": "demo-1", "lifecycle": "foreground",
            "spawnedBy": {"parentRunId": "parent-run", "parentTurnId": "parent-turn",
                          "toolCallId": format!("spawn-tool-{i}")}
        },
        "subagentRuntime": {
            "schemaVersion": 1, "definitionVersion": 1, "agentId": "demo-helper",
            "agentName": "Demo helper", "profile": "read-only",
            "systemPrompt": "Read what the parent asks about and report back.",
            "toolNames": ["Read"], "categoryPolicy": {"filesystem": "allow"}
        },
        "subagentSpawn": {
            "schemaVersion": 1, "requestFingerprint": fingerprint,
            "initialTurnId": format!("helper-turn-{i}"), "initialRunId": format!("helper-run-{i}")
        }
    })
}
