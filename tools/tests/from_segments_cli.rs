//! `--from-segments`: the read commands answer from the segments alone, every sidecar ignored.
//! A sidecar forged with its checksums and covers intact can leave a message out of what the
//! read commands answer (its covers say where the log is, not that every record is listed);
//! with the flag they answer what the log holds, and on a sound root exactly what they answer
//! without it.

mod common;

use common::*;
use makalog::index::{decode_sidecar_header, decode_sidecar_state, encode_sidecar};
use makalog::index::{id_entries, section, Messages};

const SESSION: &str = "demo-1";

/// Rewrites `session`'s sidecar under `root` with its first message left out, its CRCs
/// recomputed and its covers as they were; the id of the message left out.
fn hide_first_message(root: &std::path::Path, session: &str) -> String {
    let path = root.join("sessions").join(session).join("index");
    let good = std::fs::read(&path).expect("sidecar");
    let header = decode_sidecar_header(&good).expect("header");
    let mut view = decode_sidecar_state(&good, &header).expect("state");
    let hidden = view.session.messages.iter().next().expect("a message").id;
    let hidden = hidden.to_owned();
    let kept: Messages = view
        .session
        .messages
        .iter()
        .filter(|m| m.id != hidden)
        .collect();
    view.session.messages = kept;
    let ids = section(&good, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    std::fs::write(&path, encode_sidecar(&view, &ids).expect("encode")).expect("forge");
    hidden
}

fn out(args: &[&str]) -> (i32, String) {
    let o = makalog(args);
    (o.status.code().unwrap_or(-1), text(&o.stdout))
}

#[test]
fn a_sound_root_reads_the_same_from_its_segments() {
    let (_t, root) = demo_root();
    let r = s(&root);
    let before = snapshot(&root);
    for cmd in ["messages", "runs", "timeline", "invocations"] {
        for json in [false, true] {
            let mut args = vec![cmd, r, "--session", SESSION];
            if json {
                args.push("--json");
            }
            let plain = out(&args);
            args.push("--from-segments");
            assert_eq!(out(&args), plain, "{args:?}");
            assert_eq!(plain.0, 0, "{args:?}");
        }
    }
    let plain = out(&["sessions", r, "--json"]);
    assert_eq!(out(&["sessions", r, "--json", "--from-segments"]), plain);
    assert_eq!(before, snapshot(&root), "nothing written");
}

#[test]
fn a_sidecar_forged_to_hide_a_message_hides_nothing_from_the_segments() {
    let (t, root) = demo_root();
    let r = s(&root);
    let lines = |args: &[&str]| -> Vec<serde_json::Value> { json_lines(args) };
    let all = lines(&["messages", r, "--session", SESSION, "--json"]);
    let hidden = hide_first_message(&root, SESSION);
    let before = snapshot(&root);

    // Believed, the forged sidecar leaves the message out: the limit the flag is for.
    let believed = lines(&["messages", r, "--session", SESSION, "--json"]);
    assert_eq!(believed.len() + 1, all.len());
    assert!(!believed.iter().any(|m| m["id"] == hidden.as_str()));
    // From the segments: every message, as the log holds them.
    let read = lines(&[
        "messages",
        r,
        "--session",
        SESSION,
        "--json",
        "--from-segments",
    ]);
    assert_eq!(read, all);
    // `index check` names the forged sidecar.
    assert_eq!(makalog(&["index", "check", r]).status.code(), Some(1));

    // The report counts the message from the segments, not from the sidecar.
    let page = |extra: &[&str], name: &str| {
        let html = t.path().join(name);
        let mut args = vec!["report", r, "-o", s(&html)];
        args.extend(extra);
        assert_eq!(makalog(&args).status.code(), Some(0), "{args:?}");
        std::fs::read_to_string(&html).expect("report")
    };
    let counted = |html: String| -> usize {
        let section = &html[html.find("id=\"session-demo-1\"").expect("section")..];
        let head = &section[..section.find(" messages").expect("count")];
        head.rsplit(' ')
            .next()
            .expect("n")
            .parse()
            .expect("a count")
    };
    assert_eq!(counted(page(&[], "believed.html")), all.len() - 1);
    assert_eq!(counted(page(&["--from-segments"], "read.html")), all.len());
    assert_eq!(before, snapshot(&root), "nothing written");
}
