//! The writes that open a turn, in the order of MAKA-MODEL §12 (steps 0–6): the admission
//! (hosted turns), the run and `run_created`, the invocation's opening, the user message and
//! `turn_state{running}`, the user RuntimeEvent, the connection lock, then `run_started`, the
//! run running and the session running. Each is durable before the next is written.

use super::attachments::{attachments_json, check_attachments};
use super::batch::Batch;
use super::lineage::{check_origin, origin_root, origin_run_fields};
use super::manager::{Inner, TurnInput};
use super::mapping::TurnIds;
use crate::error::{Error, Result};
use crate::event::{EventError, RuntimeEvent};
use crate::index::SessionRecord;
use crate::model::{RunHeader, SessionHeader};
use crate::store::Admission;
use serde_json::{json, Value};

/// A turn whose opening writes are done: what its stream needs.
pub(super) struct Begun {
    pub ids: TurnIds,
    /// The lineage every `turn_state` of the turn states.
    pub lineage: serde_json::Map<String, Value>,
    pub user_message_id: String,
    pub header: SessionHeader,
    pub started_at: f64,
}

/// Opens a turn of session `session_id`, whose header (read by the caller) is `header`.
pub(super) fn begin(
    inner: &Inner,
    session_id: &str,
    header: SessionHeader,
    input: &TurnInput,
) -> Result<Begun> {
    let stores = &inner.stores;
    let s = &inner.sources;
    let turn_id = input.turn_id.clone().unwrap_or_else(|| s.new_id());
    let mut run_id = input.run_id.clone().unwrap_or_else(|| s.new_id());
    let mut user_message_id = input.user_message_id.clone().unwrap_or_else(|| s.new_id());
    // Where the turn comes from is checked before anything is written, and its origin
    // stated everywhere as the user event's decode reads it (`automation` is
    // `legacy_automation`).
    input.lineage.check()?;
    check_attachments(&input.attachments)?;
    let normalized;
    let input = match &input.origin {
        Some(origin) => {
            check_origin(origin)?;
            let ids = TurnIds {
                session_id: session_id.to_owned(),
                invocation_id: run_id.clone(),
                run_id: run_id.clone(),
                turn_id: turn_id.clone(),
            };
            let event = runtime_event(user_event(&ids, &user_message_id, 0.0, input));
            let event = event.map_err(|e| {
                Error::InvalidInput(format!("origin: {origin} is not a TurnOrigin ({e})"))
            })?;
            normalized = TurnInput {
                origin: Some(event.value()["content"]["origin"].clone()),
                ..input.clone()
            };
            &normalized
        }
        None => input,
    };
    // 0. A hosted turn is admitted first; the stored admission's ids win.
    if let Some(execution) = &input.execution {
        let admission = json!({
            "schemaVersion": 1, "sessionId": session_id, "turnId": turn_id, "runId": run_id,
            "userMessageId": user_message_id, "execution": execution,
            "previousRootTurnId": previous_root_turn(stores, session_id, &turn_id)?,
            "normalizedInput": {"text": input.text},
            "sourceMessages": [], "admittedAt": s.now() as u64,
        });
        let stored = match stores.runs.admit_root_turn(admission)? {
            Admission::Admitted(a) | Admission::Existing(a) => a,
            Admission::Conflict(a) => {
                return Err(Error::IdentityConflict {
                    what: format!(
                        "turn {turn_id} was admitted for other work: {}",
                        a.canonical_json()
                    ),
                })
            }
        };
        run_id = stored.value()["runId"]
            .as_str()
            .unwrap_or(&run_id)
            .to_owned();
        if let Some(m) = stored.value()["userMessageId"].as_str() {
            user_message_id = m.to_owned();
        }
    }
    let h = header.value();
    let ids = TurnIds {
        session_id: session_id.to_owned(),
        invocation_id: run_id.clone(),
        run_id: run_id.clone(),
        turn_id: turn_id.clone(),
    };
    // The run is in the open-runs file before its first record, so recovery finds it.
    let storage = inner.stores.runtime_events.storage();
    super::manager::lock(&inner.open_runs)?.mark(storage, session_id, &run_id)?;
    // Steps 1 to 6 are queued in the session's log in their order and made durable by one
    // sync: a crash keeps a prefix of them, as it would of separate syncs.
    let mut batch = Batch::new(inner, session_id);
    let written = queue_opening(&mut batch, inner, &ids, h, input, &user_message_id);
    let durable = batch.wait();
    let (header, started_at) = written?;
    durable?;
    Ok(Begun {
        ids,
        lineage: input.lineage.turn_fields(),
        user_message_id,
        header,
        started_at,
    })
}

/// Queues steps 1 to 6 of §12: the run and `run_created`, the opening, the user message and
/// `turn_state{running}`, the user RuntimeEvent, the connection lock, `run_started`, the run
/// running and the session running. Returns the session's header and when the run started.
fn queue_opening(
    batch: &mut Batch,
    inner: &Inner,
    ids: &TurnIds,
    h: &Value,
    input: &TurnInput,
    user_message_id: &str,
) -> Result<(SessionHeader, f64)> {
    let s = &inner.sources;
    let (session_id, run_id, turn_id) = (&ids.session_id, &ids.run_id, &ids.turn_id);
    // 1. The run, then run_created.
    let now = s.now();
    let mut run = json!({
        "runId": run_id, "sessionId": session_id, "turnId": turn_id,
        "llmConnectionSlug": h["llmConnectionSlug"], "modelId": h["model"], "cwd": h["cwd"],
        "status": "created", "backendKind": h["backend"], "permissionMode": h["permissionMode"],
        "createdAt": now, "updatedAt": now, "invocationId": run_id,
    });
    if let (Value::Object(r), Value::Object(modes)) = (&mut run, modes(h)) {
        r.extend(modes);
    }
    // No swarm is authorized: none of this runtime's turns is a swarm's.
    run["agentSwarmAuthorization"] = json!("none");
    for (key, value) in [
        ("agentId", &input.agent_id),
        ("agentName", &input.agent_name),
    ] {
        if let Some(v) = value {
            run[key] = json!(v);
        }
    }
    if let Value::Object(r) = &mut run {
        r.extend(input.lineage.fields());
        r.extend(
            input
                .origin
                .as_ref()
                .map(origin_run_fields)
                .unwrap_or_default(),
        );
    }
    let created = RunHeader::from_value(run)?;
    batch.record(
        &SessionRecord::Run(created.clone()),
        &crate::store::run_is_new(session_id, run_id),
    )?;
    let data = json!({
        "textLength": input.text.encode_utf16().count(), "attachmentCount": input.attachments.len(),
        "orchestrationMode": created.value()["orchestrationMode"], "orchestrationSource": "session",
        "agentSwarmAuthorization": "none", "toolMode": "direct",
    });
    batch.run_event(inner, ids, "run_created", Some(data))?;
    // 2. The invocation's opening, its first event.
    batch.event(ids.event(
        &s.new_id(),
        s.now(),
        false,
        "system",
        "system",
        opening(h, input),
    ))?;
    // 3. The user message, then the turn running.
    let at = s.now();
    let mut user = json!({
        "type": "user", "id": user_message_id, "turnId": turn_id, "ts": at, "text": input.text,
    });
    if let Some(origin) = &input.origin {
        user["origin"] = origin.clone();
    }
    // Stated only when there are some, as the event's content drops an empty list.
    if !input.attachments.is_empty() {
        user["attachments"] = attachments_json(&input.attachments);
    }
    batch.message(user)?;
    let mut state = json!({
        "type": "turn_state", "id": s.new_id(), "turnId": turn_id, "ts": s.now(),
        "status": "running", "partialOutputRetained": false,
    });
    if let Value::Object(m) = &mut state {
        m.extend(input.lineage.turn_fields());
    }
    batch.message(state)?;
    // 4. The user RuntimeEvent, with the user message's id.
    batch.event(user_event(ids, user_message_id, at, input))?;
    // 5. The connection is locked from the first turn on.
    let mut next = h.clone();
    if h["connectionLocked"] != json!(true) {
        next["connectionLocked"] = json!(true);
        batch.header(next.clone())?;
    }
    // 6. run_started, the run running, the session running.
    batch.run_event(inner, ids, "run_started", None)?;
    let started_at = s.now();
    let running = created.updated(&json!({"status": "running", "updatedAt": started_at}))?;
    let base = created.canonical_json().to_owned();
    batch.record(
        &SessionRecord::Run(running),
        &|state| match state.runs.get(run_id.as_str()) {
            Some(r) if r.header == base => Ok(()),
            _ => Err(Error::InvalidInput(format!(
                "run {run_id} changed while it was opened"
            ))),
        },
    )?;
    next["status"] = json!("running");
    next["statusUpdatedAt"] = json!(started_at);
    Ok((batch.header(next)?, started_at))
}

/// The turn before `turn_id` that a root turn's admission names (§8): the one its admission
/// already named, if it was admitted before (a retry, or a turn admitted by an older version
/// that named none), so a retry is compared on its payload alone; otherwise the turn of the
/// session's last message of another turn.
fn previous_root_turn(
    stores: &crate::store::ExecutionStores,
    session_id: &str,
    turn_id: &str,
) -> Result<Value> {
    if let Some(stored) = stores.runs.read_root_turn_admission(session_id, turn_id)? {
        return Ok(stored.value()["previousRootTurnId"].clone());
    }
    Ok(json!(stores.sessions.turn_before(session_id, turn_id)?))
}

/// The user RuntimeEvent (§12 step 4): author `user`, or `host` for a turn with an origin,
/// which its content states.
fn user_event(ids: &TurnIds, user_message_id: &str, at: f64, input: &TurnInput) -> Value {
    let mut content = json!({"kind": "text", "text": input.text});
    if !input.attachments.is_empty() {
        content["attachments"] = attachments_json(&input.attachments);
    }
    let author = match &input.origin {
        Some(origin) => {
            content["origin"] = origin.clone();
            "host"
        }
        None => "user",
    };
    let fields = json!({"content": content});
    ids.event(user_message_id, at, false, "user", author, fields)
}

/// The run's modes, from the session (§12 step 1, "config from the session"): stated alike by
/// the run's header and its invocation's opening.
fn modes(h: &Value) -> Value {
    json!({
        "collaborationMode": h.get("collaborationMode").cloned().unwrap_or(json!("agent")),
        "orchestrationMode": h.get("orchestrationMode").cloned().unwrap_or(json!("default")),
        "orchestrationSource": "session", "toolMode": "direct",
    })
}

/// The opening content of the turn's invocation (§1.3): the session's route and configuration,
/// the root its origin makes (a user's without one), a fresh source, and the turn's lineage
/// with the agent when the turn is an agent's.
fn opening(h: &Value, input: &TurnInput) -> Value {
    let route = match h.get("llmConnectionId") {
        Some(id) => {
            json!({"provenance": "runtime", "backendKind": h["backend"], "llmConnectionId": id,
                           "llmConnectionSlug": h["llmConnectionSlug"], "modelId": h["model"]})
        }
        None => json!({"provenance": "unknown", "backendKind": h["backend"],
                       "llmConnectionSlug": h["llmConnectionSlug"], "modelId": h["model"]}),
    };
    let permission = match h["permissionMode"].as_str() {
        Some("execute") | None => "ask",
        Some(mode) => mode,
    };
    let mut configuration = json!({"cwd": h["cwd"], "permissionMode": permission});
    if let (Value::Object(c), Value::Object(modes)) = (&mut configuration, modes(h)) {
        c.extend(modes);
    }
    let mut content = json!({
        "kind": "invocation_opened", "protocol": "invocation_opened_v1", "route": route,
        "configuration": configuration,
        "root": origin_root(input.origin.as_ref()), "source": {"kind": "fresh"},
    });
    let mut lineage = input.lineage.fields();
    if let (Some(id), Some(name)) = (&input.agent_id, &input.agent_name) {
        lineage.insert("agentId".into(), json!(id));
        lineage.insert("agentName".into(), json!(name));
    }
    // An empty lineage is invalid (§1.3): none is stated then.
    if !lineage.is_empty() {
        content["lineage"] = Value::Object(lineage);
    }
    json!({"modelVisibility": "hidden", "content": content})
}

/// A RuntimeEvent the runtime built, strictly decoded (one it would refuse is a typed error).
pub(super) fn runtime_event(event: Value) -> Result<RuntimeEvent> {
    built(RuntimeEvent::from_value(event))
}

/// An event the runtime built, or the typed error for one the ledger refuses.
pub(super) fn built(event: std::result::Result<RuntimeEvent, EventError>) -> Result<RuntimeEvent> {
    event.map_err(|e| {
        Error::InvalidInput(format!(
            "the runtime built an event the ledger refuses: {e}"
        ))
    })
}

/// Appends a run event of the turn's run, durably.
pub(super) fn run_event(
    inner: &Inner,
    ids: &TurnIds,
    kind: &str,
    data: Option<Value>,
) -> Result<()> {
    inner
        .stores
        .runs
        .append_event(super::batch::run_event_value(inner, ids, kind, data))?;
    Ok(())
}
