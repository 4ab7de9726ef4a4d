//! Runs (MAKA-MODEL §7): the run header, mutable through the updates §7 allows, and the run's
//! lifecycle events.

use super::fields::{object, opt_strings, permission_mode, safe_id};
use crate::error::{Error, Result};
use crate::event::path::Path;
use crate::event::schema::fields::Decoded;
use crate::event::schema::fields::{decode_object, invalid, Obj, Result as FieldResult};
use serde_json::Value;

const RECORD: &str = "run header";
const EVENT_RECORD: &str = "run event";

/// A run's statuses; the last three end it.
pub const RUN_STATUSES: &[&str] = &[
    "created",
    "running",
    "waiting_for_user",
    "completed",
    "failed",
    "cancelled",
];

/// The statuses that end a run.
pub const TERMINAL_RUN_STATUSES: &[&str] = &["completed", "failed", "cancelled"];

/// Optional strings with no further rule.
const OPTIONAL_STRINGS: &[&str] = &[
    "workspaceIdentity",
    "parentRunId",
    "resumedFromRunId",
    "retriedFromRunId",
    "agentId",
    "agentName",
    "parentTurnId",
    "retriedFromTurnId",
    "regeneratedFromTurnId",
    "branchOfTurnId",
    "parentSessionId",
    "agentGraphWakeAttemptId",
    "failureClass",
    "failureMessage",
    "abortSource",
    "traceWriteError",
];

/// What started the run, of which a run names at most one.
const ORIGINS: &[&str] = &[
    "scheduledTaskId",
    "legacyAutomationId",
    "goalId",
    "agentGraphWakeId",
];

/// The members `update_run` may change (§7): status, timestamps, composition, failure fields.
pub const UPDATABLE: &[&str] = &[
    "status",
    "updatedAt",
    "completedAt",
    "runComposition",
    "failureClass",
    "failureMessage",
    "traceWriteError",
    "abortSource",
];

record_type!(
    /// A decoded run header with its canonical JSON.
    RunHeader,
    RECORD,
    decode_header
);

impl RunHeader {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        self.0.value["runId"].as_str().unwrap_or_default()
    }

    /// The session the run belongs to.
    pub fn session_id(&self) -> &str {
        self.0.value["sessionId"].as_str().unwrap_or_default()
    }

    /// The run's status.
    pub fn status(&self) -> &str {
        self.0.value["status"].as_str().unwrap_or_default()
    }

    /// True once the run has ended.
    pub fn is_terminal(&self) -> bool {
        TERMINAL_RUN_STATUSES.contains(&self.status())
    }

    /// This header changed as `update` says (a JSON object of updatable members; `null`
    /// removes an optional one), or a typed refusal naming the member: a member §7 does not let
    /// an update change, a status transition it does not allow (nothing leaves an ended run;
    /// `created` goes anywhere; `running` and `waiting_for_user` go to each other or end), or
    /// a run composition that was already set.
    pub fn updated(&self, update: &Value) -> Result<RunHeader> {
        let refuse = |field: &str, why: &str| Error::InvalidRecord {
            record: "run update",
            field: field.to_owned(),
            why: why.to_owned(),
        };
        let Some(changes) = update.as_object() else {
            return Err(refuse("<record>", "an update is a JSON object"));
        };
        let mut next = self.0.value.clone();
        for (key, value) in changes {
            if !UPDATABLE.contains(&key.as_str()) {
                return Err(refuse(key, "update_run cannot change this member"));
            }
            if key == "runComposition" && self.0.value.get(key).is_some_and(|v| v != value) {
                return Err(refuse(key, "the run composition is immutable once set"));
            }
            match (value, next.as_object_mut()) {
                (Value::Null, Some(map)) if key != "status" && key != "updatedAt" => {
                    map.remove(key);
                }
                (_, Some(map)) => {
                    map.insert(key.clone(), value.clone());
                }
                (_, None) => return Err(refuse("<record>", "the stored header is not an object")),
            }
        }
        let to = next["status"].as_str().unwrap_or_default().to_owned();
        if !transition_allowed(self.status(), &to) {
            return Err(refuse(
                "status",
                &format!("a run cannot move from {} to {to}", self.status()),
            ));
        }
        RunHeader::from_value(next)
    }
}

/// Whether a run may move from status `from` to `to` (staying is always allowed).
pub fn transition_allowed(from: &str, to: &str) -> bool {
    if from == to {
        return true;
    }
    match from {
        "created" => true,
        "running" | "waiting_for_user" => to != "created",
        _ => false,
    }
}

fn decode_header(value: &Value) -> FieldResult<Decoded<'_>> {
    decode_object(value, &Path::root(), read_header)
}

fn read_header(r: &mut Obj) -> FieldResult<()> {
    for key in ["runId", "sessionId", "turnId"] {
        r.required(key, safe_id)?;
    }
    for key in ["llmConnectionSlug", "modelId", "cwd"] {
        r.string(key)?;
    }
    r.one_of("status", RUN_STATUSES)?;
    r.one_of("backendKind", &["ai-sdk", "fake"])?;
    r.decoded("permissionMode", permission_mode)?;
    r.number("createdAt")?;
    r.number("updatedAt")?;
    r.opt_number("completedAt")?;
    // invocationId is set to runId.
    if let Some(invocation) = r.opt_string("invocationId")? {
        let run = r.input().get("runId").and_then(Value::as_str);
        if Some(invocation) != run {
            return Err(invalid(&r.at("invocationId"), "must equal runId"));
        }
    }
    r.opt_one_of("collaborationMode", &["agent", "plan"])?;
    r.opt_one_of("orchestrationMode", &["default", "swarm", "graph"])?;
    // The configuration's enums (§1.3).
    r.opt_one_of("orchestrationSource", &["session", "turn_override"])?;
    r.opt_one_of("toolMode", &["direct", "code_mode"])?;
    r.opt_one_of(
        "agentSwarmAuthorization",
        &["none", "session_mode", "turn_override"],
    )?;
    opt_strings(r, OPTIONAL_STRINGS)?;
    r.optional("runComposition", object)?;
    r.opt_object("continuationSource", read_continuation)?;
    let mut origins = Vec::new();
    for &key in ORIGINS {
        if r.opt_string(key)?.is_some() {
            origins.push(key);
        }
    }
    if origins.len() > 1 {
        return Err(invalid(
            &r.at(origins[1]),
            format!("a run has at most one of {}", ORIGINS.join(", ")),
        ));
    }
    r.opt_one_of("rootExecutionKind", &["context_compact"])?;
    Ok(())
}

/// `continuationSource`: the run this one continues; version 2 adds the claim and digests.
fn read_continuation(c: &mut Obj) -> FieldResult<()> {
    for key in ["sourceInvocationId", "sourceRunId", "sourceTurnId"] {
        c.nonempty(key)?;
    }
    c.int_at_least("sourceRuntimeEventHighWater", 0)?;
    if c.opt_one_of("protocol", &["continuation_source_v2"])?
        .is_some()
    {
        for key in [
            "claimId",
            "boundaryDigest",
            "sourcePrefixDigest",
            "replayManifestDigest",
        ] {
            c.nonempty(key)?;
        }
    }
    Ok(())
}

record_type!(
    /// A decoded run lifecycle event with its canonical JSON. Unknown types stay readable.
    RunEvent,
    EVENT_RECORD,
    decode_event
);

impl RunEvent {
    /// Its type, known or not.
    pub fn event_type(&self) -> &str {
        self.0.value["type"].as_str().unwrap_or_default()
    }

    /// The run it belongs to.
    pub fn run_id(&self) -> &str {
        self.0.value["runId"].as_str().unwrap_or_default()
    }

    /// True for run_completed, run_failed and run_cancelled: a run gets exactly one.
    pub fn is_terminal(&self) -> bool {
        RunEvent::is_terminal_type(self.event_type())
    }

    /// Whether a run event of type `event_type` ends its run.
    pub fn is_terminal_type(event_type: &str) -> bool {
        matches!(event_type, "run_completed" | "run_failed" | "run_cancelled")
    }
}

fn decode_event(value: &Value) -> FieldResult<Decoded<'_>> {
    decode_object(value, &Path::root(), |e| {
        let kind = e.string("type")?;
        if kind.trim().is_empty() {
            return Err(invalid(&e.at("type"), "must not be blank"));
        }
        e.nonempty("id")?;
        for key in ["runId", "sessionId", "turnId"] {
            e.required(key, safe_id)?;
        }
        e.number("ts")?;
        e.opt_string("message")?;
        e.optional("data", object)?;
        Ok(())
    })
}
