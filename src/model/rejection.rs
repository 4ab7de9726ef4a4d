//! Root-turn start rejections (MAKA-MODEL §8): the record that a root turn was refused before
//! it started (its external message asked only for Skills that failed to load). A rejected
//! turn is never admitted, and an admitted one is never rejected.

use super::admission::read_descriptor;
use super::fields::{object, safe_id};
use crate::event::path::Path;
use crate::event::schema::fields::Decoded;
use crate::event::schema::fields::Result as FieldResult;
use crate::event::schema::fields::{decode_object, expect_array, invalid, Obj};
use serde_json::Value;

const RECORD: &str = "root-turn start rejection";

record_type!(
    /// A decoded root-turn start rejection with its canonical JSON.
    RootTurnRejection,
    RECORD,
    decode
);

impl RootTurnRejection {
    /// The rejected turn.
    pub fn turn_id(&self) -> &str {
        self.0.value["turnId"].as_str().unwrap_or_default()
    }

    /// The session of the rejected turn.
    pub fn session_id(&self) -> &str {
        self.0.value["sessionId"].as_str().unwrap_or_default()
    }

    /// True when `other`, for the same turn, is the same rejection: an equal execution
    /// descriptor and Skill invocation result. Then the stored record answers (`existing`);
    /// otherwise the repeat is a conflict.
    pub fn same_rejection(&self, other: &RootTurnRejection) -> bool {
        let (a, b) = (&self.0.value, &other.0.value);
        a["execution"] == b["execution"] && a["skillInvocation"] == b["skillInvocation"]
    }
}

fn decode(value: &Value) -> FieldResult<Decoded<'_>> {
    decode_object(value, &Path::root(), read_rejection)
}

fn read_rejection(r: &mut Obj) -> FieldResult<()> {
    r.number_literal("schemaVersion", 1)?;
    for key in ["sessionId", "turnId"] {
        r.required(key, safe_id)?;
    }
    let ids = [
        r.input()["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        r.input()["turnId"].as_str().unwrap_or_default().to_owned(),
        String::new(),
    ];
    let kind = r
        .raw_required("execution")?
        .get("kind")
        .and_then(Value::as_str);
    if kind != Some("external_message") {
        return Err(invalid(
            &r.at("execution").key("kind"),
            "a rejected turn's execution is external_message",
        ));
    }
    r.object("execution", |e| read_descriptor(e, &ids))?;
    r.required("skillInvocation", |v, p| {
        object(v, p)?;
        let loaded = v.get("loaded").map(|l| expect_array(l, &p.key("loaded")));
        if !matches!(loaded, Some(Ok(l)) if l.is_empty()) {
            return Err(invalid(
                &p.key("loaded"),
                "must be an empty array: no Skill loaded",
            ));
        }
        let failed = v.get("failed").map(|f| expect_array(f, &p.key("failed")));
        if !matches!(failed, Some(Ok(f)) if !f.is_empty()) {
            return Err(invalid(
                &p.key("failed"),
                "must be a non-empty array: the Skills that failed",
            ));
        }
        Ok(())
    })?;
    r.int_at_least("rejectedAt", 0)?;
    Ok(())
}
