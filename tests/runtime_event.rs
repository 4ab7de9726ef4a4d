//! The canonical RuntimeEvent (MAKA-MODEL §1–§3): the canonical JSON vectors, number and string
//! formatting, key order, the derived kind and terminal rules, and canonical encoding as a
//! fixed point. The original's corpus: `runtime_event_corpus.rs`; the decoder's other rules:
//! `runtime_event_decode.rs`.

mod support;

use makalog::event::{canonical_string, format_number, RuntimeEvent};
use proptest::prelude::*;
use serde_json::{json, Value};
use support::events::{minimal, VECTORS};

// ---------------------------------------------------------------------------------------------
// The canonical vectors of MAKA-MODEL §2, byte for byte.

#[test]
fn the_four_canonical_vectors_encode_byte_for_byte() {
    for vector in VECTORS {
        let event = RuntimeEvent::decode(vector).expect(vector);
        assert_eq!(event.canonical_json(), vector);
    }
}

#[test]
fn a_vector_reordered_and_spaced_still_encodes_to_the_vector() {
    let mut value: Value = serde_json::from_str(VECTORS[0]).expect("vector");
    let pretty = serde_json::to_string_pretty(&value).expect("pretty");
    assert_eq!(
        RuntimeEvent::decode(&pretty)
            .expect("pretty")
            .canonical_json(),
        VECTORS[0]
    );
    value["ts"] = json!(1000.0);
    let event = RuntimeEvent::from_value(value).expect("value");
    assert_eq!(event.canonical_json(), VECTORS[0]);
}

// ---------------------------------------------------------------------------------------------
// Numbers and strings as JavaScript prints them.

#[test]
fn numbers_print_as_javascript_prints_them() {
    let cases: [(f64, &str); 19] = [
        (1.0, "1"),
        (-0.0, "0"),
        (0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (0.1, "0.1"),
        (0.1 + 0.2, "0.30000000000000004"),
        (123456789012345680000.0, "123456789012345680000"),
        (1.5, "1.5"),
        (-1.5e-10, "-1.5e-10"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (9007199254740993.0, "9007199254740992"),
        (1800000000002.0, "1800000000002"),
        (123.456, "123.456"),
        (2.5e21, "2.5e+21"),
        (-1e-7, "-1e-7"),
    ];
    for (x, text) in cases {
        assert_eq!(format_number(x).as_deref(), Some(text), "{x:e}");
    }
    assert_eq!(format_number(f64::NAN), None);
    assert_eq!(format_number(f64::INFINITY), None);
}

#[test]
fn number_literals_in_events_take_their_javascript_form() {
    let event = RuntimeEvent::decode(&minimal(
        r#","actions":{"stateDelta":{"a":1.0,"b":-0,"c":1E21,"d":0.0000001,"e":1e-6,"f":12.50}}"#,
    ))
    .expect("decode");
    assert!(event
        .canonical_json()
        .contains(r#""stateDelta":{"a":1,"b":0,"c":1e+21,"d":1e-7,"e":0.000001,"f":12.5}"#));
    assert_eq!(event.value()["actions"]["stateDelta"]["a"], json!(1));
}

#[test]
fn strings_are_escaped_as_json_stringify_escapes_them() {
    let value = json!("q\" b\\ \u{8}\u{c}\n\r\t \u{0}\u{1f}\u{7f} / é 😀 \u{2028}");
    assert_eq!(
        canonical_string(&value),
        "\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0000\\u001f\u{7f} / é 😀 \u{2028}\""
    );
    let event = RuntimeEvent::decode(&minimal(
        r#","content":{"kind":"text","text":"a\u0001\/b\u00e9\ud83d\ude00"}"#,
    ))
    .expect("decode");
    assert!(event
        .canonical_json()
        .contains("\"text\":\"a\\u0001/bé😀\""));
}

// ---------------------------------------------------------------------------------------------
// Key order.

#[test]
fn keys_sort_by_utf16_code_units_at_every_depth() {
    // UTF-16 puts the surrogate pair of 😀 (0xD83D) before U+FF61; UTF-8 byte order would not.
    let value = json!({"z": 1, "\u{ff61}": 2, "😀": 3, "é": 4, "A": 5, "a": {"y": 1, "b": 2}});
    assert_eq!(
        canonical_string(&value),
        "{\"A\":5,\"a\":{\"b\":2,\"y\":1},\"z\":1,\"é\":4,\"😀\":3,\"\u{ff61}\":2}"
    );
    let event = RuntimeEvent::decode(&minimal(
        r#","actions":{"stateDelta":{"z":1,"｡":2,"😀":3,"é":4}}"#,
    ))
    .expect("decode");
    assert!(event
        .canonical_json()
        .contains(r#""stateDelta":{"z":1,"é":4,"😀":3,"｡":2}"#));
}

// ---------------------------------------------------------------------------------------------
// Derived rules (MAKA-MODEL §1.1 and §3).

#[test]
fn event_kind_is_the_first_of_content_kind_status_fact_dispatch_end_else_runtime_fact() {
    let kind = |extra: &str| {
        RuntimeEvent::decode(&minimal(extra))
            .expect(extra)
            .event_kind()
            .to_string()
    };
    assert_eq!(kind(""), "runtime_fact");
    assert_eq!(
        kind(r#","actions":{"endInvocation":false}"#),
        "runtime_fact"
    );
    assert_eq!(
        kind(r#","actions":{"endInvocation":true}"#),
        "invocation_end"
    );
    let dispatch = r#"{"protocol":"t1_after_preflight_v1","operationId":"o","providerToolCallId":"p","toolName":"Bash","canonicalArgsHash":"h","recoveryMode":"idempotent"}"#;
    assert_eq!(
        kind(&format!(
            r#","actions":{{"endInvocation":true,"toolDispatch":{dispatch}}}"#
        )),
        "tool_dispatch"
    );
    assert_eq!(
        kind(&format!(
            r#","status":"streaming","actions":{{"toolDispatch":{dispatch}}}"#
        )),
        "streaming"
    );
    // A failed terminal with error content is an `error` event.
    assert_eq!(
        kind(r#","status":"failed","content":{"kind":"error","message":"m"}"#),
        "error"
    );
}

#[test]
fn terminal_means_a_terminal_status_or_end_invocation_true() {
    let terminal = |extra: &str| {
        RuntimeEvent::decode(&minimal(extra))
            .expect(extra)
            .is_terminal()
    };
    for status in ["completed", "failed", "aborted", "cancelled"] {
        assert!(terminal(&format!(r#","status":"{status}""#)), "{status}");
    }
    assert!(!terminal(r#","status":"streaming""#));
    assert!(!terminal(""));
    assert!(terminal(r#","actions":{"endInvocation":true}"#));
    assert!(!terminal(r#","actions":{"endInvocation":false}"#));
}

#[test]
fn accessors_read_the_envelope_and_the_opening() {
    let event = RuntimeEvent::decode(VECTORS[3]).expect("opening");
    assert_eq!(event.id(), "invocation_opened:run-1");
    assert_eq!(event.invocation_id(), "run-1");
    assert_eq!(event.run_id(), "run-1");
    assert_eq!(event.session_id(), "session-1");
    assert_eq!(event.turn_id(), "turn-1");
    assert_eq!(event.ts(), 1.0);
    assert!(!event.partial());
    assert_eq!(event.status(), None);
    assert_eq!(event.content_kind(), Some("invocation_opened"));
    let opening = event.opening().expect("an opening");
    assert_eq!(opening["source"]["kind"], "fresh");
    let other = RuntimeEvent::decode(VECTORS[0]).expect("terminal");
    assert_eq!(other.opening(), None);
    assert_eq!(other.status(), Some("failed"));
    assert_eq!(other.ts(), 1000.0);
}

// ---------------------------------------------------------------------------------------------
// Canonical encoding is a fixed point for generated valid events.

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        any::<i64>().prop_map(|i| json!(i % 9_007_199_254_740_991)),
        any::<String>().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn content() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(prop_oneof![
        (any::<String>(), prop::option::of(any::<String>())).prop_map(|(text, display)| {
            let mut c = json!({"kind": "text", "text": text});
            if let Some(d) = display {
                c["displayText"] = json!(d);
            }
            c
        }),
        (any::<String>(), json_value()).prop_map(|(name, args)| {
            json!({"kind": "function_call", "id": "call", "name": name, "args": args})
        }),
        (any::<String>(), json_value()).prop_map(|(message, details)| {
            let mut c = json!({"kind": "error", "message": message});
            if details.is_object() {
                c["details"] = details;
            }
            c
        }),
    ])
}

prop_compose! {
    fn valid_event()(
        ids in prop::collection::vec("[A-Za-z0-9:_-]{1,12}", 5),
        ts in any::<f64>().prop_filter("finite", |f| f.is_finite()),
        partial in any::<bool>(),
        role in prop::sample::select(vec!["user", "model", "tool", "system"]),
        author in prop::sample::select(vec!["user", "host", "agent", "tool", "system"]),
        status in prop::option::of(prop::sample::select(vec!["streaming", "completed", "failed", "aborted", "cancelled"])),
        branch in prop::option::of(any::<String>()),
        content in content(),
        state in prop::option::of(prop::collection::btree_map(any::<String>(), json_value(), 0..4)),
        end in prop::option::of(any::<bool>()),
        high_water in prop::option::of(0i64..9_007_199_254_740_991),
    ) -> Value {
        let mut event = json!({
            "id": ids[0], "invocationId": ids[1], "runId": ids[2], "sessionId": ids[3],
            "turnId": ids[4], "ts": ts, "partial": partial, "role": role, "author": author,
        });
        if let Some(s) = status { event["status"] = json!(s); }
        if let Some(b) = branch { event["branch"] = json!(b); }
        if let Some(c) = content { event["content"] = c; }
        let mut actions = serde_json::Map::new();
        if let Some(state) = state {
            actions.insert("stateDelta".into(), Value::Object(state.into_iter().collect()));
        }
        if let Some(end) = end { actions.insert("endInvocation".into(), json!(end)); }
        if !actions.is_empty() { event["actions"] = Value::Object(actions); }
        if let Some(h) = high_water { event["refs"] = json!({"sourceRuntimeEventHighWater": h}); }
        event
    }
}

proptest! {
    #[test]
    fn canonical_encoding_is_idempotent(event in valid_event()) {
        let first = RuntimeEvent::from_value(event).expect("a generated event is valid");
        let second = RuntimeEvent::decode(first.canonical_json()).expect("canonical decodes");
        prop_assert_eq!(second.canonical_json(), first.canonical_json());
        prop_assert_eq!(second.value(), first.value());
        let reparsed: Value = serde_json::from_str(first.canonical_json()).expect("plain JSON");
        prop_assert!(reparsed.is_object());
    }

    /// An event built in memory whose numbers are all safe integers is taken without its
    /// canonical text being parsed back: what a real parse of that text decodes to must be it.
    #[test]
    fn an_event_of_safe_integers_is_what_its_canonical_text_decodes_to(
        event in valid_event(),
        ts in -9_007_199_254_740_991i64..=9_007_199_254_740_991,
    ) {
        let mut event = event;
        event["ts"] = json!(ts);
        let built = RuntimeEvent::from_value(event).expect("a generated event is valid");
        let read = RuntimeEvent::decode(built.canonical_json()).expect("canonical decodes");
        prop_assert_eq!(read.value(), built.value());
        prop_assert_eq!(read.canonical_json(), built.canonical_json());
    }
}
