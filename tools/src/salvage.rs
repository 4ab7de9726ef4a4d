//! `makalog salvage ROOT --into NEW_ROOT [--session ID...] [--json]`.

use makalog::forensics::salvage::{plan, write, SalvageReport};
use makalog::storage::RealStorage;
use makalog::verify::verify_root;
use makalog::Error;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, into: &Path, only: &[String], as_json: bool) -> ExitCode {
    for id in only {
        if let Err(why) = makalog::format::validate_session_id(id) {
            return crate::usage_error(why);
        }
    }
    if let Err(why) = crate::outside::outside_root(root, into) {
        return crate::usage_error(why);
    }
    let source = RealStorage::unmapped(root);
    let target = RealStorage::new(into);
    let planned = match crate::progress::spinner("reading the source", || plan(&source, only)) {
        Ok(p) => p,
        Err(e @ (Error::NotARoot { .. } | Error::InvalidInput(_))) => return crate::usage_error(e),
        Err(e) => return failed(e),
    };
    let bar = crate::progress::bar("copying sessions", planned.sessions.len() as u64);
    let written = write(&planned, &target, &|_| bar.inc(1));
    bar.finish_and_clear();
    let report = match written {
        Ok(r) => r,
        Err(e @ Error::InvalidInput(_)) => return crate::usage_error(e),
        Err(e) => return failed(e),
    };
    let verified = verify_root(&RealStorage::unmapped(into));
    let clean = matches!(&verified, Ok(v) if v.is_clean());
    if as_json {
        say!("{}", report_json(&report, into, clean));
    } else {
        print(&report, into);
        match &verified {
            Ok(v) if v.is_clean() => say!("verify {}: clean", into.display()),
            Ok(v) => {
                for f in &v.findings {
                    say!("verify {}: {f}", into.display());
                }
            }
            Err(e) => say!("verify {}: {e}", into.display()),
        }
    }
    if !clean {
        tell!("makalog: the salvaged root does not verify clean");
        ExitCode::from(1)
    } else if report.left_behind.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn failed(e: Error) -> ExitCode {
    tell!("makalog: {e}");
    ExitCode::from(1)
}

fn print(report: &SalvageReport, into: &Path) {
    let width = report
        .sessions
        .iter()
        .map(|s| s.session_id.len())
        .max()
        .unwrap_or(0);
    for s in &report.sessions {
        let how = if s.intact {
            format!("{:>8} records, intact", s.kept)
        } else {
            format!(
                "{:>8} records, cut before the first damage (left behind below)",
                s.kept
            )
        };
        say!("kept {:<width$}  {how}", s.session_id);
    }
    if let Some(n) = report.claims_kept {
        say!("kept {:<width$}  {n:>8} records", "claims.log");
    }
    for l in &report.left_behind {
        let from = if l.from == 0 {
            "whole file".to_owned()
        } else {
            format!("from byte {}", l.from)
        };
        say!("left {} {from}: {}", l.file.display(), l.why);
    }
    say!(
        "wrote {} files, {} bytes into {}",
        report.files,
        report.bytes,
        into.display()
    );
}

fn report_json(report: &SalvageReport, into: &Path, clean: bool) -> serde_json::Value {
    json!({
        "into": into.display().to_string(),
        "verifiesClean": clean,
        "sessions": report.sessions.iter().map(|s| json!({"session": s.session_id,
            "kept": s.kept, "validRecords": s.valid_frames, "intact": s.intact})).collect::<Vec<_>>(),
        "claimsKept": report.claims_kept,
        "leftBehind": report.left_behind.iter().map(|l| json!({"file": l.file.display().to_string(),
            "from": l.from, "why": l.why})).collect::<Vec<_>>(),
        "files": report.files,
        "bytes": report.bytes,
    })
}
