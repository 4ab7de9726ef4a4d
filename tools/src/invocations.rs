//! `makalog invocations ROOT --session ID`, and the read-only view of a session the other
//! commands list invocations from.

use makalog::index::{rebuild, EventGroup, RuntimeInvocation, SessionIndex};
use makalog::root::read_marker;
use makalog::storage::{RealStorage, Storage};
use makalog::store::Sidecars;
use std::path::Path;
use std::process::ExitCode;

/// The view of a session, read-only, as the library's read-only stores read it (a session with
/// no directory gets the rebuild's error).
pub(crate) fn view_of(
    storage: &dyn Storage,
    id: &str,
    sidecars: Sidecars,
) -> makalog::Result<SessionIndex> {
    match makalog::store::read_only_index(storage, id, sidecars)? {
        Some(view) => Ok(view),
        None => rebuild(storage, id),
    }
}

/// Lists a session's invocations, read-only.
pub fn invocations(root: &Path, session: &str, json: bool, sidecars: Sidecars) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    if let Err(e) = read_marker(&storage) {
        return crate::usage_error(e);
    }
    if let Err(why) = makalog::format::validate_session_id(session) {
        return crate::usage_error(why);
    }
    print_invocations(&storage, session, json, sidecars)
}

/// A session's invocations as read from `storage`, and the groups of events of those never
/// opened.
pub(crate) fn listed(
    storage: &dyn Storage,
    session: &str,
    sidecars: Sidecars,
) -> makalog::Result<(Vec<RuntimeInvocation>, Vec<EventGroup>)> {
    let view = view_of(storage, session, sidecars)?;
    let invocations = makalog::index::invocations_from_log(storage, &view)?;
    // Only a session with events of an invocation never opened is read again whole.
    let unopened = match view.invocations.values().any(|i| i.opening.is_none()) {
        true => unopened_groups(storage, session)?,
        false => Vec::new(),
    };
    Ok((invocations, unopened))
}

/// What `invocations --json` prints, a JSON text a line: each invocation's canonical JSON,
/// then each group never opened.
pub(crate) fn json_lines(
    invocations: &[RuntimeInvocation],
    unopened: &[EventGroup],
) -> Vec<String> {
    let opened = invocations.iter().map(RuntimeInvocation::to_canonical_json);
    opened
        .chain(unopened.iter().map(EventGroup::to_canonical_json))
        .collect()
}

/// Prints a session's invocations as read from `storage`.
pub fn print_invocations(
    storage: &dyn Storage,
    session: &str,
    json: bool,
    sidecars: Sidecars,
) -> ExitCode {
    let (invocations, unopened) = match listed(storage, session, sidecars) {
        Ok(v) => v,
        Err(e) => {
            tell!("makalog: {e}");
            return ExitCode::from(1);
        }
    };
    if json {
        for line in json_lines(&invocations, &unopened) {
            say!("{line}");
        }
        return ExitCode::SUCCESS;
    }
    let w = |f: &dyn Fn(&RuntimeInvocation) -> usize, min: usize| {
        invocations.iter().map(f).max().unwrap_or(0).max(min)
    };
    let (wi, wr, wt) = (
        w(&|i| i.invocation_id.len(), 10),
        w(&|i| i.run_id.len(), 3),
        w(&|i| i.turn_id.len(), 4),
    );
    say!(
        "{:<wi$}  {:<wr$}  {:<wt$}  {:<24}  OUTCOME",
        "INVOCATION",
        "RUN",
        "TURN",
        "OPENED (UTC)"
    );
    for inv in &invocations {
        say!(
            "{:<wi$}  {:<wr$}  {:<wt$}  {:<24}  {}",
            inv.invocation_id,
            inv.run_id,
            inv.turn_id,
            crate::time::iso8601(inv.opened_at),
            inv.outcome().unwrap_or("open")
        );
    }
    say!("{} invocations", invocations.len());
    if !unopened.is_empty() {
        print_unopened(&unopened);
    }
    ExitCode::SUCCESS
}

/// The session's invocations never opened, as groups of their events (live partials counted).
fn unopened_groups(storage: &dyn Storage, session: &str) -> makalog::Result<Vec<EventGroup>> {
    let reader = makalog::store::ReadOnlySessions::new(storage);
    let read = reader.read_runtime_events(session)?;
    Ok(
        makalog::index::group_invocations(&read.events, &read.live_partials)
            .into_iter()
            .filter(|g| !g.opened)
            .collect(),
    )
}

/// Invocations whose events carry no opening (a ledger of the generation before openings, as
/// the original runtime writes at HEAD), grouped by invocation id.
fn print_unopened(groups: &[EventGroup]) {
    let w = |f: &dyn Fn(&EventGroup) -> usize, min: usize| {
        groups.iter().map(f).max().unwrap_or(0).max(min)
    };
    let (wi, wr, wt) = (
        w(&|g| g.invocation_id.len(), 10),
        w(&|g| g.run_id.len(), 3),
        w(&|g| g.turn_id.len(), 4),
    );
    let counts: Vec<String> = groups
        .iter()
        .map(|g| match g.partial_event_count {
            0 => g.event_count.to_string(),
            p => format!("{} ({p} partial)", g.event_count),
        })
        .collect();
    let we = counts.iter().map(String::len).max().unwrap_or(0).max(6);
    say!("never opened (events written without an invocation_opened event):");
    say!(
        "{:<wi$}  {:<wr$}  {:<wt$}  {:<24}  {:<we$}  TERMINAL",
        "INVOCATION",
        "RUN",
        "TURN",
        "FIRST EVENT (UTC)",
        "EVENTS"
    );
    for (g, events) in groups.iter().zip(&counts) {
        let terminal = g.terminal_event.as_ref().map_or("none".to_owned(), |t| {
            let status = t["status"].as_str().unwrap_or("ended");
            match t["actions"]["stateDelta"]["failureClass"].as_str() {
                Some(class) => format!("{status} ({class})"),
                None => status.to_owned(),
            }
        });
        say!(
            "{:<wi$}  {:<wr$}  {:<wt$}  {:<24}  {:<we$}  {terminal}",
            g.invocation_id,
            g.run_id,
            g.turn_id,
            crate::time::iso8601(g.first_ts),
            events
        );
    }
    say!("{} invocations never opened", groups.len());
}
