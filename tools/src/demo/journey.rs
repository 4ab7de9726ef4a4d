//! The demo's journeys through the runtime: sessions with streamed turns, a linked child whose
//! claimed graph intent runs twice (the second call answers from the ledger), and a claimed run
//! aborted once it started.

use makalog::runtime::{
    AbortController, AgentGraphRunnableIntent, AttachmentKind, AttachmentRef, ClaimedIntentRun,
    ClaimedRunResult, ExecutionComposition, StorageRef, TurnInput, FAKE_ASK_USER_QUESTION_PROMPT,
    LOCAL_READ_AGENT_DEFINITION,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub(super) const PROMPTS: [&str; 3] = [
    "summarize the failing test in crates/ledger",
    "read src/segment/writer.rs and explain group commit",
    "list the files that mention fdatasync",
];

const TURNS_PER_SESSION: usize = 3;

/// What the journeys did, for the summary.
pub(super) struct Story {
    /// Per session: turns streamed and the events they streamed.
    pub turns: Vec<(String, usize, usize)>,
    pub first: ClaimedRunResult,
    pub retry: ClaimedRunResult,
    /// The host's admissions of a claimed execution and the events it watched, over both
    /// calls of the first claim.
    pub hooks: (usize, usize),
    pub aborted: ClaimedRunResult,
}

/// demo-1's first turn attaches the workspace's README (by reference: its bytes stay where
/// they are); the others attach nothing.
fn attached(session: usize, turn: usize) -> Vec<AttachmentRef> {
    if (session, turn) != (0, 1) {
        return Vec::new();
    }
    vec![AttachmentRef {
        kind: AttachmentKind::Doc,
        name: "README.md".into(),
        mime_type: "text/markdown".into(),
        bytes: 2_048,
        storage: StorageRef::WorkspaceFile {
            relative_path: "README.md".into(),
        },
    }]
}

pub(super) fn session_input(id: &str, name: &str) -> Value {
    json!({"id": id, "name": name, "cwd": "/work/project", "backend": "fake",
           "llmConnectionSlug": "fake", "model": "fake-model", "permissionMode": "ask"})
}

pub(super) async fn journeys(c: &ExecutionComposition) -> makalog::Result<Story> {
    let manager = c.manager();
    let mut turns = Vec::new();
    for (i, prompt) in PROMPTS.iter().enumerate() {
        let session = format!("demo-{}", i + 1);
        if c.stores().sessions.read_session(&session)?.is_none() {
            manager.create_session(session_input(&session, prompt))?;
        }
        let mut events = 0;
        for turn in 1..=TURNS_PER_SESSION {
            let input = TurnInput {
                text: format!("{prompt} (turn {turn})"),
                attachments: attached(i, turn),
                ..TurnInput::default()
            };
            let mut streaming = manager.send_message(&session, input).await?;
            while streaming.events.recv().await.is_some() {
                events += 1;
            }
            streaming.finish().await?;
        }
        turns.push((session, TURNS_PER_SESSION, events));
    }
    let prompt = "summarize what demo-1's turns found";
    let (intent, graph, id) = claimed_child(c, "1", prompt)?;
    // The host admits each execution and watches the events of each run a call starts: the
    // first call asks and streams, the retry (answered from the ledger) does neither.
    let (admitted, watched) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let run = || {
        let (admitted, watched) = (admitted.clone(), watched.clone());
        ClaimedIntentRun {
            admit_execution: Some(Box::new(move |_| {
                admitted.fetch_add(1, Ordering::SeqCst);
                Box::pin(std::future::ready(Ok(())))
            })),
            on_event: Some(Box::new(move |_| {
                watched.fetch_add(1, Ordering::SeqCst);
            })),
            ..ClaimedIntentRun::new(intent.clone(), graph.clone(), id.clone(), prompt)
        }
    };
    let first = manager.run_claimed_agent_graph_intent(run()).await?;
    let retry = manager.run_claimed_agent_graph_intent(run()).await?;
    let hooks = (
        admitted.load(Ordering::SeqCst),
        watched.load(Ordering::SeqCst),
    );
    let (intent, graph_id, intent_id) = claimed_child(c, "2", FAKE_ASK_USER_QUESTION_PROMPT)?;
    let abort = AbortController::new();
    let signal = abort.signal();
    let aborted = manager
        .run_claimed_agent_graph_intent(ClaimedIntentRun {
            abort: Some(signal),
            on_ready: Some(Box::new(move || abort.abort())),
            ..ClaimedIntentRun::new(intent, graph_id, intent_id, FAKE_ASK_USER_QUESTION_PROMPT)
        })
        .await?;
    Ok(Story {
        turns,
        first,
        retry,
        hooks,
        aborted,
    })
}

/// The linked child `graph-child-{n}` of demo-1 (created once), and a claimed intent for its
/// first turn with `prompt` (claimed once): the intent, its graph and its id.
fn claimed_child(
    c: &ExecutionComposition,
    n: &str,
    prompt: &str,
) -> makalog::Result<(AgentGraphRunnableIntent, String, String)> {
    let d = LOCAL_READ_AGENT_DEFINITION;
    let child = format!("graph-child-{n}");
    let (turn, run) = (format!("graph-turn-{n}"), format!("graph-run-{n}"));
    let digest = |s: &str| makalog::runtime::stable_hash(&json!(s))["sha256:".len()..].to_owned();
    let mut header = session_input(&child, &format!("graph operator {n}"));
    let now = super::wall_ms();
    for (k, v) in [
        ("schemaVersion", json!(1)),
        ("workspaceRoot", json!("/work/project")),
        ("createdAt", json!(now)),
        ("lastUsedAt", json!(now)),
        ("titleIsManual", json!(false)),
        ("isFlagged", json!(false)),
        ("isArchived", json!(false)),
        ("hasUnread", json!(false)),
        ("connectionLocked", json!(false)),
        ("labels", json!(["graph"])),
        ("status", json!("active")),
        ("permissionMode", json!(d.permission_mode)),
    ] {
        header[k] = v;
    }
    header["subagentParent"] = json!({"kind": "subagent", "parentSessionId": "demo-1",
        "spawnedBy": {"parentRunId": "demo-graph-run", "parentTurnId": "demo-graph-turn",
                      "toolCallId": format!("graph-tool-{n}")}, "lifecycle": "foreground"});
    header["subagentRuntime"] = json!({"schemaVersion": 1, "definitionVersion": d.definition_version,
        "agentId": d.id, "agentName": d.name, "profile": d.profile, "systemPrompt": d.system_prompt,
        "toolNames": d.tools, "categoryPolicy": {}});
    header["subagentSpawn"] = json!({"schemaVersion": 1, "requestFingerprint": digest(&child),
        "initialTurnId": turn, "initialRunId": run});
    if c.stores().sessions.read_session(&child)?.is_none() {
        c.stores().sessions.create_subagent(header)?;
    }
    let intent = AgentGraphRunnableIntent {
        schema_version: 1,
        intent_id: format!("graph_intent_{}", &digest(&format!("intent-{n}"))[..32]),
        graph_id: "demo-runtime-graph".into(),
        readiness_context_fingerprint: format!("sha256:{}", digest("readiness")),
        policy_fingerprint: format!("sha256:{}", digest("policy")),
        readiness_id: format!("readiness-{n}"),
        operator_id: d.id.into(),
        target_session_id: child.clone(),
        policy_kind: "map".into(),
        trigger_route_ids: vec![format!("route-{n}")],
        trigger_record_ids: vec![format!("record-{n}")],
    };
    let request = intent.claim_request(prompt, &turn, &run)?;
    c.stores().claims.claim_agent_graph_intent(request)?;
    let (graph, id) = (intent.graph_id.clone(), intent.intent_id.clone());
    Ok((intent, graph, id))
}
