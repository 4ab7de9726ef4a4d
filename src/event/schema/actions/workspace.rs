//! `workspaceFact` (MAKA-MODEL §1.4): a workspace-authority fact, with the exact payload keys of
//! HEAD's `workspace-version-authority.ts` (epoch opened, baseline accepted).

use super::super::fields::{decode_object, expect_tag, invalid, Decoded, Obj, Result};
use super::super::text::{is_prefixed_hex, is_sha256, is_token};
use crate::event::path::Path;
use serde_json::Value;

/// How a managed worktree is materialized.
const MATERIALIZATION_SEMANTICS: &str = "git_tree_materialized_with_fixed_config_v1";

/// Decodes `workspaceFact`: `{kind, version: 1, payload}`.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &[
            "maka.workspace.epoch_opened",
            "maka.workspace.baseline_accepted",
        ],
    )?;
    decode_object(value, path, |fact| {
        fact.literal("kind", kind)?;
        fact.number_literal("version", 1)?;
        if kind == "maka.workspace.epoch_opened" {
            fact.object("payload", read_epoch_opened)
        } else {
            fact.object("payload", read_baseline_accepted)
        }
    })
}

fn read_epoch_opened(p: &mut Obj) -> Result<()> {
    p.literal("protocol", "workspace_epoch_opened_v1")?;
    identifiers(p)?;
    hex_id(p, "workspaceInstanceId", "instance_")?;
    hex_id(p, "initialWorkspaceVersionId", "version_")?;
    p.literal("mode", "managed_worktree")?;
    let format = p.one_of("objectFormat", &["sha1", "sha256"])?;
    oid(p, "sourceCommitOid", format)?;
    oid(p, "sourceTreeOid", format)?;
    digest(p, "materializationProfileDigest")?;
    p.literal("materializationSemantics", MATERIALIZATION_SEMANTICS)?;
    digest(p, "policyHash")?;
    Ok(())
}

fn read_baseline_accepted(p: &mut Obj) -> Result<()> {
    p.literal("protocol", "workspace_baseline_accepted_v1")?;
    identifiers(p)?;
    hex_id(p, "workspaceVersionId", "version_")?;
    let format = p.one_of("objectFormat", &["sha1", "sha256"])?;
    p.required("parents", |v, path| match v.as_array() {
        Some(parents) if parents.is_empty() => Ok(()),
        _ => Err(invalid(path, "a baseline has no parents: must be []")),
    })?;
    p.object("origin", |origin| {
        origin.literal("kind", "baseline")?;
        let id = origin.string("epochOpenedEventId")?;
        if !is_token(id, 128) {
            return Err(invalid(
                &origin.at("epochOpenedEventId"),
                "must match [A-Za-z0-9_-]{1,128}",
            ));
        }
        Ok(())
    })?;
    oid(p, "commitOid", format)?;
    oid(p, "treeOid", format)?;
    digest(p, "policyHash")?;
    digest(p, "treeDeltaDigest")?;
    p.int_at_least("changedFileCount", 0)?;
    p.number_literal("deletedFileCount", 0)?;
    Ok(())
}

/// The repository, workspace and epoch ids both payloads carry.
fn identifiers(p: &mut Obj) -> Result<()> {
    hex_id(p, "repositoryId", "repository_")?;
    hex_id(p, "workspaceId", "workspace_")?;
    hex_id(p, "workspaceEpochId", "epoch_")
}

fn hex_id(p: &mut Obj, key: &'static str, prefix: &str) -> Result<()> {
    let id = p.string(key)?;
    if !is_prefixed_hex(id, prefix, 32) {
        return Err(invalid(
            &p.at(key),
            format!("must be {prefix}<32 lowercase hex digits>"),
        ));
    }
    Ok(())
}

/// A Git object id: 40 hex digits for sha1, 64 for sha256.
fn oid(p: &mut Obj, key: &'static str, format: &str) -> Result<()> {
    let id = p.string(key)?;
    let len = if format == "sha1" { 40 } else { 64 };
    if !is_prefixed_hex(id, "", len) {
        return Err(invalid(
            &p.at(key),
            format!("must be {len} lowercase hex digits"),
        ));
    }
    Ok(())
}

fn digest(p: &mut Obj, key: &'static str) -> Result<()> {
    let d = p.string(key)?;
    if !is_sha256(d) {
        return Err(invalid(
            &p.at(key),
            "expected sha256:<64 lowercase hex digits>",
        ));
    }
    Ok(())
}
