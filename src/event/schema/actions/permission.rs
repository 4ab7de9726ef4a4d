//! `permissionRequest` (MAKA-MODEL §1.4): a permission prompt raised for a tool call, one of
//! three kinds.

use super::super::fields::{decode_object, expect_tag, invalid, Decoded, Obj, Result};
use super::additional::check_profile;
use crate::event::path::Path;
use serde_json::Value;

/// The tool categories a request may name.
const CATEGORIES: &[&str] = &[
    "read",
    "web_read",
    "file_write",
    "fs_destructive",
    "shell_safe",
    "shell_unsafe",
    "git_destructive",
    "network_send",
    "privileged",
    "browser",
    "computer_use",
    "client_capability",
    "custom_tool",
    "subagent",
];

/// The reasons of a `tool_permission` request.
const TOOL_PERMISSION_REASONS: &[&str] = &[
    "shell_dangerous",
    "file_write",
    "fs_destructive",
    "network",
    "git_destructive",
    "privileged",
    "browser",
    "computer_use",
    "custom",
];

/// Decodes a permission request.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &[
            "tool_permission",
            "additional_permissions",
            "sandbox_escalation",
        ],
    )?;
    decode_object(value, path, |r| {
        r.literal("kind", kind)?;
        r.string("requestId")?;
        r.string("toolUseId")?;
        let tool = r.string("toolName")?;
        r.one_of("category", CATEGORIES)?;
        r.opt_string("hint")?;
        match kind {
            "tool_permission" => {
                r.one_of("reason", TOOL_PERMISSION_REASONS)?;
                r.any("args")?;
                r.boolean("rememberForTurnAllowed")?;
            }
            "additional_permissions" => {
                r.literal("reason", "additional_permissions")?;
                r.required("additionalPermissions", check_profile)?;
                approval_fields(r, &["permissionsHash"])?;
                r.object("risk", |risk| {
                    risk.boolean("outsideWorkspace")?;
                    risk.boolean("protectedMetadata")?;
                    risk.boolean("networkEnabled")?;
                    Ok(())
                })?;
            }
            _ => {
                if tool != "Bash" {
                    return Err(invalid(
                        &r.at("toolName"),
                        "a sandbox escalation is for Bash",
                    ));
                }
                r.literal("reason", "sandbox_escalation")?;
                r.string("command")?;
                approval_fields(r, &["commandHash"])?;
                r.one_of("trigger", &["proactive", "sandbox_denial"])?;
                r.object("risk", |risk| {
                    risk.true_literal("unsandboxedExecution")?;
                    risk.true_literal("unrestrictedFileSystem")?;
                    risk.true_literal("unrestrictedNetwork")?;
                    risk.true_literal("protectedMetadataExposed")?;
                    Ok(())
                })?;
            }
        }
        Ok(())
    })
}

/// The members both approval kinds share: cwd, justification, hashes, and the fixed decisions.
fn approval_fields(r: &mut Obj, hashes: &[&'static str]) -> Result<()> {
    r.string("cwd")?;
    r.string("justification")?;
    r.string("intentHash")?;
    for &hash in hashes {
        r.string(hash)?;
    }
    r.boolean("alsoApprovesToolExecution")?;
    r.required("availableDecisions", |v, p| {
        let exact = v
            .as_array()
            .is_some_and(|d| d.len() == 2 && d[0] == "allow_once" && d[1] == "deny");
        if !exact {
            return Err(invalid(p, "must be exactly [\"allow_once\",\"deny\"]"));
        }
        Ok(())
    })?;
    Ok(())
}
