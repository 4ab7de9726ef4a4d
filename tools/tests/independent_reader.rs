//! FORMAT.md is the contract: `format/independent/reader.py`, written from that page alone,
//! must reach makalog's verdicts. For every golden vector, a demo root, and damaged copies of
//! them (truncations and single-bit flips of every segment and claims log, at deterministic
//! places), each log's valid prefix (the records as `makalog dump` prints them, or for the
//! claims log its count and head), its head, and what ends the prefix (clean, a torn tail, a
//! torn create, damage at a file and offset, two files that disagree) are the same from both.
//! python3 is required (tools/test installs it); without it this test fails.

mod common;
mod independent;

use common::{copy_dir, text};
use independent::damage::{damaged, log_files, renamed, Rng};
use independent::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

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
    let renamed = renamed(last);
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
                    use makalog::format::{SegmentHeader, HEADER_LEN};
                    let mut b = std::fs::read(r.join(&s)).expect("read");
                    let (mut h, _) = SegmentHeader::decode(&b).expect("header");
                    h.prev_chain[0] ^= 1;
                    b[..HEADER_LEN].copy_from_slice(&h.encode());
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

/// Logs with more zeros after their last non-zero byte than a reader reads (FORMAT.md, "Segment
/// file": the rest is taken as zeros): every log of a demo root grown sparse past that, and a
/// copy whose logs also end in a stray byte (a torn tail) before the zeros. Both readers read
/// only as far as the page says, and agree.
#[test]
fn logs_with_more_zeros_than_are_read_read_the_same() {
    let (tmp, root) = common::demo_root();
    let past = (16 << 20) + 57 + (3 << 20);
    let mut cases = Vec::new();
    for (name, stray) in [("zeros", false), ("stray byte, then zeros", true)] {
        let copy = tmp.path().join(name);
        copy_dir(&root, &copy);
        for rel in log_files(&copy) {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(copy.join(&rel))
                .expect("open");
            let len = f.metadata().expect("stat").len();
            if stray {
                use std::os::unix::fs::FileExt;
                f.write_all_at(&[0x5a], len).expect("stray");
            }
            f.set_len(len + past).expect("grow");
        }
        cases.push((name.to_owned(), copy));
    }
    assert_agree(&cases);
}
