//! `makalog import-sqlite` on the ledger the original runtime wrote (compat/maka-sqlite):
//! every row accounted for against counts.txt, the tools and stores answering what
//! expected-summary.json says the original answered, a rerun importing nothing.
#![cfg(feature = "sqlite")]

mod common;

use common::sqlite_gen::fixture_dir;
use common::{assert_clean, find, import, json_lines, makalog, s, snapshot, text};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The fixture imported into a fresh root.
fn imported_fixture() -> (tempfile::TempDir, PathBuf, Value) {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path().join("root");
    let (code, report, err) = import(&fixture_dir(), &root);
    assert_eq!(code, 0, "{err}");
    (t, root, report)
}

/// counts.txt: (file, table) → rows.
fn counts() -> BTreeMap<(String, String), u64> {
    let text = std::fs::read_to_string(fixture_dir().join("counts.txt")).expect("counts.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                (f[0].to_owned(), f[1].to_owned()),
                f[2].parse().expect("count"),
            )
        })
        .collect()
}

#[test]
fn the_fixture_imports_with_every_row_of_every_table_accounted_for() {
    let (_t, _root, report) = imported_fixture();
    assert_eq!(report["format"], "makalog-import-report/1");
    let counts = counts();
    let tables = report["tables"].as_array().expect("tables");
    assert_eq!(tables.len(), counts.len(), "every table of both databases");
    let mut total = 0;
    for t in tables {
        let key = (
            t["file"].as_str().expect("file").to_owned(),
            t["table"].as_str().expect("table").to_owned(),
        );
        let rows = t["rows"].as_u64().expect("rows");
        assert_eq!(Some(&rows), counts.get(&key), "{key:?}");
        let (imported, not) = (
            t["imported"].as_u64().expect("imported"),
            t["notImported"].as_u64().expect("not"),
        );
        assert_eq!(imported + not, rows, "{key:?}");
        // A row not imported has its table's reason or its own.
        let refused = t["refused"].as_array().map_or(0, Vec::len) as u64;
        assert!(
            not == 0 || t["notModeled"].is_string() || refused == not,
            "{key:?}: {t}"
        );
        total += rows;
    }
    assert_eq!(report["totals"]["rows"].as_u64(), Some(total));
    assert_eq!(
        report["totals"]["rows"].as_u64(),
        Some(counts.values().sum())
    );
    // What the original's APIs read is imported whole.
    for table in [
        "session_metadata",
        "subagent_spawns",
        "core_agent_runs",
        "core_agent_run_events",
        "core_root_turn_admissions",
        "runtime_events",
        "runtime_session_event_ordinals",
        "runtime_partial_snapshots",
        "runtime_partial_segments",
        "session_messages",
        "agent_graph_intent_claims",
    ] {
        let t = find(&report["tables"], "table", table);
        assert_eq!(t["imported"], t["rows"], "{table}");
        assert!(t["refused"].is_null(), "{table}: {t}");
    }
    assert_eq!(report["written"]["nothingNew"], false);
}

fn expected() -> Value {
    let text =
        std::fs::read_to_string(fixture_dir().join("expected-summary.json")).expect("summary");
    serde_json::from_str(&text).expect("json")
}

#[test]
fn after_import_the_tools_and_the_stores_answer_what_the_original_answered() {
    let (_t, root, _) = imported_fixture();
    let want = expected();
    let storage = makalog::storage::RealStorage::unmapped(&root);
    let reader = makalog::store::ReadOnlySessions::new(&storage);
    let listed = json_lines(&["sessions", s(&root), "--json"]);
    assert_eq!(
        listed.len(),
        want["totals"]["sessions"].as_u64().expect("n") as usize
    );
    let (mut runs, mut messages, mut events, mut immutable, mut run_events) = (0, 0, 0, 0, 0);
    for ws in want["sessions"].as_array().expect("sessions") {
        let id = ws["id"].as_str().expect("id");
        let header = reader.read_session(id).expect("read").expect("imported");
        let v = header.value();
        assert_eq!(v["name"], ws["name"], "{id}");
        assert_eq!(v["backend"], ws["backend"], "{id}");
        let parent = v["subagentParent"]["parentSessionId"].clone();
        assert_eq!(parent, ws["parentSessionId"], "{id}");
        assert!(
            listed.iter().any(|l| l.to_string().contains(id)),
            "sessions --json lists {id}"
        );

        let got_runs = reader.list_session_runs_with_events(id).expect("runs");
        let cli_runs = json_lines(&["runs", s(&root), "--session", id, "--json"]);
        assert_eq!(cli_runs.len(), got_runs.len());
        let wr = ws["runs"].as_array().expect("runs");
        assert_eq!(got_runs.len(), wr.len(), "{id}");
        let read = reader.read_runtime_events(id).expect("events");
        let (sealed, live) = (read.events, read.live_partials);
        for ((run, evs), w) in got_runs.iter().zip(wr) {
            let rv = run.value();
            assert_eq!(rv["runId"], w["runId"]);
            assert_eq!(rv["turnId"], w["turnId"]);
            assert_eq!(rv["status"], w["status"], "{}", w["runId"]);
            assert_eq!(
                rv.get("failureClass").cloned().unwrap_or(Value::Null),
                w["failureClass"]
            );
            if let Some(agent) = w.get("agentId") {
                assert_eq!(&rv["agentId"], agent);
            }
            let types: Vec<&str> = evs.iter().map(|(_, e)| e.event_type()).collect();
            let want_types: Vec<&str> = w["runEventTypes"]
                .as_array()
                .expect("types")
                .iter()
                .map(|t| t.as_str().expect("t"))
                .collect();
            assert_eq!(types, want_types, "{}", w["runId"]);
            let rid = w["runId"].as_str().expect("run");
            let of_run = |e: &&makalog::event::RuntimeEvent| e.run_id() == rid;
            let n_sealed = sealed.iter().filter(of_run).count();
            assert_eq!(
                n_sealed as u64,
                w["immutableRuntimeEventCount"].as_u64().expect("n"),
                "{rid}"
            );
            assert_eq!(
                (n_sealed + live.iter().filter(of_run).count()) as u64,
                w["runtimeEventCount"].as_u64().expect("n"),
                "{rid}"
            );
            runs += 1;
            run_events += evs.len();
        }

        let msgs = reader.read_messages(id, None).expect("messages");
        assert_eq!(
            msgs.len() as u64,
            ws["messageCount"].as_u64().expect("n"),
            "{id}"
        );
        let mut types: BTreeMap<String, u64> = BTreeMap::new();
        for m in &msgs {
            *types
                .entry(m.value()["type"].as_str().expect("type").to_owned())
                .or_default() += 1;
        }
        let want_types: BTreeMap<String, u64> =
            serde_json::from_value(ws["messageTypes"].clone()).expect("types");
        assert_eq!(types, want_types, "{id}");
        assert_eq!(
            json_lines(&["messages", s(&root), "--session", id, "--json"]).len(),
            msgs.len()
        );
        messages += msgs.len();

        assert_eq!(
            sealed.len() as u64,
            ws["immutableRuntimeEventCount"].as_u64().expect("n")
        );
        assert_eq!(
            (sealed.len() + live.len()) as u64,
            ws["runtimeEventCount"].as_u64().expect("n")
        );
        events += sealed.len() + live.len();
        immutable += sealed.len();

        let groups = makalog::index::group_invocations(&sealed, &live);
        let cli = json_lines(&["invocations", s(&root), "--session", id, "--json"]);
        let wi = ws["invocations"].as_array().expect("invocations");
        assert_eq!(groups.len(), wi.len(), "{id}");
        assert_eq!(cli.len(), wi.len(), "invocations --json lists each");
        for ((g, c), w) in groups.iter().zip(&cli).zip(wi) {
            assert_eq!(g.invocation_id, w["invocationId"].as_str().expect("inv"));
            assert_eq!(g.run_id, w["runId"].as_str().expect("run"));
            assert_eq!(g.turn_id, w["turnId"].as_str().expect("turn"));
            assert_eq!(g.first_ts, w["firstTs"].as_f64().expect("ts"));
            assert_eq!(g.event_count as u64, w["eventCount"].as_u64().expect("n"));
            assert_eq!(
                g.partial_event_count as u64,
                w["partialEventCount"].as_u64().expect("n")
            );
            let terminal = g.terminal_event.as_ref().expect("terminal");
            assert_eq!(terminal["id"], w["terminalEventId"]);
            assert_eq!(terminal["status"], w["terminalStatus"]);
            let class = terminal["actions"]["stateDelta"]["failureClass"].clone();
            assert_eq!(class, w["terminalFailureClass"]);
            assert_eq!(c["invocationId"], w["invocationId"]);
            assert_eq!(c["terminalEvent"]["id"], w["terminalEventId"]);
        }
    }
    let totals = &want["totals"];
    assert_eq!(runs, totals["runs"].as_u64().expect("runs") as usize);
    assert_eq!(
        run_events,
        totals["runEvents"].as_u64().expect("n") as usize
    );
    assert_eq!(messages, totals["messages"].as_u64().expect("n") as usize);
    assert_eq!(
        events,
        totals["runtimeEvents"].as_u64().expect("n") as usize
    );
    assert_eq!(
        immutable,
        totals["immutableRuntimeEvents"].as_u64().expect("n") as usize
    );

    let claims = json_lines(&["claims", s(&root), "--json"]);
    let graph: Vec<&Value> = claims
        .iter()
        .filter(|c| c["type"] == "graph_intent_claim")
        .collect();
    let wg = want["graphClaims"].as_array().expect("claims");
    assert_eq!(graph.len(), wg.len());
    for w in wg {
        let c = graph
            .iter()
            .find(|c| c["claim"]["claimId"] == w["claimId"])
            .expect("claimed");
        for f in [
            "graphId",
            "intentId",
            "targetSessionId",
            "targetTurnId",
            "targetRunId",
            "claimedAt",
        ] {
            assert_eq!(c["claim"][f], w[f], "{f}");
        }
        assert_eq!(c["status"], w["status"]);
        let target = reader
            .list_session_runs(w["targetSessionId"].as_str().expect("s"))
            .expect("runs")
            .into_iter()
            .find(|r| r.run_id() == w["targetRunId"].as_str().expect("r"))
            .expect("target run");
        assert_eq!(target.value()["status"], w["targetRunStatus"]);
    }
    let spawns = claims
        .iter()
        .filter(|c| c["type"] == "subagent_spawn_claim")
        .count();
    assert_eq!(spawns, 3, "each child's spawn");

    assert_clean(&root);
}

#[test]
fn a_second_import_imports_nothing_new_and_says_so() {
    let (_t, root, first) = imported_fixture();
    assert!(first["written"]["records"].as_u64().expect("n") > 100);
    let before = snapshot(&root);
    let (code, again, err) = import(&fixture_dir(), &root);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again["written"]["nothingNew"], true);
    assert_eq!(again["written"]["records"], 0);
    assert_eq!(
        again["written"]["recordsPresent"],
        first["written"]["records"]
    );
    assert_eq!(again["totals"], first["totals"]);
    let logs = |s: &BTreeMap<PathBuf, Vec<u8>>| -> BTreeMap<PathBuf, Vec<u8>> {
        s.iter()
            .filter(|(p, _)| !p.ends_with("owner.lock"))
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect()
    };
    assert_eq!(
        logs(&before),
        logs(&snapshot(&root)),
        "a rerun changes no byte"
    );
    let out = makalog(&["import-sqlite", s(&fixture_dir()), s(&root)]);
    assert!(
        text(&out.stdout).contains("nothing new"),
        "{}",
        text(&out.stdout)
    );
}
