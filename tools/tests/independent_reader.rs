//! FORMAT.md is the contract: `format/independent/reader.py`, written from that page alone,
//! must reach makalog's verdicts. For every golden vector, a demo root, and damaged copies of
//! them (truncations and single-bit flips of every segment and claims log, at deterministic
//! places), each log's valid prefix (the records as `makalog dump` prints them, or for the
//! claims log its count and head), its head, and what ends the prefix (clean, a torn tail, a
//! torn create, damage at a file and offset, two files that disagree) are the same from both.
//! python3 is required (tools/test installs it); without it this test fails.

mod common;

use common::{makalog, text};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_owned()
}

/// Every root under `format/vectors/v*/`.
fn vector_roots() -> Vec<PathBuf> {
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

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// The logs of a root: its segment files and claims log, relative to the root.
fn log_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if root.join("claims.log").is_file() {
        out.push(PathBuf::from("claims.log"));
    }
    if let Ok(sessions) = std::fs::read_dir(root.join("sessions")) {
        for s in sessions {
            let s = s.expect("entry").path();
            for f in std::fs::read_dir(&s).expect("session dir") {
                let f = f.expect("entry").path();
                if f.extension().is_some_and(|x| x == "seg") {
                    out.push(f.strip_prefix(root).expect("under root").to_owned());
                }
            }
        }
    }
    out.sort();
    out
}

/// A small deterministic generator (splitmix64), so the damaged copies are the same each run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// Damaged copies of `root` under `out`: for each log file, truncations at the header's edges,
/// the last byte and a footer's length from the end, and at random places; bit flips at random
/// places and in its first and last bytes; a segment followed by another of its session
/// removed; a segment renamed to another first seq, or copied into a session of its own; only
/// every `every`-th of them is made. Returns (what was done, the copy).
fn damaged(root: &Path, out: &Path, rng: &mut Rng, every: usize) -> Vec<(String, PathBuf)> {
    let mut made = Vec::new();
    let mut n = 0usize;
    let files = log_files(root);
    for (fi, rel) in files.iter().enumerate() {
        let bytes = std::fs::read(root.join(rel)).expect("read log");
        let len = bytes.len() as u64;
        let mut cuts: Vec<u64> = vec![
            0,
            1,
            127,
            128,
            255,
            256,
            257,
            len - 1,
            len.saturating_sub(68),
        ];
        cuts.extend((0..6).map(|_| rng.below(len)));
        let mut flips: Vec<u64> = vec![0, 8, 200, len - 1];
        flips.extend((0..10).map(|_| rng.below(len * 8) / 8));
        cuts.sort_unstable();
        cuts.dedup();
        flips.sort_unstable();
        flips.dedup();
        let same_session =
            |other: Option<&PathBuf>| other.is_some_and(|o| o.parent() == rel.parent());
        let segment = rel.starts_with("sessions");
        // A segment with another after it in its session: the first (its successor is then the
        // first left) or one in the middle (a gap).
        let drop = (segment && same_session(files.get(fi + 1))).then_some(("drop", 0));
        // Renamed to announce another first seq; copied alone into a session of its own, whose
        // name its header does not give.
        let moves = segment
            .then_some([("rename", 0), ("transplant", 0)])
            .into_iter()
            .flatten();
        for (what, at) in cuts
            .iter()
            .filter(|&&c| c < len)
            .map(|&c| ("cut", c))
            .chain(flips.iter().filter(|&&f| f < len).map(|&f| ("flip", f)))
            .chain(drop)
            .chain(moves)
        {
            let bit = rng.below(8);
            n += 1;
            if !(n - 1).is_multiple_of(every) {
                continue;
            }
            let copy = out.join(format!("{}-{fi}-{what}-{at}", made.len()));
            copy_dir(root, &copy);
            let path = copy.join(rel);
            let mut b = bytes.clone();
            match what {
                "drop" => {
                    std::fs::remove_file(&path).expect("remove segment");
                    made.push((format!("{} removed", rel.display()), copy));
                    continue;
                }
                "rename" => {
                    let name = rel.file_name().and_then(|n| n.to_str()).expect("name");
                    let first: u64 = name.trim_end_matches(".seg").parse().expect("digits");
                    let to = path.with_file_name(format!("{:020}.seg", first + 1));
                    // Only to a free name, which then keeps the files' order.
                    if to.exists() {
                        std::fs::remove_dir_all(&copy).expect("remove unused copy");
                        continue;
                    }
                    std::fs::rename(&path, to).expect("rename segment");
                    made.push((format!("{} renamed", rel.display()), copy));
                    continue;
                }
                "transplant" => {
                    let dir = copy.join("sessions/transplanted");
                    std::fs::create_dir_all(&dir).expect("mkdir");
                    std::fs::copy(&path, dir.join(rel.file_name().expect("name")))
                        .expect("copy segment");
                    made.push((
                        format!("{} copied into another session", rel.display()),
                        copy,
                    ));
                    continue;
                }
                "cut" => b.truncate(at as usize),
                _ => b[at as usize] ^= 1 << bit,
            }
            std::fs::write(&path, &b).expect("write damaged copy");
            made.push((format!("{} {what} at {at}", rel.display()), copy));
        }
    }
    made
}

/// Whether `line` is a payload finding of a session (`<file> at byte N: <kind> record S does not
/// decode: ...`), the only kind of finding that does not end a log's valid prefix.
fn is_payload_finding(line: &str) -> bool {
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
fn parse_finding(line: &str) -> Option<(String, Value)> {
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
fn makalog_verdicts(root: &Path) -> BTreeMap<String, Value> {
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
fn parse_deep(line: &str) -> Value {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(line);
    de.disable_recursion_limit();
    Value::deserialize(&mut de).unwrap_or_else(|e| panic!("a JSON line: {e}: {line}"))
}

/// The verdict on a path that is not a root, as either side gives it.
fn not_a_root() -> BTreeMap<String, Value> {
    BTreeMap::from([("(root)".to_owned(), json!("not a root"))])
}

fn head(summary: &Value, records: Vec<Value>) -> Value {
    json!({"count": summary["records"], "headSeq": summary["headSeq"],
           "chain": summary["chain"], "records": records, "end": {"verdict": "clean"}})
}

/// The independent reader's verdicts on each of `roots`, by log, in the same shape (records
/// compared for sessions only: makalog dump prints none for the claims log).
fn independent_verdicts(roots: &[&Path]) -> Vec<BTreeMap<String, Value>> {
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
fn disagreements(cases: &[(String, PathBuf)]) -> Vec<(String, String)> {
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
fn brief(v: Option<&Value>) -> String {
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

fn assert_agree(cases: &[(String, PathBuf)]) {
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

#[test]
fn every_vector_reads_the_same() {
    let cases: Vec<(String, PathBuf)> = vector_roots()
        .into_iter()
        .map(|v| (v.display().to_string(), v))
        .collect();
    assert_agree(&cases);
    // Both sides must have read something: a vector with no records would compare vacuously.
    for (_, root) in &cases {
        let ours = makalog_verdicts(root);
        assert!(
            ours.values().any(|v| v["count"].as_u64().unwrap_or(0) > 0),
            "{}: no records read",
            root.display()
        );
    }
}

#[test]
fn damaged_vectors_read_the_same() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut rng = Rng(0x006d_616b_616c_6f67);
    let mut cases = Vec::new();
    for (i, v) in vector_roots().iter().enumerate() {
        cases.extend(damaged(v, &tmp.path().join(i.to_string()), &mut rng, 1));
    }
    assert!(cases.len() > 300, "damaged copies: {}", cases.len());
    assert_agree(&cases);
    // The copies must reach more than one verdict, or they would test nothing.
    let mut kinds = std::collections::BTreeSet::new();
    for (_, root) in &cases {
        for v in makalog_verdicts(root).values() {
            kinds.insert(v["end"]["verdict"].as_str().unwrap_or("").to_owned());
        }
    }
    for k in ["clean", "torn_tail", "torn_create", "damage", "mismatch"] {
        assert!(kinds.contains(k), "no damaged copy read as {k}: {kinds:?}");
    }
}

#[test]
fn a_demo_root_and_damaged_copies_read_the_same() {
    let (tmp, root) = common::demo_root();
    let mut cases = vec![("demo root".to_owned(), root.clone())];
    let mut rng = Rng(7);
    // Every eighth, to keep the test short: the demo root has many segments.
    cases.extend(damaged(&root, &tmp.path().join("damaged"), &mut rng, 8));
    assert_agree(&cases);
}

/// The reader's own checks, written with it from FORMAT.md: every vector against its
/// `expected.jsonl`, and crafted damage (each header check, the `d` rules, the evidence
/// search's bounds and budget, the JSON rule of `payload`) against the verdicts the page gives.
#[test]
fn the_readers_own_checks_pass() {
    for script in ["check_vectors.py", "damage_check.py"] {
        let out = Command::new("python3")
            .arg(repo().join("format/independent").join(script))
            .output()
            .expect("python3 must be installed (tools/test installs it)");
        let stdout = text(&out.stdout);
        assert!(
            out.status.success() && stdout.trim_end().ends_with("ALL OK"),
            "{script}: {}{}",
            stdout,
            text(&out.stderr)
        );
    }
}

/// Copies of a vector root with its marker rewritten: forms FORMAT.md accepts (no newline, white
/// space, another key order, exactly 1,025 bytes) and forms it refuses (a float, a repeated key,
/// a byte-order mark, 1,026 bytes, an unknown key or kind, an unknown format version, an upper
/// case root id). Both readers must agree on each, and the refused ones must be refused.
#[test]
fn marker_variants_read_the_same() {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = repo().join("format/vectors/v3/single-segment");
    let marker: Value =
        serde_json::from_slice(&std::fs::read(base.join(".makalog-root.json")).expect("marker"))
            .expect("marker json");
    let id = marker["rootId"].as_str().expect("root id").to_owned();
    let fields = |sv: &str, kind: &str, id: &str, fv: &str| {
        format!(r#"{{"schemaVersion":{sv},"kind":"{kind}","rootId":"{id}","formatVersion":{fv}}}"#)
    };
    let good = fields("1", "interactive", &id, "3");
    let padded = |len: usize| format!("{good}{}", " ".repeat(len - good.len()));
    let variants: Vec<(&str, String, bool)> = vec![
        ("no newline", good.clone(), true),
        (
            "white space",
            format!(" \n{}\t\n", good.replace(',', " , ")),
            true,
        ),
        (
            "another order",
            format!(
                r#"{{"formatVersion":3,"rootId":"{id}","kind":"interactive","schemaVersion":1}}"#
            ),
            true,
        ),
        ("1,025 bytes", padded(1025), true),
        ("1,026 bytes", padded(1026), false),
        ("a float", fields("1.0", "interactive", &id, "3"), false),
        (
            "a repeated key",
            good.replace(
                r#""kind":"interactive","#,
                r#""kind":"interactive","kind":"interactive","#,
            ),
            false,
        ),
        ("a byte-order mark", format!("\u{feff}{good}"), false),
        ("an unknown key", good.replace('}', r#","extra":1}"#), false),
        ("another kind", fields("1", "hosted", &id, "3"), false),
        (
            "format version 4",
            fields("1", "interactive", &id, "4"),
            false,
        ),
        (
            "an upper case id",
            fields("1", "interactive", &id.to_uppercase(), "3"),
            false,
        ),
    ];
    let mut cases = Vec::new();
    for (i, (label, text, accepted)) in variants.iter().enumerate() {
        let root = tmp.path().join(i.to_string());
        copy_dir(&base, &root);
        std::fs::write(root.join(".makalog-root.json"), text).expect("write marker");
        let is_root = makalog_verdicts(&root) != not_a_root();
        assert_eq!(is_root, *accepted, "makalog on a marker with {label}");
        cases.push((format!("marker with {label}"), root));
    }
    assert_agree(&cases);
}

/// Payloads at the edges of the JSON rule that decides `payload` against `payloadHex`: nesting
/// from 1 to 129 levels, a byte-order mark, a lone surrogate escape, a number out of a float's
/// range, a repeated key, white space around a value, bytes that are not UTF-8, nothing at all.
#[test]
fn payloads_at_the_json_rules_edges_read_the_same() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("root");
    let owner = makalog::root::try_acquire_owner(&root)
        .expect("root")
        .expect("free");
    let nested = |k: usize| format!("{}{}", "[".repeat(k), "]".repeat(k)).into_bytes();
    let mut payloads: Vec<Vec<u8>> = [1, 126, 127, 128, 129].map(nested).to_vec();
    for p in [
        "\u{feff}{}",
        r#""\ud800""#,
        r#""\ud83d\ude00""#,
        "1e999",
        "18446744073709551616",
        r#"{"a":1,"a":2}"#,
        " \n{} \t",
        "",
    ] {
        payloads.push(p.as_bytes().to_vec());
    }
    payloads.push(vec![b'"', 0xff, b'"']);
    let (w, _) = makalog::segment::SegmentWriter::open(
        &owner,
        "edges",
        makalog::segment::WriterConfig::default(),
    )
    .expect("writer");
    for p in &payloads {
        w.append(
            makalog::format::RecordKind::Message,
            p,
            makalog::segment::Durability::Durable,
        )
        .expect("append");
    }
    w.close().expect("close");
    drop(owner);
    let ours = makalog_verdicts(&root);
    let records = ours["sessions/edges"]["records"]
        .as_array()
        .expect("records");
    assert_eq!(records.len(), payloads.len());
    // The rule's edge is where the tests say it is: 127 levels parse, 128 do not.
    assert!(records[2].get("payload").is_some() && records[3].get("payloadHex").is_some());
    assert_agree(&[("JSON edges".to_owned(), root)]);
}

/// CRC-32 (IEEE, reflected), to seal a header the test rewrote.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// Each check of where a segment belongs, and a gap, on copies of the v3 `rolled` vector: the
/// ending makalog reports is the one FORMAT.md gives (byte 16 for a first segment missing, 24 for
/// a name that is not the header's first seq, 66 for a segment in another session's directory,
/// 32 for a first segment that does not start from genesis, two files for a gap), and the
/// reader reports the same.
#[test]
fn where_a_segment_belongs_is_reported_where_format_md_says() {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = repo().join("format/vectors/v3/rolled");
    let segs: Vec<PathBuf> = log_files(&base)
        .into_iter()
        .filter(|f| f.starts_with("sessions"))
        .collect();
    assert!(segs.len() >= 4, "rolled has several segments: {segs:?}");
    let log = segs[0].parent().expect("session dir").display().to_string();
    let name = |p: &Path| p.display().to_string();
    let last = segs.last().expect("a segment");
    let renamed = {
        let first: u64 = last
            .file_stem()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse().ok())
            .expect("digits");
        last.with_file_name(format!("{:020}.seg", first + 1))
    };
    let transplanted = Path::new("sessions/transplanted").join(segs[0].file_name().expect("name"));
    type Change = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Change, String, Value)> = vec![
        (
            "the first segment removed",
            Box::new({
                let s = segs[0].clone();
                move |r: &Path| std::fs::remove_file(r.join(&s)).expect("remove")
            }),
            log.clone(),
            json!({"verdict": "damage", "file": name(&segs[1]), "offset": 16}),
        ),
        (
            "a middle segment removed",
            Box::new({
                let s = segs[2].clone();
                move |r: &Path| std::fs::remove_file(r.join(&s)).expect("remove")
            }),
            log.clone(),
            json!({"verdict": "mismatch", "files": [name(&segs[1]), name(&segs[3])]}),
        ),
        (
            "the last segment renamed",
            Box::new({
                let (from, to) = (last.clone(), renamed.clone());
                move |r: &Path| std::fs::rename(r.join(&from), r.join(&to)).expect("rename")
            }),
            log.clone(),
            json!({"verdict": "damage", "file": name(&renamed), "offset": 24}),
        ),
        (
            "the first segment copied into another session",
            Box::new({
                let (from, to) = (segs[0].clone(), transplanted.clone());
                move |r: &Path| {
                    std::fs::create_dir_all(r.join("sessions/transplanted")).expect("mkdir");
                    std::fs::copy(r.join(&from), r.join(&to)).expect("copy");
                }
            }),
            "sessions/transplanted".to_owned(),
            json!({"verdict": "damage", "file": name(&transplanted), "offset": 66}),
        ),
        (
            "the first segment's prev chain changed, its header sealed again",
            Box::new({
                let s = segs[0].clone();
                move |r: &Path| {
                    let mut b = std::fs::read(r.join(&s)).expect("read");
                    b[32] ^= 1;
                    let crc = crc32(&b[..252]);
                    b[252..256].copy_from_slice(&crc.to_le_bytes());
                    std::fs::write(r.join(&s), b).expect("write");
                }
            }),
            log.clone(),
            json!({"verdict": "damage", "file": name(&segs[0]), "offset": 32}),
        ),
    ];
    let mut roots = Vec::new();
    for (i, (label, change, log, want)) in cases.iter().enumerate() {
        let root = tmp.path().join(i.to_string());
        copy_dir(&base, &root);
        change(&root);
        let ours = makalog_verdicts(&root);
        assert_eq!(ours[log.as_str()]["end"], *want, "makalog, {label}");
        roots.push((label.to_string(), root));
    }
    assert_agree(&roots);
}
