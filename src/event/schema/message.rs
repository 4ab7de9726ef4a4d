//! Text content (MAKA-MODEL §1.2): the user-authored message shape with its attachments, quotes,
//! inline references and turn origin, and the normalizations HEAD's decode applies to it.

use super::fields::{
    array_of, decode_array, decode_object, expect_int, expect_object, expect_str, expect_tag,
    invalid, Decoded, Obj, Result,
};
use super::text::utf16_len;
use crate::event::path::Path;
use serde_json::Value;

/// At most this many inline references.
const INLINE_REFERENCE_MAX_COUNT: usize = 32;
/// Inline reference values are 1–4096 UTF-16 code units.
const INLINE_REFERENCE_VALUE_MAX: usize = 4096;
/// Inline reference labels are 1–200 UTF-16 code units.
const INLINE_REFERENCE_LABEL_MAX: usize = 200;

/// Reads text content into `content` (whose `kind` is read already).
///
/// Normalization, as HEAD's decode: `displayText` equal to `text` is dropped, empty `attachments`
/// and `quotes` are dropped, `inlineReferences` is kept even when empty, `providerOptions` is
/// checked and then dropped, and an origin of kind `automation` is read as `legacy_automation`.
pub fn read_text(content: &mut Obj) -> Result<()> {
    let text = content.string("text")?;
    let display = match content.raw("displayText") {
        None => None,
        Some(v) => Some(expect_str(v, &content.at("displayText"))?),
    };
    if let Some(display) = display.filter(|d| *d != text) {
        content.put("displayText", Value::String(display.to_string()));
    }
    if let Some(v) = content.raw("attachments") {
        let items = decode_array(v, &content.at("attachments"), decode_attachment)?;
        if !items.is_empty() {
            content.keep("attachments", array_of(v, items));
        }
    }
    if let Some(v) = content.raw("quotes") {
        let items = decode_array(v, &content.at("quotes"), decode_quote)?;
        if !items.is_empty() {
            content.keep("quotes", array_of(v, items));
        }
    }
    let shown = display.unwrap_or(text);
    content.opt_decoded("inlineReferences", |v, p| {
        decode_inline_references(v, p, shown)
    })?;
    content.opt_decoded("origin", decode_turn_origin)?;
    content.opt_true_literal("steering")?;
    if let Some(v) = content.raw("providerOptions") {
        expect_object(v, &content.at("providerOptions"))?;
    }
    Ok(())
}

/// AttachmentRef: a file-backed attachment; the bytes never travel in the event.
fn decode_attachment<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |a| {
        a.one_of("kind", &["image", "pdf", "doc", "code", "other"])?;
        a.string("name")?;
        a.string("mimeType")?;
        a.int_at_least("bytes", 0)?;
        a.decoded("ref", decode_storage_ref)
    })
}

/// StorageRef: where attachment bytes live.
pub fn decode_storage_ref<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &["session_file", "workspace_file", "external_file"],
    )?;
    decode_object(value, path, |r| {
        r.literal("kind", kind)?;
        match kind {
            "session_file" => {
                r.string("sessionId")?;
                r.string("relativePath")?;
            }
            "workspace_file" => {
                r.string("relativePath")?;
            }
            _ => {
                r.string("absolutePath")?;
            }
        }
        Ok(())
    })
}

/// QuoteRef: an inline excerpt; optional members are kept only when present.
fn decode_quote<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |q| {
        q.string("text")?;
        q.opt_string("label")?;
        q.opt_string("sourceTurnId")?;
        Ok(())
    })
}

/// The inline references, each an exact occurrence in `shown` (`displayText ?? text`), in order
/// and not overlapping.
fn decode_inline_references<'a>(value: &'a Value, path: &Path, shown: &str) -> Result<Decoded<'a>> {
    let items = decode_array(value, path, decode_inline_reference)?;
    if items.len() > INLINE_REFERENCE_MAX_COUNT {
        return Err(invalid(
            path,
            format!("at most {INLINE_REFERENCE_MAX_COUNT} inline references"),
        ));
    }
    let shown: Vec<u16> = shown.encode_utf16().collect();
    let mut previous_end = 0usize;
    for (i, item) in items.iter().enumerate() {
        let at = path.index(i);
        let start = item
            .get("start")
            .map(|s| expect_int(s, &at.key("start")))
            .transpose()?
            .unwrap_or_default();
        let value: Vec<u16> = item
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .encode_utf16()
            .collect();
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        let end = start.saturating_add(value.len());
        // JavaScript's `slice` clamps to the text, so a reference past the end never matches.
        let found = shown.get(start..end.min(shown.len())).unwrap_or_default();
        if start < previous_end || found != value.as_slice() {
            return Err(invalid(
                &at,
                "does not match the text at its start offset (UTF-16), in order",
            ));
        }
        previous_end = end;
    }
    Ok(array_of(value, items))
}

fn decode_inline_reference<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |r| {
        let kind = r.one_of("kind", &["skill", "workspace_file"])?;
        let token = r.string("value")?;
        let label = r.string("label")?;
        r.int_at_least("start", 0)?;
        if !(1..=INLINE_REFERENCE_VALUE_MAX).contains(&utf16_len(token)) {
            return Err(invalid(
                &r.at("value"),
                "must be 1 to 4096 UTF-16 code units",
            ));
        }
        if !(1..=INLINE_REFERENCE_LABEL_MAX).contains(&utf16_len(label)) {
            return Err(invalid(
                &r.at("label"),
                "must be 1 to 200 UTF-16 code units",
            ));
        }
        let well_formed = if kind == "skill" {
            is_skill_token(token)
        } else {
            token
                .strip_prefix('@')
                .is_some_and(is_canonical_relative_path)
        };
        if !well_formed {
            return Err(invalid(
                &r.at("value"),
                "a skill is /skill:<name>, a workspace file @<canonical relative path>",
            ));
        }
        Ok(())
    })
}

/// `^/skill:[A-Za-z0-9._-]+$`.
fn is_skill_token(token: &str) -> bool {
    token.strip_prefix("/skill:").is_some_and(|name| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    })
}

/// A relative path with no empty, `.` or `..` segment, no backslash, NUL or drive letter.
pub fn is_canonical_relative_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    !path.is_empty()
        && !path.contains('\0')
        && !path.contains('\\')
        && !path.starts_with('/')
        && !drive
        && path
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

/// TurnOrigin: why a host authored a user turn. Released rows of kind `automation` are read as
/// `legacy_automation`, as HEAD's `decodeTurnOrigin` does.
fn decode_turn_origin<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &[
            "scheduled_task",
            "automation",
            "legacy_automation",
            "goal",
            "agent_graph",
        ],
    )?;
    decode_object(value, path, |o| {
        o.raw("kind");
        o.put(
            "kind",
            Value::String(if kind == "automation" {
                "legacy_automation".to_string()
            } else {
                kind.to_string()
            }),
        );
        match kind {
            "scheduled_task" => {
                o.string("scheduledTaskId")?;
            }
            "automation" | "legacy_automation" => {
                o.string("automationId")?;
            }
            "goal" => {
                o.string("goalId")?;
            }
            _ => {
                o.string("graphId")?;
                o.string("wakeId")?;
                o.string("attemptId")?;
            }
        }
        Ok(())
    })
}
