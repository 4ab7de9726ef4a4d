//! `toolRecovery` (MAKA-MODEL §1.4): a reconcile result or a recovery decision for a tool call
//! whose outcome was unknown, as HEAD's `tool-recovery-fact.ts` checks it.

use super::super::fields::{decode_object, expect_tag, invalid, Decoded, Result};
use crate::event::path::Path;
use serde_json::Value;

/// Decodes `toolRecovery`: `{kind, version: 1, payload}`.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &["maka.tool.reconcile_result", "maka.tool.recovery_decision"],
    )?;
    decode_object(value, path, |fact| {
        fact.literal("kind", kind)?;
        fact.number_literal("version", 1)?;
        if kind == "maka.tool.reconcile_result" {
            fact.decoded("payload", decode_reconcile)
        } else {
            fact.decoded("payload", decode_decision)
        }
    })
}

fn decode_reconcile<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |r| {
        r.literal("protocol", "tool_reconcile_v1")?;
        r.nonempty("operationId")?;
        r.one_of(
            "observation",
            &[
                "matches_expected_state",
                "matches_prior_state",
                "diverged",
                "unreadable",
            ],
        )?;
        r.literal("observationSchema", "state_identity_v1")?;
        r.sha256("observationDigest")?;
        Ok(())
    })
}

fn decode_decision<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let disposition = expect_tag(value, path, "disposition", &["completed", "parked"])?;
    decode_object(value, path, |d| {
        d.literal("protocol", "tool_recovery_v1")?;
        d.nonempty("operationId")?;
        d.literal("disposition", disposition)?;
        if disposition == "completed" {
            d.literal("reasonCode", "reconcile_matches_expected_state")?;
            d.nonempty("outcomeEventId")?;
        } else {
            d.one_of(
                "reasonCode",
                &[
                    "reconcile_matches_prior_state",
                    "reconcile_diverged",
                    "reconcile_unreadable",
                ],
            )?;
        }
        d.required("evidenceEventIds", |v, p| {
            let ids = v
                .as_array()
                .ok_or_else(|| invalid(p, "expected an array"))?;
            let mut seen: Vec<&str> = Vec::new();
            for (i, id) in ids.iter().enumerate() {
                let id = id
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| invalid(&p.index(i), "expected a non-empty string"))?;
                if seen.contains(&id) {
                    return Err(invalid(&p.index(i), "repeats an earlier evidence event id"));
                }
                seen.push(id);
            }
            if seen.is_empty() {
                return Err(invalid(p, "must name at least one evidence event"));
            }
            Ok(())
        })?;
        Ok(())
    })
}
