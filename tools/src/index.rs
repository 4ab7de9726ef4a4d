//! `makalog index check|rebuild ROOT`.

use makalog::forensics::{sidecar_standing, SidecarStanding};
use makalog::index::{
    decode_sidecar_header, decode_sidecar_state, encode_sidecar, id_entries, rebuild,
    rebuild_sidecar, section, SIDECAR_FILE, SIDECAR_VERSION,
};
use makalog::root::{read_marker, try_acquire_owner};
use makalog::segment::layout::{list_sessions, session_dir};
use makalog::segment::WriterConfig;
use makalog::storage::RealStorage;
use std::path::Path;
use std::process::ExitCode;

fn sessions(storage: &RealStorage) -> Result<Vec<String>, ExitCode> {
    if let Err(e) = read_marker(storage) {
        return Err(crate::usage_error(e));
    }
    list_sessions(storage).map(|(ids, _)| ids).map_err(|e| {
        tell!("makalog: {e}");
        ExitCode::from(1)
    })
}

/// Compares every sidecar with a fresh rebuild; read-only.
pub fn check(root: &Path, json: bool) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    let ids = match sessions(&storage) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    let bar = crate::progress::bar("checking sidecars", ids.len() as u64);
    let mut bad = 0;
    for id in &ids {
        let path = session_dir(id).join(SIDECAR_FILE);
        let (ok, verdict, why) = judge_sidecar(&storage, id, &path);
        bar.inc(1);
        bad += usize::from(!ok);
        bar.suspend(|| {
            if json {
                say!(
                    "{}",
                    serde_json::json!({"session": id, "sidecar": path.display().to_string(),
                        "equal": ok, "verdict": verdict, "why": why})
                );
            } else {
                say!("{}: {why}", path.display());
            }
        });
    }
    bar.finish_and_clear();
    if !json && bad == 0 {
        say!("index check: {} sidecars equal their rebuilds", ids.len());
    } else if !json {
        say!("index check: {bad} of {} sidecars do not", ids.len());
    }
    if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Whether a session's sidecar equals a rebuild, a one-word verdict and a sentence.
fn judge_sidecar(storage: &RealStorage, id: &str, path: &Path) -> (bool, &'static str, String) {
    let want = match rebuild(storage, id)
        .and_then(|v| encode_sidecar(&v, &[]).map_err(|e| makalog::Error::corrupt(path, 0, e.what)))
    {
        Ok(w) => w,
        Err(e) => return (false, "unreadable", format!("cannot rebuild: {e}")),
    };
    // Read as a log is read (FORMAT.md): a file claiming any length costs its bytes.
    let got = match makalog::storage::data_end::read_data(storage, path) {
        Ok(g) => g,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return (false, "missing", "no sidecar".to_owned())
        }
        Err(e) => return (false, "unreadable", format!("cannot read it: {e}")),
    };
    if got == want {
        return (true, "equal", "equals a rebuild".to_owned());
    }
    if older_but_equal(&got, &want) {
        let why = format!(
            "equals a rebuild (sidecar version {}: the next write, or index rebuild, makes it version {SIDECAR_VERSION})",
            u16::from_le_bytes([got[8], got[9]])
        );
        return (true, "equal", why);
    }
    match decode_sidecar_header(&got) {
        Err(e) => (
            false,
            "damaged",
            format!("damaged at byte {}: {}", e.offset, e.what),
        ),
        Ok(h) => against_log(storage, id, &h.covers),
    }
}

/// Why a sidecar that differs from a rebuild does: behind the log, contradicted by it (the log
/// or the sidecar was rewritten), or covering the log but holding something else.
fn against_log(
    storage: &RealStorage,
    id: &str,
    covers: &[makalog::index::Cover],
) -> (bool, &'static str, String) {
    let log = match makalog::forensics::session_chain(storage, id) {
        Ok(log) => log,
        Err(e) => return (false, "unreadable", format!("cannot read the log: {e}")),
    };
    match sidecar_standing(covers, &log) {
        SidecarStanding::Behind {
            covers_to,
            log_head,
        } => (
            false,
            "stale",
            format!("stale: it covers the log up to seq {covers_to} of {log_head}"),
        ),
        SidecarStanding::Contradicts { what, .. } => {
            (false, "contradiction", format!("contradiction: {what}"))
        }
        SidecarStanding::Current => (
            false,
            "differs",
            "differs from a rebuild: its covers hold, but what it says of them does not".to_owned(),
        ),
    }
}

/// True when `got` is a sidecar of the previous version that reads into the view `want` (this
/// version's encoding of a rebuild) encodes.
fn older_but_equal(got: &[u8], want: &[u8]) -> bool {
    let Ok(header) = decode_sidecar_header(got) else {
        return false;
    };
    if header.version == SIDECAR_VERSION {
        return false;
    }
    let ids = section(got, &header, 2).and_then(id_entries);
    match (decode_sidecar_state(got, &header), ids) {
        (Ok(view), Ok(ids)) => encode_sidecar(&view, &ids).is_ok_and(|bytes| bytes == want),
        _ => false,
    }
}

/// Rebuilds and replaces every sidecar under the owner lease: the only index command that writes.
pub fn rebuild_all(root: &Path) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    let ids = match sessions(&storage) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    let owner = match try_acquire_owner(root) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return crate::usage_error(format!(
                "{}: root is busy: another process owns it",
                root.display()
            ))
        }
        Err(e) => return crate::usage_error(e),
    };
    let bar = crate::progress::bar("rebuilding sidecars", ids.len() as u64);
    // Sessions are independent: rebuilt on every core, reported in order.
    let results = makalog::parallel::map(&ids, |id| {
        let r = rebuild_sidecar(&owner, id, WriterConfig::default()).map(|v| v.invocations.len());
        bar.inc(1);
        r
    });
    bar.finish_and_clear();
    let mut failed = false;
    for (id, result) in ids.iter().zip(results) {
        let path = session_dir(id).join(SIDECAR_FILE);
        match result {
            Ok(n) => say!("{}: rebuilt ({n} invocations)", path.display()),
            Err(e) => {
                tell!("makalog: {id}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
