//! The kinds of record a frame may carry. The segment log treats payloads as opaque; the kind
//! says which layer above owns them.

/// What a frame's payload is. Kind 0 is never valid, so an all-zero frame header never decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum RecordKind {
    /// The session's metadata (SessionHeader of MAKA-MODEL §5).
    SessionHeader = 1,
    /// A StoredMessage (§6).
    Message = 2,
    /// A run header or its update (§7).
    Run = 3,
    /// An AgentRunEvent (§7).
    RunEvent = 4,
    /// A root-turn admission (§8).
    Admission = 5,
    /// A canonical RuntimeEvent (§1), stored as canonical JSON.
    RuntimeEvent = 6,
    /// The seal of a run: nothing more may be appended to it.
    RunSeal = 7,
    /// A root turn's start rejection (§8), from format version 3.
    TurnRejection = 8,
}

impl super::FrameKind for RecordKind {
    fn from_code(code: u8) -> Option<RecordKind> {
        RecordKind::from_code(code)
    }
    fn code(self) -> u8 {
        self as u8
    }
    fn name(self) -> &'static str {
        RecordKind::name(self)
    }
    fn first_version(self) -> u16 {
        match self {
            RecordKind::TurnRejection => 3,
            _ => 1,
        }
    }
}

impl RecordKind {
    /// Every kind, in code order.
    pub const ALL: [RecordKind; 8] = [
        RecordKind::SessionHeader,
        RecordKind::Message,
        RecordKind::Run,
        RecordKind::RunEvent,
        RecordKind::Admission,
        RecordKind::RuntimeEvent,
        RecordKind::RunSeal,
        RecordKind::TurnRejection,
    ];

    /// The kind with this code, if any.
    pub fn from_code(code: u8) -> Option<RecordKind> {
        RecordKind::ALL.into_iter().find(|k| *k as u8 == code)
    }

    /// The name `makalog dump` prints.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::SessionHeader => "session_header",
            RecordKind::Message => "message",
            RecordKind::Run => "run",
            RecordKind::RunEvent => "run_event",
            RecordKind::Admission => "admission",
            RecordKind::RuntimeEvent => "runtime_event",
            RecordKind::RunSeal => "run_seal",
            RecordKind::TurnRejection => "turn_rejection",
        }
    }

    /// The kind with this name, if any.
    pub fn from_name(name: &str) -> Option<RecordKind> {
        RecordKind::ALL.into_iter().find(|k| k.name() == name)
    }
}
