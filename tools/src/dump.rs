//! `makalog dump ROOT [--session ID]`: one JSON object per record.

use makalog::root::read_marker;
use makalog::segment::layout::list_sessions;
use makalog::segment::SessionReader;
use makalog::storage::{RealStorage, Storage};
use makalog::Error;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, only: Option<&str>) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    if let Err(e) = read_marker(&storage) {
        return crate::usage_error(e);
    }
    let ids = match only {
        Some(id) => vec![id.to_owned()],
        None => match list_sessions(&storage) {
            Ok((ids, _)) => ids,
            Err(e) => {
                tell!("makalog: {e}");
                return ExitCode::from(1);
            }
        },
    };
    let live = storage
        .is_locked(Path::new(makalog::root::LOCK_FILE))
        .unwrap_or(false);
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for id in ids {
        let reader = match SessionReader::open(&storage, &id, 1) {
            Ok(r) => r,
            Err(e @ Error::InvalidInput(_)) => return crate::usage_error(e),
            Err(e) => {
                tell!("makalog: session {id}: {e}");
                failed = true;
                continue;
            }
        };
        let mut stopped = false;
        for record in reader {
            match record {
                Ok(r) => {
                    let line = r.to_json(&id).to_string();
                    if writeln!(out, "{}", crate::output::escaped(&line)).is_err() {
                        return ExitCode::from(1);
                    }
                }
                Err(e) => {
                    tell!("makalog: session {id}: {e}");
                    stopped = true;
                }
            }
        }
        // The reader ends quietly at a torn tail or torn create (a write in flight); on a root
        // no live process owns, that is damage, as verify says.
        if !stopped && !live {
            if let Some(why) = torn_end(&storage, &id) {
                tell!("makalog: session {id}: {why}");
                stopped = true;
            }
        }
        failed |= stopped;
    }
    if out.flush().is_err() || failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The torn tail or torn create the session's log ends in, described, if it ends in one that
/// verify counts as damage (a torn create that is the session's only file holds no record).
fn torn_end(storage: &RealStorage, id: &str) -> Option<String> {
    use makalog::recovery::Problem;
    let (_, scanned) = makalog::segment::load::scan_session_files(storage, id, None).ok()?;
    makalog::segment::check_session(id, &scanned, None)
        .problems
        .iter()
        .find(|p| {
            matches!(p, Problem::TornTail { .. } | Problem::TornCreate { .. })
                && !p.is_harmless(false, scanned.len() == 1)
        })
        .map(Problem::describe)
}
