//! `content` (MAKA-MODEL §1.2): the model-facing payload, a union tagged by `kind`.

use super::fields::{decode_object, expect_str, expect_tag, invalid, Decoded, Obj, Result};
use super::{message, opening, projection};
use crate::event::path::Path;
use serde_json::Value;

/// The content kinds, including the \[SPINE\] ones.
pub const CONTENT_KINDS: &[&str] = &[
    "text",
    "thinking",
    "function_call",
    "function_response",
    "error",
    "system_note",
    "injection",
    "invocation_opened",
];

/// The notes the runtime writes about an invocation (\[SPINE\] `RUNTIME_SYSTEM_NOTE_KINDS`).
const SYSTEM_NOTES: &[&str] = &[
    "context_compacted",
    "context_compaction_failed_open",
    "context_provider_dropping",
    "context_window_suggestion",
    "context_window_overrun",
    "context_reported_window_exceeded",
    "context_overflow_after_compaction",
    "step_limit",
];

/// Decodes `content`; `session_id` is the event's, which owns any artifact a projection names.
pub fn decode<'a>(value: &'a Value, path: &Path, session_id: &str) -> Result<Decoded<'a>> {
    let kind = expect_tag(value, path, "kind", CONTENT_KINDS)?;
    decode_object(value, path, |content| {
        content.literal("kind", kind)?;
        match kind {
            "text" => message::read_text(content),
            "thinking" => read_thinking(content),
            "function_call" => read_function_call(content),
            "function_response" => read_function_response(content, session_id),
            "error" => read_error(content),
            "system_note" => read_system_note(content),
            "injection" => read_injection(content),
            _ => opening::read_opening(content),
        }
    })
}

fn read_thinking(content: &mut Obj) -> Result<()> {
    content.string("text")?;
    content.opt_string("signature")?;
    content.opt_record("providerOptions")
}

fn read_function_call(content: &mut Obj) -> Result<()> {
    // `id` and `name` may be empty; `args` must be present whatever it holds.
    content.string("id")?;
    content.string("name")?;
    content.any("args")?;
    content.opt_record("providerOptions")?;
    content.opt_boolean("providerExecuted")?;
    Ok(())
}

fn read_function_response(content: &mut Obj, session_id: &str) -> Result<()> {
    content.string("id")?;
    content.string("name")?;
    content.any("result")?;
    content.opt_boolean("isError")?;
    content.opt_boolean("providerExecuted")?;
    content.opt_any("providerOutput")?;
    content.opt_decoded("modelProjection", |v, p| {
        projection::decode(v, p, session_id)
    })?;
    Ok(())
}

fn read_error(content: &mut Obj) -> Result<()> {
    content.string("message")?;
    content.opt_string("code")?;
    content.opt_string("reason")?;
    content.opt_decoded("retry", decode_retry)?;
    content.optional("details", |v, p| match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                expect_str(item, &p.index(i))?;
            }
            Ok(())
        }
        Value::Object(_) => Ok(()),
        _ => Err(invalid(p, "expected an array of strings or an object")),
    })?;
    Ok(())
}

/// `retry` (\[SPINE\] ModelRetryDecision): why a failed model call was not retried again.
fn decode_retry<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let decision = expect_tag(value, path, "decision", &["exhausted", "declined"])?;
    decode_object(value, path, |retry| {
        retry.literal("decision", decision)?;
        if decision == "exhausted" {
            retry.int_at_least("attempts", 1)?;
        } else {
            retry.one_of(
                "because",
                &["side_effects", "observable_output", "policy", "budget"],
            )?;
        }
        Ok(())
    })
}

fn read_system_note(content: &mut Obj) -> Result<()> {
    content.one_of("note", SYSTEM_NOTES)?;
    content.opt_any("data")?;
    Ok(())
}

fn read_injection(content: &mut Obj) -> Result<()> {
    content.nonempty("name")?;
    content.string("text")?;
    content.opt_record("data")
}
