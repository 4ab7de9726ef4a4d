//! The canonical RuntimeEvent against the original's validation corpus (MAKA-MODEL §1–§3): its
//! 69 cases, every verdict the original's, accepted cases round-tripping through canonical
//! JSON, rejections naming their field.

use makalog::event::{EventError, RuntimeEvent};
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
