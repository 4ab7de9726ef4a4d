//! `actions` (MAKA-MODEL §1.4): control and side-effect intent carried beside the content.

mod additional;
mod budget;
mod continuation;
mod coordination;
mod dispatch;
mod form;
mod handoff;
mod interaction;
mod permission;
mod recovery;
pub(crate) mod usage;
mod workspace;

pub use handoff::check_handoff_seal;

use super::fields::{decode_object, expect_object, invalid, Decoded, Result};
use crate::event::path::Path;
use serde_json::Value;

/// Decodes `actions`; `{}` is valid.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let input = expect_object(value, path)?;
    if input.contains_key("permissionClosureAccepted") && input.len() > 1 {
        return Err(invalid(
            &path.key("permissionClosureAccepted"),
            "must be the only key in actions",
        ));
    }
    decode_object(value, path, |actions| {
        actions.opt_decoded("handoffPause", handoff::decode_pause)?;
        actions.opt_decoded("coordination", coordination::decode)?;
        // stateDelta is a free-form patch, but an object, never an array.
        actions.opt_record("stateDelta")?;
        actions.optional("artifactDelta", check_artifact_delta)?;
        actions.opt_decoded("permissionRequest", permission::decode)?;
        actions.opt_decoded("permissionDecision", interaction::decode_decision)?;
        actions.opt_decoded("permissionAnswerAccepted", interaction::decode_accepted)?;
        actions.opt_decoded("permissionClosureAccepted", interaction::decode_closure)?;
        actions.opt_decoded("userQuestionRequest", interaction::decode_question)?;
        actions.opt_decoded("userQuestionAnswerAccepted", interaction::decode_accepted)?;
        actions.opt_decoded("formRequest", form::decode)?;
        actions.opt_decoded("formAnswerAccepted", interaction::decode_accepted)?;
        actions.opt_string("transferToAgent")?;
        actions.opt_boolean("endInvocation")?;
        actions.opt_decoded("tokenUsage", usage::decode)?;
        actions.opt_decoded("toolDispatch", dispatch::decode_dispatch)?;
        actions.opt_decoded("toolRecovery", recovery::decode)?;
        actions.opt_object("runtimeProtocol", |marker| {
            marker.literal("toolBoundary", dispatch::TOOL_BOUNDARY_PROTOCOL)
        })?;
        actions.opt_decoded("continuationStart", continuation::decode)?;
        actions.opt_decoded("workspaceFact", workspace::decode)?;
        actions.opt_decoded("managedMutationTerminal", dispatch::decode_terminal)?;
        Ok(())
    })
}

/// `artifactDelta`: artifact key → string, boolean or finite number.
fn check_artifact_delta(value: &Value, path: &Path) -> Result<()> {
    for (key, item) in expect_object(value, path)? {
        if !matches!(item, Value::String(_) | Value::Bool(_) | Value::Number(_)) {
            return Err(invalid(
                &path.key(key),
                "expected a string, boolean or finite number",
            ));
        }
    }
    Ok(())
}
