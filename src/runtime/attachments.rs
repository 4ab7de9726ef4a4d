//! A turn's attachments (MAKA-MODEL §1.2 AttachmentRef and StorageRef, §6 `user.attachments`):
//! files the user attached, each named with its MIME type, size and where its bytes live. The
//! bytes never travel in the ledger; the user message and the user RuntimeEvent state the
//! references, and the run's `run_created` counts them.

use crate::error::{Error, Result};
use crate::event::MAX_SAFE_INTEGER;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of file an attachment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    Image,
    Pdf,
    Doc,
    Code,
    Other,
}

/// Where an attachment's bytes live (§1.2 StorageRef).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum StorageRef {
    /// A file the session keeps, by its path under the session's files.
    SessionFile {
        session_id: String,
        relative_path: String,
    },
    /// A file of the workspace, by its path under the workspace root.
    WorkspaceFile { relative_path: String },
    /// A file elsewhere, by its absolute path.
    ExternalFile { absolute_path: String },
}

/// One attached file (§1.2 AttachmentRef).
/// Read from JSON (a host's own list) strictly: a member §1.2 does not name is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachmentRef {
    pub kind: AttachmentKind,
    /// The name shown for it (the fake backend echoes it).
    pub name: String,
    pub mime_type: String,
    /// Its size; at most 2^53 − 1, as the ledger's numbers are JavaScript's.
    pub bytes: u64,
    #[serde(rename = "ref")]
    pub storage: StorageRef,
}

/// Refuses an attachment the ledger cannot state, naming it by its place in the turn's list;
/// the caller has written nothing yet.
pub(super) fn check_attachments(attachments: &[AttachmentRef]) -> Result<()> {
    for (i, a) in attachments.iter().enumerate() {
        if a.bytes > MAX_SAFE_INTEGER as u64 {
            return Err(Error::InvalidInput(format!(
                "attachments[{i}].bytes: {} is past 2^53 - 1, the largest size the ledger \
                 states exactly",
                a.bytes
            )));
        }
    }
    Ok(())
}

/// The attachments as the user message and event state them: an array of AttachmentRef.
pub(super) fn attachments_json(attachments: &[AttachmentRef]) -> Value {
    Value::Array(attachments.iter().map(attachment_json).collect())
}

fn attachment_json(a: &AttachmentRef) -> Value {
    // Plain strings, integers and tags: serializing cannot fail.
    serde_json::to_value(a).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shape is §1.2's, as the original's validation corpus writes it.
    #[test]
    fn an_attachment_is_stated_as_the_corpus_states_one() {
        let a = AttachmentRef {
            kind: AttachmentKind::Code,
            name: "README.md".into(),
            mime_type: "text/markdown".into(),
            bytes: 12,
            storage: StorageRef::WorkspaceFile {
                relative_path: "README.md".into(),
            },
        };
        let want = json!({"kind": "code", "name": "README.md", "mimeType": "text/markdown",
                          "bytes": 12,
                          "ref": {"kind": "workspace_file", "relativePath": "README.md"}});
        assert_eq!(attachment_json(&a), want);
        let back: AttachmentRef = serde_json::from_value(want.clone()).expect("reads back");
        assert_eq!(back, a);
        let mut extra = want.clone();
        extra["extra"] = json!(true);
        assert!(serde_json::from_value::<AttachmentRef>(extra).is_err());
        let mut extra_ref = want;
        extra_ref["ref"]["absolutePath"] = json!("/x");
        assert!(serde_json::from_value::<AttachmentRef>(extra_ref).is_err());
        let session = StorageRef::SessionFile {
            session_id: "s".into(),
            relative_path: "a.png".into(),
        };
        assert_eq!(
            serde_json::to_value(&session).expect("json"),
            json!({"kind": "session_file", "sessionId": "s", "relativePath": "a.png"})
        );
        let external = StorageRef::ExternalFile {
            absolute_path: "/tmp/x".into(),
        };
        assert_eq!(
            serde_json::to_value(&external).expect("json"),
            json!({"kind": "external_file", "absolutePath": "/tmp/x"})
        );
    }
}
