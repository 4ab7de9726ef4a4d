//! A session's lifecycle rows as planned records: admissions and start rejections, runs and
//! their events (its messages are in `messages`).

use super::order::{fits, Rank, Timed};
use super::report::Report;
use super::sql::{int, json, key, select, text, time};
use makalog::format::{FrameKind, RecordKind};
use makalog::import::Planned;
use makalog::model::{RootTurnAdmission, RootTurnRejection, RunEvent, RunHeader};
use rusqlite::Connection;
use std::collections::HashMap;

/// A session's runs, by creation.
pub(super) const RUNS: &str =
    "SELECT run_id, created_at, record_json FROM core_agent_runs WHERE session_id = ?1 ORDER BY created_at, run_id";

/// A session's run events, by run and sequence.
pub(super) const RUN_EVENTS: &str =
    "SELECT run_id, sequence, event_ts, record_json FROM core_agent_run_events WHERE session_id = ?1 ORDER BY run_id, sequence";

pub(super) fn record(kind: RecordKind, canonical: &str) -> Planned {
    Planned::Record {
        kind,
        payload: canonical.to_owned(),
    }
}

/// Admissions and start rejections, each by its time, for a root of format `version`.
pub fn turns(
    conn: &Connection,
    sid: &str,
    version: u16,
    report: &mut Report,
) -> rusqlite::Result<Vec<Vec<Timed>>> {
    let table = |table, at, kind| TurnTable {
        table,
        at,
        kind,
        version,
    };
    Ok(vec![
        turn_records(
            conn,
            sid,
            table(TURN_TABLES[0].0, TURN_TABLES[0].1, RecordKind::Admission),
            report,
            &|v| RootTurnAdmission::from_value(v).map(|a| a.canonical_json().to_owned()),
        )?,
        turn_records(
            conn,
            sid,
            table(
                TURN_TABLES[1].0,
                TURN_TABLES[1].1,
                RecordKind::TurnRejection,
            ),
            report,
            &|v| RootTurnRejection::from_value(v).map(|r| r.canonical_json().to_owned()),
        )?,
    ])
}

/// The tables of turn records and their time columns: admissions, then start rejections.
pub(super) const TURN_TABLES: [(&str, &str); 2] = [
    ("core_root_turn_admissions", "admitted_at"),
    ("core_root_turn_start_rejections", "rejected_at"),
];

/// A session's rows of a table of turn records, by time.
pub(super) fn turn_sql(table: &str, at: &str) -> String {
    format!("SELECT turn_id, {at}, record_json FROM {table} WHERE session_id = ?1 ORDER BY {at}, turn_id")
}

/// A table of turn records, the time column, the kind they become, and the format version of
/// the root they go to.
struct TurnTable {
    table: &'static str,
    at: &'static str,
    kind: RecordKind,
    version: u16,
}

/// One table of turn records (`session_id`, `turn_id`, the time column, `record_json`), each
/// decoded by `decode` into its canonical JSON.
fn turn_records(
    conn: &Connection,
    sid: &str,
    TurnTable {
        table,
        at,
        kind,
        version,
    }: TurnTable,
    report: &mut Report,
    decode: &dyn Fn(serde_json::Value) -> makalog::Result<String>,
) -> rusqlite::Result<Vec<Timed>> {
    let mut out = Vec::new();
    let sql = turn_sql(table, at);
    for r in select(conn, &sql, [sid])? {
        // A kind newer than the root's format (a start rejection in a version 2 root) would
        // be refused by its session's writer midway, at every rerun: it is refused here.
        if kind.first_version() > version {
            let why = format!(
                "a {} record needs format version {}; the root is version {version}",
                kind.name(),
                kind.first_version()
            );
            report.refused(table, format!("{sid}/{}", key(&[&r[0]])), why);
            continue;
        }
        let decoded = json(&r[2])
            .and_then(|v| decode(v).map_err(|e| e.to_string()))
            .and_then(|canonical| {
                // The ids the record names must be its row's: the store keeps a session's turn
                // records only.
                let v: serde_json::Value = serde_json::from_str(&canonical).unwrap_or_default();
                let turn = text(&r[0])?;
                if v["sessionId"].as_str() != Some(sid) || v["turnId"].as_str() != Some(turn) {
                    return Err(format!(
                        "its record names turn {} of session {}",
                        v["turnId"], v["sessionId"]
                    ));
                }
                fits(&canonical)?;
                Ok(canonical)
            });
        match (decoded, time(&r[1])) {
            (Ok(canonical), Ok(at)) => {
                report.imported(table, 1);
                out.push(Timed::new(at, Rank::Turn, record(kind, &canonical)));
            }
            (Err(why), _) | (_, Err(why)) => {
                report.refused(table, format!("{sid}/{}", key(&[&r[0]])), why)
            }
        }
    }
    Ok(out)
}

/// Runs (by creation) and each run's events (in sequence order, from 0, none before its run).
pub fn runs(
    conn: &Connection,
    sid: &str,
    report: &mut Report,
) -> rusqlite::Result<Vec<Vec<Timed>>> {
    let table = "core_agent_runs";
    let mut headers = Vec::new();
    let mut created: HashMap<String, f64> = HashMap::new();
    for r in select(conn, RUNS, [sid])? {
        let decoded = json(&r[2])
            .and_then(|v| RunHeader::from_value(v).map_err(|e| e.to_string()))
            .and_then(|h| {
                let run_id = text(&r[0])?;
                if h.run_id() != run_id || h.session_id() != sid {
                    return Err(format!(
                        "its record names run {} of session {}",
                        h.run_id(),
                        h.session_id()
                    ));
                }
                fits(h.canonical_json())?;
                Ok((h, time(&r[1])?))
            });
        match decoded {
            Ok((h, at)) => {
                report.imported(table, 1);
                created.insert(h.run_id().to_owned(), at);
                headers.push(Timed::new(
                    at,
                    Rank::Run,
                    record(RecordKind::Run, h.canonical_json()),
                ));
            }
            Err(why) => report.refused(table, format!("{sid}/{}", key(&[&r[0]])), why),
        }
    }
    let mut streams = vec![headers];
    streams.extend(run_events(conn, sid, &created, report)?);
    Ok(streams)
}

fn run_events(
    conn: &Connection,
    sid: &str,
    created: &HashMap<String, f64>,
    report: &mut Report,
) -> rusqlite::Result<Vec<Vec<Timed>>> {
    let table = "core_agent_run_events";
    let mut streams: Vec<Vec<Timed>> = Vec::new();
    let mut current: Option<String> = None;
    let (mut next, mut broken, mut terminal) = (0i64, false, false);
    for r in select(conn, RUN_EVENTS, [sid])? {
        let run_id = super::sql::key_part(&r[0]);
        if current.as_deref() != Some(&run_id) {
            current = Some(run_id.clone());
            (next, broken, terminal) = (0, false, false);
            streams.push(Vec::new());
        }
        let row_key = format!("{sid}/{}", key(&[&r[0], &r[1]]));
        let Some(&run_at) = created.get(&run_id) else {
            report.refused(table, row_key, "its run was not imported".into());
            continue;
        };
        let checked = (|| {
            let seq = int(&r[1])?;
            if broken {
                return Err("follows a run event of its run that was not imported: its sequence number cannot be kept".to_owned());
            }
            if seq != next {
                return Err(format!("sequence {seq} where its run's next is {next}"));
            }
            let event = RunEvent::from_value(json(&r[3])?).map_err(|e| e.to_string())?;
            if event.run_id() != run_id || event.value()["sessionId"].as_str() != Some(sid) {
                return Err("its record names another run or session".to_owned());
            }
            if event.is_terminal() && terminal {
                return Err("a second terminal event of its run".to_owned());
            }
            fits(event.canonical_json())?;
            Ok((event, time(&r[2])?))
        })();
        match checked {
            Ok((event, ts)) => {
                report.imported(table, 1);
                next += 1;
                terminal |= event.is_terminal();
                let stream = streams.last_mut().expect("a stream per run");
                stream.push(Timed::new(
                    ts.max(run_at),
                    Rank::RunEvent,
                    record(RecordKind::RunEvent, event.canonical_json()),
                ));
            }
            Err(why) => {
                broken = true;
                report.refused(table, row_key, why);
            }
        }
    }
    Ok(streams)
}
