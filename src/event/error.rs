//! Why a RuntimeEvent was refused: a variant a caller can act on, with the JSON path of the field.

/// A refused RuntimeEvent.
///
/// `field` is a JSON path into the event such as `actions.permissionRequest.category` or
/// `content.attachments[0].bytes`; `<event>` names the event itself.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EventError {
    /// The event breaks a rule of MAKA-MODEL §1 (or is not JSON at all).
    #[error("Invalid RuntimeEvent schema: {field}: {why}")]
    Invalid { field: String, why: String },
    /// A string holds a UTF-16 surrogate that is not half of a pair; makalog refuses these.
    #[error("Invalid RuntimeEvent schema: {field}: string holds a lone UTF-16 surrogate, which makalog refuses")]
    LoneSurrogate { field: String },
    /// Stringify → re-parse → re-decode did not give back the decoded event (MAKA-MODEL §2).
    #[error("RuntimeEvent is not losslessly serializable: {why}")]
    NotLossless { why: String },
}
