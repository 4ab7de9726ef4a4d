//! The tool as a whole: every command's help has an example, completions are generated for
//! each shell, and every command exits 0 clean, 1 findings, 2 usage or not a root.

mod common;

use common::{copy_dir, demo_root, makalog, text};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The subcommands a help text lists under "Commands:".
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn every_commands_help_gives_an_example() {
    let top = text(&makalog(&["--help"]).stdout);
    assert!(
        top.contains("Exit codes, the same for every command: 0 clean, 1 findings"),
        "{top}"
    );
    let commands = subcommands(&top);
    for must in [
        "verify",
        "heads",
        "diff",
        "replay",
        "salvage",
        "export",
        "report",
        "completions",
        #[cfg(feature = "sqlite")]
        "import-sqlite",
    ] {
        assert!(commands.iter().any(|c| c == must), "{must} in {commands:?}");
    }
    let mut checked = 0;
    for c in &commands {
        let help = text(&makalog(&[c, "--help"]).stdout);
        let nested = subcommands(&help);
        assert!(
            help.contains("Example"),
            "`makalog {c} --help` has an example:\n{help}"
        );
        for n in nested {
            let help = text(&makalog(&[c, &n, "--help"]).stdout);
            assert!(
                help.contains("Example"),
                "`makalog {c} {n} --help` has an example:\n{help}"
            );
            checked += 1;
        }
        checked += 1;
    }
    assert!(checked >= 21, "{checked} help texts");
}

#[test]
fn completions_are_generated_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = makalog(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        assert!(
            script.contains("salvage") && script.contains("--against"),
            "{shell}"
        );
    }
    assert_eq!(makalog(&["completions", "tcsh"]).status.code(), Some(2));
}

fn canonicalize(input: &str) -> Option<i32> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_makalog"))
        .args(["events", "canonicalize"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    child.wait().expect("wait").code()
}

#[test]
fn every_command_exits_0_clean_1_findings_2_usage() {
    let (t, root) = demo_root();
    let damaged = t.path().join("damaged");
    copy_dir(&root, &damaged);
    // Damage in a sealed segment, with records after it: no reader can take it for a tail.
    let seg = damaged.join("sessions/demo-1/00000000000000000001.seg");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    std::os::unix::fs::FileExt::write_all_at(&f, b"\xff\xff", 300).expect("damage");
    let claims = std::fs::OpenOptions::new()
        .write(true)
        .open(damaged.join("claims.log"))
        .expect("claims");
    std::os::unix::fs::FileExt::write_all_at(&claims, b"\xff\xff", 600).expect("damage");
    // A torn tail: half a frame after demo-2's last record, on a root no process owns.
    let torn = t.path().join("torn");
    copy_dir(&root, &torn);
    let (_, tail_seg, end) = common::last_record(&torn, "demo-2");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&tail_seg)
        .expect("open");
    std::os::unix::fs::FileExt::write_all_at(&f, &[0x40, 0, 0, 0, 9, 9], end).expect("tear");
    let not_root = t.path().join("plain");
    std::fs::create_dir(&not_root).expect("mkdir");
    let heads = t.path().join("heads.json");
    std::fs::write(&heads, makalog(&["heads", p(&root), "--json"]).stdout).expect("heads");
    // A source with one row the stores refuse: the rest is imported, the row listed (1).
    #[cfg(feature = "sqlite")]
    let with_a_bad_row = {
        let db = common::fixture_copy(t.path());
        let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
        conn.execute(
            "UPDATE session_messages SET record_json = '{}' WHERE sequence = 0",
            [],
        )
        .expect("a bad row");
        db
    };
    let (r, d, n, o) = (p(&root), p(&damaged), p(&not_root), t.path());
    let out = |name: &str| o.join(name).display().to_string();
    let cases: Vec<(Vec<String>, i32)> = vec![
        (s(&["verify", r]), 0),
        (s(&["verify", d]), 1),
        (s(&["verify", n]), 2),
        (s(&["verify", r, "--against", p(&heads)]), 0),
        (s(&["verify", d, "--against", p(&heads)]), 1),
        (s(&["verify", r, "--against", n]), 2),
        (s(&["heads", r]), 0),
        (s(&["heads", d]), 1),
        (s(&["heads", n]), 2),
        (s(&["diff", r, r]), 0),
        (s(&["diff", r, d]), 1),
        (s(&["diff", r, n]), 2),
        (s(&["replay", r, "--session", "demo-1", "--until", "2"]), 0),
        (s(&["replay", r, "--session", "nobody", "--until", "2"]), 1),
        (s(&["replay", r, "--session", "demo-1"]), 2),
        (s(&["salvage", r, "--into", &out("s0")]), 0),
        (s(&["salvage", d, "--into", &out("s1")]), 1),
        (s(&["salvage", r, "--into", r]), 2),
        (s(&["export", r, "-o", &out("b.tar")]), 0),
        (s(&["verify", &out("b.tar")]), 0),
        (s(&["export", r, "-o", &out("b.tar")]), 2),
        (s(&["report", r, "-o", &out("r.html")]), 0),
        (s(&["report", d, "-o", &out("d.html")]), 1),
        (s(&["report", n, "-o", &out("n.html")]), 2),
        (s(&["dump", r]), 0),
        (s(&["dump", d]), 1),
        (s(&["dump", n]), 2),
        (s(&["verify", p(&torn)]), 1),
        (s(&["dump", p(&torn)]), 1),
        (s(&["dump", p(&torn), "--session", "demo-2"]), 1),
        (s(&["dump", p(&torn), "--session", "demo-1"]), 0),
        (s(&["claims", r]), 0),
        (s(&["claims", d]), 1),
        (s(&["claims", n]), 2),
        (s(&["sessions", r]), 0),
        (s(&["sessions", n]), 2),
        (s(&["runs", r, "--session", "demo-2"]), 0),
        (s(&["runs", r, "--session", "nobody"]), 1),
        (s(&["runs", n, "--session", "demo-2"]), 2),
        (s(&["messages", r, "--session", "demo-2"]), 0),
        (s(&["messages", r, "--session", "nobody"]), 1),
        (s(&["messages", r, "--session", "../x"]), 2),
        (s(&["timeline", r, "--session", "demo-2"]), 0),
        (s(&["timeline", r, "--session", "nobody"]), 1),
        (s(&["timeline", n, "--session", "demo-2"]), 2),
        (s(&["invocations", r, "--session", "demo-2"]), 0),
        (s(&["invocations", r, "--session", "nobody"]), 1),
        (s(&["invocations", r, "--session", "../x"]), 2),
        (s(&["index", "check", r]), 0),
        (s(&["index", "check", d]), 1),
        (s(&["index", "check", n]), 2),
        (s(&["index", "rebuild", &out("s0")]), 0),
        (s(&["index", "rebuild", n]), 2),
        #[cfg(feature = "sqlite")]
        (
            s(&[
                "import-sqlite",
                p(&common::sqlite_gen::fixture_dir()),
                &out("imported"),
            ]),
            0,
        ),
        #[cfg(feature = "sqlite")]
        (s(&["import-sqlite", n, &out("not-imported")]), 2),
        #[cfg(feature = "sqlite")]
        (
            s(&["import-sqlite", p(&with_a_bad_row), &out("partly-imported")]),
            1,
        ),
        (s(&["no-such-command"]), 2),
        (s(&["verify"]), 2),
    ];
    for (args, want) in &cases {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = makalog(&argv);
        assert_eq!(
            got.status.code(),
            Some(*want),
            "makalog {}: {}{}",
            args.join(" "),
            text(&got.stdout),
            text(&got.stderr)
        );
    }
    assert_eq!(canonicalize(""), Some(0));
    assert_eq!(canonicalize("{\"not\":\"an event\"}\n"), Some(1));
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf8")
}

fn s(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}
