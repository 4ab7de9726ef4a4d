//! A stored message (MAKA-MODEL §6), tagged by `type`.

use super::fields::{any, array, object, opt_strings};
use crate::event::path::Path;
use crate::event::schema::actions::usage;
use crate::event::schema::fields::Decoded;
use crate::event::schema::fields::{
    decode_object, expect_array, expect_object, expect_one_of, invalid, Obj, Result as FieldResult,
};
use serde_json::Value;

const RECORD: &str = "stored message";

/// Every message type.
pub const MESSAGE_TYPES: &[&str] = &[
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "permission_decision",
    "token_usage",
    "turn_state",
    "system_note",
];

const TURN_STATUSES: &[&str] = &["running", "completed", "aborted", "failed"];

const NOTE_KINDS: &[&str] = &[
    "session_start",
    "session_resume",
    "mode_change",
    "model_change",
    "context_compacted",
    "context_compaction_failed_open",
    "step_limit",
    "error",
    "abort",
];

/// Members a tool call and a tool result share.
const TOOL_LINEAGE: &[&str] = &["parentToolCallId", "parentOperationId"];

record_type!(
    /// A decoded stored message with its canonical JSON.
    StoredMessage,
    RECORD,
    decode
);

impl StoredMessage {
    /// Its `type`.
    pub fn message_type(&self) -> &str {
        self.0.value["type"].as_str().unwrap_or_default()
    }

    /// Its `id`.
    pub fn id(&self) -> &str {
        self.0.value["id"].as_str().unwrap_or_default()
    }

    /// Its turn; a system note may have none.
    pub fn turn_id(&self) -> Option<&str> {
        self.0.value["turnId"].as_str()
    }
}

fn decode(value: &Value) -> FieldResult<Decoded<'_>> {
    decode_object(value, &Path::root(), |m| {
        let kind = m.one_of("type", MESSAGE_TYPES)?;
        m.nonempty("id")?;
        m.number("ts")?;
        if kind == "system_note" {
            m.opt_nonempty("turnId")?;
        } else {
            m.nonempty("turnId")?;
        }
        match kind {
            "user" => read_user(m),
            "assistant" => read_assistant(m),
            "tool_call" => read_tool_call(m),
            "tool_result" => read_tool_result(m),
            "permission_decision" => read_permission(m),
            "token_usage" => usage::read_fields(m),
            "turn_state" => read_turn_state(m),
            _ => read_note(m),
        }
    })
}

fn read_user(m: &mut Obj) -> FieldResult<()> {
    m.string("text")?;
    opt_strings(m, &["displayText", "steeringEventId"])?;
    for key in ["attachments", "quotes", "inlineReferences"] {
        m.optional(key, array)?;
    }
    m.optional("origin", any)?;
    Ok(())
}

fn read_assistant(m: &mut Obj) -> FieldResult<()> {
    m.string("text")?;
    m.nonempty("modelId")?;
    m.optional("providerOptions", object)?;
    m.opt_object("thinking", |t| {
        t.string("text")?;
        t.opt_string("signature")?;
        t.optional("providerOptions", object)?;
        t.optional("parts", array)?;
        Ok(())
    })?;
    m.optional("contentOrder", |v, p| {
        for (i, part) in expect_array(v, p)?.iter().enumerate() {
            expect_one_of(part, &p.index(i), &["thinking", "text", "tools"])?;
        }
        Ok(())
    })?;
    Ok(())
}

fn read_tool_call(m: &mut Obj) -> FieldResult<()> {
    m.nonempty("toolName")?;
    m.required("args", any)?;
    opt_strings(
        m,
        &[
            "activityKind",
            "displayName",
            "intent",
            "stepId",
            "modelVisibility",
        ],
    )?;
    opt_strings(m, TOOL_LINEAGE)?;
    m.optional("providerOptions", object)?;
    m.opt_boolean("providerExecuted")?;
    m.optional("origin", any)?;
    Ok(())
}

fn read_tool_result(m: &mut Obj) -> FieldResult<()> {
    m.nonempty("toolUseId")?;
    m.boolean("isError")?;
    m.required("content", |v, p| {
        let content = expect_object(v, p)?;
        match content.get("kind") {
            Some(Value::String(k)) if !k.is_empty() => Ok(()),
            _ => Err(invalid(
                &p.key("kind"),
                "tool result content is tagged by a non-empty kind",
            )),
        }
    })?;
    m.opt_number("durationMs")?;
    m.opt_boolean("providerExecuted")?;
    m.optional("providerOutput", any)?;
    m.opt_string("modelVisibility")?;
    opt_strings(m, TOOL_LINEAGE)?;
    m.optional("origin", any)?;
    Ok(())
}

fn read_permission(m: &mut Obj) -> FieldResult<()> {
    m.nonempty("toolUseId")?;
    m.nonempty("toolName")?;
    m.nonempty("decision")?;
    m.opt_boolean("rememberForTurn")?;
    m.optional("reviewer", any)?;
    opt_strings(m, &["rationale", "riskLevel", "hint"])?;
    Ok(())
}

fn read_turn_state(m: &mut Obj) -> FieldResult<()> {
    let status = m.one_of("status", TURN_STATUSES)?;
    m.boolean("partialOutputRetained")?;
    opt_strings(
        m,
        &[
            "parentTurnId",
            "retriedFromTurnId",
            "regeneratedFromTurnId",
            "branchOfTurnId",
            "parentSessionId",
            "abortSource",
        ],
    )?;
    m.opt_number("abortedAt")?;
    // A failed turn has an error class, `unknown` when none was given; no other status has one.
    let class = m.opt_nonempty("errorClass")?;
    match (status, class) {
        ("failed", None) => m.put("errorClass", Value::String("unknown".to_owned())),
        ("failed", Some(_)) | (_, None) => {}
        (_, Some(_)) => {
            return Err(invalid(
                &m.at("errorClass"),
                "only a failed turn has an error class",
            ))
        }
    }
    Ok(())
}

fn read_note(m: &mut Obj) -> FieldResult<()> {
    m.one_of("kind", NOTE_KINDS)?;
    m.optional("data", any)?;
    Ok(())
}
