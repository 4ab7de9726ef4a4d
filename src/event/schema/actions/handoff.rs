//! `handoffPause` (\[SPINE\] RuntimeHandoffPause): the seal of a physical invocation that hands its
//! logical turn to exactly one successor, and the event shape such a seal requires.

use super::super::fields::{decode_object, expect_int, invalid, Decoded, Result};
use super::super::text::{has_control, utf16_len};
use crate::event::path::Path;
use serde_json::Value;

/// The ids a pause names.
const IDS: &[&str] = &[
    "handoffId",
    "hostEpoch",
    "rootRunId",
    "successorRunId",
    "successorInvocationId",
    "claimId",
];

/// Decodes `handoffPause`.
pub fn decode_pause<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |pause| {
        pause.literal("protocol", "runtime_handoff_pause_v1")?;
        for &key in IDS {
            let id = pause.string(key)?;
            if id.is_empty() || utf16_len(id) > 256 || has_control(id) {
                return Err(invalid(
                    &pause.at(key),
                    "must be 1 to 256 UTF-16 code units without control characters",
                ));
            }
        }
        // The successor's step budget; null means unbounded.
        pause.required("remainingSteps", |v, p| {
            if v.is_null() || expect_int(v, p)? > 0 {
                Ok(())
            } else {
                Err(invalid(p, "must be null or a positive integer"))
            }
        })?;
        Ok(())
    })
}

/// A pause seals its invocation: the event is a final system fact that ends the invocation,
/// publishes no content, claims no outcome, and names a successor distinct from itself.
pub fn check_handoff_seal(event: &Value) -> Result<()> {
    let actions = event.get("actions").and_then(Value::as_object);
    let Some(pause) = actions.and_then(|a| a.get("handoffPause")) else {
        return Ok(());
    };
    let path = Path::root().key("actions").key("handoffPause");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let (run, invocation) = (text(event.get("runId")), text(event.get("invocationId")));
    let successor_run = text(pause.get("successorRunId"));
    let successor_invocation = text(pause.get("successorInvocationId"));
    let root_run = text(pause.get("rootRunId"));
    let author = text(event.get("author"));
    let sealed = event.get("partial") == Some(&Value::Bool(false))
        && event.get("role").and_then(Value::as_str) == Some("system")
        && (author == "host" || author == "system")
        && event.get("status").is_none()
        && event.get("content").is_none()
        && actions.and_then(|a| a.get("endInvocation")) == Some(&Value::Bool(true))
        && actions.is_some_and(|a| {
            a.keys()
                .all(|k| k == "endInvocation" || k == "handoffPause")
        })
        && successor_run != run
        && successor_run != invocation
        && successor_invocation != invocation
        && successor_run != root_run;
    if !sealed {
        return Err(invalid(
            &path,
            "a handoff pause must be a non-partial system event by host or system with no \
             status or content, endInvocation true as its only other action, and a successor \
             distinct from this run, this invocation and the root run",
        ));
    }
    Ok(())
}
