//! Root-turn admissions (MAKA-MODEL §8): every descriptor kind, the user-message and input
//! rules per kind, the claimed-intent targets, and when a repeat is the same admission.

use makalog::model::{RootTurnAdmission, DESCRIPTOR_KINDS};
use makalog::Error;
use serde_json::{json, Value};

fn claim() -> Value {
    json!({
        "schemaVersion": 1,
        "claimId": format!("graph_claim_{}", "a".repeat(32)),
        "graphId": "graph-1",
        "intentId": format!("graph_intent_{}", "b".repeat(32)),
        "intentFingerprint": format!("sha256:{}", "c".repeat(64)),
        "readinessContextFingerprint": format!("sha256:{}", "d".repeat(64)),
        "targetOperatorId": "operator-1",
        "targetSessionId": "session-1",
        "targetTurnId": "turn-2",
        "targetRunId": "run-2",
        "claimedAt": 5
    })
}

fn descriptor(kind: &str) -> Value {
    let mut d = match kind {
        "external_message" => json!({"inputDigest": "x", "maxSteps": 8}),
        "regenerate" => json!({"sourceTurnId": "turn-1"}),
        "scheduled_task" => json!({"scheduledTaskId": "task-1"}),
        "legacy_automation" => json!({"automationId": "auto-1"}),
        "goal" => json!({"goalId": "goal-1"}),
        "agent_graph_supervisor_wake" => json!({"graphId": "g", "wakeId": "w", "attemptId": "a"}),
        "safe_boundary_continuation" => json!({
            "sourceInvocationId": "i", "sourceRunId": "r", "sourceTurnId": "t",
            "sourceRuntimeEventHighWater": 4, "claimId": "c", "boundaryDigest": "b",
            "providerReplayDigest": "p", "safetyDigest": "s", "targetInvocationId": "ti"
        }),
        "linked_child_initial" => json!({"agentId": "agent-1", "agentName": "Helper"}),
        "linked_child_resume" | "linked_child_provider_retry" => {
            json!({"agentId": "agent-1", "agentName": "Helper", "sourceRunId": "run-0"})
        }
        "claimed_agent_graph_intent" => {
            json!({"agentId": "agent-1", "agentName": "Helper", "claim": claim()})
        }
        _ => json!({}),
    };
    d["kind"] = json!(kind);
    d
}

fn admission(kind: &str) -> Value {
    let no_user = [
        "safe_boundary_continuation",
        "context_compact",
        "linked_child_provider_retry",
    ];
    let no_input = ["safe_boundary_continuation", "context_compact"];
    let mut a = json!({
        "schemaVersion": 1,
        "sessionId": "session-1",
        "turnId": "turn-2",
        "runId": "run-2",
        "userMessageId": if no_user.contains(&kind) { Value::Null } else { json!("msg-2") },
        "execution": descriptor(kind),
        "previousRootTurnId": "turn-1",
        "normalizedInput": if no_input.contains(&kind) { Value::Null } else { json!({"text": "go"}) },
        "sourceMessages": [],
        "admittedAt": 100
    });
    if kind == "agent_graph_supervisor_wake" {
        a["turnOrchestration"] = json!({"mode": "graph", "source": "host_api"});
    }
    a
}

fn field_of(r: makalog::Result<RootTurnAdmission>) -> String {
    match r {
        Err(Error::InvalidRecord { record, field, .. }) => {
            assert_eq!(record, "root-turn admission");
            field
        }
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

#[test]
fn every_descriptor_kind_is_admitted_with_its_fields() {
    for &kind in DESCRIPTOR_KINDS {
        let a = RootTurnAdmission::from_value(admission(kind))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(a.execution_kind(), kind);
        assert_eq!(a.turn_id(), "turn-2");
        assert_eq!(
            RootTurnAdmission::decode(a.canonical_json()).expect("canonical"),
            a
        );
        for key in descriptor(kind).as_object().expect("object").keys() {
            if ["inputDigest", "maxSteps"].contains(&key.as_str()) {
                continue;
            }
            let mut without = admission(kind);
            without["execution"]
                .as_object_mut()
                .expect("object")
                .remove(key);
            assert_eq!(
                field_of(RootTurnAdmission::from_value(without)),
                format!("execution.{key}"),
                "{kind}"
            );
        }
    }
    let mut spine = admission("external_message");
    spine["execution"]["kind"] = json!("workhub_coordination");
    assert_eq!(
        field_of(RootTurnAdmission::from_value(spine)),
        "execution.kind"
    );
}

#[test]
fn user_message_and_input_are_null_exactly_for_their_kinds() {
    for &kind in DESCRIPTOR_KINDS {
        let a = admission(kind);
        let mut flipped = a.clone();
        flipped["userMessageId"] = if a["userMessageId"].is_null() {
            json!("msg-2")
        } else {
            Value::Null
        };
        assert_eq!(
            field_of(RootTurnAdmission::from_value(flipped)),
            "userMessageId",
            "{kind}"
        );
        let mut flipped = a.clone();
        flipped["normalizedInput"] = if a["normalizedInput"].is_null() {
            json!({"text": "go"})
        } else {
            Value::Null
        };
        assert_eq!(
            field_of(RootTurnAdmission::from_value(flipped)),
            "normalizedInput",
            "{kind}"
        );
    }
}

#[test]
fn admission_fields_are_checked_by_name() {
    let cases: Vec<(&str, Value, &str)> = vec![
        ("schemaVersion", json!(2), "schemaVersion"),
        ("turnId", json!("turn 2"), "turnId"),
        ("previousRootTurnId", json!("turn-2"), "previousRootTurnId"),
        ("admittedAt", json!(-1), "admittedAt"),
        ("admittedAt", json!(1.5), "admittedAt"),
        // A MessageContent is an object: any other JSON was taken.
        ("normalizedInput", json!(42), "normalizedInput"),
        ("normalizedInput", json!("go"), "normalizedInput"),
        ("normalizedInput", json!([]), "normalizedInput"),
        ("sourceMessages", json!([{"messageId": "m", "content": "c", "placement": "p"}]), "sourceMessages[0].disposition"),
        ("sourceMessages", json!((0..65).map(|i| json!({"messageId": format!("m{i}"), "content": "c", "placement": "p", "disposition": "d"})).collect::<Vec<_>>()), "sourceMessages"),
        ("surprise", json!(0), "surprise"),
    ];
    for (key, value, field) in cases {
        let mut a = admission("external_message");
        a[key] = value;
        assert_eq!(field_of(RootTurnAdmission::from_value(a)), field, "{key}");
    }
    let mut first = admission("external_message");
    first["previousRootTurnId"] = Value::Null;
    first["turnOrchestration"] = json!({"mode": "graph", "source": "host_api"});
    first["skillInvocation"] = json!({"skill": "review"});
    first["sourceMessages"] =
        json!([{"messageId": "m", "content": "c", "placement": "p", "disposition": "d"}]);
    RootTurnAdmission::from_value(first)
        .expect("a first turn of an external message with everything");
    for (key, value) in [
        (
            "turnOrchestration",
            json!({"mode": "default", "source": "slash_command"}),
        ),
        ("skillInvocation", json!({})),
    ] {
        let mut a = admission("goal");
        a[key] = value;
        assert_eq!(field_of(RootTurnAdmission::from_value(a)), key);
    }
    let mut a = admission("goal");
    a["sourceMessages"] =
        json!([{"messageId": "m", "content": "c", "placement": "p", "disposition": "d"}]);
    assert_eq!(field_of(RootTurnAdmission::from_value(a)), "sourceMessages");
}

#[test]
fn a_claimed_intent_targets_the_admitted_session_turn_and_run() {
    for (key, field) in [
        ("targetSessionId", "execution.claim.targetSessionId"),
        ("targetTurnId", "execution.claim.targetTurnId"),
        ("targetRunId", "execution.claim.targetRunId"),
    ] {
        let mut a = admission("claimed_agent_graph_intent");
        a["execution"]["claim"][key] = json!("elsewhere");
        assert_eq!(field_of(RootTurnAdmission::from_value(a)), field);
    }
    let mut bad = admission("claimed_agent_graph_intent");
    bad["execution"]["claim"]["claimId"] = json!("not-a-claim-id");
    assert_eq!(
        field_of(RootTurnAdmission::from_value(bad)),
        "execution.claim"
    );
}

#[test]
fn a_repeat_is_the_same_admission_only_with_the_same_previous_turn_and_payload() {
    let stored = RootTurnAdmission::from_value(admission("external_message")).expect("stored");
    let mut retry = admission("external_message");
    retry["admittedAt"] = json!(200);
    retry["userMessageId"] = json!("msg-other");
    let retry = RootTurnAdmission::from_value(retry).expect("retry");
    assert!(
        stored.same_admission(&retry),
        "the admission time and message id are no part of the payload"
    );
    for (key, value) in [
        ("previousRootTurnId", json!("turn-0")),
        ("normalizedInput", json!({"text": "something else"})),
        (
            "turnOrchestration",
            json!({"mode": "default", "source": "slash_command"}),
        ),
    ] {
        let mut other = admission("external_message");
        other[key] = value;
        let other = RootTurnAdmission::from_value(other).expect("valid");
        assert!(!stored.same_admission(&other), "{key} differs: a conflict");
    }
    let regenerate = RootTurnAdmission::from_value(admission("regenerate")).expect("regenerate");
    assert!(
        !stored.same_admission(&regenerate),
        "another execution is a conflict"
    );
}

#[test]
fn a_supervisor_wake_requires_host_graph_orchestration_and_the_override_has_one_shape() {
    RootTurnAdmission::from_value(admission("agent_graph_supervisor_wake"))
        .expect("a supervisor wake under host graph orchestration");
    for orchestration in [
        Value::Null,
        json!({"mode": "swarm", "source": "host_api"}),
        json!({"mode": "graph", "source": "slash_command"}),
    ] {
        let mut a = admission("agent_graph_supervisor_wake");
        match orchestration {
            Value::Null => a
                .as_object_mut()
                .expect("object")
                .remove("turnOrchestration"),
            o => a
                .as_object_mut()
                .expect("object")
                .insert("turnOrchestration".into(), o),
        };
        assert_eq!(
            field_of(RootTurnAdmission::from_value(a)),
            "turnOrchestration"
        );
    }
    for (value, field) in [
        (
            json!({"mode": "turbo", "source": "host_api"}),
            "turnOrchestration.mode",
        ),
        (
            json!({"mode": "graph", "source": "cli"}),
            "turnOrchestration.source",
        ),
        (json!({"mode": "graph"}), "turnOrchestration.source"),
        (
            json!({"mode": "graph", "source": "host_api", "why": 1}),
            "turnOrchestration.why",
        ),
        (json!("graph"), "turnOrchestration"),
    ] {
        let mut a = admission("external_message");
        a["turnOrchestration"] = value;
        assert_eq!(field_of(RootTurnAdmission::from_value(a)), field);
    }
}
