//! `makalog heads ROOT [--json]` and `makalog verify ROOT --against HEADS.json`: tamper
//! evidence as a workflow. Record the heads, keep them elsewhere, check a copy against them.

use crate::time::now_iso8601;
use makalog::forensics::{compare_heads, read_heads, HeadVerdict, RootHeads};
use makalog::format::chain::chain_hex;
use makalog::storage::{RealStorage, Storage};
use makalog::Error;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// The tool's name and version, as bundles and heads files record it.
pub fn tool() -> String {
    format!("makalog {}", env!("CARGO_PKG_VERSION"))
}

pub fn run(root: &Path, as_json: bool) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    let heads = match read_heads(&storage) {
        Ok(h) => h,
        Err(e @ Error::NotARoot { .. }) => return crate::usage_error(e),
        Err(e) => {
            tell!("makalog: {e}");
            return ExitCode::from(1);
        }
    };
    let code = if heads.damaged.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    for name in &heads.damaged {
        tell!(
            "makalog: {name}: damaged; its head is that of its valid prefix (run makalog verify)"
        );
    }
    if as_json {
        let v = heads.to_json(&tool(), &now_iso8601());
        for line in serde_json::to_string_pretty(&v).expect("json").lines() {
            say!("{line}");
        }
        return code;
    }
    say!("root {} ({}, {})", heads.root_id, tool(), now_iso8601());
    let width = heads
        .sessions
        .iter()
        .map(|(id, _)| id.len())
        .max()
        .unwrap_or(0)
        .max("claims.log".len());
    say!(
        "{:<width$}  {:>10}  {:>10}  CHAIN",
        "LOG",
        "RECORDS",
        "HEAD SEQ"
    );
    let claims = heads.claims.iter().map(|h| ("claims.log", h));
    for (name, h) in heads
        .sessions
        .iter()
        .map(|(id, h)| (id.as_str(), h))
        .chain(claims)
    {
        say!(
            "{name:<width$}  {:>10}  {:>10}  {}",
            h.records,
            h.head_seq,
            chain_hex(&h.chain)
        );
    }
    code
}

/// Reads a heads file; a usage error (exit 2) when it cannot be read or is not one. Read as a
/// bundle is: a regular file only, so a FIFO or a device given by mistake is refused at once
/// instead of waited on or read without end.
pub fn load(path: &Path) -> Result<RootHeads, ExitCode> {
    let refuse = |why: String| crate::usage_error(format!("{}: {why}", path.display()));
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(std::path::PathBuf::from)
        .unwrap_or_default();
    let bytes = RealStorage::unmapped(dir)
        .read_file(&name)
        .map_err(|e| refuse(e.to_string()))?;
    let text =
        String::from_utf8(bytes).map_err(|_| refuse("not a heads file: not UTF-8".into()))?;
    RootHeads::from_json(&text).map_err(|why| refuse(format!("not a heads file: {why}")))
}

/// Each log's verdict against `recorded`, printed; true when any says evidence was altered
/// or lost. `Err` with the exit code when the heads belong to another root.
pub fn against(
    storage: &RealStorage,
    recorded: &RootHeads,
    as_json: bool,
) -> Result<(bool, Vec<serde_json::Value>), ExitCode> {
    let verdicts = compare_heads(storage, recorded).map_err(|e| match e {
        Error::InvalidInput(_) | Error::NotARoot { .. } => crate::usage_error(e),
        e => {
            tell!("makalog: {e}");
            ExitCode::from(1)
        }
    })?;
    let altered = verdicts.iter().any(|(_, v)| v.is_finding());
    let width = verdicts.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut listed = Vec::new();
    for (name, verdict) in &verdicts {
        if as_json {
            listed.push(verdict_json(name, verdict));
        } else {
            say!("against: {name:<width$}  {}", verdict.describe());
        }
    }
    Ok((altered, listed))
}

fn verdict_json(name: &str, v: &HeadVerdict) -> serde_json::Value {
    let mut out = json!({"log": name, "verdict": v.name(), "finding": v.is_finding()});
    match v {
        HeadVerdict::Grew { added } => out["added"] = json!(added),
        HeadVerdict::Rewritten { seq } => out["seq"] = json!(seq),
        HeadVerdict::Lost { recorded, holds } => {
            out["recorded"] = json!(recorded);
            out["holds"] = json!(holds);
        }
        HeadVerdict::New { records } => out["records"] = json!(records),
        HeadVerdict::Unchanged | HeadVerdict::Missing => {}
    }
    out
}
