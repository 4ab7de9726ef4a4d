//! `tokenUsage` (MAKA-MODEL §1.4): the token accounting of the model call an event summarizes,
//! as HEAD's `usage-record-schema.ts` (`isTokenUsageFields`) checks it.

use super::super::fields::{array_of, decode_array, decode_object, Decoded, Obj, Result};
use super::budget;
use crate::event::path::Path;
use serde_json::Value;

/// Optional finite numbers.
const NUMBERS: &[&str] = &[
    "cacheHitInput",
    "cacheMissInput",
    "cacheWriteInput",
    "reasoning",
    "total",
    "runtimeSteps",
    "cacheRead",
    "cacheCreation",
    "costUsd",
    "contextRemaining",
];

/// Optional strings.
const STRINGS: &[&str] = &[
    "rawFinishReason",
    "systemPromptHash",
    "prefixHash",
    "requestShapeHash",
    "providerRequestTraceId",
];

/// Why the prompt prefix or request shape changed since the last call.
const CHANGE_REASONS: &[&str] = &[
    "first_turn",
    "system_prompt_changed",
    "tool_schema_changed",
    "provider_options_changed",
    "model_or_provider_changed",
    "history_projection_changed",
    "stable",
    "unknown",
];

/// Decodes `tokenUsage`.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, read_fields)
}

/// Reads the token-usage fields into `usage` (a `tokenUsage` object, or a stored `token_usage`
/// message, which carries them beside its own).
pub(crate) fn read_fields(usage: &mut Obj) -> Result<()> {
    {
        usage.number("input")?;
        usage.number("output")?;
        for &key in NUMBERS {
            usage.opt_number(key)?;
        }
        for &key in STRINGS {
            usage.opt_string(key)?;
        }
        usage.opt_one_of("cacheMissInputSource", &["explicit", "derived"])?;
        usage.opt_one_of("prefixChangeReason", CHANGE_REASONS)?;
        usage.opt_one_of("requestShapeChangeReason", CHANGE_REASONS)?;
        usage.opt_decoded("promptSegments", |v, p| {
            decode_array(v, p, |segment, sp| decode_object(segment, sp, read_segment))
                .map(|items| array_of(v, items))
        })?;
        usage.opt_decoded("contextBudget", budget::decode)?;
        usage.opt_object("lastRequestAnchor", read_anchor)?;
        Ok(())
    }
}

/// PromptSegmentEstimate: the estimated size of one part of the prompt.
fn read_segment(segment: &mut Obj) -> Result<()> {
    segment.one_of(
        "kind",
        &[
            "system_prompt",
            "tool_schema",
            "prior_history",
            "current_user",
            "turn_tail",
        ],
    )?;
    segment.number("chars")?;
    segment.number("estimatedTokens")?;
    segment.opt_number("messageCount")?;
    segment.opt_number("eventCount")?;
    segment.opt_number("toolCount")?;
    Ok(())
}

/// `lastRequestAnchor` (\[SPINE\]): the last provider request's real input and output tokens.
/// `payloadChars` is the retired 0.2.0 key, still accepted.
fn read_anchor(anchor: &mut Obj) -> Result<()> {
    let input = anchor.number("inputTokens")?;
    if input <= 0.0 {
        return Err(super::super::fields::invalid(
            &anchor.at("inputTokens"),
            "must be greater than 0",
        ));
    }
    if let Some(output) = anchor.opt_number("outputTokens")? {
        if output < 0.0 {
            return Err(super::super::fields::invalid(
                &anchor.at("outputTokens"),
                "must not be negative",
            ));
        }
    }
    anchor.opt_string("modelId")?;
    anchor.opt_string("connectionId")?;
    anchor.opt_number("payloadChars")?;
    Ok(())
}
