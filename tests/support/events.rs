//! Canonical runtime events for tests: an opening, a user message, text, a terminal.

use makalog::event::RuntimeEvent;
use serde_json::{json, Value};

/// An event of `session`/`run` (whose invocation id is the run id) with `extra` fields.
pub fn event(
    session: &str,
    run: &str,
    turn: &str,
    id: &str,
    ts: f64,
    extra: Value,
) -> RuntimeEvent {
    let mut v = json!({
        "id": id, "invocationId": run, "runId": run, "sessionId": session, "turnId": turn,
        "ts": ts, "partial": false, "role": "model", "author": "agent",
    });
    if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), extra) {
        obj.extend(more);
    }
    RuntimeEvent::from_value(v).unwrap_or_else(|e| panic!("test event {id}: {e}"))
}

/// The hidden `invocation_opened` event that opens a run (MAKA-MODEL §1.3).
pub fn opening(session: &str, run: &str, turn: &str, ts: f64) -> RuntimeEvent {
    event(
        session,
        run,
        turn,
        &format!("invocation_opened:{run}"),
        ts,
        json!({
            "role": "system", "author": "system", "modelVisibility": "hidden",
            "content": {
                "kind": "invocation_opened", "protocol": "invocation_opened_v1",
                "route": {"provenance": "runtime", "backendKind": "fake", "llmConnectionId": "fake-connection",
                          "llmConnectionSlug": "fake", "modelId": "fake-model"},
                "configuration": {"cwd": "/tmp", "permissionMode": "bypass", "collaborationMode": "agent",
                                  "orchestrationMode": "default", "orchestrationSource": "session", "toolMode": "direct"},
                "root": {"kind": "user"},
                "source": {"kind": "fresh"},
            },
        }),
    )
}

/// The user's message of a turn.
pub fn user(session: &str, run: &str, turn: &str, id: &str, ts: f64, text: &str) -> RuntimeEvent {
    event(
        session,
        run,
        turn,
        id,
        ts,
        json!({
            "role": "user", "author": "user", "content": {"kind": "text", "text": text},
        }),
    )
}

/// A model text event.
pub fn text(session: &str, run: &str, turn: &str, id: &str, ts: f64, text: &str) -> RuntimeEvent {
    event(
        session,
        run,
        turn,
        id,
        ts,
        json!({
            "modelVisibility": "visible", "content": {"kind": "text", "text": text},
        }),
    )
}

/// A streaming partial text chunk.
pub fn partial(
    session: &str,
    run: &str,
    turn: &str,
    id: &str,
    ts: f64,
    chunk: &str,
) -> RuntimeEvent {
    event(
        session,
        run,
        turn,
        id,
        ts,
        json!({
            "partial": true, "status": "streaming", "content": {"kind": "text", "text": chunk},
        }),
    )
}

/// The terminal event a `complete{stopReason}` becomes (§11), with `status`.
pub fn terminal(
    session: &str,
    run: &str,
    turn: &str,
    id: &str,
    ts: f64,
    status: &str,
) -> RuntimeEvent {
    event(
        session,
        run,
        turn,
        id,
        ts,
        json!({
            "role": "system", "author": "system", "status": status,
            "actions": {"endInvocation": true, "stateDelta": {"stopReason": "end_turn"}},
        }),
    )
}

/// The text of a minimal valid event with `extra` members appended (`,"key":value...`).
pub fn minimal(extra: &str) -> String {
    format!(
        r#"{{"id":"e","invocationId":"i","runId":"r","sessionId":"s","turnId":"t","ts":1,"partial":false,"role":"model","author":"agent"{extra}}}"#
    )
}

/// The four canonical vectors of MAKA-MODEL §2, byte for byte.
pub const VECTORS: [&str; 4] = [
    r#"{"actions":{"endInvocation":true,"stateDelta":{"failureClass":"app_restarted","lastEventType":"model_stream_started","recovered":true,"recoveryReason":"run_interrupted"}},"author":"system","content":{"code":"app_restarted","kind":"error","message":"app_restarted","reason":"app_restarted"},"id":"rt-recovered-1","invocationId":"inv-1","partial":false,"role":"system","runId":"run-1","sessionId":"session-1","status":"failed","ts":1000,"turnId":"turn-1"}"#,
    r#"{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}"#,
    r#"{"actions":{"stateDelta":{"displayName":"Read file","intent":"inspect"}},"author":"agent","content":{"args":{"path":"/tmp/a.txt"},"id":"tool-1","kind":"function_call","name":"Read"},"id":"evt-tool-call","invocationId":"inv-1","partial":false,"refs":{"toolCallId":"tool-1"},"role":"model","runId":"run-1","sessionId":"sess-1","ts":1800000000002,"turnId":"turn-1"}"#,
    r#"{"author":"system","content":{"configuration":{"collaborationMode":"agent","cwd":"/tmp","orchestrationMode":"default","orchestrationSource":"session","permissionMode":"ask","toolMode":"direct"},"kind":"invocation_opened","protocol":"invocation_opened_v1","root":{"kind":"user"},"route":{"backendKind":"fake","llmConnectionId":"fake-connection","llmConnectionSlug":"fake","modelId":"fake-model","provenance":"runtime"},"source":{"kind":"fresh"}},"id":"invocation_opened:run-1","invocationId":"run-1","modelVisibility":"hidden","partial":false,"role":"system","runId":"run-1","sessionId":"session-1","ts":1,"turnId":"turn-1"}"#,
];
