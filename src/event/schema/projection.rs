//! `modelProjection` of a function response (\[SPINE\] DurableToolResultProjection): the frozen,
//! provider-neutral content every model-history projection replays.

use super::fields::{array_of, decode_array, decode_object, expect_tag, invalid, Decoded, Result};
use super::message::decode_storage_ref;
use super::text::is_token;
use crate::event::canonical::canonical_string;
use crate::event::path::Path;
use serde_json::Value;

/// The serialized projection is at most 16 MiB.
const MAX_BYTES: usize = 16 * 1024 * 1024;
/// A content projection has 1 to 64 parts.
const MAX_PARTS: usize = 64;
/// A JSON projection nests at most 32 levels …
const MAX_JSON_DEPTH: usize = 32;
/// … and holds at most 20 000 values.
const MAX_JSON_NODES: usize = 20_000;
/// The one message a failed projection carries.
const FAILURE_MESSAGE: &str =
    "The tool completed, but its model-visible result could not be projected safely.";
/// The image types a model-facing artifact part may have.
const IMAGE_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/avif",
];
/// Context-offload ids are at most 512 code points.
const CONTEXT_REF_MAX_CODE_POINTS: usize = 512;

/// Decodes a projection; artifact parts must belong to the event's session.
pub fn decode<'a>(value: &'a Value, path: &Path, session_id: &str) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &["text", "json", "content", "execution_denied", "failure"],
    )?;
    let decoded = decode_object(value, path, |p| {
        p.literal("kind", kind)?;
        p.number_literal("version", 1)?;
        match kind {
            "text" => {
                p.string("text")?;
                p.opt_true_literal("isError")?;
            }
            "json" => {
                let json = p.any("value")?;
                let mut nodes = 0;
                if !bounded_json(json, 0, &mut nodes) {
                    return Err(invalid(
                        &p.at("value"),
                        "deeper than 32 levels or more than 20000 values",
                    ));
                }
                p.opt_true_literal("isError")?;
            }
            "content" => {
                let parts_value = p.raw_required("parts")?;
                let at = p.at("parts");
                let parts = decode_array(parts_value, &at, |v, pp| decode_part(v, pp, session_id))?;
                if parts.is_empty() || parts.len() > MAX_PARTS {
                    return Err(invalid(&at, "must hold 1 to 64 parts"));
                }
                p.keep("parts", array_of(parts_value, parts));
            }
            "execution_denied" => {
                p.opt_string("reason")?;
            }
            _ => {
                p.literal("reason", "projection_failed")?;
                p.literal("message", FAILURE_MESSAGE)?;
            }
        }
        Ok(())
    })?;
    if canonical_string(&decoded).len() > MAX_BYTES {
        return Err(invalid(path, "serializes to more than 16 MiB"));
    }
    Ok(decoded)
}

fn decode_part<'a>(value: &'a Value, path: &Path, session_id: &str) -> Result<Decoded<'a>> {
    let kind = expect_tag(value, path, "kind", &["text", "artifact"])?;
    decode_object(value, path, |part| {
        part.literal("kind", kind)?;
        if kind == "text" {
            part.string("text")?;
            return Ok(());
        }
        part.one_of("mediaType", IMAGE_TYPES)?;
        part.decoded("ref", |v, p| decode_artifact_ref(v, p, session_id))
    })
}

/// An artifact part names a `session_context` or `session_file` ref owned by this session.
fn decode_artifact_ref<'a>(value: &'a Value, path: &Path, session_id: &str) -> Result<Decoded<'a>> {
    let kind = expect_tag(value, path, "kind", &["session_context", "session_file"])?;
    let decoded = if kind == "session_file" {
        let decoded = decode_storage_ref(value, path)?;
        let relative = decoded
            .get("relativePath")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !is_token(relative, 128) {
            return Err(invalid(
                &path.key("relativePath"),
                "must be an artifact id ([A-Za-z0-9_-]{1,128})",
            ));
        }
        decoded
    } else {
        decode_object(value, path, |r| {
            r.literal("kind", "session_context")?;
            r.string("sessionId")?;
            let id = r.string("refId")?;
            let code_points = id.chars().count();
            if code_points == 0 || code_points > CONTEXT_REF_MAX_CODE_POINTS {
                return Err(invalid(&r.at("refId"), "must be 1 to 512 code points"));
            }
            Ok(())
        })?
    };
    let owner = decoded
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !is_token(owner, 128) {
        return Err(invalid(
            &path.key("sessionId"),
            "must be a session id ([A-Za-z0-9_-]{1,128})",
        ));
    }
    if owner != session_id {
        return Err(invalid(
            &path.key("sessionId"),
            "an artifact part must belong to the event's session",
        ));
    }
    Ok(decoded)
}

/// The projection's JSON value is within the depth and node limits.
fn bounded_json(value: &Value, depth: usize, nodes: &mut usize) -> bool {
    *nodes += 1;
    if *nodes > MAX_JSON_NODES || depth > MAX_JSON_DEPTH {
        return false;
    }
    match value {
        Value::Array(items) => items.iter().all(|v| bounded_json(v, depth + 1, nodes)),
        Value::Object(map) => map.values().all(|v| bounded_json(v, depth + 1, nodes)),
        _ => true,
    }
}
