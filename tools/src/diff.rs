//! `makalog diff ROOT_A ROOT_B [--session ID] [--json]`: two copies of a root, log by log.

use makalog::forensics::{diff_roots, Link, LogDiff};
use makalog::storage::RealStorage;
use makalog::Error;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

pub fn run(a: &Path, b: &Path, session: Option<&str>, as_json: bool) -> ExitCode {
    if let Some(Err(why)) = session.map(makalog::format::validate_session_id) {
        return crate::usage_error(why);
    }
    let (sa, sb) = (RealStorage::unmapped(a), RealStorage::unmapped(b));
    let diffs = match crate::progress::spinner("comparing", || diff_roots(&sa, &sb, session)) {
        Ok(d) => d,
        Err(e @ Error::NotARoot { .. }) => return crate::usage_error(e),
        Err(e) => {
            tell!("makalog: {e}");
            return ExitCode::from(1);
        }
    };
    let differ = diffs.iter().filter(|d| !d.is_same()).count();
    for d in &diffs {
        if as_json {
            say!("{}", diff_json(d));
        } else {
            print(d);
        }
    }
    if !as_json {
        say!(
            "{differ} of {} logs differ or are damaged ({} is A, {} is B)",
            diffs.len(),
            a.display(),
            b.display()
        );
    }
    if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print(d: &LogDiff) {
    let verdict = match (d.in_a, d.in_b) {
        (true, false) => "only in A".to_owned(),
        (false, true) => "only in B".to_owned(),
        _ if d.is_same() => "the same".to_owned(),
        _ if d.only_a.is_empty() && d.only_b.is_empty() => {
            "the same records up to damage: what follows it is unknown".to_owned()
        }
        _ => match d.diverges_at {
            Some(seq) => format!("chains diverge at seq {seq}"),
            None if d.only_a.is_empty() => "B goes on past A".to_owned(),
            None => "A goes on past B".to_owned(),
        },
    };
    say!("{}: {verdict}; common prefix {} records", d.name, d.common);
    for (side, stopped) in [("A", &d.a_stopped), ("B", &d.b_stopped)] {
        if let Some(why) = stopped {
            say!("  {side} stops early: {why}");
        }
    }
    for (side, links) in [("A", &d.only_a), ("B", &d.only_b)] {
        for l in links {
            say!(
                "  only in {side}: seq {:>6}  {:<22} {} at byte {}",
                l.seq,
                l.kind,
                l.file.display(),
                l.offset
            );
        }
    }
}

fn link_json(l: &Link) -> serde_json::Value {
    json!({"seq": l.seq, "kind": l.kind, "file": l.file.display().to_string(),
           "offset": l.offset, "chain": makalog::format::hex(&l.chain)})
}

fn diff_json(d: &LogDiff) -> serde_json::Value {
    json!({
        "log": d.name, "inA": d.in_a, "inB": d.in_b, "same": d.is_same(),
        "commonPrefix": d.common, "divergesAt": d.diverges_at,
        "onlyA": d.only_a.iter().map(link_json).collect::<Vec<_>>(),
        "onlyB": d.only_b.iter().map(link_json).collect::<Vec<_>>(),
        "aStopped": d.a_stopped, "bStopped": d.b_stopped,
    })
}
