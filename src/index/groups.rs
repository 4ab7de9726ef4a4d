//! A session's events grouped by invocation id: how invocations are read from a ledger of the
//! generation before openings (the original runtime at HEAD writes no `invocation_opened`
//! event, so §4's listing, which counts only opened invocations, is empty for it).

use super::invocations::utf16_cmp;
use crate::event::RuntimeEvent;
use serde::Serialize;
use std::collections::BTreeMap;

/// The events of one invocation id.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventGroup {
    pub session_id: String,
    pub invocation_id: String,
    pub run_id: String,
    pub turn_id: String,
    /// The earliest ts of the group's events, partial ones included.
    pub first_ts: f64,
    /// Its immutable events and live partial snapshots.
    pub event_count: usize,
    /// Of those, the live partial snapshots.
    pub partial_event_count: usize,
    /// Whether an `invocation_opened` event opened it.
    pub opened: bool,
    /// The first terminal immutable event, in read order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_event: Option<serde_json::Value>,
}

impl EventGroup {
    /// The group as canonical JSON, as `makalog invocations --json` prints it.
    pub fn to_canonical_json(&self) -> String {
        serde_json::to_value(self)
            .map(|v| crate::event::canonical_string(&v))
            .unwrap_or_default()
    }
}

/// Groups `events` (a session's immutable events, in read order) and `partials` (its live
/// partial snapshots) by invocation id, ordered by first ts, then invocation id (code units).
pub fn group_invocations(events: &[RuntimeEvent], partials: &[RuntimeEvent]) -> Vec<EventGroup> {
    let mut groups: BTreeMap<&str, EventGroup> = BTreeMap::new();
    for (event, partial) in events
        .iter()
        .map(|e| (e, false))
        .chain(partials.iter().map(|e| (e, true)))
    {
        let group = groups
            .entry(event.invocation_id())
            .or_insert_with(|| EventGroup {
                session_id: event.session_id().to_owned(),
                invocation_id: event.invocation_id().to_owned(),
                run_id: event.run_id().to_owned(),
                turn_id: event.turn_id().to_owned(),
                first_ts: event.ts(),
                event_count: 0,
                partial_event_count: 0,
                opened: false,
                terminal_event: None,
            });
        group.first_ts = group.first_ts.min(event.ts());
        group.event_count += 1;
        if partial {
            group.partial_event_count += 1;
            continue;
        }
        group.opened |= event.opening().is_some();
        if group.terminal_event.is_none() && event.is_terminal() {
            group.terminal_event = Some(event.value().clone());
        }
    }
    let mut out: Vec<EventGroup> = groups.into_values().collect();
    out.sort_by(|a, b| {
        a.first_ts
            .total_cmp(&b.first_ts)
            .then_with(|| utf16_cmp(&a.invocation_id, &b.invocation_id))
    });
    out
}
