//! `makalog replay`: a session as the stores would have answered at a point of its history,
//! from the log prefix alone, on the demo root and on a damaged copy of it.

mod common;

use common::{demo_root, makalog, snapshot, text};
use serde_json::Value;

fn replay_json(root: &str, args: &[&str]) -> Value {
    let mut all = vec!["replay", root, "--json"];
    all.extend_from_slice(args);
    let out = makalog(&all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn lines_json(root: &str, args: &[&str]) -> Vec<Value> {
    let out = makalog(args);
    assert_eq!(out.status.code(), Some(0), "{root}: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[test]
fn replay_to_the_last_record_answers_what_the_stores_answer_now() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let (last, _, _) = common::last_record(&root, "graph-child-1");
    let until = last.seq.to_string();
    let before = snapshot(&root);
    let v = replay_json(r, &["--session", "graph-child-1", "--until", &until]);
    assert_eq!(snapshot(&root), before, "replay writes nothing");
    let messages = lines_json(r, &["messages", r, "--session", "graph-child-1", "--json"]);
    assert_eq!(v["messages"].as_array().expect("messages"), &messages);
    let runs = lines_json(r, &["runs", r, "--session", "graph-child-1", "--json"]);
    assert_eq!(v["runs"].as_array().expect("runs"), &runs);
    let invocations = lines_json(
        r,
        &["invocations", r, "--session", "graph-child-1", "--json"],
    );
    assert_eq!(v["invocations"].as_array().expect("inv"), &invocations);
    assert_eq!(v["runs"][0]["run"]["status"], "completed");
    let claims = v["claims"].as_array().expect("claims");
    let names = |c: &Value| {
        [
            "targetSessionId",
            "parentSessionId",
            "childSessionId",
            "sessionId",
        ]
        .iter()
        .any(|k| c["claim"][k] == "graph-child-1")
    };
    let mut now: Vec<Value> = lines_json(r, &["claims", r, "--json"])
        .into_iter()
        .filter(names)
        .collect();
    now.sort_by_key(|c| c["seq"].as_u64());
    assert_eq!(
        claims, &now,
        "the claims naming the session, as `claims` lists them"
    );
    assert!(claims.iter().any(|c| c["type"] == "graph_intent_claim"));
    assert!(claims.iter().any(|c| c["type"] == "subagent_spawn_claim"));
}

#[test]
fn replay_to_an_earlier_record_or_time_shows_the_run_still_going() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let records = common::records(&root, "graph-child-1");
    // The record that marked the run running: after it, its invocation is still open.
    let started = records
        .iter()
        .find(|x| {
            x.kind == makalog::format::RecordKind::Run
                && String::from_utf8_lossy(&x.payload).contains("\"status\":\"running\"")
        })
        .expect("the run marked running");
    let until = started.seq.to_string();
    let v = replay_json(r, &["--session", "graph-child-1", "--until", &until]);
    assert_eq!(v["untilSeq"], started.seq);
    assert_eq!(v["runs"][0]["run"]["status"], "running");
    assert!(v["invocations"]
        .as_array()
        .expect("inv")
        .iter()
        .all(|i| i["terminalEvent"].is_null()));
    let claim = common::find(&v["claims"], "type", "graph_intent_claim");
    assert_eq!(claim["status"], "executing");
    // The same point named by its time: the latest instant the prefix states.
    let as_of = v["asOf"].as_f64().expect("asOf");
    let by_time = replay_json(
        r,
        &[
            "--session",
            "graph-child-1",
            "--at",
            &format!("{}", as_of as u64),
        ],
    );
    // Records of one millisecond cannot be told apart by time: the prefix at `as_of` runs to
    // the last record stating no later instant.
    let kept: Vec<&makalog::segment::Record> = records
        .iter()
        .take_while(|x| makalog::forensics::stated_time(&x.payload).is_none_or(|t| t <= as_of))
        .collect();
    assert!(kept.len() as u64 >= started.seq);
    assert_eq!(by_time["untilSeq"], kept.len() as u64);
    let last_run = kept
        .iter()
        .rev()
        .find(|x| x.kind == makalog::format::RecordKind::Run)
        .expect("a run record");
    let status: serde_json::Value = serde_json::from_slice(&last_run.payload).expect("run");
    assert_eq!(by_time["runs"][0]["run"]["status"], status["status"]);
    let text_out = makalog(&["replay", r, "--session", "graph-child-1", "--until", &until]);
    let stdout = text(&text_out.stdout);
    assert!(
        stdout.starts_with(&format!(
            "session graph-child-1 at seq {until} of {}",
            records.len()
        )),
        "{stdout}"
    );
    for section in [
        "\nRUNS\n",
        "\nMESSAGES\n",
        "\nINVOCATIONS\n",
        "\nCLAIMS KNOWN THEN\n",
    ] {
        assert!(stdout.contains(section), "{section}: {stdout}");
    }
    // Before anything happened: no header yet.
    let early = replay_json(r, &["--session", "demo-1", "--at", "1970-01-01T00:00:00Z"]);
    assert_eq!(early["untilSeq"], 0);
    assert!(early["header"].is_null());
}

#[test]
fn replay_refuses_bad_points_with_exit_2_and_a_missing_session_with_1() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    for args in [
        vec!["replay", r, "--session", "demo-1"],
        vec![
            "replay",
            r,
            "--session",
            "demo-1",
            "--until",
            "3",
            "--at",
            "0",
        ],
        vec!["replay", r, "--session", "demo-1", "--at", "yesterday"],
        vec!["replay", r, "--session", "demo-1", "--until", "999999"],
        vec!["replay", r, "--session", "../x", "--until", "1"],
    ] {
        let out = makalog(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = makalog(&["replay", r, "--session", "nobody", "--until", "1"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn replay_of_a_damaged_session_reaches_only_its_valid_prefix() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let records = common::records(&root, "demo-2");
    let victim = &records[records.len() / 2];
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(root.join(&victim.file))
        .expect("open");
    std::os::unix::fs::FileExt::write_all_at(&f, b"\xff\xff", victim.offset + 20).expect("damage");
    let before_seq = (victim.seq - 1).to_string();
    let v = replay_json(r, &["--session", "demo-2", "--until", &before_seq]);
    assert_eq!(
        v["records"],
        victim.seq - 1,
        "the valid prefix ends before the damage"
    );
    let out = makalog(&[
        "replay",
        r,
        "--session",
        "demo-2",
        "--until",
        &victim.seq.to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(&format!("holds {} valid records", victim.seq - 1)));
}

/// A session that cannot be read at the point (here a message record that is no message,
/// behind a sound frame, which fails the header's read first) is an error the exit code says,
/// in text as in JSON.
#[test]
fn replay_exits_1_when_the_session_cannot_be_read_at_the_point() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let ack = common::append_raw(
        &root,
        "demo-2",
        makalog::format::RecordKind::Message,
        br#"{"type":"user"}"#,
    );
    let until = ack.seq.to_string();
    for json in [false, true] {
        let mut args = vec!["replay", r, "--session", "demo-2", "--until", &until];
        if json {
            args.push("--json");
        }
        let out = makalog(&args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "json {json}: {}",
            text(&out.stdout)
        );
        assert!(
            !text(&out.stderr).is_empty(),
            "json {json}: the error is said"
        );
    }
}

/// One JSON text, however deep (serde_json's reader stops at 128 levels by default).
fn parse_deep(text: &str) -> Value {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    Value::deserialize(&mut de).unwrap_or_else(|e| panic!("JSON: {e}: {text}"))
}

/// A runtime event of session `s1`, invocation `run`, with `extra` members.
fn event(run: &str, id: &str, ts: f64, extra: Value) -> makalog::event::RuntimeEvent {
    let mut v = serde_json::json!({
        "id": id, "invocationId": run, "runId": run, "sessionId": "s1", "turnId": "t1",
        "ts": ts, "partial": false, "role": "system", "author": "system",
    });
    if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), extra) {
        obj.extend(more);
    }
    makalog::event::RuntimeEvent::from_value(v).expect("event")
}

/// `replay --json` lists a session's invocations as `invocations --json` prints them: one
/// never opened (a ledger of the generation before openings) included, and a terminal event
/// nested 200 levels deep (past the 128 serde_json reads back) intact. Before, the first was
/// left out and the second printed as `null`.
#[test]
fn replay_json_lists_every_invocation_as_the_invocations_command_prints_it() {
    use makalog::segment::Durability;
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    {
        let owner = makalog::root::try_acquire_owner(&root)
            .expect("acquire")
            .expect("free");
        let stores = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
        let mut header = common::subagent_header("s1", "p");
        for k in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
            header.as_object_mut().expect("object").remove(k);
        }
        stores.sessions.create(header).expect("session");
        let opening = serde_json::json!({
            "modelVisibility": "hidden",
            "content": {
                "kind": "invocation_opened", "protocol": "invocation_opened_v1",
                "route": {"provenance": "runtime", "backendKind": "fake", "llmConnectionId": "c",
                          "llmConnectionSlug": "fake", "modelId": "m"},
                "configuration": {"cwd": "/w", "permissionMode": "ask", "collaborationMode": "agent",
                                  "orchestrationMode": "default", "orchestrationSource": "session",
                                  "toolMode": "direct"},
                "root": {"kind": "user"}, "source": {"kind": "fresh"},
            },
        });
        let mut deep = serde_json::json!([]);
        for _ in 0..200 {
            deep = serde_json::json!([deep]);
        }
        let end = |deep: Value| {
            serde_json::json!({"status": "completed",
                "actions": {"endInvocation": true, "stateDelta": {"n": deep}}})
        };
        let events = [
            event("run-1", "invocation_opened:run-1", 1.0, opening),
            event("run-1", "end-1", 2.0, end(deep)),
            event("run-0", "end-0", 3.0, end(Value::Null)),
        ];
        for e in &events {
            stores
                .runtime_events
                .append(e, Durability::Durable)
                .expect("append");
        }
        stores.close().expect("close");
    }
    let r = root.to_str().expect("utf8");
    let (last, _, _) = common::last_record(&root, "s1");
    let out = makalog(&[
        "replay",
        r,
        "--json",
        "--session",
        "s1",
        "--until",
        &last.seq.to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = parse_deep(&text(&out.stdout));
    let listed = makalog(&["invocations", r, "--session", "s1", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    let lines: Vec<Value> = text(&listed.stdout).lines().map(parse_deep).collect();
    assert_eq!(lines.len(), 2, "one opened, one never opened");
    assert_eq!(v["invocations"].as_array().expect("invocations"), &lines);
    let opened = &v["invocations"][0];
    assert_eq!(opened["invocationId"], "run-1");
    let mut n = &opened["terminalEvent"]["actions"]["stateDelta"]["n"];
    let mut levels = 0;
    while let Some(inner) = n.get(0) {
        n = inner;
        levels += 1;
    }
    assert_eq!(levels, 200, "the deep event, whole");
    assert_eq!(v["invocations"][1]["invocationId"], "run-0");
}

/// Replay reads the log alone: a log cut before what its sidecar recorded as durable (which
/// every read through the sidecar refuses) still replays to a point within what is left.
#[test]
fn replay_reads_the_log_alone_whatever_the_sidecar_says() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let (last, seg, _) = common::last_record(&root, "demo-1");
    common::cut_at(&seg, last.offset);
    let v = replay_json(r, &["--session", "demo-1", "--until", "3"]);
    assert_eq!(
        v["records"],
        last.seq - 1,
        "the log's records, the cut one gone"
    );
    let out = makalog(&["replay", r, "--session", "nobody", "--until", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no session nobody"));
}
