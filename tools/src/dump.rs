//! `makalog dump ROOT [--session ID]`: one JSON object per record.

use makalog::root::read_marker;
use makalog::segment::layout::list_sessions;
use makalog::segment::SessionReader;
use makalog::storage::RealStorage;
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
                eprintln!("makalog: {e}");
                return ExitCode::from(1);
            }
        },
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for id in ids {
        let reader = match SessionReader::open(&storage, &id, 1) {
            Ok(r) => r,
            Err(e @ Error::InvalidInput(_)) => return crate::usage_error(e),
            Err(e) => {
                eprintln!("makalog: session {id}: {e}");
                failed = true;
                continue;
            }
        };
        for record in reader {
            match record {
                Ok(r) => {
                    if writeln!(out, "{}", r.to_json(&id)).is_err() {
                        return ExitCode::from(1);
                    }
                }
                Err(e) => {
                    eprintln!("makalog: session {id}: {e}");
                    failed = true;
                }
            }
        }
    }
    if out.flush().is_err() || failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
