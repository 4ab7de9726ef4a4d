//! Stored messages read back from a session's segments, at the positions its view holds.

use crate::error::Result;
use crate::index::{MessageEntry, SessionState, StoredAt};
use crate::model::StoredMessage;
use crate::segment::FramesAt;
use crate::storage::Storage;

/// Whether message `m` is one of turn `turn_id`'s, or any when no turn is asked for.
pub(super) fn in_turn(m: &MessageEntry<'_>, turn_id: Option<&str>) -> bool {
    turn_id.is_none_or(|t| m.turn_id == Some(t))
}

/// Fewer messages than this a core are read on one thread: below it, starting threads costs
/// more than decoding shares.
const MESSAGES_A_THREAD: usize = 2_048;

/// The messages `state` places, read back from the session's segments. A long read is shared
/// by the cores, a consecutive part each; the answer, and the first damaged or refused message
/// in append order if any, are what one thread reading them all would give (a failed read of
/// the file itself is reported by the part that met it, in the parts' order).
pub(super) fn messages_of(
    storage: &dyn Storage,
    session_id: &str,
    state: &SessionState,
    turn_id: Option<&str>,
) -> Result<Vec<StoredMessage>> {
    let at: Vec<StoredAt> = state
        .messages
        .iter()
        .filter(|m| in_turn(m, turn_id))
        .map(|m| m.at)
        .collect();
    let threads = crate::parallel::threads_for(storage, crate::parallel::cores());
    let parts = crate::parallel::map_ranges(threads, at.len(), MESSAGES_A_THREAD, |range| {
        decode_messages(storage, session_id, &at[range])
    });
    let mut out = Vec::with_capacity(at.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// The messages at `at`, read and decoded in order.
fn decode_messages(
    storage: &dyn Storage,
    session_id: &str,
    at: &[StoredAt],
) -> Result<Vec<StoredMessage>> {
    let mut frames = FramesAt::new(storage, session_id);
    super::stored::decoded_at(
        &mut frames,
        session_id,
        at,
        "message",
        StoredMessage::decode,
    )
}
