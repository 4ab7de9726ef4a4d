//! What recovery at start decides for a run from its header and its run events (MAKA-MODEL
//! §12): the reason, by the rule table, and the failure class.

/// The failure class a recovered run gets, unless the restart closed a sandbox request.
pub const APP_RESTARTED: &str = "app_restarted";

/// The failure class of a recovered run that was waiting on a sandbox request (§12): the
/// restart closed the request.
pub const SANDBOX_BOUNDARY_CLOSED: &str = "sandbox_boundary_closed_by_restart";

/// The reason rule table of §12 (HEAD), first match wins: `status` is the run header's,
/// `last` the type of its last run event that is not `event_corrupt`.
pub fn recovery_reason(status: &str, last: Option<&str>, has_terminal_event: bool) -> &'static str {
    match last {
        Some("model_stream_completed") if !has_terminal_event => {
            "model_stream_completed_without_runtime_terminal"
        }
        _ if status == "waiting_for_user" => "stale_user_wait",
        Some("permission_requested" | "permission_failed") => "stale_user_wait",
        Some("tool_started") => "tool_interrupted",
        _ if matches!(status, "created" | "running") => "run_interrupted",
        None => "run_interrupted",
        Some(
            "run_created"
            | "run_started"
            | "turn_started"
            | "model_resolved"
            | "model_stream_started"
            | "run_status_changed",
        ) => "run_interrupted",
        Some(_) => "non_terminal_run_recovered",
    }
}

/// The failure class of a run with these run event types (in order): a sandbox request
/// (`sandbox_escalation_requested`) that no grant, denial or failure answered is one the
/// restart closes. A run may have several requests in flight, and the types do not say which
/// request an answer is for, so they are counted: an `applied` answers a request only where no
/// grant came before it (it follows one). Corrupt events answer nothing.
pub fn failure_class<'a>(run_event_types: impl IntoIterator<Item = &'a str>) -> &'static str {
    let (mut requested, mut answered, mut granted) = (0usize, 0usize, 0usize);
    for t in run_event_types {
        match t {
            "sandbox_escalation_requested" => requested += 1,
            "sandbox_escalation_granted" => {
                answered += 1;
                granted += 1;
            }
            "sandbox_escalation_denied" | "sandbox_escalation_failed" => answered += 1,
            "sandbox_escalation_applied" if granted > 0 => granted -= 1,
            "sandbox_escalation_applied" => answered += 1,
            _ => {}
        }
    }
    if requested > answered {
        SANDBOX_BOUNDARY_CLOSED
    } else {
        APP_RESTARTED
    }
}

/// Whether `class` is one recovery gives.
pub fn is_recovery_class(class: &str) -> bool {
    class == APP_RESTARTED || class == SANDBOX_BOUNDARY_CLOSED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unanswered_sandbox_request_is_closed_by_the_restart() {
        let cases: [(&[&str], &str); 9] = [
            (&[], APP_RESTARTED),
            (&["run_started", "tool_started"], APP_RESTARTED),
            (&["sandbox_escalation_requested"], SANDBOX_BOUNDARY_CLOSED),
            (
                &["sandbox_escalation_requested", "event_corrupt"],
                SANDBOX_BOUNDARY_CLOSED,
            ),
            (
                &["sandbox_escalation_requested", "sandbox_escalation_denied"],
                APP_RESTARTED,
            ),
            (
                &[
                    "sandbox_escalation_requested",
                    "sandbox_escalation_granted",
                    "sandbox_escalation_requested",
                    "tool_started",
                ],
                SANDBOX_BOUNDARY_CLOSED,
            ),
            // Two in flight, one answered.
            (
                &[
                    "sandbox_escalation_requested",
                    "sandbox_escalation_requested",
                    "sandbox_escalation_granted",
                    "sandbox_escalation_applied",
                ],
                SANDBOX_BOUNDARY_CLOSED,
            ),
            // Both answered.
            (
                &[
                    "sandbox_escalation_requested",
                    "sandbox_escalation_requested",
                    "sandbox_escalation_granted",
                    "sandbox_escalation_denied",
                ],
                APP_RESTARTED,
            ),
            // An applied escalation was granted, though the grant is not in the log.
            (
                &["sandbox_escalation_requested", "sandbox_escalation_applied"],
                APP_RESTARTED,
            ),
        ];
        for (types, want) in cases {
            assert_eq!(failure_class(types.iter().copied()), want, "{types:?}");
        }
    }
}
