//! `makalog verify ROOT [--against HEADS.json] [--json]`, and `makalog verify BUNDLE.tar`.

use makalog::format::chain::chain_hex;
use makalog::storage::RealStorage;
use makalog::verify::{verify_root_observed, VerifyReport};
use makalog::Error;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, against: Option<&Path>, as_json: bool) -> ExitCode {
    if root.is_file() {
        if against.is_some() {
            return crate::usage_error("--against checks a root; a bundle carries its own heads");
        }
        return crate::bundle::verify(root, as_json);
    }
    let recorded = match against.map(crate::heads::load).transpose() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let storage = RealStorage::unmapped(root);
    let bar = crate::progress::bar("verifying sessions", 0);
    let verified = verify_root_observed(&storage, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    let report = match verified {
        Ok(r) => r,
        Err(e @ Error::NotARoot { .. }) => return crate::usage_error(e),
        Err(e) => {
            tell!("makalog: {e}");
            return ExitCode::from(1);
        }
    };
    if !as_json {
        print(&report);
    }
    let (altered, verdicts) = match &recorded {
        Some(r) => match crate::heads::against(&storage, r, as_json) {
            Ok(x) => x,
            Err(code) => return code,
        },
        None => (false, Vec::new()),
    };
    if as_json {
        let mut v = report_json(&report);
        if recorded.is_some() {
            v["against"] = json!(verdicts);
        }
        say!("{v}");
    } else if report.is_clean() && !altered {
        say!("clean: {} sessions", report.sessions.len());
    } else {
        say!(
            "{} findings{}",
            report.findings.len(),
            if altered {
                ", and logs altered or lost since the recorded heads"
            } else {
                ""
            }
        );
    }
    if report.is_clean() && !altered {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The report as a person reads it: findings, notes, then every head.
pub fn print(report: &VerifyReport) {
    for finding in &report.findings {
        say!("{finding}");
    }
    for q in &report.quarantined {
        say!("note: {q}: torn tail cut by recovery and kept aside");
    }
    for n in &report.notes {
        say!("note: {n}");
    }
    for s in &report.sessions {
        say!(
            "session {}: {} records, head seq {}, chain {}",
            s.session_id,
            s.record_count,
            s.head_seq,
            chain_hex(&s.head_chain)
        );
    }
    if let Some(c) = &report.claims {
        say!(
            "claims: {} records, head seq {}, chain {}",
            c.record_count,
            c.head_seq,
            chain_hex(&c.head_chain)
        );
    }
}

/// The report as one JSON object.
pub fn report_json(report: &VerifyReport) -> serde_json::Value {
    let sessions: Vec<_> = report
        .sessions
        .iter()
        .map(|s| {
            json!({"session": s.session_id, "records": s.record_count, "headSeq": s.head_seq,
                   "chain": chain_hex(&s.head_chain)})
        })
        .collect();
    json!({
        "rootId": report.marker.root_id,
        "clean": report.is_clean(),
        "findings": report.findings,
        "notes": report.notes,
        "quarantined": report.quarantined,
        "sessions": sessions,
        "claims": report.claims.as_ref().map(|c| json!({"records": c.record_count,
            "headSeq": c.head_seq, "chain": chain_hex(&c.head_chain)})),
    })
}
