//! Invocations as a pure function of a session's canonical events (MAKA-MODEL §4).

use crate::event::RuntimeEvent;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// One invocation: where it opened and, once it ended, its first terminal event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeInvocation {
    pub session_id: String,
    pub invocation_id: String,
    pub run_id: String,
    pub turn_id: String,
    /// The ts of the opening event.
    pub opened_at: f64,
    /// The opening content, verbatim.
    pub opening: serde_json::Value,
    /// The first terminal event, in read order; later stragglers never replace it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_event: Option<serde_json::Value>,
}

impl RuntimeInvocation {
    /// The invocation as canonical JSON (keys sorted, numbers as JavaScript prints them), as
    /// `makalog invocations --json` prints it.
    pub fn to_canonical_json(&self) -> String {
        serde_json::to_value(self)
            .map(|v| crate::event::canonical_string(&v))
            .unwrap_or_default()
    }

    /// completed → `completed`; failed → `failed`; aborted or cancelled → `cancelled`.
    pub fn outcome(&self) -> Option<&'static str> {
        let status = self.terminal_event.as_ref()?.get("status")?.as_str()?;
        match status {
            "completed" => Some("completed"),
            "failed" => Some("failed"),
            "aborted" | "cancelled" => Some("cancelled"),
            _ => None,
        }
    }
}

/// Orders strings by UTF-16 code units, as JavaScript compares them.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The read order of a session's events (§3): ts, then runId, then the event's sequence in its
/// invocation, then id.
pub fn read_order(a: (&RuntimeEvent, u64), b: (&RuntimeEvent, u64)) -> Ordering {
    a.0.ts()
        .total_cmp(&b.0.ts())
        .then_with(|| utf16_cmp(a.0.run_id(), b.0.run_id()))
        .then_with(|| a.1.cmp(&b.1))
        .then_with(|| utf16_cmp(a.0.id(), b.0.id()))
}

/// Sorts invocations by openedAt, then invocationId in code-unit order (the original uses
/// `localeCompare`; code-unit order is what every reader can reproduce).
pub fn sort_invocations(list: &mut [RuntimeInvocation]) {
    list.sort_by(|a, b| {
        a.opened_at
            .total_cmp(&b.opened_at)
            .then_with(|| utf16_cmp(&a.invocation_id, &b.invocation_id))
    });
}

/// Rebuilds a session's invocations from its events, given in read order: partial events and
/// other sessions' events are skipped; each invocation's first opening creates it; its first
/// terminal event ends it; invocations never opened are absent.
pub fn runtime_invocations_from_session_events(
    session_id: &str,
    events: &[RuntimeEvent],
) -> Vec<RuntimeInvocation> {
    let relevant = || {
        events
            .iter()
            .filter(move |e| !e.partial() && e.session_id() == session_id)
    };
    let mut by_id: BTreeMap<&str, RuntimeInvocation> = BTreeMap::new();
    for e in relevant() {
        if let Some(opening) = e.opening() {
            by_id
                .entry(e.invocation_id())
                .or_insert_with(|| RuntimeInvocation {
                    session_id: session_id.to_owned(),
                    invocation_id: e.invocation_id().to_owned(),
                    run_id: e.run_id().to_owned(),
                    turn_id: e.turn_id().to_owned(),
                    opened_at: e.ts(),
                    opening: opening.clone(),
                    terminal_event: None,
                });
        }
    }
    for e in relevant().filter(|e| e.is_terminal()) {
        if let Some(inv) = by_id.get_mut(e.invocation_id()) {
            if inv.terminal_event.is_none() {
                inv.terminal_event = Some(e.value().clone());
            }
        }
    }
    let mut out: Vec<RuntimeInvocation> = by_id.into_values().collect();
    sort_invocations(&mut out);
    out
}
