//! The records that open a turn (MAKA-MODEL §12 steps 1–6: the run and `run_created`, the
//! invocation's opening, the user message and `turn_state{running}`, the user RuntimeEvent, the
//! connection lock, then `run_started`, the run running and the session running), each built,
//! decoded and checked against the log's bound before the first is queued. The turn's input
//! sizes several of them (its text, attachments, agent, lineage and origin): a record the
//! ledger cannot decode or hold is refused with nothing written, not after a prefix of the
//! opening was queued (which the batch's one sync would make durable, leaving a half-opened
//! run to a restart). What depends on the session's state (a run id already used) is the
//! caller's to check first; the rules queued with the records check it again under the
//! session's lock.

use super::attachments::attachments_json;
use super::batch::{run_event_value, Batch};
use super::begin::runtime_event;
use super::lineage::{origin_root, origin_run_fields};
use super::manager::{Inner, TurnInput};
use super::mapping::TurnIds;
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::RecordKind;
use crate::index::{SessionRecord, SessionState};
use crate::model::{RunEvent, RunHeader, SessionHeader, StoredMessage};
use crate::store::HeaderPatch;
use serde_json::{json, Value};

/// What must hold of the session's state for a record to be queued (checked under its lock).
type Rule<'a> = Box<dyn Fn(&SessionState) -> Result<()> + 'a>;

/// One record of the opening, built and checked.
enum Step<'a> {
    Record(SessionRecord, Rule<'a>),
    Event(RuntimeEvent),
    /// The session's header with fields of the turn's set, on the one it holds when queued.
    Header(HeaderPatch),
}

/// A turn's opening, every record of it built and checked, in its order.
pub(super) struct Opening<'a> {
    steps: Vec<Step<'a>>,
    /// The session's header once the turn runs, as made from the one read before it: the turn
    /// runs on what that read said (its model, as its run names it), whatever a host changed
    /// since (which the header queued keeps, for later turns).
    header: SessionHeader,
    /// When the run started.
    started_at: f64,
}

impl Opening<'_> {
    /// Queues the records in their order (a record refused now is refused by the session's
    /// state, as a run changed meanwhile); the session's header once running and when the run
    /// started.
    pub(super) fn queue(self, batch: &mut Batch) -> Result<(SessionHeader, f64)> {
        for step in self.steps {
            match step {
                Step::Record(record, rule) => batch.record(&record, &*rule)?,
                Step::Event(event) => batch.decoded_event(&event)?,
                Step::Header(patch) => batch.header_patch(&patch)?,
            }
        }
        Ok((self.header, self.started_at))
    }
}

/// The records being built, each checked as it is added.
struct Steps<'i, 'a> {
    inner: &'i Inner,
    steps: Vec<Step<'a>>,
}

impl<'a> Steps<'_, 'a> {
    fn record(&mut self, record: SessionRecord, rule: Rule<'a>) -> Result<()> {
        let events = &self.inner.stores.runtime_events;
        events.check_fits(record.kind(), record.canonical_json())?;
        self.steps.push(Step::Record(record, rule));
        Ok(())
    }

    fn message(&mut self, message: Value) -> Result<()> {
        let message = StoredMessage::from_value(message)?;
        self.record(SessionRecord::Message(message), Box::new(|_| Ok(())))
    }

    /// `fields` set on `base`: the version made of it, checked; queued as set on the header
    /// the session holds then.
    fn header(&mut self, base: &SessionHeader, fields: Value) -> Result<SessionHeader> {
        let patch = HeaderPatch::new(base, fields)?;
        let made = patch.made().clone();
        let events = &self.inner.stores.runtime_events;
        events.check_fits(RecordKind::SessionHeader, made.canonical_json())?;
        self.steps.push(Step::Header(patch));
        Ok(made)
    }

    fn run_event(&mut self, ids: &TurnIds, kind: &str, data: Option<Value>) -> Result<()> {
        let event = RunEvent::from_value(run_event_value(self.inner, ids, kind, data))?;
        self.record(SessionRecord::RunEvent(event), Box::new(|_| Ok(())))
    }

    fn event(&mut self, event: Value) -> Result<()> {
        let event = runtime_event(event)?;
        let events = &self.inner.stores.runtime_events;
        events.check_fits(RecordKind::RuntimeEvent, event.canonical_json())?;
        self.steps.push(Step::Event(event));
        Ok(())
    }
}

/// Builds steps 1 to 6 of §12 for the turn `ids` names, in their order.
pub(super) fn opening_records<'a>(
    inner: &Inner,
    ids: &'a TurnIds,
    header: &SessionHeader,
    input: &TurnInput,
    user_message_id: &str,
) -> Result<Opening<'a>> {
    let (s, h) = (&inner.sources, header.value());
    let mut steps = Steps {
        inner,
        steps: Vec::new(),
    };
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
    steps.record(
        SessionRecord::Run(created.clone()),
        Box::new(crate::store::run_is_new(session_id, run_id)),
    )?;
    let data = json!({
        "textLength": input.text.encode_utf16().count(), "attachmentCount": input.attachments.len(),
        "orchestrationMode": created.value()["orchestrationMode"], "orchestrationSource": "session",
        "agentSwarmAuthorization": "none", "toolMode": "direct",
    });
    steps.run_event(ids, "run_created", Some(data))?;
    // 2. The invocation's opening, its first event.
    steps.event(ids.event(
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
    steps.message(user)?;
    let mut state = json!({
        "type": "turn_state", "id": s.new_id(), "turnId": turn_id, "ts": s.now(),
        "status": "running", "partialOutputRetained": false,
    });
    if let Value::Object(m) = &mut state {
        m.extend(input.lineage.turn_fields());
    }
    steps.message(state)?;
    // 4. The user RuntimeEvent, with the user message's id.
    steps.event(user_event(ids, user_message_id, at, input))?;
    // 5. The connection is locked from the first turn on.
    let mut next = header.clone();
    if h["connectionLocked"] != json!(true) {
        next = steps.header(&next, json!({"connectionLocked": true}))?;
    }
    // 6. run_started, the run running, the session running.
    steps.run_event(ids, "run_started", None)?;
    let started_at = s.now();
    let running = created.updated(&json!({"status": "running", "updatedAt": started_at}))?;
    let base = created.canonical_json().to_owned();
    steps.record(
        SessionRecord::Run(running),
        Box::new(move |state| match state.runs.get(run_id.as_str()) {
            Some(r) if r.header == base => Ok(()),
            _ => Err(Error::InvalidInput(format!(
                "run {run_id} changed while it was opened"
            ))),
        }),
    )?;
    let running = json!({"status": "running", "statusUpdatedAt": started_at});
    let header = steps.header(&next, running)?;
    Ok(Opening {
        steps: steps.steps,
        header,
        started_at,
    })
}

/// The user RuntimeEvent (§12 step 4): author `user`, or `host` for a turn with an origin,
/// which its content states.
pub(super) fn user_event(
    ids: &TurnIds,
    user_message_id: &str,
    at: f64,
    input: &TurnInput,
) -> Value {
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
