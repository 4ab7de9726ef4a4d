//! The invariants: a recovered state against the model.

use super::*;

/// Checks a recovered state against the model: no writer acknowledged anything after failing,
/// every acknowledged write is present, and each log is the model after some prefix of what was
/// submitted.
pub fn check(model: &Model, got: &Recovered) -> Result<(), String> {
    if let Some(what) = model.acked_after_failure.first() {
        return Err(what.clone());
    }
    for (session, records) in &got.sessions {
        let submitted = model.submitted.get(session).cloned().unwrap_or_default();
        let durable = model.durable.get(session).copied().unwrap_or(0);
        if records.len() > submitted.len() || records[..] != submitted[..records.len()] {
            return Err(format!(
                "session {}: recovered {} records that are not a prefix of the {} submitted",
                SESSIONS[*session],
                records.len(),
                submitted.len()
            ));
        }
        if records.len() < durable {
            return Err(format!(
                "session {}: {} records acknowledged durable, {} recovered",
                SESSIONS[*session],
                durable,
                records.len()
            ));
        }
    }
    // In commit order, a subsequence of what was handed over (a failed event may be missing
    // while a later one, after the session was opened again, is there), holding every
    // acknowledged one.
    let mut rest = model.events.iter();
    if !got.events.iter().all(|e| rest.any(|s| s == e)) {
        return Err(format!(
            "events: the {} recovered are out of order or were never submitted ({} submitted)",
            got.events.len(),
            model.events.len()
        ));
    }
    if let Some(lost) = model.events_acked.iter().find(|a| !got.events.contains(a)) {
        return Err(format!("events: acknowledged {lost} is missing"));
    }
    for (n, got_events) in &got.small {
        let submitted = model.small.get(n).cloned().unwrap_or_default();
        let acked = model.small_acked.get(n).cloned().unwrap_or_default();
        // In commit order, a subsequence of what was handed over (a failed event may be
        // missing while a later one, after the session was reopened, is there)…
        let mut rest = submitted.iter();
        if !got_events.iter().all(|e| rest.any(|s| s == e)) {
            return Err(format!(
                "small session {n}: recovered events out of order or never submitted"
            ));
        }
        // …holding every acknowledged one.
        if let Some(lost) = acked.iter().find(|a| !got_events.contains(a)) {
            return Err(format!("small session {n}: acknowledged {lost} is missing"));
        }
    }
    if let Some(n) = model
        .small_acked
        .iter()
        .find(|(n, a)| !a.is_empty() && !got.small.contains_key(n))
        .map(|(n, _)| n)
    {
        return Err(format!(
            "small session {n}: acknowledged events and no session"
        ));
    }
    let mut tables = ClaimTables::default();
    let mut prefixes = vec![tables.to_json_lines(None)];
    for (i, r) in model.claim_records.iter().enumerate() {
        tables.apply(r.clone(), i as u64 + 1);
        prefixes.push(tables.to_json_lines(None));
    }
    match prefixes.iter().position(|p| *p == got.claims) {
        Some(k) if k >= model.claims_acked => Ok(()),
        Some(k) => Err(format!(
            "claims: {} acknowledged, only {k} recovered",
            model.claims_acked
        )),
        None => Err(format!(
            "claims: the recovered tables are no prefix of the {} submitted claim records",
            model.claim_records.len()
        )),
    }
}
