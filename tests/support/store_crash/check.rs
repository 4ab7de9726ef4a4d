//! Which recovered store views a workload's model allows: every acknowledged write present,
//! nothing that was not submitted, logs in submission order with only failed writes missing,
//! at most one terminal run event per run, and every spawn claim with its child and every
//! spawned child with its claim.

use super::{StoreModel, StoreView};
use serde_json::Value;
use std::collections::BTreeMap;

/// Checks `got` is a subsequence of `submitted` (in order) that keeps every acknowledged one.
fn in_order(what: &str, got: &[String], submitted: &[(String, bool)]) -> Result<(), String> {
    let mut next = submitted.iter();
    for g in got {
        loop {
            match next.next() {
                Some((s, _)) if s == g => break,
                Some((s, true)) => return Err(format!("{what}: acknowledged {s} is missing")),
                Some((_, false)) => {}
                None => return Err(format!("{what}: {g} was not submitted (or out of order)")),
            }
        }
    }
    match next.find(|(_, acked)| *acked) {
        Some((s, _)) => Err(format!("{what}: acknowledged {s} is missing")),
        None => Ok(()),
    }
}

/// Checks the latest of a record's versions is one at or after the last acknowledged one.
pub(super) fn latest(
    what: &str,
    got: Option<&str>,
    submitted: &[(String, bool)],
) -> Result<(), String> {
    let last_acked = submitted.iter().rposition(|(_, acked)| *acked);
    match got {
        None if last_acked.is_some() => Err(format!("{what}: acknowledged but missing")),
        None => Ok(()),
        Some(g) => {
            let from = last_acked.unwrap_or(0);
            if submitted[from..].iter().any(|(s, _)| s == g) {
                Ok(())
            } else {
                Err(format!(
                    "{what}: holds {g}, not a version at or after the last acknowledged"
                ))
            }
        }
    }
}

fn field(json: &str, key: &str) -> Option<String> {
    let v: Value = serde_json::from_str(json).ok()?;
    v.get(key)?.as_str().map(str::to_owned)
}

pub fn check(model: &StoreModel, got: &StoreView) -> Result<(), String> {
    if let Some(e) = model.listing_errors.first() {
        return Err(format!("a listing during the run: {e}"));
    }
    let sessions: BTreeMap<&str, &str> = got
        .sessions
        .iter()
        .map(|(id, h)| (id.as_str(), h.as_str()))
        .collect();
    for (id, h) in &sessions {
        if !model.headers.contains_key(*id) {
            return Err(format!("session {id} was never submitted: {h}"));
        }
    }
    for (id, versions) in &model.headers {
        latest(
            &format!("session {id}"),
            sessions.get(id.as_str()).copied(),
            versions,
        )?;
    }
    for (id, submitted) in &model.messages {
        let none = Vec::new();
        in_order(
            &format!("messages of {id}"),
            got.messages.get(id).unwrap_or(&none),
            submitted,
        )?;
    }
    check_runs(model, got)?;
    decisions("admission", &model.admissions, &got.admissions)?;
    decisions("rejection", &model.rejections, &got.rejections)?;
    if let Some((session, turn)) = got
        .admissions
        .keys()
        .find(|k| got.rejections.contains_key(*k))
    {
        return Err(format!(
            "turn {session}/{turn} is both admitted and rejected"
        ));
    }
    check_spawns(model, got, &sessions)
}

fn check_runs(model: &StoreModel, got: &StoreView) -> Result<(), String> {
    let mut present = BTreeMap::new();
    for (session, runs) in &got.runs {
        for (run, header) in runs {
            present.insert((session.clone(), run.clone()), header.clone());
        }
    }
    for key in present.keys() {
        if !model.statuses.contains_key(key) {
            return Err(format!("run {key:?} was never submitted"));
        }
    }
    for (key, statuses) in &model.statuses {
        let header = present.get(key);
        let status = header.and_then(|h| field(h, "status"));
        latest(&format!("run {key:?} status"), status.as_deref(), statuses)?;
        let events = got.run_events.get(key).cloned().unwrap_or_default();
        if events
            .iter()
            .enumerate()
            .any(|(i, (seq, _))| *seq != i as u64)
        {
            return Err(format!("run {key:?}: sequence numbers are not 0, 1, 2, …"));
        }
        let (ended, lifecycle): (Vec<_>, Vec<_>) = events
            .iter()
            .map(|(_, e)| e.clone())
            .partition(|e| field(e, "type").as_deref() == Some("run_completed"));
        let none = Vec::new();
        let submitted = model.run_events.get(key).unwrap_or(&none);
        in_order(&format!("events of run {key:?}"), &lifecycle, submitted)?;
        if ended.len() > 1 {
            return Err(format!(
                "run {key:?} has {} terminal run events",
                ended.len()
            ));
        }
        let committed = model.terminals.get(key).copied();
        if committed.is_none() && !ended.is_empty() {
            return Err(format!(
                "run {key:?} has a terminal event it was never given"
            ));
        }
        let runtime = got.runtime_events.get(&key.0).cloned().unwrap_or_default();
        let sealed = runtime.iter().any(|id| *id == format!("end-{}", key.1));
        if committed == Some(true)
            && (ended.len() != 1 || !sealed || status.as_deref() != Some("completed"))
        {
            return Err(format!(
                "run {key:?} was committed: {} terminal run events, sealed {sealed}, status {status:?}",
                ended.len()
            ));
        }
        // §7's order: the terminal run event comes after the status, which comes after the
        // terminal runtime event.
        if !ended.is_empty() && status.as_deref() != Some("completed") {
            return Err(format!(
                "run {key:?} has its terminal event before its status"
            ));
        }
        if status.as_deref() == Some("completed") && !sealed {
            return Err(format!(
                "run {key:?} is completed without its terminal runtime event"
            ));
        }
    }
    Ok(())
}

fn check_spawns(
    model: &StoreModel,
    got: &StoreView,
    sessions: &BTreeMap<&str, &str>,
) -> Result<(), String> {
    let spawned: Vec<&str> = sessions
        .iter()
        .filter(|(_, h)| h.contains("\"subagentSpawn\""))
        .map(|(id, _)| *id)
        .collect();
    let claimed: Vec<&str> = {
        let mut c: Vec<&str> = got.spawn_claims.values().map(String::as_str).collect();
        c.sort_unstable();
        c
    };
    if spawned != claimed {
        return Err(format!(
            "children {spawned:?} and spawn claims {claimed:?} differ: a claim without its session or a session without its claim"
        ));
    }
    for (key, calls) in &model.spawns {
        let claim = got.spawn_claims.get(key);
        if let Some(child) = claim {
            if !calls.iter().any(|(asked, _)| asked == child) {
                return Err(format!("spawn {key} claims {child}, never asked for"));
            }
        }
        for (asked, answer) in calls {
            let Some(answer) = answer else { continue };
            if claim != Some(&answer.child) {
                return Err(format!(
                    "spawn {key} answered {} (created {}) for {asked}, but its claim is {claim:?}",
                    answer.child, answer.created
                ));
            }
        }
    }
    Ok(())
}

/// The turns decided one way (`what`): each acknowledged decision is there as submitted, and
/// nothing is there that was not submitted.
fn decisions(
    what: &str,
    model: &BTreeMap<(String, String), (String, bool)>,
    got: &BTreeMap<(String, String), String>,
) -> Result<(), String> {
    for ((session, turn), (json, acked)) in model {
        match got.get(&(session.clone(), turn.clone())) {
            Some(a) if a != json => return Err(format!("{what} {session}/{turn} is {a}")),
            None if *acked => return Err(format!("{what} {session}/{turn} is missing")),
            _ => {}
        }
    }
    if got.keys().any(|k| !model.contains_key(k)) {
        return Err(format!("a {what} that was never submitted"));
    }
    Ok(())
}
