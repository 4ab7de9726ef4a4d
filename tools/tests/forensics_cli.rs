//! `makalog heads`, `verify --against` and `diff` on the demo root and on copies of it that
//! are unchanged, grown, truncated, damaged, and forged (a record rewritten with its CRC and
//! every later chain value recomputed, which only recorded heads and a second copy can catch).

mod common;

use common::{copy_dir, demo_root, forge, makalog, snapshot, text};
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// `makalog heads ROOT --json` written to `dir/heads.json`.
fn record_heads(root: &Path, dir: &Path) -> std::path::PathBuf {
    let out = makalog(&["heads", s(root), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = dir.join("heads.json");
    std::fs::write(&path, &out.stdout).expect("write heads");
    path
}

/// The verdict line `verify --against` prints for `log`.
fn verdict<'a>(stdout: &'a str, log: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| {
            l.strip_prefix("against: ")
                .is_some_and(|r| r.split_whitespace().next() == Some(log))
        })
        .unwrap_or_else(|| panic!("no verdict for {log} in {stdout}"))
}

#[test]
fn heads_lists_every_log_in_text_and_json_and_writes_nothing() {
    let (t, root) = demo_root();
    let before = snapshot(&root);
    let out = makalog(&["heads", s(&root)]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    let demo1 = stdout
        .lines()
        .find(|l| l.starts_with("demo-1 "))
        .expect("demo-1");
    let (last, _, _) = common::last_record(&root, "demo-1");
    assert!(
        demo1.contains(&makalog::format::hex(&last.chain)),
        "{demo1}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("claims.log ")),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&makalog(&["heads", s(&root), "--json"]).stdout).expect("json");
    assert_eq!(json["format"], "makalog-heads/1");
    assert_eq!(json["sessions"].as_array().expect("sessions").len(), 8);
    let d1 = common::find(&json["sessions"], "session", "demo-1");
    assert_eq!(d1["headSeq"], last.seq);
    assert!(json["tool"].as_str().expect("tool").starts_with("makalog "));
    assert!(json["madeAt"].as_str().expect("madeAt").ends_with('Z'));
    assert_eq!(snapshot(&root), before, "heads writes nothing");
    drop(t);
}

#[test]
fn against_tells_unchanged_grown_truncated_and_missing_logs_apart() {
    let (t, root) = demo_root();
    let heads = record_heads(&root, t.path());
    let out = makalog(&["verify", s(&root), "--against", s(&heads)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert_eq!(
        verdict(&stdout, "demo-1"),
        "against: demo-1         unchanged"
    );
    assert!(verdict(&stdout, "claims.log").ends_with("unchanged"));

    // Grown: the demo run again extends every session and adds claims.
    let grown = t.path().join("grown");
    copy_dir(&root, &grown);
    assert!(makalog(&["demo", s(&grown)]).status.success());
    let before = snapshot(&grown);
    let out = makalog(&["verify", s(&grown), "--against", s(&heads)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(
        verdict(&stdout, "demo-1").contains("grew: the recorded head is still on its chain"),
        "{stdout}"
    );
    assert!(
        verdict(&stdout, "graph-child-1").ends_with("unchanged"),
        "its claimed intent is answered from the ledger: {stdout}"
    );
    assert_eq!(snapshot(&grown), before, "verify --against writes nothing");

    // Truncated at a frame boundary: it verifies clean, but records are gone.
    let cut = t.path().join("cut");
    copy_dir(&root, &cut);
    let (last, _, _) = common::last_record(&root, "demo-2");
    common::cut_at(&cut.join(&last.file), last.offset);
    std::fs::remove_file(cut.join("sessions/demo-2/index")).expect("rm sidecar");
    std::fs::remove_dir_all(cut.join("sessions/helper-1")).expect("rm session");
    assert_eq!(makalog(&["verify", s(&cut)]).status.code(), Some(0));
    let out = makalog(&["verify", s(&cut), "--against", s(&heads), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let of = |log: &str| common::find(&v["against"], "log", log);
    assert_eq!(of("demo-2")["verdict"], "lost");
    assert_eq!(of("demo-2")["holds"], last.seq - 1);
    assert_eq!(of("helper-1")["verdict"], "missing");
    assert_eq!(of("demo-1")["verdict"], "unchanged");
    assert_eq!(v["clean"], true, "the frames themselves are sound");
}

#[test]
fn a_forged_record_passes_verify_but_not_against_diff_or_index_check() {
    let (t, root) = demo_root();
    let heads = record_heads(&root, t.path());
    let forged = t.path().join("forged");
    forge(&root, &forged, "demo-1", 5);
    let out = makalog(&["verify", s(&forged)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "every CRC and chain value was recomputed: {}",
        text(&out.stdout)
    );
    let out = makalog(&["verify", s(&forged), "--against", s(&heads)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        verdict(&stdout, "demo-1").contains("rewritten: the chain at seq"),
        "{stdout}"
    );
    assert!(
        verdict(&stdout, "demo-2").ends_with("unchanged"),
        "{stdout}"
    );

    let out = makalog(&["diff", s(&root), s(&forged)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("demo-1: chains diverge at seq 5; common prefix 4 records"),
        "{stdout}"
    );
    assert!(stdout.contains("demo-2: the same"), "{stdout}");
    let out = makalog(&[
        "diff",
        s(&root),
        s(&forged),
        "--session",
        "demo-1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let (last, _, _) = common::last_record(&root, "demo-1");
    assert_eq!(v["divergesAt"], 5);
    assert_eq!(v["onlyA"].as_array().expect("a").len() as u64, last.seq - 4);
    assert_eq!(v["onlyB"].as_array().expect("b").len() as u64, last.seq - 4);

    // The old sidecar recorded the original chain at the points it covers.
    let out = makalog(&["index", "check", s(&forged)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("sessions/demo-1/index: contradiction: at seq"),
        "{stdout}"
    );
}

#[test]
fn index_check_calls_a_sidecar_behind_the_log_stale_not_a_contradiction() {
    let (t, root) = demo_root();
    let old = std::fs::read(root.join("sessions/demo-1/index")).expect("sidecar");
    let grown = t.path().join("grown");
    copy_dir(&root, &grown);
    assert!(makalog(&["demo", s(&grown)]).status.success());
    std::fs::write(grown.join("sessions/demo-1/index"), old).expect("put back");
    let out = makalog(&["index", "check", s(&grown)]);
    assert_eq!(out.status.code(), Some(1));
    let (last, _, _) = common::last_record(&root, "demo-1");
    let (now, _, _) = common::last_record(&grown, "demo-1");
    let want = format!(
        "sessions/demo-1/index: stale: it covers the log up to seq {} of {}",
        last.seq, now.seq
    );
    assert!(text(&out.stdout).contains(&want), "{}", text(&out.stdout));
}

#[test]
fn diff_of_two_equal_copies_is_clean_and_of_a_grown_one_lists_what_b_added() {
    let (t, root) = demo_root();
    let copy = t.path().join("copy");
    copy_dir(&root, &copy);
    let out = makalog(&["diff", s(&root), s(&copy)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("0 of 9 logs differ"));
    assert!(makalog(&["demo", s(&copy)]).status.success());
    let out = makalog(&["diff", s(&root), s(&copy), "--session", "demo-3"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("demo-3: B goes on past A"), "{stdout}");
    assert!(stdout.contains("  only in B: seq"), "{stdout}");
    assert!(!stdout.contains("only in A"), "{stdout}");
}

#[test]
fn heads_from_another_root_or_a_file_that_is_not_heads_is_a_usage_error() {
    let (t, root) = demo_root();
    let (_t2, other) = demo_root();
    let heads = record_heads(&other, t.path());
    let out = makalog(&["verify", s(&root), "--against", s(&heads)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("recorded from root"),
        "{}",
        text(&out.stderr)
    );
    // A session named twice would be read and checked twice (a heads file naming one large
    // session a million times, a million times): refused before anything is read.
    let own = record_heads(&root, t.path());
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&own).expect("heads")).expect("json");
    let first = file["sessions"][0].clone();
    file["sessions"]
        .as_array_mut()
        .expect("sessions")
        .push(first.clone());
    std::fs::write(&own, file.to_string()).expect("write");
    let out = makalog(&["verify", s(&root), "--against", s(&own)]);
    assert_eq!(out.status.code(), Some(2));
    let want = format!(
        "names session {} more than once",
        first["session"].as_str().expect("id")
    );
    assert!(text(&out.stderr).contains(&want), "{}", text(&out.stderr));
    let junk = t.path().join("junk.json");
    std::fs::write(&junk, b"{\"format\":\"something\"}").expect("write");
    let out = makalog(&["verify", s(&root), "--against", s(&junk)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not a heads file"),
        "{}",
        text(&out.stderr)
    );
    for args in [
        vec!["heads", s(t.path())],
        vec!["diff", s(&root), s(t.path())],
        vec!["diff", s(&root), s(&root), "--session", "../x"],
    ] {
        assert_eq!(makalog(&args).status.code(), Some(2), "{args:?}");
    }
}

/// A heads file that is a FIFO (a mistaken path, or a hostile one) is refused at once as not a
/// regular file, exit 2, instead of waited on until a writer comes. Before, `verify --against`
/// blocked opening it; here a writer is standing by, so it read the writer's junk instead.
#[test]
fn a_heads_file_that_is_a_fifo_is_refused_without_waiting_on_it() {
    use std::io::Write;
    let (t, root) = demo_root();
    let fifo = t.path().join("heads.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let at = fifo.clone();
    let writer = std::thread::spawn(move || {
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&at) {
            let _ = f.write_all(b"{}");
        }
    });
    let out = makalog(&["verify", s(&root), "--against", s(&fifo)]);
    // Lets the writer go if makalog never opened the FIFO (read and write never blocks).
    let _release = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .expect("open the FIFO");
    writer.join().expect("writer");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("heads.fifo: not a regular file"),
        "{}",
        text(&out.stderr)
    );
}
