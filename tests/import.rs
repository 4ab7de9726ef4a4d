//! Importing through the stores (`makalog::import`): a plan written once, then again (nothing
//! new); a target holding other records under a planned id refused with nothing written; and
//! an import crashed at every persistence point with every tear, then run again, ending with
//! exactly the records and claims of an uninterrupted one.

mod support;

use makalog::claims::{AdmissionStatus, AgentGraphIntentClaimRequest, SubagentSpawnClaim};
use makalog::format::RecordKind;
use makalog::import::{GraphClaimPlan, IdClaim, ImportOutcome, Planned, SessionPlan, Target};
use makalog::model::{RunEvent, RunHeader, SessionHeader, StoredMessage};
use makalog::root::Owner;
use makalog::segment::SessionReader;
use makalog::storage::{SimRng, SimStorage, Storage, Tear};
use makalog::store::open_execution_stores_for_write;
use serde_json::{json, Value};
use std::sync::Arc;
use support::events::{partial, terminal, text, user};
use support::stores::session_header;

fn record(kind: RecordKind, canonical: &str) -> Planned {
    Planned::Record {
        kind,
        payload: canonical.to_owned(),
    }
}

fn run_header(session: &str, run: &str, status: &str) -> Value {
    json!({
        "runId": run, "sessionId": session, "turnId": "t1", "status": status,
        "backendKind": "fake", "llmConnectionSlug": "fake", "modelId": "fake-model",
        "cwd": "/work", "permissionMode": "ask", "createdAt": 10, "updatedAt": 20
    })
}

/// A session with a run, its events, runtime events (one a live partial) and messages.
fn session_plan(id: &str, id_claim: IdClaim, header: Value) -> SessionPlan {
    let header = SessionHeader::from_value(header).expect("header");
    let run = RunHeader::from_value(run_header(id, "r1", "completed")).expect("run");
    let mut records = vec![
        record(RecordKind::SessionHeader, header.canonical_json()),
        record(RecordKind::Run, run.canonical_json()),
    ];
    for (i, kind) in ["run_created", "run_started", "run_completed"]
        .iter()
        .enumerate()
    {
        let e = RunEvent::from_value(json!({
            "type": kind, "id": format!("{id}-re{i}"), "runId": "r1", "sessionId": id,
            "turnId": "t1", "ts": 10 + i
        }))
        .expect("run event");
        records.push(record(RecordKind::RunEvent, e.canonical_json()));
    }
    let events = [
        (
            user(id, "r1", "t1", &format!("{id}-u"), 11.0, "hello"),
            Some(1),
        ),
        (
            partial(id, "r1", "t1", &format!("{id}-p"), 12.0, "wor"),
            None,
        ),
        (
            text(id, "r1", "t1", &format!("{id}-x"), 13.0, "world"),
            Some(2),
        ),
        (
            terminal(id, "r1", "t1", &format!("{id}-end"), 14.0, "completed"),
            Some(3),
        ),
    ];
    for (event, seq) in events {
        records.push(Planned::Event { event, seq });
    }
    for i in 0..3 {
        let m = StoredMessage::from_value(json!({
            "type": "user", "id": format!("{id}-m{i}"), "turnId": "t1", "ts": 15 + i, "text": "hi"
        }))
        .expect("message");
        records.push(record(RecordKind::Message, m.canonical_json()));
    }
    SessionPlan {
        session_id: id.to_owned(),
        id_claim,
        records,
    }
}

fn child_header() -> Value {
    let mut h = session_header("child", 5);
    h["subagentParent"] = json!({
        "kind": "subagent", "parentSessionId": "parent",
        "spawnedBy": {"parentRunId": "r1", "parentTurnId": "t1", "toolCallId": "tool-1"},
        "lifecycle": "foreground"
    });
    h["subagentRuntime"] = json!({
        "schemaVersion": 1, "definitionVersion": 1, "agentId": "a", "agentName": "A",
        "profile": "local_read", "systemPrompt": "p", "toolNames": [], "categoryPolicy": {}
    });
    h["subagentSpawn"] = json!({
        "schemaVersion": 1, "requestFingerprint": "f".repeat(64),
        "initialTurnId": "t1", "initialRunId": "r1"
    });
    h
}

struct Plan {
    sessions: Vec<SessionPlan>,
    graph: Vec<GraphClaimPlan>,
}

fn plan() -> Plan {
    let child = SessionHeader::from_value(child_header()).expect("child header");
    let spawn = SubagentSpawnClaim {
        parent_session_id: "parent".into(),
        parent_run_id: "r1".into(),
        tool_call_id: "tool-1".into(),
        swarm_id: String::new(),
        item_id: String::new(),
        request_fingerprint: "f".repeat(64),
        child_session_id: "child".into(),
        child_header: serde_json::from_str(child.canonical_json()).ok(),
    };
    let graph = GraphClaimPlan {
        request: AgentGraphIntentClaimRequest {
            schema_version: 1,
            claim_id: format!("graph_claim_{}", "1".repeat(32)),
            graph_id: "graph-1".into(),
            intent_id: format!("graph_intent_{}", "2".repeat(32)),
            intent_fingerprint: format!("sha256:{}", "3".repeat(64)),
            readiness_context_fingerprint: format!("sha256:{}", "4".repeat(64)),
            target_operator_id: "op".into(),
            target_session_id: "child".into(),
            target_turn_id: "t1".into(),
            target_run_id: "r1".into(),
        },
        claimed_at: 7,
        status: AdmissionStatus::Executing,
        reason: None,
    };
    Plan {
        sessions: vec![
            session_plan(
                "parent",
                IdClaim::Create { at: 1 },
                session_header("parent", 1),
            ),
            session_plan(
                "child",
                IdClaim::Spawn {
                    claim: spawn,
                    at: 5,
                },
                child_header(),
            ),
        ],
        graph: vec![graph],
    }
}

/// Runs the import on `storage`'s root (checking everything, then writing), as the tool does.
fn import(storage: &Arc<impl Storage + 'static>, plan: &Plan) -> makalog::Result<ImportOutcome> {
    let owner = Owner::try_acquire_creating(storage.clone())?.expect("lease free");
    let stores = open_execution_stores_for_write(&owner)?;
    let written = (|| {
        let target = Target::new(&stores)?;
        for s in &plan.sessions {
            target.check_session(s)?;
        }
        target.check_graph_claims(&plan.graph)?;
        let mut out = ImportOutcome::default();
        for s in &plan.sessions {
            let have = target.check_session(s)?;
            target.write_session(s, have, &mut out)?;
        }
        target.write_graph_claims(&plan.graph, &mut out)?;
        Ok(out)
    })();
    let closed = stores.close();
    let out = written?;
    closed?;
    Ok(out)
}

/// Every session's records (kind, payload) and the claims, as JSON lines.
/// A session's records, each its kind and payload.
type Records = Vec<(u8, Vec<u8>)>;

fn contents(storage: &dyn Storage) -> (Vec<(String, Records)>, Vec<Value>) {
    let mut sessions = Vec::new();
    for id in ["child", "parent"] {
        let records = SessionReader::open(storage, id, 1)
            .expect("reader")
            .map(|r| r.expect("record"))
            .map(|r| (r.kind as u8, r.payload.to_vec()))
            .collect();
        sessions.push((id.to_owned(), records));
    }
    let bytes = storage
        .read_file(std::path::Path::new(makalog::claims::CLAIMS_FILE))
        .expect("claims log");
    let marker = makalog::root::read_marker(storage).expect("marker");
    let replay = makalog::claims::replay_claims(&bytes, &marker.root_id_bytes().expect("id"));
    (sessions, replay.tables.to_json_lines(None))
}

#[test]
fn a_plan_is_written_once_and_a_rerun_writes_nothing() {
    let (t, storage) = support::temp_root();
    let p = plan();
    let first = import(&storage, &p).expect("import");
    let records: usize = p.sessions.iter().map(|s| s.records.len()).sum();
    assert_eq!(first.records_written, records);
    assert_eq!(first.sessions_written, 2);
    // parent's id, child's id and spawn (one claim), the graph claim and its status.
    assert_eq!(first.claims_written, 4);
    let before = support::snapshot(&t.path().join("root"));
    let again = import(&storage, &p).expect("again");
    assert!(again.wrote_nothing(), "{again:?}");
    assert_eq!(again.records_present, records);
    assert_eq!(again.claims_present, 3);
    let after = support::snapshot(&t.path().join("root"));
    let logs = |s: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>| {
        s.iter()
            .filter(|(p, _)| {
                p.to_string_lossy().ends_with(".log") || p.to_string_lossy().contains("claims")
            })
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(logs(&before), logs(&after), "a rerun appends nothing");
    let reader = makalog::store::ReadOnlySessions::new(&*storage);
    let parent = reader.read_runtime_events("parent").expect("events");
    assert_eq!(parent.events.len(), 3, "the partial is not immutable");
    assert_eq!(parent.live_partials.len(), 1);
    assert_eq!(parent.live_partials[0].id(), "parent-p");
    let claim = reader.read_session("child").expect("read").expect("child");
    assert!(claim.has_subagent_spawn());
    assert!(makalog::verify::verify_root(&*storage)
        .expect("verify")
        .is_clean());
}

#[test]
fn a_target_holding_other_records_under_a_planned_id_is_refused_with_nothing_written() {
    let (t, storage) = support::temp_root();
    {
        let (_owner, s) = support::stores::open(&storage);
        let mut other = session_header("parent", 1);
        other["name"] = json!("someone else's session");
        s.sessions.create(other).expect("create");
        s.close().expect("close");
    }
    let before = support::snapshot(&t.path().join("root"));
    let err = import(&storage, &plan()).expect_err("refused");
    assert!(
        matches!(&err, makalog::Error::ImportConflict { what } if what.contains("session parent")),
        "{err}"
    );
    let after = support::snapshot(&t.path().join("root"));
    let logs = |s: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>| {
        s.iter()
            .filter(|(p, _)| !p.ends_with("owner.lock"))
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(logs(&before), logs(&after), "nothing written");
    assert!(!t.path().join("root/sessions/child").exists());
}

#[test]
fn an_import_crashed_anywhere_and_run_again_ends_as_an_uninterrupted_one() {
    let p = plan();
    let whole = Arc::new(SimStorage::new());
    import(&whole, &p).expect("uninterrupted import");
    let want = contents(&*whole);
    let points = whole.persistence_points();
    assert!(points > 10, "{points}");
    let mut rng = SimRng::new(11);
    let mut scenarios = 0;
    for point in 1..=points {
        for tear in [Tear::None, Tear::All, Tear::Pages] {
            let target = Arc::new(SimStorage::new());
            target.crash_before_point(point);
            assert!(import(&target, &p).is_err(), "dies at point {point}");
            target.crash(tear, &mut rng);
            import(&target, &p).unwrap_or_else(|e| panic!("point {point} {tear:?}: rerun: {e}"));
            assert_eq!(contents(&*target), want, "point {point} {tear:?}");
            scenarios += 1;
        }
    }
    println!("import crash: {scenarios} scenarios");
}

/// A planned graph intent claim is refused when the target holds its (graph, intent) as
/// another claim, or another intent holds its claim id, its target turn or its target run (the
/// claims log's unique keys), and taken when it shares none of them; a rerun of the same claim
/// passes. Each key is looked up, so a rerun over many claims costs their number, not its square.
#[test]
fn a_graph_claim_the_target_holds_otherwise_is_refused_by_each_of_its_keys() {
    let (t, storage) = support::temp_root();
    let p = plan();
    import(&storage, &p).expect("import");
    let with = |f: &dyn Fn(&mut AgentGraphIntentClaimRequest)| {
        let mut g = p.graph[0].clone();
        f(&mut g.request);
        Plan {
            sessions: p.sessions.clone(),
            graph: vec![g],
        }
    };
    let other_intent = |r: &mut AgentGraphIntentClaimRequest| {
        r.intent_id = format!("graph_intent_{}", "5".repeat(32));
        r.claim_id = format!("graph_claim_{}", "6".repeat(32));
        r.target_turn_id = "t9".into();
        r.target_run_id = "r9".into();
    };
    type Change<'a> = &'a dyn Fn(&mut AgentGraphIntentClaimRequest);
    let refused: [(&str, Change); 4] = [
        ("its intent, claimed otherwise", &|r| {
            r.intent_fingerprint = format!("sha256:{}", "7".repeat(64))
        }),
        ("its claim id", &|r| {
            other_intent(r);
            r.claim_id = p.graph[0].request.claim_id.clone();
        }),
        ("its target turn", &|r| {
            other_intent(r);
            r.target_turn_id = "t1".into();
        }),
        ("its target run", &|r| {
            other_intent(r);
            r.target_run_id = "r1".into();
        }),
    ];
    let root = t.path().join("root");
    for (what, change) in refused {
        let before = support::snapshot(&root);
        let err = import(&storage, &with(change)).expect_err(what);
        assert!(
            matches!(&err, makalog::Error::ImportConflict { what } if what.contains("claimed in the target otherwise")),
            "{what}: {err}"
        );
        let same = |s: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>| {
            s.iter()
                .filter(|(p, _)| !p.ends_with("owner.lock"))
                .map(|(p, b)| (p.clone(), b.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            same(&before),
            same(&support::snapshot(&root)),
            "{what}: nothing written"
        );
    }
    let taken = import(&storage, &with(&other_intent)).expect("no key shared");
    assert_eq!(taken.claims_written, 2, "the claim and its status");
    assert!(import(&storage, &p).expect("rerun").wrote_nothing());
}
