//! The index: a session's materialized view (runs and their seals, invocations, event ids,
//! what it covers of the segments), rebuilt from the segments and stored in a sidecar file that
//! is checked against them. A cache, never a source of truth.

mod build;
mod entries;
mod facts;
mod groups;
mod invocations;
mod messages;
mod positions;
mod run_state;
mod session_record;
mod session_state;
mod sidecar;
mod sidecar_old;
mod view;

pub use build::{
    belongs_to, catch_up, covers_hold, invocations_from_log, rebuild, rebuild_sidecar,
    recorded_durable, resume_point, trusted_sidecar,
};
pub use entries::{id_hash, Cover, IdEntry, InvocationEntry, KeyedEvent, RunEntry, StoredAt};
pub use facts::EventFacts;
pub use groups::{group_invocations, EventGroup};
pub use invocations::{
    read_order, runtime_invocations_from_session_events, sort_invocations, utf16_cmp,
    RuntimeInvocation,
};
pub use messages::{MessageEntry, Messages};
pub use run_state::{RunEventEntry, RunState, Runs};
pub use session_record::SessionRecord;
pub use session_state::{DecodedHeader, SessionState};
pub use sidecar::{
    decode_sidecar_header, decode_sidecar_state, encode_sidecar, find_ids, id_entries,
    ids_within_bounds, section, section_unchecked, Section, SidecarHeader, ID_ENTRY_LEN,
    SIDECAR_FILE, SIDECAR_MAGIC, SIDECAR_VERSION,
};
pub use view::{RecordRef, SessionIndex};
