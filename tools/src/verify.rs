//! `makalog verify ROOT`.

use makalog::format::chain::chain_hex;
use makalog::storage::RealStorage;
use makalog::verify::verify_root;
use makalog::Error;
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    let report = match verify_root(&storage) {
        Ok(r) => r,
        Err(e @ Error::NotARoot { .. }) => return crate::usage_error(e),
        Err(e) => {
            eprintln!("makalog: {e}");
            return ExitCode::from(1);
        }
    };
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
    if report.is_clean() {
        say!("clean: {} sessions", report.sessions.len());
        ExitCode::SUCCESS
    } else {
        say!("{} findings", report.findings.len());
        ExitCode::from(1)
    }
}
