//! What a hostile root's text can do to the terminal of the person reading it: a session's
//! name, a message's text or a stray file's name holding escape sequences (a clipboard write,
//! a cursor move) or line breaks (a forged row). Every command prints such characters escaped,
//! so its output holds no control character but the line breaks it makes itself.

mod common;

use common::{demo_root, makalog, text};
use serde_json::json;

/// An OSC 52 clipboard write, a C1 CSI, a carriage return and a forged row.
const HOSTILE: &str = "x\u{1b}]52;c;aGk=\u{7}\u{9b}31m\rSESSION demo-9 active\nforged-row";

fn hostile_root() -> (tempfile::TempDir, std::path::PathBuf) {
    let (t, root) = demo_root();
    {
        let owner = makalog::root::try_acquire_owner(&root)
            .expect("acquire")
            .expect("free");
        let stores = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
        let mut header = common::subagent_header("hostile", "demo-1");
        for key in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
            header.as_object_mut().expect("object").remove(key);
        }
        header["name"] = json!(HOSTILE);
        stores.sessions.create(header).expect("session");
        let message = json!({"type": "user", "id": "m-hostile", "turnId": "t-1", "ts": 5,
                             "text": HOSTILE});
        stores
            .sessions
            .append_message("hostile", message)
            .expect("message");
        stores.close().expect("close");
    }
    std::fs::write(
        root.join("sessions").join(HOSTILE.replace('/', "_")),
        b"stray",
    )
    .expect("stray file");
    (t, root)
}

fn assert_no_control(what: &str, bytes: &[u8]) {
    let out = text(bytes);
    let bad: Vec<char> = out
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    assert!(bad.is_empty(), "{what} printed {bad:?}:\n{out}");
    assert!(
        !out.contains("\nforged-row"),
        "{what} printed a forged row:\n{out}"
    );
}

#[test]
fn no_command_prints_a_control_character_from_the_root() {
    let (_t, root) = hostile_root();
    let r = root.to_str().expect("utf8");
    for args in [
        vec!["sessions", r],
        vec!["messages", r, "--session", "hostile"],
        vec!["runs", r, "--session", "hostile"],
        vec!["timeline", r, "--session", "hostile"],
        vec!["replay", r, "--session", "hostile"],
        vec!["verify", r],
        vec!["dump", r, "--session", "hostile"],
    ] {
        let out = makalog(&args);
        let what = args[0];
        assert_no_control(&format!("{what} (stdout)"), &out.stdout);
        assert_no_control(&format!("{what} (stderr)"), &out.stderr);
    }
    let out = makalog(&["sessions", r]);
    let stdout = text(&out.stdout);
    let listed = stdout.lines().filter(|l| l.contains("hostile")).count();
    assert_eq!(listed, 1, "one row for the hostile session:\n{stdout}");
    assert!(
        stdout.contains(
            "\\u001b]52;c;aGk=\\u0007\\u009b31m\\u000dSESSION demo-9 active\\u000aforged-row"
        ),
        "the name shown escaped, whole:\n{stdout}"
    );
}
