//! `agent_graph_intent_claims` as graph intent claims with their admission status.

use super::report::Report;
use super::sql::{claim_time, int, key_part, opt_text, select, text};
use makalog::claims::{
    validate_graph_request, AdmissionStatus, AdmissionStatusChange, AgentGraphIntentClaimRequest,
    ClaimRecord,
};
use makalog::import::GraphClaimPlan;
use rusqlite::Connection;
use std::collections::HashSet;

/// Every graph intent claim of the source, by claim time, each checked as the claims log
/// checks a request, and against the claims before it under the log's unique keys (a source
/// rebuilt without them may hold two): the earlier keeps a key, the later is refused.
pub fn graph_claims(
    conn: &Connection,
    report: &mut Report,
) -> rusqlite::Result<Vec<GraphClaimPlan>> {
    let table = "agent_graph_intent_claims";
    let mut out = Vec::new();
    let mut held: HashSet<(&'static str, String, String)> = HashSet::new();
    for r in select(
        conn,
        "SELECT claim_id, schema_version, graph_id, intent_id, intent_fingerprint, readiness_context_fingerprint, target_operator_id, target_session_id, target_turn_id, target_run_id, claimed_at, admission_status, cancellation_reason FROM agent_graph_intent_claims ORDER BY claimed_at, claim_id",
        [],
    )? {
        let plan = (|| {
            let t = |i: usize| text(&r[i]).map(str::to_owned);
            let request = AgentGraphIntentClaimRequest {
                claim_id: t(0)?,
                schema_version: u32::try_from(int(&r[1])?).map_err(|_| "schema_version is out of range".to_owned())?,
                graph_id: t(2)?,
                intent_id: t(3)?,
                intent_fingerprint: t(4)?,
                readiness_context_fingerprint: t(5)?,
                target_operator_id: t(6)?,
                target_session_id: t(7)?,
                target_turn_id: t(8)?,
                target_run_id: t(9)?,
            };
            validate_graph_request(&request).map_err(|e| e.to_string())?;
            let claimed_at = claim_time(&r[10])?;
            let status = match text(&r[11])? {
                "claimed" => AdmissionStatus::Claimed,
                "executing" => AdmissionStatus::Executing,
                "cancelled" => AdmissionStatus::Cancelled,
                other => return Err(format!("admission status {other:?} is not one of claimed, executing, cancelled")),
            };
            let reason = opt_text(&r[12])?.map(str::to_owned);
            match (status, reason.as_deref()) {
                (AdmissionStatus::Cancelled, r) if r.is_none_or(|r| r.trim().is_empty()) => {
                    return Err("cancelled without a reason, which makalog requires".into())
                }
                (AdmissionStatus::Cancelled, _) => {}
                (_, Some(_)) => return Err("a cancellation reason on a claim not cancelled".into()),
                (_, None) => {}
            }
            // The status record the claims log writes must fit it: refused there, after the
            // claim, it stopped every rerun at the same place.
            if status != AdmissionStatus::Claimed {
                let change = AdmissionStatusChange {
                    graph_id: request.graph_id.clone(),
                    intent_id: request.intent_id.clone(),
                    reason: reason.clone(),
                    status,
                };
                ClaimRecord::Status(change)
                    .encode_within(makalog::format::DEFAULT_MAX_PAYLOAD)
                    .map_err(|e| format!("its admission status: {e}"))?;
            }
            Ok::<_, String>(GraphClaimPlan { request, claimed_at, status, reason })
        })();
        let plan = plan.and_then(|p| {
            let r = &p.request;
            let keys = [
                ("its graph intent", r.graph_id.clone(), r.intent_id.clone()),
                ("its claim id", r.claim_id.clone(), String::new()),
                ("its target turn", r.target_session_id.clone(), r.target_turn_id.clone()),
                ("its target run", r.target_session_id.clone(), r.target_run_id.clone()),
            ];
            if let Some((what, _, _)) = keys.iter().find(|k| held.contains(k)) {
                return Err(format!("{what} is an earlier claim's of the source"));
            }
            held.extend(keys);
            Ok(p)
        });
        match plan {
            Ok(p) => {
                report.imported(table, 1);
                out.push(p);
            }
            Err(why) => report.refused(table, key_part(&r[0]), why),
        }
    }
    Ok(out)
}
