//! The two readers' verdicts on a root, by log (makalog's from `verify --json` and `dump`, the
//! independent reader's from its JSON lines), and their comparison.

pub mod damage;

use crate::common::{makalog, text};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_owned()
}

/// Every root under `format/vectors/v*/`.
pub fn vector_roots() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let base = repo().join("format/vectors");
    for version in std::fs::read_dir(&base).expect("vectors") {
        let version = version.expect("entry").path();
        if !version.is_dir() {
            continue;
        }
        for v in std::fs::read_dir(&version).expect("version dir") {
            let v = v.expect("entry").path();
            if v.join(".makalog-root.json").is_file() {
                out.push(v);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 14, "vectors found: {out:?}");
    out
}

/// Whether `line` is a payload finding of a session (`<file> at byte N: <kind> record S does not
/// decode: ...`), the only kind of finding that does not end a log's valid prefix.
pub fn is_payload_finding(line: &str) -> bool {
    let Some((_, what)) = line
        .strip_prefix("sessions/")
        .and_then(|rest| rest.split_once(" at byte "))
        .and_then(|(_, rest)| rest.split_once(": "))
    else {
        return false;
    };
    let mut words = what.split(' ');
    let kind = words.next().unwrap_or("");
    let (record, seq) = (words.next(), words.next());
    kind.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        && record == Some("record")
        && seq.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        && what.contains(" does not decode: ")
}

/// Which log a finding line is about, and the verdict it makes.
pub fn parse_finding(line: &str) -> Option<(String, Value)> {
    let log_of = |file: &str| -> String {
        match file.strip_prefix("sessions/") {
            Some(rest) => format!("sessions/{}", rest.split('/').next().unwrap_or("")),
            None => file.to_owned(),
        }
    };
    if let Some((files, _)) = line.split_once(": ") {
        if let Some((a, b)) = files.split_once(" / ") {
            return Some((log_of(a), json!({"verdict": "mismatch", "files": [a, b]})));
        }
    }
    let (file, rest) = line.split_once(" at byte ")?;
    let (offset, what) = rest.split_once(": ")?;
    let offset: u64 = offset.parse().ok()?;
    let verdict = if what.starts_with("torn tail") {
        json!({"verdict": "torn_tail", "file": file, "offset": offset})
    } else if what.starts_with("torn create") || what.contains("created and never written") {
        json!({"verdict": "torn_create", "file": file})
    } else {
        json!({"verdict": "damage", "file": file, "offset": offset})
    };
    Some((log_of(file), verdict))
}

/// makalog's verdicts on `root`, by log: `makalog verify --json` for heads and the first
/// finding of each log, `makalog dump` for the records.
pub fn makalog_verdicts(root: &Path) -> BTreeMap<String, Value> {
    let r = root.to_str().expect("utf8");
    let out = makalog(&["verify", r, "--json"]);
    if out.status.code() == Some(2) && text(&out.stderr).contains("not a makalog root") {
        return not_a_root();
    }
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("verify {r}: {e}: {}", text(&out.stderr)));
    let mut logs = BTreeMap::new();
    for s in report["sessions"].as_array().expect("sessions") {
        let log = format!("sessions/{}", s["session"].as_str().expect("id"));
        logs.insert(log, head(s, Vec::new()));
    }
    if let Some(c) = report["claims"].as_object() {
        logs.insert(
            "claims.log".to_owned(),
            head(&Value::Object(c.clone()), Vec::new()),
        );
    }
    // A session whose only segment is a torn create is a note, not a finding (FORMAT.md).
    let torn_creates = report["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| n.contains("created and never written"));
    for line in report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(Value::as_str)
        .chain(torn_creates)
    {
        // A record whose frame is sound but whose payload the stores would refuse does not end
        // the valid prefix; the reader leaves payloads alone (FORMAT.md defers them elsewhere).
        if is_payload_finding(line) {
            continue;
        }
        let (log, verdict) =
            parse_finding(line).unwrap_or_else(|| panic!("finding not understood: {line}"));
        let v = logs
            .get_mut(&log)
            .unwrap_or_else(|| panic!("a finding about a log verify did not list: {line}"));
        if v["end"]["verdict"] == "clean" {
            v["end"] = verdict;
        }
    }
    let dump = makalog(&["dump", r]);
    for line in text(&dump.stdout).lines() {
        let record = parse_deep(line);
        let log = format!("sessions/{}", record["session"].as_str().expect("session"));
        if let Some(v) = logs.get_mut(&log) {
            v["records"].as_array_mut().expect("records").push(record);
        }
    }
    logs
}

/// One JSON line, however deep: a record of a payload nested to the dump rule's edge (127)
/// is deeper than `serde_json`'s default limit once inside the line's own objects.
pub fn parse_deep(line: &str) -> Value {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(line);
    de.disable_recursion_limit();
    Value::deserialize(&mut de).unwrap_or_else(|e| panic!("a JSON line: {e}: {line}"))
}

/// The verdict on a path that is not a root, as either side gives it.
pub fn not_a_root() -> BTreeMap<String, Value> {
    BTreeMap::from([("(root)".to_owned(), json!("not a root"))])
}

pub fn head(summary: &Value, records: Vec<Value>) -> Value {
    json!({"count": summary["records"], "headSeq": summary["headSeq"],
           "chain": summary["chain"], "records": records, "end": {"verdict": "clean"}})
}

/// The independent reader's verdicts on each of `roots`, by log, in the same shape (records
/// compared for sessions only: makalog dump prints none for the claims log).
pub fn independent_verdicts(roots: &[&Path]) -> Vec<BTreeMap<String, Value>> {
    let script = repo().join("format/independent/reader.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(roots)
        .output()
        .expect("python3 must be installed to run the independent reader (tools/test installs it)");
    assert!(
        out.status.success(),
        "reader.py failed: {}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout)
        .expect("utf8")
        .lines()
        .collect();
    assert_eq!(lines.len(), roots.len(), "one line a root");
    lines
        .iter()
        .zip(roots)
        .map(|(line, root)| {
            let v = parse_deep(line);
            assert_eq!(
                v["root"].as_str(),
                root.to_str(),
                "the reader's lines in the roots' order"
            );
            if v["not_a_root"] == true {
                return not_a_root();
            }
            let mut logs = BTreeMap::new();
            for log in v["logs"].as_array().expect("logs") {
                let name = log["log"].as_str().expect("log").to_owned();
                let mut entry = Map::new();
                for k in ["count", "headSeq", "chain", "end"] {
                    entry.insert(k.to_owned(), log[k].clone());
                }
                let records = match name.as_str() {
                    "claims.log" => json!([]),
                    _ => log["records"].clone(),
                };
                entry.insert("records".to_owned(), records);
                logs.insert(name, Value::Object(entry));
            }
            logs
        })
        .collect()
}

/// Compares both readers on `cases`; returns one report per disagreement, with its kind (the
/// verdicts each side ended the log with).
pub fn disagreements(cases: &[(String, PathBuf)]) -> Vec<(String, String)> {
    let roots: Vec<&Path> = cases.iter().map(|c| c.1.as_path()).collect();
    let theirs = independent_verdicts(&roots);
    let mut out = Vec::new();
    for ((label, root), theirs) in cases.iter().zip(theirs) {
        let ours = makalog_verdicts(root);
        let names: std::collections::BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
        for log in names {
            let (a, b) = (ours.get(log), theirs.get(log));
            if a != b {
                let end = |v: Option<&Value>| {
                    v.map_or("none".to_owned(), |v| v["end"]["verdict"].to_string())
                };
                let kind = format!("{} / {}", end(a), end(b));
                out.push((
                    kind,
                    format!(
                        "{label} ({}), {log}:\n  makalog:     {}\n  independent: {}",
                        root.display(),
                        brief(a),
                        brief(b)
                    ),
                ));
            }
        }
    }
    out
}

/// A verdict without its records when both have many, so a report stays readable.
pub fn brief(v: Option<&Value>) -> String {
    match v {
        None => "(no such log)".into(),
        Some(v) => {
            let mut v = v.clone();
            let n = v["records"].as_array().map_or(0, Vec::len);
            v["records"] = json!(format!("{n} records"));
            v.to_string()
        }
    }
}

pub fn assert_agree(cases: &[(String, PathBuf)]) {
    let found = disagreements(cases);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for (kind, _) in &found {
        *kinds.entry(kind.as_str()).or_default() += 1;
    }
    assert!(
        found.is_empty(),
        "{} of {} roots read differently, by (makalog's end, the reader's end): {kinds:?}\n{}",
        found.len(),
        cases.len(),
        found
            .iter()
            .take(12)
            .map(|f| f.1.clone())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
