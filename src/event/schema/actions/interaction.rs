//! The interaction facts of `actions`: a permission decision, the accepted-answer and closure
//! audit facts, and a user question request.

use super::super::fields::{array_of, decode_array, decode_object, invalid, Decoded, Obj, Result};
use crate::event::path::Path;
use serde_json::Value;

/// Interaction request ids are at most 256 UTF-8 bytes.
pub const ID_MAX_BYTES: usize = 256;
/// Tool names in a decision are at most 256 UTF-8 bytes.
const TOOL_NAME_MAX_BYTES: usize = 256;

/// `permissionDecision`: a resolved allow or deny for an earlier request.
pub fn decode_decision<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |d| {
        d.string("requestId")?;
        d.one_of("decision", &["allow", "deny"])?;
        d.opt_boolean("rememberForTurn")?;
        d.opt_one_of("reviewer", &["user", "auto_review"])?;
        d.opt_string("rationale")?;
        d.opt_one_of("riskLevel", &["low", "medium", "high", "critical"])?;
        if let Some(name) = d.opt_string("toolName")? {
            if name.is_empty() || name.len() > TOOL_NAME_MAX_BYTES {
                return Err(invalid(&d.at("toolName"), "must be 1 to 256 UTF-8 bytes"));
            }
        }
        d.opt_string("hint")?;
        Ok(())
    })
}

/// `{requestId}` of an accepted permission, question or form answer.
pub fn decode_accepted<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |a| request_id(a))
}

/// `permissionClosureAccepted`: an unanswered hosted permission request was durably closed.
pub fn decode_closure<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |c| {
        request_id(c)?;
        c.literal("reason", "timed_out")
    })
}

/// A `requestId` of 1 to 256 UTF-8 bytes.
pub fn request_id(obj: &mut Obj) -> Result<()> {
    let id = obj.string("requestId")?;
    if id.is_empty() || id.len() > ID_MAX_BYTES {
        return Err(invalid(
            &obj.at("requestId"),
            "must be 1 to 256 UTF-8 bytes",
        ));
    }
    Ok(())
}

/// `userQuestionRequest`: a bounded in-turn question raised by a tool call.
pub fn decode_question<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |q| {
        q.string("requestId")?;
        q.string("toolUseId")?;
        q.decoded("questions", |v, p| {
            decode_array(v, p, |question, qp| {
                decode_object(question, qp, |one| {
                    one.string("question")?;
                    one.decoded("options", |v, p| {
                        decode_array(v, p, |option, op| {
                            decode_object(option, op, |o| {
                                o.string("label")?;
                                o.opt_string("description")?;
                                Ok(())
                            })
                        })
                        .map(|items| array_of(v, items))
                    })
                })
            })
            .map(|items| array_of(v, items))
        })
    })
}
