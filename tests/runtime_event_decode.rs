//! The RuntimeEvent decoder's rules beyond the original's corpus (MAKA-MODEL §1–§3): required
//! keys, integers, numbers, digests, unknown keys, the kinds' exact members, lone surrogates,
//! lossless numbers, depth, and input that is not one JSON object.

mod support;

use makalog::event::{EventError, RuntimeEvent};
use serde_json::{json, Value};
use support::events::{minimal, VECTORS};

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
