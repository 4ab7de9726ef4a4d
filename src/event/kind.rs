//! Derived facts of a decoded event: the terminal rule of MAKA-MODEL §1.1 and the `event_kind`
//! label of §3.

use super::schema::TERMINAL_STATUSES;
use serde_json::Value;

/// A terminal status, or `actions.endInvocation === true`.
pub fn is_terminal(event: &Value) -> bool {
    let status = event.get("status").and_then(Value::as_str);
    status.is_some_and(|s| TERMINAL_STATUSES.contains(&s))
        || action(event, "endInvocation") == Some(&Value::Bool(true))
}

/// The first that applies of `content.kind`, `status`, `workspace_fact`, `tool_dispatch`,
/// `invocation_end`, else `runtime_fact`.
pub fn event_kind(event: &Value) -> &str {
    if let Some(kind) = event
        .get("content")
        .and_then(|c| c.get("kind"))
        .and_then(Value::as_str)
    {
        return kind;
    }
    if let Some(status) = event.get("status").and_then(Value::as_str) {
        return status;
    }
    if action(event, "workspaceFact").is_some() {
        return "workspace_fact";
    }
    if action(event, "toolDispatch").is_some() {
        return "tool_dispatch";
    }
    // The original tests truthiness, so `endInvocation: false` is an ordinary runtime fact.
    if action(event, "endInvocation") == Some(&Value::Bool(true)) {
        return "invocation_end";
    }
    "runtime_fact"
}

fn action<'a>(event: &'a Value, key: &str) -> Option<&'a Value> {
    event.get("actions").and_then(|a| a.get(key))
}
