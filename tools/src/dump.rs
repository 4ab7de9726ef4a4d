//! `makalog dump ROOT [--session ID]`: one JSON object per record.

use makalog::format::chain::chain_hex;
use makalog::format::hex;
use makalog::root::read_marker;
use makalog::segment::layout::list_sessions;
use makalog::segment::{Record, SessionReader};
use makalog::storage::RealStorage;
use makalog::Error;
use serde_json::{json, Value};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, only: Option<&str>) -> ExitCode {
    let storage = RealStorage::new(root);
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
                    if writeln!(out, "{}", record_json(&id, &r)).is_err() {
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

/// The dump line of one record: the payload as JSON when it is JSON, as hex otherwise.
pub fn record_json(session: &str, r: &Record) -> Value {
    let mut v = json!({
        "session": session,
        "file": r.file.display().to_string(),
        "offset": r.offset,
        "seq": r.seq,
        "kind": r.kind.name(),
        "chain": chain_hex(&r.chain),
    });
    match serde_json::from_slice::<Value>(&r.payload) {
        Ok(p) => v["payload"] = p,
        Err(_) => v["payloadHex"] = Value::String(hex(&r.payload)),
    }
    v
}
