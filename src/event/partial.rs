//! A turn's partial text (and thinking) events, each the one before with another id, time and
//! text: what the runtime writes a turn's coalesced deltas as, a dozen or more a turn. The
//! strict path (normalize, decode, canonical text) is taken once, for the first; the rest
//! change only members whose rules are simple enough to check here, and go through the strict
//! path when a check does not hold, so the verdict and the bytes are always the strict path's.

use super::number::{from_f64, safe_integer};
use super::{canonical_string_sized, EventError, RuntimeEvent};
use serde_json::Value;

impl RuntimeEvent {
    /// This partial text (or thinking) event with `id`, `ts` and `text` in place of its own: the event
    /// [`RuntimeEvent::from_value`] makes of that value, or its refusal. Takes the event, whose
    /// value becomes the new one's: a stream keeps only its last partial.
    pub fn with_partial_text(
        self,
        id: &str,
        ts: f64,
        text: &str,
    ) -> Result<RuntimeEvent, EventError> {
        let takes = self.takes_partial_text() && !id.is_empty();
        let size = self.canonical.len() + text.len();
        let number = from_f64(ts);
        // A safe integer prints as it reads; another number needs the strict path's re-parse.
        let exact = number.as_ref().and_then(safe_integer).is_some();
        let mut value = self.value;
        if let Value::Object(event) = &mut value {
            event.insert("id".into(), Value::String(id.to_owned()));
            event.insert("ts".into(), number.map_or(Value::Null, Value::Number));
            if let Some(Value::Object(content)) = event.get_mut("content") {
                content.insert("text".into(), Value::String(text.to_owned()));
            }
        }
        if !(takes && exact) {
            return RuntimeEvent::from_value(value);
        }
        let canonical = canonical_string_sized(&value, size);
        let event = RuntimeEvent { value, canonical };
        debug_assert_eq!(
            RuntimeEvent::from_value(event.value.clone()).as_ref(),
            Ok(&event),
            "a derived partial text event is the strict path's"
        );
        Ok(event)
    }

    /// Whether a new id, time and text leave this event valid with no other change: a partial
    /// event whose content is a text (or a thinking) and nothing else (a `displayText` equal to the text is
    /// dropped, attachments are checked) and with no actions (a hand-off seal is checked
    /// against the content). The members that stay were decoded when this event was made.
    fn takes_partial_text(&self) -> bool {
        let content = self.value.get("content").and_then(Value::as_object);
        self.partial()
            && self.value.get("actions").is_none()
            && content.is_some_and(|c| {
                c.len() == 2
                    && c.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| k == "text" || k == "thinking")
                    && c.get("text").is_some_and(Value::is_string)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn first() -> RuntimeEvent {
        RuntimeEvent::from_value(json!({
            "author": "agent", "content": {"kind": "text", "text": "Fake backe"},
            "id": "e1", "invocationId": "r", "partial": true,
            "refs": {"providerEventId": "m"}, "role": "model", "runId": "r",
            "sessionId": "s", "ts": 1_700_000_000_000u64, "turnId": "t"
        }))
        .expect("first")
    }

    /// What the strict path makes of `event` with `id`, `ts` and `text` in place.
    fn strict(
        event: &RuntimeEvent,
        id: &str,
        ts: f64,
        text: &str,
    ) -> Result<RuntimeEvent, EventError> {
        let mut v = event.value().clone();
        v["id"] = json!(id);
        v["ts"] = json!(ts);
        v["content"]["text"] = json!(text);
        RuntimeEvent::from_value(v)
    }

    #[test]
    fn a_derived_event_is_the_strict_paths_byte_for_byte() {
        let e = first();
        let next = e
            .clone()
            .with_partial_text("e2", 1_700_000_000_045.0, "d received: \"x\"\n")
            .expect("next");
        assert_eq!(
            next.canonical_json(),
            strict(&e, "e2", 1_700_000_000_045.0, "d received: \"x\"\n")
                .expect("strict")
                .canonical_json()
        );
        assert_eq!(next.id(), "e2");
        assert!(next.partial());
    }

    #[test]
    fn what_the_strict_path_refuses_or_rewrites_is_left_to_it() {
        let e = first();
        // An empty id and a time that is no number are refused as the strict path refuses them.
        assert_eq!(
            e.clone().with_partial_text("", 5.0, "x"),
            strict(&e, "", 5.0, "x")
        );
        assert!(e.clone().with_partial_text("", 5.0, "x").is_err());
        assert_eq!(
            e.clone().with_partial_text("e", f64::NAN, "x"),
            strict(&e, "e", f64::NAN, "x")
        );
        assert!(e
            .clone()
            .with_partial_text("e", f64::INFINITY, "x")
            .is_err());
        // A fractional time and one past 2^53 take the re-parse: the same answer.
        for ts in [0.5, -0.0, 1e300, 9_007_199_254_740_993.0] {
            assert_eq!(
                e.clone().with_partial_text("e", ts, "x"),
                strict(&e, "e", ts, "x"),
                "{ts}"
            );
        }
        // A content with more than its text is rewritten by the strict path.
        let shown = RuntimeEvent::from_value(json!({
            "author": "agent", "content": {"kind": "text", "text": "a", "displayText": "b"},
            "id": "e1", "invocationId": "r", "partial": true, "role": "model", "runId": "r",
            "sessionId": "s", "ts": 1, "turnId": "t"
        }))
        .expect("shown");
        assert!(!shown.takes_partial_text());
        assert_eq!(
            shown.clone().with_partial_text("e", 2.0, "b"),
            strict(&shown, "e", 2.0, "b")
        );
        assert!(!first()
            .with_partial_text("e", 2.0, "b")
            .expect("e")
            .canonical_json()
            .contains("displayText"));
    }

    /// Events to derive from: the runtime's partial, and others the guard must send to the
    /// strict path or may take (every one accepted by it).
    fn templates() -> Vec<RuntimeEvent> {
        let base = first().value().clone();
        let with = |f: &dyn Fn(&mut Value)| {
            let mut v = base.clone();
            f(&mut v);
            RuntimeEvent::from_value(v).expect("a valid template")
        };
        vec![
            first(),
            with(&|v| v["partial"] = json!(false)),
            with(&|v| v["status"] = json!("streaming")),
            with(&|v| v["status"] = json!("completed")),
            with(&|v| v["branch"] = json!("b")),
            with(&|v| v["origin"] = json!("provider")),
            with(&|v| v["modelVisibility"] = json!("hidden")),
            with(&|v| v["refs"]["toolCallId"] = json!("c")),
            with(&|v| v["refs"]["sourceRuntimeEventHighWater"] = json!(7)),
            with(&|v| v["content"]["displayText"] = json!("shown")),
            with(&|v| v["content"]["displayText"] = json!("Fake backe")),
            with(&|v| v["actions"] = json!({"endInvocation": true})),
            with(&|v| v["content"] = json!({"kind": "thinking", "text": "hm"})),
            with(&|v| v["content"] = json!({"kind": "thinking", "text": "hm", "signature": "s"})),
        ]
    }

    proptest! {
        #[test]
        fn any_template_id_time_and_text_get_the_strict_paths_answer(
            which in 0usize..14,
            id in ".{0,12}",
            ts in prop_oneof![
                any::<f64>(),
                (0u64..1u64 << 60).prop_map(|n| n as f64),
                Just(f64::NAN),
            ],
            text in "\\PC{0,40}|[\\x00-\\x1f\"\\\\]{0,8}|Fake backe|shown",
        ) {
            let all = templates();
            let e = &all[which % all.len()];
            prop_assert_eq!(e.clone().with_partial_text(&id, ts, &text), strict(e, &id, ts, &text));
        }
    }
}
