//! Session headers (MAKA-MODEL §5) and their subagent objects: every field checked, each
//! refusal a typed error naming the field, canonical JSON that decodes back to itself.

use makalog::model::SessionHeader;
use makalog::Error;
use serde_json::{json, Value};

fn header() -> Value {
    json!({
        "schemaVersion": 1,
        "id": "session-1",
        "workspaceRoot": "/work",
        "cwd": "/work",
        "name": "a session",
        "llmConnectionSlug": "fake",
        "model": "fake-model",
        "createdAt": 1000,
        "lastUsedAt": 2000,
        "titleIsManual": false,
        "isFlagged": false,
        "isArchived": false,
        "hasUnread": true,
        "connectionLocked": false,
        "labels": ["a", "b"],
        "status": "active",
        "backend": "fake",
        "permissionMode": "ask"
    })
}

fn subagent_header() -> Value {
    let mut h = header();
    h["id"] = json!("child-1");
    h["subagentParent"] = json!({
        "kind": "subagent",
        "parentSessionId": "session-1",
        "spawnedBy": {"parentRunId": "run-1", "parentTurnId": "turn-1", "toolCallId": "tool-1"},
        "swarm": {"swarmId": "swarm-1", "itemId": "item-1"},
        "lifecycle": "foreground"
    });
    h["subagentRuntime"] = json!({
        "schemaVersion": 1,
        "definitionVersion": 2,
        "agentId": "agent-1",
        "agentName": "Reviewer",
        "profile": "review",
        "presetId": "preset-1",
        "systemPrompt": "You review.",
        "toolNames": ["read", "grep"],
        "categoryPolicy": {"filesystem": "allow", "network": "block"}
    });
    h["subagentSpawn"] = json!({
        "schemaVersion": 1,
        "requestFingerprint": "ab".repeat(32),
        "initialTurnId": "turn-c1",
        "initialRunId": "run-c1"
    });
    h
}

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

fn header_refusal(h: Value) -> String {
    let (record, field) = refused_field(SessionHeader::from_value(h));
    assert_eq!(record, "session header");
    field
}

#[test]
fn a_header_decodes_to_canonical_json_that_decodes_to_itself() {
    for h in [header(), subagent_header()] {
        let decoded = SessionHeader::from_value(h.clone()).expect("valid");
        let again = SessionHeader::decode(decoded.canonical_json()).expect("canonical decodes");
        assert_eq!(again.canonical_json(), decoded.canonical_json());
        assert_eq!(decoded.value(), &h, "a valid header is kept as given");
        let keys: Vec<&String> = h.as_object().expect("object").keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(
            keys, sorted,
            "serde_json keeps keys sorted, as the canonical form does"
        );
    }
    let child = SessionHeader::from_value(subagent_header()).expect("child");
    assert_eq!(child.id(), "child-1");
    assert_eq!(child.status(), "active");
    assert_eq!(child.subagent_parent_session(), Some("session-1"));
    assert!(child.has_subagent_spawn());
    assert!(!SessionHeader::from_value(header())
        .expect("root")
        .has_subagent_spawn());
}

#[test]
fn every_required_header_field_is_required_by_name() {
    let required = [
        "schemaVersion",
        "id",
        "workspaceRoot",
        "cwd",
        "name",
        "llmConnectionSlug",
        "model",
        "createdAt",
        "lastUsedAt",
        "titleIsManual",
        "isFlagged",
        "isArchived",
        "hasUnread",
        "connectionLocked",
        "labels",
        "status",
        "backend",
        "permissionMode",
    ];
    for key in required {
        let mut h = header();
        h.as_object_mut().expect("object").remove(key);
        assert_eq!(header_refusal(h), key, "without {key}");
    }
}

#[test]
fn bad_header_values_are_refused_naming_the_field() {
    let cases: Vec<(&str, Value, &str)> = vec![
        ("id", json!("a/b"), "id"),
        ("id", json!("x".repeat(129)), "id"),
        ("schemaVersion", json!(2), "schemaVersion"),
        ("status", json!("sleeping"), "status"),
        ("blockedReason", json!("tired"), "blockedReason"),
        ("backend", json!("openai"), "backend"),
        ("permissionMode", json!("yolo"), "permissionMode"),
        ("collaborationMode", json!("solo"), "collaborationMode"),
        ("orchestrationMode", json!("chaos"), "orchestrationMode"),
        ("toolProfile", json!("other"), "toolProfile"),
        ("revisionIndex", json!(-1), "revisionIndex"),
        ("revisionIndex", json!(1.5), "revisionIndex"),
        ("revisionState", json!("done"), "revisionState"),
        (
            "transcriptLedgerVersion",
            json!(2),
            "transcriptLedgerVersion",
        ),
        ("labels", json!(["a", 1]), "labels[1]"),
        ("createdAt", json!("yesterday"), "createdAt"),
        ("hasUnread", json!(1), "hasUnread"),
        ("projectId", json!(7), "projectId"),
        ("subagentWorkspace", json!([]), "subagentWorkspace"),
        ("surprise", json!(true), "surprise"),
    ];
    for (key, value, field) in cases {
        let mut h = header();
        h[key] = value.clone();
        assert_eq!(header_refusal(h), field, "{key} = {value}");
    }
    let mut h = header();
    h["projectId"] = Value::Null;
    h["revisionIndex"] = json!(0);
    h["transcriptLedgerVersion"] = json!(1);
    SessionHeader::from_value(h).expect("null projectId, revision 0 and ledger 1 are valid");
}

#[test]
fn the_legacy_execute_permission_mode_reads_as_ask() {
    let mut h = header();
    h["permissionMode"] = json!("execute");
    let decoded = SessionHeader::from_value(h).expect("legacy mode");
    assert_eq!(decoded.value()["permissionMode"], json!("ask"));
}

#[test]
fn the_subagent_objects_are_checked_field_by_field() {
    let long = "x".repeat(513);
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "/subagentParent/kind",
            json!("child"),
            "subagentParent.kind",
        ),
        (
            "/subagentParent/lifecycle",
            json!("background"),
            "subagentParent.lifecycle",
        ),
        (
            "/subagentParent/spawnedBy/toolCallId",
            json!(long),
            "subagentParent.spawnedBy.toolCallId",
        ),
        (
            "/subagentParent/spawnedBy/parentRunId",
            json!("a\u{7}b"),
            "subagentParent.spawnedBy.parentRunId",
        ),
        (
            "/subagentParent/graph",
            json!({"graphId": "g", "workId": "w", "operatorId": "o"}),
            "subagentParent.graph",
        ),
        (
            "/subagentRuntime/definitionVersion",
            json!(0),
            "subagentRuntime.definitionVersion",
        ),
        (
            "/subagentRuntime/systemPrompt",
            json!("a\u{0}b"),
            "subagentRuntime.systemPrompt",
        ),
        (
            "/subagentRuntime/systemPrompt",
            json!("x".repeat(100_001)),
            "subagentRuntime.systemPrompt",
        ),
        (
            "/subagentRuntime/toolNames",
            json!(["read", "read"]),
            "subagentRuntime.toolNames[1]",
        ),
        (
            "/subagentRuntime/toolNames",
            json!((0..129).map(|i| format!("t{i}")).collect::<Vec<_>>()),
            "subagentRuntime.toolNames",
        ),
        (
            "/subagentRuntime/categoryPolicy",
            json!({"network": "maybe"}),
            "subagentRuntime.categoryPolicy.network",
        ),
        (
            "/subagentSpawn/requestFingerprint",
            json!("AB".repeat(32)),
            "subagentSpawn.requestFingerprint",
        ),
        (
            "/subagentSpawn/initialRunId",
            json!("run 1"),
            "subagentSpawn.initialRunId",
        ),
        (
            "/subagentSpawn/schemaVersion",
            json!(2),
            "subagentSpawn.schemaVersion",
        ),
    ];
    for (pointer, value, field) in cases {
        let mut h = subagent_header();
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        h.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{pointer}"))
            .insert(key.to_owned(), value);
        assert_eq!(header_refusal(h), field, "{pointer}");
    }
    let mut graph = subagent_header();
    let parent = graph["subagentParent"].as_object_mut().expect("parent");
    parent.remove("swarm");
    parent.insert(
        "graph".into(),
        json!({"graphId": "g", "workId": "w", "operatorId": "o"}),
    );
    SessionHeader::from_value(graph).expect("a graph parent alone is valid");
    let prompt = "y".repeat(100_000);
    let mut at_limit = subagent_header();
    at_limit["subagentRuntime"]["systemPrompt"] = json!(prompt);
    SessionHeader::from_value(at_limit).expect("100,000 characters is the limit");
}

#[test]
fn a_lone_surrogate_is_refused_naming_its_field() {
    let text = header()
        .to_string()
        .replace("a session", "a \\ud800 session");
    assert_eq!(refused_field(SessionHeader::decode(&text)).1, "name");
}
