//! One demo turn of a coding agent, written through the stores record by record.

use makalog::event::RuntimeEvent;
use makalog::format::RecordKind;
use makalog::segment::Durability;
use makalog::store::ExecutionStores;
use serde_json::{json, Value};

/// Appends a record through the store of its kind: a session header (created the first time,
/// a new version after), a message, a run, a run event, or a runtime event with its strict
/// decoding and sealing.
fn append(
    stores: &ExecutionStores,
    session: &str,
    kind: RecordKind,
    v: &Value,
    d: Durability,
) -> makalog::Result<()> {
    match kind {
        RecordKind::RuntimeEvent => {
            let event = RuntimeEvent::from_value(v.clone())
                .map_err(|e| makalog::Error::InvalidInput(e.to_string()))?;
            stores.runtime_events.append(&event, d).map(|_| ())
        }
        RecordKind::SessionHeader => match stores.sessions.read_session(session)? {
            None => stores.sessions.create(v.clone()).map(|_| ()),
            Some(_) => stores.sessions.update_session(v.clone()).map(|_| ()),
        },
        RecordKind::Message => stores
            .sessions
            .append_message(session, v.clone())
            .map(|_| ()),
        RecordKind::Run => stores.runs.create_run(v.clone()).map(|_| ()),
        RecordKind::RunEvent => stores.runs.append_event(v.clone()).map(|_| ()),
        _ => Err(makalog::Error::InvalidInput(format!(
            "the demo writes no {} records",
            kind.name()
        ))),
    }
}

/// One turn of a coding agent: header, user message, run lifecycle, streamed text, a tool call
/// and its result, the terminal event, and the closing records.
pub(super) fn write_journey(
    store: &ExecutionStores,
    session: &str,
    prompt: &str,
    base: u64,
) -> makalog::Result<()> {
    use Durability::{Buffered, Durable};
    let run = format!("run-{base}");
    let turn = format!("turn-{base}");
    let event = |n: u64, extra: Value| {
        let mut v = json!({
            "author": "agent", "id": format!("evt-{base}-{n}"), "invocationId": run,
            "partial": false, "role": "model", "runId": run, "sessionId": session,
            "ts": base + n, "turnId": turn,
        });
        if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), extra) {
            obj.extend(more);
        }
        v
    };
    append(
        store,
        session,
        RecordKind::SessionHeader,
        &json!({
            "id": session, "cwd": "/work/project", "workspaceRoot": "/work/project", "name": prompt,
            "backend": "fake", "llmConnectionSlug": "fake", "model": "fake-model",
            "permissionMode": "ask", "status": "running", "createdAt": 1_800_000_000_000u64, "lastUsedAt": base,
            "titleIsManual": false, "isFlagged": false, "isArchived": false, "hasUnread": false,
            "connectionLocked": true, "labels": [], "schemaVersion": 1,
        }),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::Message,
        &json!({
            "type": "user", "id": format!("msg-{base}"), "turnId": turn, "ts": base, "text": prompt,
        }),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::Run,
        &json!({
            "runId": run, "sessionId": session, "turnId": turn, "status": "running",
            "backendKind": "fake", "llmConnectionSlug": "fake", "modelId": "fake-model",
            "cwd": "/work/project", "permissionMode": "ask", "createdAt": base, "updatedAt": base,
            "invocationId": run,
        }),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::RunEvent,
        &json!({
            "type": "run_started", "id": format!("re-{base}"), "runId": run, "sessionId": session,
            "turnId": turn, "ts": base + 1,
        }),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::RuntimeEvent,
        &event(
            2,
            json!({
                "id": format!("invocation_opened:{run}"), "role": "system", "author": "system",
                "modelVisibility": "hidden",
                "content": {"kind": "invocation_opened", "protocol": "invocation_opened_v1",
                    "route": {"provenance": "runtime", "backendKind": "fake", "llmConnectionId": "fake-connection",
                              "llmConnectionSlug": "fake", "modelId": "fake-model"},
                    "configuration": {"cwd": "/work/project", "permissionMode": "ask", "collaborationMode": "agent",
                        "orchestrationMode": "default", "orchestrationSource": "session", "toolMode": "direct"},
                    "root": {"kind": "user"}, "source": {"kind": "fresh"}},
            }),
        ),
        Durability::Durable,
    )?;
    let answer = format!("Fake backend received: {prompt}\n\nThis proves the session stream and ledger are connected.");
    let chars: Vec<char> = answer.chars().collect();
    for (n, chunk) in chars.chunks(9).enumerate() {
        let text: String = chunk.iter().collect();
        append(
            store,
            session,
            RecordKind::RuntimeEvent,
            &event(
                10 + n as u64,
                json!({
                    "partial": true, "content": {"kind": "text", "text": text},
                    "refs": {"providerEventId": format!("msg-a-{base}")},
                }),
            ),
            Buffered,
        )?;
    }
    append(
        store,
        session,
        RecordKind::RuntimeEvent,
        &event(
            200,
            json!({
                "content": {"kind": "function_call", "id": "tool-1", "name": "Read", "args": {"path": "/work/project/src/lib.rs"}},
                "refs": {"toolCallId": "tool-1"},
            }),
        ),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::RuntimeEvent,
        &event(
            201,
            json!({
                "role": "tool", "author": "tool",
                "content": {"kind": "function_response", "id": "tool-1", "name": "Read", "result": {"kind": "text", "text": "pub mod ledger;"}},
                "refs": {"toolCallId": "tool-1"},
            }),
        ),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::RuntimeEvent,
        &event(
            202,
            json!({
                "content": {"kind": "text", "text": answer},
            }),
        ),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::RuntimeEvent,
        &event(
            203,
            json!({
                "role": "system", "author": "system", "status": "completed",
                "actions": {"endInvocation": true, "stateDelta": {"stopReason": "end_turn"}},
            }),
        ),
        Durable,
    )?;
    // The terminal commit of §7: the terminal runtime event (above), the run's status, then its
    // one terminal run event.
    store.runs.update_run(
        session,
        &run,
        &json!({"status": "completed", "updatedAt": base + 204, "completedAt": base + 204}),
    )?;
    append(
        store,
        session,
        RecordKind::RunEvent,
        &json!({
            "type": "run_completed", "id": format!("rc-{base}"), "runId": run, "sessionId": session,
            "turnId": turn, "ts": base + 204,
        }),
        Durable,
    )?;
    append(
        store,
        session,
        RecordKind::Message,
        &json!({
            "type": "turn_state", "id": format!("ts-{base}"), "turnId": turn, "ts": base + 205,
            "status": "completed", "partialOutputRetained": false,
        }),
        Durable,
    )?;
    Ok(())
}
