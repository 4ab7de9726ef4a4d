//! Stored messages (MAKA-MODEL §6): every type with its required and optional fields, each
//! refusal a typed error naming the field, canonical JSON that decodes back to itself.

use makalog::model::StoredMessage;
use makalog::Error;
use serde_json::{json, Value};

/// The field a refusal names, and its record.
fn refused_field(result: makalog::Result<impl std::fmt::Debug>) -> (String, String) {
    match result {
        Err(Error::InvalidRecord { record, field, why }) => {
            assert!(!why.is_empty());
            (record.to_owned(), field)
        }
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

fn message(kind: &str) -> Value {
    let base = json!({"type": kind, "id": "m-1", "turnId": "turn-1", "ts": 5});
    let extra = match kind {
        "user" => json!({"text": "hello"}),
        "assistant" => json!({"text": "hi", "modelId": "fake-model"}),
        "tool_call" => json!({"toolName": "read", "args": {"path": "a"}}),
        "tool_result" => {
            json!({"toolUseId": "m-0", "isError": false, "content": {"kind": "text", "text": "ok"}})
        }
        "permission_decision" => {
            json!({"toolUseId": "m-0", "toolName": "write", "decision": "allow"})
        }
        "token_usage" => json!({"input": 10, "output": 3}),
        "turn_state" => json!({"status": "completed", "partialOutputRetained": false}),
        _ => json!({"kind": "session_start"}),
    };
    let mut m = base;
    for (k, v) in extra.as_object().expect("object") {
        m[k] = v.clone();
    }
    m
}

const TYPES: [&str; 8] = [
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "permission_decision",
    "token_usage",
    "turn_state",
    "system_note",
];

fn message_refusal(m: Value) -> String {
    let (record, field) = refused_field(StoredMessage::from_value(m));
    assert_eq!(record, "stored message");
    field
}

#[test]
fn every_message_type_decodes_and_needs_each_of_its_fields() {
    for kind in TYPES {
        let m = message(kind);
        let decoded =
            StoredMessage::from_value(m.clone()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(decoded.message_type(), kind);
        assert_eq!(decoded.id(), "m-1");
        let again = StoredMessage::decode(decoded.canonical_json()).expect("canonical decodes");
        assert_eq!(again, decoded);
        for key in m.as_object().expect("object").keys() {
            if kind == "system_note" && key == "turnId" {
                continue;
            }
            let mut without = m.clone();
            without.as_object_mut().expect("object").remove(key);
            assert_eq!(message_refusal(without), *key, "{kind} without {key}");
        }
        let mut unknown = m.clone();
        unknown["surprise"] = json!(1);
        assert_eq!(message_refusal(unknown), "surprise", "{kind}");
    }
    let mut note = message("system_note");
    note.as_object_mut().expect("object").remove("turnId");
    assert_eq!(
        StoredMessage::from_value(note)
            .expect("a note needs no turn")
            .turn_id(),
        None
    );
}

#[test]
fn message_optional_fields_are_typed() {
    let mut user = message("user");
    user["displayText"] = json!("Hello");
    user["attachments"] = json!([{"name": "a.txt"}]);
    user["origin"] = json!({"kind": "host"});
    StoredMessage::from_value(user).expect("full user message");
    let mut assistant = message("assistant");
    assistant["thinking"] = json!({"text": "hmm", "signature": "sig"});
    assistant["contentOrder"] = json!(["thinking", "text", "tools"]);
    StoredMessage::from_value(assistant.clone()).expect("full assistant message");
    assistant["contentOrder"] = json!(["text", "pictures"]);
    assert_eq!(message_refusal(assistant), "contentOrder[1]");
    let mut result = message("tool_result");
    result["content"] = json!({"text": "no kind"});
    assert_eq!(message_refusal(result), "content.kind");
    let mut usage = message("token_usage");
    usage["cacheRead"] = json!(4);
    usage["rawFinishReason"] = json!("stop");
    StoredMessage::from_value(usage.clone()).expect("token usage fields");
    usage["cacheRead"] = json!("four");
    assert_eq!(message_refusal(usage), "cacheRead");
    let mut call = message("tool_call");
    call["providerExecuted"] = json!("yes");
    assert_eq!(message_refusal(call), "providerExecuted");
    let mut bad_type = message("user");
    bad_type["type"] = json!("shout");
    assert_eq!(message_refusal(bad_type), "type");
    let mut note = message("system_note");
    note["kind"] = json!("nap");
    assert_eq!(message_refusal(note), "kind");
}

#[test]
fn a_failed_turn_has_an_error_class_and_no_other_status_does() {
    let mut failed = message("turn_state");
    failed["status"] = json!("failed");
    let decoded = StoredMessage::from_value(failed.clone()).expect("failed");
    assert_eq!(
        decoded.value()["errorClass"],
        json!("unknown"),
        "the default class"
    );
    failed["errorClass"] = json!("provider_error");
    let decoded = StoredMessage::from_value(failed).expect("failed with a class");
    assert_eq!(decoded.value()["errorClass"], json!("provider_error"));
    let mut completed = message("turn_state");
    completed["errorClass"] = json!("provider_error");
    assert_eq!(message_refusal(completed), "errorClass");
    let mut status = message("turn_state");
    status["status"] = json!("paused");
    assert_eq!(message_refusal(status), "status");
}
