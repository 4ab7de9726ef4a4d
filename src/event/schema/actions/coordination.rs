//! `coordination` (\[SPINE\] WorkHubActionReceipt): the host's receipt for a coordination action
//! linked to this run.

use super::super::fields::{decode_object, expect_tag, invalid, Decoded, Obj, Result};
use super::super::text::{is_token, js_trims_to_empty};
use crate::event::path::Path;
use serde_json::Value;

/// Decodes `coordination`.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |receipt| {
        receipt.nonempty("actionId")?;
        let text = receipt.string("userText")?;
        if js_trims_to_empty(text) {
            return Err(invalid(&receipt.at("userText"), "must not be blank"));
        }
        receipt.decoded("result", decode_result)?;
        receipt.opt_string("clarification")?;
        Ok(())
    })
}

/// WorkHubActionResult, tagged by `disposition`.
fn decode_result<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let disposition = expect_tag(
        value,
        path,
        "disposition",
        &[
            "answer_here",
            "clarify",
            "delegate_existing",
            "create_new",
            "replace",
            "stop_work",
            "resume_work",
        ],
    )?;
    decode_object(value, path, |r| {
        r.literal("disposition", disposition)?;
        match disposition {
            "answer_here" | "clarify" => token(r, "coordinationTurnId"),
            "delegate_existing" | "create_new" | "replace" => {
                token(r, "targetSessionId")?;
                token(r, "targetTurnId")?;
                r.opt_true_literal("steered")?;
                if disposition == "replace" {
                    r.one_of(
                        "replacementDisposition",
                        &["delegate_existing", "create_new"],
                    )?;
                }
                Ok(())
            }
            _ => read_stop_or_resume(r, disposition),
        }
    })
}

fn read_stop_or_resume(r: &mut Obj, disposition: &str) -> Result<()> {
    let outcome = if disposition == "stop_work" {
        r.one_of(
            "outcome",
            &[
                "cancelled_pending",
                "stop_delivered",
                "already_terminal",
                "not_owned",
            ],
        )?
    } else {
        r.one_of("outcome", &["resume_started", "already_running"])?
    };
    token(r, "targetSessionId")?;
    let has_turn = r.raw("targetTurnId").is_some();
    if has_turn {
        token(r, "targetTurnId")?;
    }
    let consistent = match outcome {
        "stop_delivered" | "not_owned" => has_turn,
        "cancelled_pending" => !has_turn,
        "resume_started" => has_turn,
        "already_running" => !has_turn,
        _ => true,
    };
    if !consistent {
        return Err(invalid(
            &r.at("targetTurnId"),
            format!("does not fit outcome {outcome:?}"),
        ));
    }
    Ok(())
}

/// A member matching `[A-Za-z0-9_-]{1,128}`.
fn token(r: &mut Obj, key: &'static str) -> Result<()> {
    let id = r.string(key)?;
    if !is_token(id, 128) {
        return Err(invalid(&r.at(key), "must match [A-Za-z0-9_-]{1,128}"));
    }
    Ok(())
}
