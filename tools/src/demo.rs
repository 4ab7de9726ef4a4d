//! `makalog demo [ROOT]`: runs full journeys through the runtime on a root (sessions with
//! streamed turns, a linked child's claimed graph intent run twice, an aborted claimed run, a
//! turn cut off by a simulated restart and the recovery that ends it), then verifies the root
//! and prints what happened.

mod journey;

use journey::{journeys, session_input, Story, PROMPTS};
use makalog::claims::{AdmissionStatus, AgentGraphIntentClaimRequest};
use makalog::format::chain::chain_hex;
use makalog::format::hex;
use makalog::root::{try_acquire_owner, Owner};
use makalog::runtime::{
    BackendRegistry, ExecutionComposition, RecoveryReport, SessionEvent, Sources, TurnInput,
    FAKE_ASK_USER_QUESTION_PROMPT,
};
use makalog::segment::WriterConfig;
use makalog::storage::RealStorage;
use makalog::store::ExecutionStores;
use makalog::verify::verify_root;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::ExitCode;

/// Small segments so that even a short demo rolls and seals several of them.
const DEMO_SEGMENT_SIZE: u64 = 8 << 10;

pub fn run(root: &Path) -> ExitCode {
    if let Err(e) = write_demo(root) {
        tell!("makalog demo: {e}");
        return ExitCode::from(1);
    }
    let storage = RealStorage::new(root);
    let report = match verify_root(&storage) {
        Ok(r) => r,
        Err(e) => {
            tell!("makalog demo: verify: {e}");
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
            "next: makalog timeline {0} --session demo-1; makalog sessions {0}; makalog claims {0}",
            root.display()
        );
        ExitCode::SUCCESS
    } else {
        say!("verify: {} findings", report.findings.len());
        ExitCode::from(1)
    }
}

fn composition(owner: &Owner) -> makalog::Result<ExecutionComposition> {
    let config = WriterConfig {
        segment_size: DEMO_SEGMENT_SIZE,
        prealloc_step: 4 << 10,
        ..WriterConfig::default()
    };
    ExecutionComposition::open_with(
        owner,
        config,
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
}

fn tokio_runtime() -> makalog::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .map_err(|e| makalog::Error::InvalidInput(format!("cannot start the runtime: {e}")))
}

fn write_demo(root: &Path) -> makalog::Result<()> {
    let owner = try_acquire_owner(root)?.ok_or_else(|| makalog::Error::RootBusy {
        path: root.to_owned(),
    })?;
    // The first life of the process: recovery, the journeys, and a turn left waiting for an
    // answer when the process "stops" (its runtime shut down under it).
    let c = composition(&owner)?;
    let recovered = c.recover()?;
    say_recovery("at start", &recovered);
    let rt = tokio_runtime()?;
    let story = rt.block_on(journeys(&c));
    let story = match story {
        Ok(s) => s,
        Err(e) => return c.close_after(Err(e)),
    };
    say_story(&story);
    write_claims(c.stores())?;
    let waiting = rt.block_on(leave_waiting(&c));
    // Waits for the runtime's tasks to be dropped: they hold the stores.
    rt.shutdown_timeout(std::time::Duration::from_secs(10));
    let waiting = c.close_after(waiting)?;
    say!("restart: the process stopped while {waiting} waited for an answer");
    // The second life: recovery ends the interrupted run.
    let c = composition(&owner)?;
    let recovered = c.recover();
    if let Ok(r) = &recovered {
        say_recovery("after the restart", r);
    }
    c.close_after(recovered).map(|_| ())
}

/// Starts a turn in demo-3 that asks the user questions, and returns once it waits for the
/// answers: the session it waits in.
async fn leave_waiting(c: &ExecutionComposition) -> makalog::Result<String> {
    let session = "demo-3";
    if c.stores().sessions.read_session(session)?.is_none() {
        c.manager()
            .create_session(session_input(session, PROMPTS[2]))?;
    }
    let input = TurnInput {
        text: FAKE_ASK_USER_QUESTION_PROMPT.into(),
        ..TurnInput::default()
    };
    let mut turn = c.manager().send_message(session, input).await?;
    while let Some(e) = turn.events.recv().await {
        if matches!(e, SessionEvent::UserQuestionRequest { .. }) {
            turn.abandon().await;
            return Ok(session.to_owned());
        }
    }
    Err(makalog::Error::InvalidInput(
        "the question turn ended without asking".into(),
    ))
}

fn say_recovery(when: &str, r: &RecoveryReport) {
    let reasons: Vec<String> = r
        .recovered
        .iter()
        .map(|x| {
            let class = x.failure_class.as_deref().map(|c| format!("/{c}"));
            format!(
                "{}/{} {}{} ({})",
                x.session_id,
                x.run_id,
                x.status,
                class.unwrap_or_default(),
                x.recovery_reason
            )
        })
        .collect();
    let n = r.recovered.len();
    let plural = |k: usize| if k == 1 { "" } else { "s" };
    let which = if r.scanned_all {
        "every session (no open-runs file yet)"
    } else {
        "the sessions the open-runs file names"
    };
    say!(
        "recovery {when}: visited {which}: {} session{}; {n} interrupted run{} ended{}",
        r.sessions,
        plural(r.sessions),
        plural(n),
        if reasons.is_empty() {
            String::new()
        } else {
            format!(": {}", reasons.join(", "))
        }
    );
    for (what, why) in &r.skipped {
        say!("  skipped {what}: {why}");
    }
}

fn say_story(story: &Story) {
    for (session, turns, events) in &story.turns {
        say!("  {session}: {turns} turns streamed through the fake backend, {events} events");
    }
    let (f, r) = (&story.first, &story.retry);
    say!(
        "  {}: claimed intent {} ran {} ({} runtime events kept): {:?}",
        f.child_session_id,
        f.intent_id,
        f.status,
        f.event_count,
        f.summary
    );
    let (admitted, watched) = story.hooks;
    say!("    the host admitted {admitted} execution of it and watched the {watched} events it streamed");
    let same = (f.claim_id == r.claim_id) && (f.run_id == r.run_id) && (f.summary == r.summary);
    say!(
        "  {}: the same claim run again answered {} from the ledger ({}), without the backend",
        r.child_session_id,
        r.status,
        if same {
            "same claim, run and summary"
        } else {
            "A DIFFERENT ANSWER"
        }
    );
    let a = &story.aborted;
    say!(
        "  {}: a claimed run aborted once it started ended {}",
        a.child_session_id,
        a.status
    );
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
        let fingerprint = digest(&format!("spawn-{i}"));
        match stores.sessions.read_session(&helper)? {
            None => {
                let header = helper_header(&helper, i, &fingerprint, &json!(wall_ms()));
                drop(stores.sessions.create_subagent(header)?)
            }
            Some(h) => {
                let header = helper_header(&helper, i, &fingerprint, &h.value()["createdAt"]);
                drop(stores.sessions.update_session(header)?)
            }
        }
    }
    Ok(())
}

/// The wall clock, in ms since the epoch.
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The header of demo-1's helper subagent `id`, spawned by tool call `spawn-tool-{i}` at
/// `created_at` (the wall clock's ms, as every demo session's: the sessions list orders by it).
fn helper_header(id: &str, i: usize, fingerprint: &str, created_at: &Value) -> Value {
    json!({
        "id": id, "cwd": "/work/project", "workspaceRoot": "/work/project",
        "name": format!("helper {i} of demo-1"), "backend": "fake", "llmConnectionSlug": "fake",
        "model": "fake-model", "permissionMode": "ask", "status": "active",
        "createdAt": created_at, "lastUsedAt": created_at,
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
