//! `makalog verify ROOT`.

use makalog::format::chain::chain_hex;
use makalog::storage::RealStorage;
use makalog::verify::verify_root;
use makalog::Error;
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path) -> ExitCode {
    let storage = RealStorage::new(root);
    let report = match verify_root(&storage) {
        Ok(r) => r,
        Err(e @ Error::NotARoot { .. }) => return crate::usage_error(e),
        Err(e) => {
            eprintln!("makalog: {e}");
            return ExitCode::from(1);
        }
    };
    for finding in &report.findings {
        println!("{finding}");
    }
    for q in &report.quarantined {
        println!("note: {q}: torn tail cut by recovery and kept aside");
    }
    for s in &report.sessions {
        println!(
            "session {}: {} records, head seq {}, chain {}",
            s.session_id,
            s.record_count,
            s.head_seq,
            chain_hex(&s.head_chain)
        );
    }
    if report.is_clean() {
        println!("clean: {} sessions", report.sessions.len());
        ExitCode::SUCCESS
    } else {
        println!("{} findings", report.findings.len());
        ExitCode::from(1)
    }
}
