//! The canonical RuntimeEvent (MAKA-MODEL §1–§3): the original's validation corpus, the canonical
//! JSON vectors, number and string formatting, key order, the derived kind and terminal rules,
//! and canonical encoding as a fixed point.

use makalog::event::{canonical_string, format_number, EventError, RuntimeEvent};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

// ---------------------------------------------------------------------------------------------
// Reading the corpus as raw text: it holds lone surrogates and a literal that overflows to
// Infinity, which no Rust JSON value can carry, so each case is assembled from the raw member
// texts of `baseEvent` and its overrides, exactly as `{...baseEvent, ...overrides}` would.

/// The index just past the JSON value starting at `i`.
fn skip_value(s: &[u8], mut i: usize) -> usize {
    match s[i] {
        b'"' => {
            i += 1;
            while s[i] != b'"' {
                i += if s[i] == b'\\' { 2 } else { 1 };
            }
            i + 1
        }
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match s[i] {
                    b'"' => {
                        i = skip_value(s, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while i < s.len() && !matches!(s[i], b',' | b'}' | b']') && !s[i].is_ascii_whitespace()
            {
                i += 1;
            }
            i
        }
    }
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && s[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The raw texts of the elements of a JSON array, or of the `key: value` members of an object.
fn split(text: &str) -> Vec<(String, String)> {
    let s = text.as_bytes();
    let object = s[0] == b'{';
    let mut out = Vec::new();
    let mut i = skip_ws(s, 1);
    while s[i] != b'}' && s[i] != b']' {
        let mut key = String::new();
        if object {
            let end = skip_value(s, i);
            key = text[i + 1..end - 1].to_string();
            i = skip_ws(s, end);
            assert_eq!(s[i], b':');
            i = skip_ws(s, i + 1);
        }
        let end = skip_value(s, i);
        out.push((key, text[i..end].to_string()));
        i = skip_ws(s, end);
        if s[i] == b',' {
            i = skip_ws(s, i + 1);
        }
    }
    out
}

struct Case {
    name: String,
    accepted: bool,
    json: String,
}

fn corpus() -> Vec<Case> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/compat/runtime-event-validation-corpus.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "the compat corpus must be present at {}: {e}",
            file.display()
        )
    });
    let top = split(text.trim());
    let member = |members: &[(String, String)], key: &str| {
        members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("corpus has no {key}"))
    };
    let base = split(&member(&top, "baseEvent"));
    split(&member(&top, "cases"))
        .into_iter()
        .map(|(_, case)| {
            let fields = split(&case);
            let overrides = split(&member(&fields, "overrides"));
            let mut merged: Vec<(String, String)> = base.clone();
            for (k, v) in overrides {
                match merged.iter_mut().find(|(mk, _)| *mk == k) {
                    Some(slot) => slot.1 = v,
                    None => merged.push((k, v)),
                }
            }
            let body: Vec<String> = merged.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            Case {
                name: member(&fields, "name").trim_matches('"').to_string(),
                accepted: member(&fields, "accepted") == "true",
                json: format!("{{{}}}", body.join(",")),
            }
        })
        .collect()
}

/// The two cases the original accepts with a lone surrogate; makalog refuses them (documented).
const LONE_SURROGATE_CASES: &[&str] = &[
    "valid-additional-permission-request-with-lone-surrogate-path",
    "valid-lone-surrogate-answer-fact-request-id",
];

#[test]
fn corpus_has_the_69_cases_of_the_original() {
    let cases = corpus();
    assert_eq!(cases.len(), 69);
    assert_eq!(cases.iter().filter(|c| c.accepted).count(), 36);
}

#[test]
fn every_corpus_verdict_matches_the_original_except_lone_surrogates() {
    let mut wrong = Vec::new();
    for case in corpus() {
        let result = RuntimeEvent::decode(&case.json);
        if LONE_SURROGATE_CASES.contains(&case.name.as_str()) {
            assert!(case.accepted, "{} is an accepted case", case.name);
            assert!(
                matches!(result, Err(EventError::LoneSurrogate { .. })),
                "{}: {result:?}",
                case.name
            );
            continue;
        }
        if result.is_ok() != case.accepted {
            wrong.push(format!("{}: {result:?}", case.name));
        }
    }
    assert!(wrong.is_empty(), "verdicts differ:\n{}", wrong.join("\n"));
}

#[test]
fn every_accepted_corpus_case_round_trips_through_canonical_json() {
    let mut accepted = 0;
    for case in corpus() {
        if !case.accepted || LONE_SURROGATE_CASES.contains(&case.name.as_str()) {
            continue;
        }
        let event = RuntimeEvent::decode(&case.json).expect(&case.name);
        let again = RuntimeEvent::decode(event.canonical_json()).expect(&case.name);
        assert_eq!(
            again.canonical_json(),
            event.canonical_json(),
            "{}",
            case.name
        );
        assert_eq!(again.value(), event.value(), "{}", case.name);
        accepted += 1;
    }
    assert_eq!(accepted, 34);
}

#[test]
fn corpus_rejections_name_the_offending_field() {
    let expected = [
        ("invalid-empty-runtime-identity", "invocationId"),
        ("invalid-overflowing-timestamp", "ts"),
        ("invalid-unknown-ref", "refs.unexpected"),
        (
            "invalid-overflowing-artifact-delta-number",
            "actions.artifactDelta.bytes",
        ),
        (
            "invalid-empty-permission-request",
            "actions.permissionRequest.kind",
        ),
        (
            "invalid-unsafe-attachment-byte-count",
            "content.attachments[0].bytes",
        ),
        (
            "invalid-user-question-option-label",
            "actions.userQuestionRequest.questions[0].options[0].label",
        ),
    ];
    let cases = corpus();
    for (name, field) in expected {
        let case = cases.iter().find(|c| c.name == name).expect(name);
        match RuntimeEvent::decode(&case.json) {
            Err(EventError::Invalid { field: got, .. }) => assert_eq!(got, field, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The canonical vectors of MAKA-MODEL §2, byte for byte.

const VECTORS: [&str; 4] = [
    r#"{"actions":{"endInvocation":true,"stateDelta":{"failureClass":"app_restarted","lastEventType":"model_stream_started","recovered":true,"recoveryReason":"run_interrupted"}},"author":"system","content":{"code":"app_restarted","kind":"error","message":"app_restarted","reason":"app_restarted"},"id":"rt-recovered-1","invocationId":"inv-1","partial":false,"role":"system","runId":"run-1","sessionId":"session-1","status":"failed","ts":1000,"turnId":"turn-1"}"#,
    r#"{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}"#,
    r#"{"actions":{"stateDelta":{"displayName":"Read file","intent":"inspect"}},"author":"agent","content":{"args":{"path":"/tmp/a.txt"},"id":"tool-1","kind":"function_call","name":"Read"},"id":"evt-tool-call","invocationId":"inv-1","partial":false,"refs":{"toolCallId":"tool-1"},"role":"model","runId":"run-1","sessionId":"sess-1","ts":1800000000002,"turnId":"turn-1"}"#,
    r#"{"author":"system","content":{"configuration":{"collaborationMode":"agent","cwd":"/tmp","orchestrationMode":"default","orchestrationSource":"session","permissionMode":"ask","toolMode":"direct"},"kind":"invocation_opened","protocol":"invocation_opened_v1","root":{"kind":"user"},"route":{"backendKind":"fake","llmConnectionId":"fake-connection","llmConnectionSlug":"fake","modelId":"fake-model","provenance":"runtime"},"source":{"kind":"fresh"}},"id":"invocation_opened:run-1","invocationId":"run-1","modelVisibility":"hidden","partial":false,"role":"system","runId":"run-1","sessionId":"session-1","ts":1,"turnId":"turn-1"}"#,
];

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

fn minimal(extra: &str) -> String {
    format!(
        r#"{{"id":"e","invocationId":"i","runId":"r","sessionId":"s","turnId":"t","ts":1,"partial":false,"role":"model","author":"agent"{extra}}}"#
    )
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
// Decoder rules beyond the corpus.

fn refused(extra: &str) -> EventError {
    RuntimeEvent::decode(&minimal(extra)).expect_err(extra)
}

fn field_of(error: EventError) -> String {
    match error {
        EventError::Invalid { field, .. } | EventError::LoneSurrogate { field } => field,
        EventError::NotLossless { why } => panic!("not lossless: {why}"),
    }
}

#[test]
fn a_missing_required_key_is_named_by_its_path() {
    let request = r#","actions":{"permissionRequest":{"kind":"tool_permission","requestId":"r","toolUseId":"u","toolName":"Bash","reason":"custom","args":null,"rememberForTurnAllowed":false}}"#;
    let error = refused(request);
    assert_eq!(
        error,
        EventError::Invalid {
            field: "actions.permissionRequest.category".into(),
            why: "missing required key".into()
        }
    );
    assert!(error
        .to_string()
        .contains("actions.permissionRequest.category"));
    let event = minimal("").replace(r#""ts":1,"#, "");
    assert_eq!(
        field_of(RuntimeEvent::decode(&event).expect_err("no ts")),
        "ts"
    );
}

#[test]
fn integer_fields_take_integral_numbers_only() {
    let high_water = |n: &str| format!(r#","refs":{{"sourceRuntimeEventHighWater":{n}}}"#);
    for ok in ["0", "1.0", "9007199254740991", "1e3"] {
        RuntimeEvent::decode(&minimal(&high_water(ok))).expect(ok);
    }
    for bad in ["1.5", "-1", "true", "\"1\"", "9007199254740992", "null"] {
        assert_eq!(
            field_of(refused(&high_water(bad))),
            "refs.sourceRuntimeEventHighWater",
            "{bad}"
        );
    }
}

#[test]
fn non_finite_and_overflowing_numbers_are_refused() {
    assert_eq!(
        field_of(refused(
            r#","actions":{"tokenUsage":{"input":1e400,"output":1}}"#
        )),
        "actions.tokenUsage.input"
    );
    let event = minimal("").replace(r#""ts":1"#, r#""ts":-1e309"#);
    assert_eq!(
        field_of(RuntimeEvent::decode(&event).expect_err("ts")),
        "ts"
    );
    for bad in ["NaN", "Infinity", "-Infinity"] {
        let event = minimal("").replace(r#""ts":1"#, &format!(r#""ts":{bad}"#));
        assert!(RuntimeEvent::decode(&event).is_err(), "{bad}");
    }
}

#[test]
fn digests_must_match_the_sha256_pattern() {
    let digest = |d: &str| format!(r#","refs":{{"sourceMessageDigest":"{d}"}}"#);
    RuntimeEvent::decode(&minimal(&digest(&format!("sha256:{}", "0f".repeat(32))))).expect("ok");
    for bad in [
        format!("sha256:{}", "A".repeat(64)),
        format!("sha256:{}", "a".repeat(63)),
        format!("sha1:{}", "a".repeat(64)),
        "sha256:intent".to_string(),
    ] {
        assert_eq!(
            field_of(refused(&digest(&bad))),
            "refs.sourceMessageDigest",
            "{bad}"
        );
    }
}

#[test]
fn unknown_keys_are_refused_at_every_level_but_free_form_values() {
    assert_eq!(field_of(refused(r#","extra":1"#)), "extra");
    assert_eq!(
        field_of(refused(
            r#","content":{"kind":"thinking","text":"t","extra":1}"#
        )),
        "content.extra"
    );
    assert_eq!(
        field_of(refused(
            r#","actions":{"tokenUsage":{"input":1,"output":1,"contextBudget":{"enabled":true,"estimatedTokensBefore":1,"estimatedTokensAfter":1,"keptTurns":1,"droppedTurns":0,"keptEvents":1,"droppedEvents":0,"compactionDecisions":[{"stage":"activeStep","sourceKind":"runtimeEvents","decision":"unchanged","extra":1}]}}}"#
        )),
        "actions.tokenUsage.contextBudget.compactionDecisions[0].extra"
    );
    RuntimeEvent::decode(&minimal(
        r#","actions":{"stateDelta":{"any":{"thing":[1,{"x":null}]}}},"content":{"kind":"function_call","id":"","name":"","args":{"deep":{"er":true}},"providerOptions":{"p":{"q":1}}}"#,
    ))
    .expect("free-form values hold anything");
}

#[test]
fn context_budget_takes_the_originals_optional_keys_with_their_types() {
    let budget = |extra: &str| {
        format!(
            r#","actions":{{"tokenUsage":{{"input":1,"output":1,"contextBudget":{{"enabled":true,"estimatedTokensBefore":1,"estimatedTokensAfter":1,"keptTurns":1,"droppedTurns":0,"keptEvents":1,"droppedEvents":0{extra}}}}}}}"#
        )
    };
    RuntimeEvent::decode(&minimal(&budget(
        r#","policyName":"p","maxHistoryTurns":3,"activeDuplicateToolResults":1,"archivePlaceholderReasonCounts":{"a":1},"semanticCompactEnabled":false,"synthesisCacheMode":"read_write","historyCompactBlockIds":["b"],"highWaterReason":"log_rewrite","historyRewriteGate":"g""#,
    )))
    .expect("known keys");
    for (extra, field) in [
        (r#","synthesisCacheMode":"sometimes""#, "synthesisCacheMode"),
        (r#","maxHistoryTurns":"3""#, "maxHistoryTurns"),
        (
            r#","archivePlaceholderReasonCounts":{"a":"1"}"#,
            "archivePlaceholderReasonCounts.a",
        ),
        (
            r#","historyCompactBlockIds":[1]"#,
            "historyCompactBlockIds[0]",
        ),
        (r#","semanticCompactEnabled":1"#, "semanticCompactEnabled"),
        (r#","maxHistoryTokens":1"#, "maxHistoryTokens"),
    ] {
        assert_eq!(
            field_of(refused(&budget(extra))),
            format!("actions.tokenUsage.contextBudget.{field}"),
            "{extra}"
        );
    }
}

#[test]
fn text_content_is_normalized_as_heads_decode_normalizes_it() {
    let event = RuntimeEvent::decode(&minimal(
        r#","content":{"kind":"text","text":"hi","displayText":"hi","attachments":[],"quotes":[],"inlineReferences":[],"providerOptions":{"x":1},"origin":{"kind":"automation","automationId":"a"}}"#,
    ))
    .expect("decode");
    assert_eq!(
        event.value()["content"],
        json!({"kind":"text","text":"hi","inlineReferences":[],"origin":{"kind":"legacy_automation","automationId":"a"}})
    );
    let kept = RuntimeEvent::decode(&minimal(
        r#","content":{"kind":"text","text":"use /skill:pdf","displayText":"use /skill:pdf now","quotes":[{"text":"q"}],"inlineReferences":[{"kind":"skill","value":"/skill:pdf","label":"PDF","start":4}]}"#,
    ))
    .expect("decode");
    assert_eq!(kept.value()["content"]["displayText"], "use /skill:pdf now");
    assert_eq!(kept.value()["content"]["quotes"], json!([{"text":"q"}]));
    assert_eq!(
        field_of(refused(
            r#","content":{"kind":"text","text":"use /skill:pdf","inlineReferences":[{"kind":"skill","value":"/skill:pdf","label":"PDF","start":3}]}"#
        )),
        "content.inlineReferences[0]"
    );
}

#[test]
fn spine_kinds_decode() {
    for content in [
        r#"{"kind":"system_note","note":"step_limit","data":{"steps":3}}"#,
        r#"{"kind":"injection","name":"n","text":"t","data":{}}"#,
        r#"{"kind":"function_response","id":"c","name":"Read","result":"ok","modelProjection":{"version":1,"kind":"content","parts":[{"kind":"text","text":"x"},{"kind":"artifact","mediaType":"image/png","ref":{"kind":"session_file","sessionId":"s","relativePath":"art-1"}}]}}"#,
        r#"{"kind":"error","message":"m","retry":{"decision":"exhausted","attempts":2}}"#,
    ] {
        RuntimeEvent::decode(&minimal(&format!(r#","content":{content}"#))).expect(content);
    }
    assert_eq!(
        field_of(refused(
            r#","content":{"kind":"injection","name":"","text":"t"}"#
        )),
        "content.name"
    );
    assert_eq!(
        field_of(refused(
            r#","content":{"kind":"system_note","note":"session_start"}"#
        )),
        "content.note"
    );
    // An artifact a projection replays must belong to the event's own session.
    assert_eq!(
        field_of(refused(
            r#","content":{"kind":"function_response","id":"c","name":"Read","result":"ok","modelProjection":{"version":1,"kind":"content","parts":[{"kind":"artifact","mediaType":"image/png","ref":{"kind":"session_file","sessionId":"other","relativePath":"a"}}]}}"#
        )),
        "content.modelProjection.parts[0].ref.sessionId"
    );
    let mut opening: Value = serde_json::from_str(VECTORS[3]).expect("vector");
    opening["content"]["lineage"] = json!({});
    assert_eq!(
        field_of(RuntimeEvent::from_value(opening.clone()).expect_err("empty lineage")),
        "content.lineage"
    );
    opening["content"]["lineage"] = json!({"parentRunId": "run-0"});
    opening["content"]["source"] = json!({"kind":"handoff","rootRunId":"r0","sourceInvocationId":"i0","sourceRunId":"r0","sourceTurnId":"t0","sourceRuntimeEventHighWater":0,"claimId":"c","boundaryDigest":format!("sha256:{}", "a".repeat(64))});
    assert_eq!(
        field_of(RuntimeEvent::from_value(opening.clone()).expect_err("handoff from nothing")),
        "content.source.sourceRuntimeEventHighWater"
    );
    opening["content"]["source"]["sourceRuntimeEventHighWater"] = json!(4);
    RuntimeEvent::from_value(opening).expect("handoff opening");
}

#[test]
fn a_handoff_pause_must_seal_its_invocation() {
    let pause = r#""handoffPause":{"protocol":"runtime_handoff_pause_v1","handoffId":"h","hostEpoch":"e","rootRunId":"r","successorRunId":"r2","successorInvocationId":"i2","claimId":"c","remainingSteps":null}"#;
    let sealed = minimal(&format!(r#","actions":{{"endInvocation":true,{pause}}}"#)).replace(
        r#""role":"model","author":"agent""#,
        r#""role":"system","author":"host""#,
    );
    let event = RuntimeEvent::decode(&sealed).expect("sealed");
    assert!(event.is_terminal());
    let unsealed = minimal(&format!(r#","actions":{{"endInvocation":true,{pause}}}"#));
    assert_eq!(
        field_of(RuntimeEvent::decode(&unsealed).expect_err("a model event")),
        "actions.handoffPause"
    );
}

#[test]
fn context_budget_accepts_all_84_optional_keys_of_the_original() {
    let numbers = "maxHistoryEstimatedTokens maxHistoryTurns prunedToolResults prunedToolResultEstimatedTokensBefore prunedToolResultEstimatedTokensAfter archivePlaceholders archiveWriteFailures unarchivedToolResults activePrunedToolResults activeSupersededToolResults activeDuplicateToolResults activeArchiveFailures activeEstimatedTokensSaved archiveRetrievalEligibleTurns retrievedArchiveToolResults retrievedArchiveEstimatedTokens archiveRetrievalSkipped archiveRetrievalFailures historySearchMatches historyAroundRetrievedEvents historyAroundEstimatedTokens historyAroundSkippedEvents synthesisCacheBlocksLoaded synthesisCacheLoadSkipped synthesisCacheLoadFailures synthesisCacheBlocksAvailable synthesisCacheBlocksSelected synthesisCacheEstimatedTokens synthesisCacheSkipped synthesisCacheInvalidated synthesisCacheWritesAttempted synthesisCacheBlocksWritten synthesisCacheWriteEstimatedTokens synthesisCacheWriteSkipped synthesisCacheWriteFailures synthesisCacheEvicted historyCompactBlocksLoaded historyCompactLoadSkipped historyCompactLoadFailures historyCompactBlocksAvailable historyCompactBlocksSelected historyCompactedTurns historyCompactedEvents historyCompactedEstimatedTokensBefore historyCompactedEstimatedTokensAfter historyCompactSkipped historyCompactWritesAttempted historyCompactBlocksWritten historyCompactWriteEstimatedTokens historyCompactWriteSkipped historyCompactWriteFailures highWaterSeq";
    let counts = "archivePlaceholderReasonCounts archiveRetrievalSkippedReasonCounts archiveRetrievalFailureReasonCounts synthesisCacheLoadSkippedReasonCounts synthesisCacheSkippedReasonCounts synthesisCacheInvalidationReasonCounts synthesisCacheWriteSkippedReasonCounts synthesisCacheEvictionReasonCounts historyCompactLoadSkippedReasonCounts historyCompactSkippedReasonCounts historyCompactWriteSkippedReasonCounts";
    let strings = "policyName highWaterName highWaterRequestShapeHashBefore highWaterRequestShapeHashAfter historyRewriteVersion historyRewriteResetReason historyRewriteGate";
    let booleans = "semanticCompactEnabled synthesisCacheEnabled historyCompactEnabled";
    let arrays = "synthesisCacheBlockIds synthesisCacheWrittenBlockIds historyCompactBlockIds historyCompactCoverageHashes historyCompactWrittenBlockIds";
    let mut budget = json!({
        "enabled": true, "estimatedTokensBefore": 9, "estimatedTokensAfter": 5, "keptTurns": 2,
        "droppedTurns": 1, "keptEvents": 4, "droppedEvents": 2,
        "semanticCompactMode": "validate_only", "archiveRetrievalMode": "history_search_gated",
        "synthesisCacheMode": "fallback_archive_retrieval", "historyCompactMode": "deterministic",
        "highWaterReason": "archive_prune",
        "compactionDecisions": [{
            "stage": "priorReplay", "sourceKind": "providerMessages", "decision": "failedOpen",
            "phase": "mid_turn", "boundaryKind": "b", "boundaryIds": ["x"], "coverageHashes": [],
            "reason": "r", "failOpenReason": "f", "skippedReasonCounts": {"a": 1},
            "validationReasonCounts": {}, "compactCallTotalTokens": 3.5,
        }],
    });
    let mut optional = 6;
    for (keys, value) in [
        (numbers, json!(1.5)),
        (counts, json!({"reason": 2})),
        (strings, json!("s")),
        (booleans, json!(true)),
        (arrays, json!(["id"])),
    ] {
        for key in keys.split(' ') {
            budget[key] = value.clone();
            optional += 1;
        }
    }
    assert_eq!(optional, 84);
    let mut event: Value = serde_json::from_str(VECTORS[1]).expect("vector");
    event["actions"] = json!({"tokenUsage": {"input": 1, "output": 2, "contextBudget": budget}});
    let decoded = RuntimeEvent::from_value(event).expect("every optional key");
    let kept = decoded.value()["actions"]["tokenUsage"]["contextBudget"]
        .as_object()
        .expect("budget")
        .len();
    assert_eq!(kept, 7 + 84);
}

#[test]
fn permission_requests_follow_their_kind() {
    let escalation = r#"{"kind":"sandbox_escalation","requestId":"r","toolUseId":"u","toolName":"Bash","category":"shell_unsafe","reason":"sandbox_escalation","command":"c","cwd":"/w","justification":"j","intentHash":"i","commandHash":"h","trigger":"sandbox_denial","risk":{"unsandboxedExecution":true,"unrestrictedFileSystem":true,"unrestrictedNetwork":true,"protectedMetadataExposed":true},"alsoApprovesToolExecution":false,"availableDecisions":["allow_once","deny"],"hint":"h"}"#;
    let request = |r: &str| format!(r#","actions":{{"permissionRequest":{r}}}"#);
    RuntimeEvent::decode(&minimal(&request(escalation))).expect("escalation");
    for (change, field) in [
        (
            (r#""toolName":"Bash""#, r#""toolName":"Write""#),
            "toolName",
        ),
        (
            (r#"["allow_once","deny"]"#, r#"["deny","allow_once"]"#),
            "availableDecisions",
        ),
        (
            (r#""category":"shell_unsafe""#, r#""category":"shell""#),
            "category",
        ),
        (
            (r#""trigger":"sandbox_denial""#, r#""trigger":"later""#),
            "trigger",
        ),
    ] {
        let bad = escalation.replace(change.0, change.1);
        assert_eq!(
            field_of(refused(&request(&bad))),
            format!("actions.permissionRequest.{field}"),
            "{bad}"
        );
    }
    let additional = |profile: &str| {
        request(&format!(
            r#"{{"kind":"additional_permissions","requestId":"r","toolUseId":"u","toolName":"Write","category":"file_write","reason":"additional_permissions","additionalPermissions":{profile},"cwd":"/w","justification":"j","intentHash":"i","permissionsHash":"p","risk":{{"outsideWorkspace":true,"protectedMetadata":false,"networkEnabled":false}},"alsoApprovesToolExecution":true,"availableDecisions":["allow_once","deny"]}}"#
        ))
    };
    let entry = |path: &str| {
        format!(
            r#"{{"fileSystem":{{"entries":[{{"path":"{path}","access":"read","scope":"subtree"}}]}}}}"#
        )
    };
    for ok in ["/a/b", r"C:\\Users\\me", r"C:\\"] {
        RuntimeEvent::decode(&minimal(&additional(&entry(ok)))).expect(ok);
    }
    for bad in ["a/b", "/a/../b", "/a/", "/", "/a//b", r"C:\\a\\"] {
        assert_eq!(
            field_of(refused(&additional(&entry(bad)))),
            "actions.permissionRequest.additionalPermissions.fileSystem.entries[0].path",
            "{bad}"
        );
    }
    assert_eq!(
        field_of(refused(&additional(r#"{"fileSystem":{"entries":[]}}"#))),
        "actions.permissionRequest.additionalPermissions"
    );
    RuntimeEvent::decode(&minimal(&additional(r#"{"network":{"enabled":true}}"#)))
        .expect("network only");
}

#[test]
fn continuation_workspace_and_form_facts_decode_with_their_exact_keys() {
    let digest = format!("sha256:{}", "b".repeat(64));
    let continuation = |version: u32| {
        minimal(&format!(
            r#","actions":{{"continuationStart":{{"protocol":"continuation_start_v2","provenance":"claim_repair","claimId":"c","boundaryDigest":"{digest}","immediateSource":{{"sessionId":"s","invocationId":"i","runId":"r","turnId":"t","highWater":3,"prefixDigest":"{digest}"}},"replayManifestDigest":"{digest}","providerProjectionVersion":{version},"providerReplayDigest":"{digest}"}}}}"#
        ))
    };
    RuntimeEvent::decode(&continuation(1)).expect("v1");
    RuntimeEvent::decode(&continuation(2)).expect("v2 ([SPINE])");
    assert_eq!(
        field_of(RuntimeEvent::decode(&continuation(3)).expect_err("v3")),
        "actions.continuationStart.providerProjectionVersion"
    );
    let hex = |n: usize| "0a".repeat(n / 2);
    let epoch = format!(
        r#","actions":{{"workspaceFact":{{"kind":"maka.workspace.epoch_opened","version":1,"payload":{{"protocol":"workspace_epoch_opened_v1","repositoryId":"repository_{h32}","workspaceId":"workspace_{h32}","workspaceEpochId":"epoch_{h32}","workspaceInstanceId":"instance_{h32}","initialWorkspaceVersionId":"version_{h32}","mode":"managed_worktree","objectFormat":"sha1","sourceCommitOid":"{h40}","sourceTreeOid":"{h40}","materializationProfileDigest":"{digest}","materializationSemantics":"git_tree_materialized_with_fixed_config_v1","policyHash":"{digest}"}}}}}}"#,
        h32 = hex(32),
        h40 = hex(40)
    );
    let event = RuntimeEvent::decode(&minimal(&epoch)).expect("epoch opened");
    assert_eq!(event.event_kind(), "workspace_fact");
    assert_eq!(
        field_of(refused(
            &epoch.replace(r#""sourceTreeOid":"#, r#""extra":1,"sourceTreeOid":"#)
        )),
        "actions.workspaceFact.payload.extra"
    );
    let form = |fields: &str| {
        minimal(&format!(
            r#","actions":{{"formRequest":{{"requestId":"f","toolUseId":"u","message":"m","requester":{{"name":"n"}},"fields":{fields}}}}}"#
        ))
    };
    RuntimeEvent::decode(&form(
        r#"[{"kind":"single_select","name":"a","label":"A","required":true,"options":[{"value":"x","label":"X"}],"default":"x"},{"kind":"integer","name":"b","label":"B","required":false,"minimum":1,"maximum":3,"default":2}]"#,
    ))
    .expect("form");
    for (fields, field) in [
        (
            r#"[{"kind":"boolean","name":"a","label":"A","required":true},{"kind":"boolean","name":"a","label":"B","required":true}]"#,
            "fields[1].name",
        ),
        (
            r#"[{"kind":"integer","name":"b","label":"B","required":false,"minimum":1,"default":0.5}]"#,
            "fields[0].default",
        ),
        (
            r#"[{"kind":"color","name":"c","label":"C","required":true}]"#,
            "fields[0].kind",
        ),
    ] {
        assert_eq!(
            field_of(RuntimeEvent::decode(&form(fields)).expect_err(fields)),
            format!("actions.formRequest.{field}")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Lone surrogates and lossless encoding.

#[test]
fn lone_surrogates_are_refused_wherever_they_are_and_pairs_are_kept() {
    for (extra, field) in [
        (r#","branch":"x\udc00""#, "branch"),
        (
            r#","actions":{"stateDelta":{"k":["a","\ud83d"]}}"#,
            "actions.stateDelta.k[1]",
        ),
        (
            r#","actions":{"stateDelta":{"k":"\ud83d\u0041"}}"#,
            "actions.stateDelta.k",
        ),
        (
            r#","actions":{"stateDelta":{"\udfff":1}}"#,
            "actions.stateDelta",
        ),
    ] {
        assert_eq!(
            refused(extra),
            EventError::LoneSurrogate {
                field: field.into()
            },
            "{extra}"
        );
    }
    let event = RuntimeEvent::decode(&minimal(r#","branch":"\ud83d\ude00""#)).expect("a pair");
    assert!(event.canonical_json().contains(r#""branch":"😀""#));
}

#[test]
fn a_number_javascript_cannot_hold_is_not_lossless() {
    let mut value: Value = serde_json::from_str(VECTORS[1]).expect("vector");
    value["actions"] = json!({"stateDelta": {"n": 9_007_199_254_740_993u64}});
    assert!(matches!(
        RuntimeEvent::from_value(value.clone()),
        Err(EventError::NotLossless { .. })
    ));
    value["actions"]["stateDelta"]["n"] = json!(9_007_199_254_740_992u64);
    RuntimeEvent::from_value(value).expect("2^53 is a double");
}

/// A value nested as deep as its text may be is taken, one level deeper is refused: the event
/// object is level 1, so 256 levels parse back and 257 do not (built in memory, it would be
/// written as text no reader could parse).
#[test]
fn an_event_nested_deeper_than_its_text_may_be_is_refused() {
    let nested = |levels: usize| {
        let mut value: Value = serde_json::from_str(VECTORS[1]).expect("vector");
        // The event (1), `actions` (2), `stateDelta` (3), then arrays down to `levels`.
        let mut inner = json!([]);
        for _ in 4..levels {
            inner = json!([inner]);
        }
        value["actions"] = json!({"stateDelta": {"n": inner}});
        value
    };
    let deepest = RuntimeEvent::from_value(nested(256)).expect("256 levels");
    let read = RuntimeEvent::decode(deepest.canonical_json()).expect("parses back");
    assert_eq!(read.value(), deepest.value());
    assert!(RuntimeEvent::from_value(nested(257)).is_err(), "257 levels");
}

#[test]
fn input_that_is_not_one_json_object_is_refused() {
    for text in [
        "",
        "[]",
        "{",
        r#"{"id":"e"} x"#,
        "{'id':1}",
        "{\"a\":\"\t\"}",
        "null",
    ] {
        assert!(
            matches!(RuntimeEvent::decode(text), Err(EventError::Invalid { .. })),
            "{text:?}"
        );
    }
    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let nested = minimal(&format!(r#","actions":{{"stateDelta":{{"d":{deep}}}}}"#));
    assert!(RuntimeEvent::decode(&nested).is_err());
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
