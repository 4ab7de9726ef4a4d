//! `makalog events canonicalize` end to end: canonical lines, `error:` lines, exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `makalog events canonicalize` with `input` on standard input.
fn canonicalize(input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_makalog"))
        .args(["events", "canonicalize"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn makalog");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write stdin");
    child.wait_with_output().expect("wait for makalog")
}

fn lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

const CANONICAL: &str = r#"{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}"#;
const SCRAMBLED: &str = r#"{ "turnId": "turn-1", "ts": 100.0, "sessionId": "sess-1", "runId": "run-1", "role": "system", "partial": false, "invocationId": "inv-1", "id": "evt-1", "author": "system" }"#;

#[test]
fn accepted_lines_print_their_canonical_json_and_exit_zero() {
    let out = canonicalize(format!("{SCRAMBLED}\n{CANONICAL}\n\n").as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(lines(&out), vec![CANONICAL, CANONICAL]);
}

#[test]
fn a_refused_line_prints_an_error_line_in_place_and_exits_one() {
    let unknown = CANONICAL.replace(r#""ts":100"#, r#""ts":100,"extra":1"#);
    let out = canonicalize(format!("{CANONICAL}\n{unknown}\nnot json\n{SCRAMBLED}").as_bytes());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let got = lines(&out);
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[0], CANONICAL);
    assert_eq!(
        got[1],
        "error: Invalid RuntimeEvent schema: extra: unknown key"
    );
    assert!(got[2].starts_with("error: "), "{}", got[2]);
    assert_eq!(got[3], CANONICAL);
}

#[test]
fn lone_surrogates_and_invalid_utf8_are_refused() {
    let lone = CANONICAL.replace(r#""evt-1""#, r#""evt-\ud800""#);
    let mut input = format!("{lone}\n").into_bytes();
    input.extend_from_slice(b"{\"id\":\"\xff\"}\n");
    let out = canonicalize(&input);
    assert_eq!(out.status.code(), Some(1));
    let got = lines(&out);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].contains("id: string holds a lone UTF-16 surrogate"),
        "{}",
        got[0]
    );
    assert_eq!(got[1], "error: line 2 is not valid UTF-8");
}

#[test]
fn empty_input_prints_nothing_and_exits_zero() {
    let out = canonicalize(b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

/// The canonical JSON is printed byte for byte: DEL and C1 characters stay raw, as §2 writes
/// them (escaped, a hash of the output would not be the event's), and a C0 control comes out
/// as §2's escape, never raw.
#[test]
fn canonical_lines_keep_del_and_c1_characters_raw() {
    let event = CANONICAL.replace(
        r#""author":"system""#,
        "\"author\":\"system\",\"content\":{\"kind\":\"text\",\"text\":\"a\u{7f}b\u{9b}c\\u001Bd\"}",
    );
    let out = canonicalize(format!("{event}\n").as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let expected = CANONICAL.replace(
        r#""author":"system""#,
        "\"author\":\"system\",\"content\":{\"kind\":\"text\",\"text\":\"a\u{7f}b\u{9b}c\\u001bd\"}",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{expected}\n")
    );
}
