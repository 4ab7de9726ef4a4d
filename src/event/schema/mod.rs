//! The strict RuntimeEvent decoder of MAKA-MODEL §1: exact shapes at every level, enums matched
//! exactly, and the normalizations HEAD's decode applies, producing the decoded event as a value.

pub(crate) mod actions;
mod content;
pub(crate) mod fields;
mod message;
mod obj;
mod opening;
mod projection;
mod refs;
mod text;

pub use fields::Result;

use super::error::EventError;
use super::number;
use super::parse::MAX_DEPTH;
use super::path::Path;
use fields::{Decoded, Obj};
use serde_json::Value;

/// `role`: the model-history lane of the event.
pub const ROLES: &[&str] = &["user", "model", "tool", "system"];
/// `author`: the subsystem that produced the event.
pub const AUTHORS: &[&str] = &["user", "host", "agent", "tool", "system"];
/// `origin`: the execution surface.
pub const ORIGINS: &[&str] = &["provider", "code_mode"];
/// `modelVisibility`: the provider-history policy.
pub const MODEL_VISIBILITIES: &[&str] = &["visible", "hidden"];
/// `status`: the lifecycle assertion.
pub const STATUSES: &[&str] = &["streaming", "completed", "failed", "aborted", "cancelled"];
/// The statuses that end an invocation (§1.1).
pub const TERMINAL_STATUSES: &[&str] = &["completed", "failed", "aborted", "cancelled"];

/// Decodes a RuntimeEvent value whose numbers are normalized: shape checked, normalizations
/// applied, the decoded event returned.
pub fn decode(value: &Value) -> Result<Decoded<'_>> {
    let root = Path::root();
    let mut event = Obj::new(value, &root)?;
    for key in ["id", "invocationId", "runId", "sessionId", "turnId"] {
        event.nonempty(key)?;
    }
    event.number("ts")?;
    event.boolean("partial")?;
    event.opt_string("branch")?;
    event.one_of("role", ROLES)?;
    event.one_of("author", AUTHORS)?;
    event.opt_one_of("origin", ORIGINS)?;
    event.opt_one_of("modelVisibility", MODEL_VISIBILITIES)?;
    event.opt_one_of("status", STATUSES)?;
    let session_id = event
        .input()
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    event.opt_decoded("content", |v, p| content::decode(v, p, session_id))?;
    event.opt_decoded("actions", actions::decode)?;
    event.opt_decoded("refs", refs::decode)?;
    let decoded = event.finish()?;
    actions::check_handoff_seal(&decoded)?;
    Ok(decoded)
}

/// Puts every number of the value in its one representation (`1.0` → `1`, `-0` → `0`), refusing
/// nesting deeper than the parser accepts. The parser's output needs no normalizing.
pub fn normalize(value: &mut Value) -> Result<()> {
    normalize_at(value, 0, &Path::root)
}

fn normalize_at(value: &mut Value, depth: usize, path: &dyn Fn() -> Path) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(EventError::Invalid {
            field: path().render(),
            why: format!("nested deeper than {MAX_DEPTH} levels"),
        });
    }
    match value {
        Value::Number(n) => *n = number::normalize(n),
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                normalize_at(item, depth + 1, &|| path().index(i))?;
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                normalize_at(item, depth + 1, &|| path().key(key))?;
            }
        }
        _ => {}
    }
    Ok(())
}
