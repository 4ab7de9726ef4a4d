//! A session's view for reading: what its files hold, with no write hold taken and nothing
//! written.
//!
//! The common case is a session closed cleanly: its sidecar vouches for the whole log. Then the
//! view is the sidecar's, checked against the log the way an open for writing checks it (the
//! earlier segments sealed where the covers end, the last covered frame in place with its
//! sequence number and chain value), caught up over the few bytes after it, with the segment
//! files named from the covers instead of listing the directory: one read of the sidecar and
//! one open of the last segment (`vouched`). (A segment after an unsealed one is damage no
//! crash leaves; this view does not look for it, `makalog verify` and an open for writing
//! report it.)
//! A session with no sidecar (not closed yet, or a crash lost it) whose first segment is its
//! whole log, small and ending cleanly, is read from that segment alone (`first_segment`).
//! Any other session (a damaged or foreign sidecar, a roll after it, a torn or damaged tail, a
//! larger log with no sidecar) takes the general path: the sidecar caught up through the
//! session reader, or a rebuild, which report damage as an open for writing would. Files are
//! opened by name under the session's directory, which is checked to be one first: a symlink
//! there is never followed.

use super::first_segment::first_segment_alone;
use super::live::caught_up;
use super::sidecar_file::{sidecar_of, sidecar_path, SidecarFile};
use super::vouched::{vouched_view, Vouched};
use crate::error::{Error, Result};
use crate::format::{FrameCursor, RecordKind};
use crate::index::{
    invocations_from_log, rebuild, recorded_durable, RecordRef, RuntimeInvocation, SessionIndex,
};
use crate::segment::check_session;
use crate::segment::layout::session_dir;
use crate::segment::load::scan_session_files;
use crate::segment::writer::refuse_losing_durable;
use crate::segment::Resume;
use crate::storage::data_end::read_data;
use crate::storage::{EntryKind, FileBytes, Storage};
use std::io::ErrorKind;

/// The first read of a file asks for this many bytes: a small session's sidecar and segment
/// each come in one read.
pub(super) const FIRST_READ: usize = 16 << 10;

/// What a read-only view takes from a session's sidecar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sidecars {
    /// A sidecar whose covers hold against the log answers, caught up over what follows it.
    #[default]
    Trusted,
    /// Every sidecar is ignored and each view rebuilt from the segments alone: for a root one
    /// did not write, where a sidecar forged with its checksums intact could leave records out
    /// of every answer (its covers say where the log is, not that every record is listed).
    Ignored,
}

/// The session's invocations as its files hold them; none when it has no directory.
pub(crate) fn read_only_invocations(
    storage: &dyn Storage,
    session_id: &str,
) -> Result<Vec<RuntimeInvocation>> {
    match read_only_view(storage, session_id, Sidecars::Trusted)? {
        ReadOnly::Absent => Ok(Vec::new()),
        ReadOnly::Vouched(vouched) => vouched.invocations(storage),
        ReadOnly::General(view) => invocations_from_log(storage, &view),
    }
}

/// The session's view as its files hold it: the session's state read the short way when the
/// sidecar vouches for the log (or, with no sidecar, the first segment is the whole log), the
/// general way otherwise; the default for a session with no directory.
pub(crate) fn read_only_state(
    storage: &dyn Storage,
    session_id: &str,
    sidecars: Sidecars,
) -> Result<crate::index::SessionState> {
    Ok(match read_only_view(storage, session_id, sidecars)? {
        ReadOnly::Absent => Default::default(),
        ReadOnly::Vouched(vouched) => vouched.view.session,
        ReadOnly::General(view) => view.session,
    })
}

/// The session's view as its files hold it, read as the read-only stores read it: the short way
/// where its sidecar vouches for the log, the general way otherwise (where what a sidecar
/// recorded as durable must still be there), or from the segments alone where `sidecars` says
/// so; `None` when the session has no directory.
pub fn read_only_index(
    storage: &dyn Storage,
    session_id: &str,
    sidecars: Sidecars,
) -> Result<Option<SessionIndex>> {
    Ok(match read_only_view(storage, session_id, sidecars)? {
        ReadOnly::Absent => None,
        ReadOnly::Vouched(vouched) => Some(vouched.view),
        ReadOnly::General(view) => Some(view),
    })
}

/// How a session's files were read.
enum ReadOnly {
    /// The session has no directory.
    Absent,
    /// Read the short way: its sidecar vouches for the log (a session closed cleanly), or the
    /// log, with no sidecar, is its first segment alone.
    Vouched(Vouched),
    /// Its sidecar caught up through the session reader, or a rebuild.
    General(SessionIndex),
}

fn read_only_view(storage: &dyn Storage, session_id: &str, sidecars: Sidecars) -> Result<ReadOnly> {
    // Every way below opens files by name under the session's directory, which would follow a
    // symlink there out of the root: its kind is checked first (one lstat, no listing).
    let dir = session_dir(session_id);
    match storage
        .entry_kind(&dir)
        .map_err(|e| Error::io(&dir, "stat", e))?
    {
        None => return Ok(ReadOnly::Absent),
        Some(EntryKind::Dir) => {}
        Some(_) => {
            let why = "not a directory (a symlink is never followed)";
            return Err(Error::io(&dir, "open", std::io::Error::other(why)));
        }
    }
    let path = sidecar_path(session_id);
    if sidecars == Sidecars::Ignored {
        // Nothing a sidecar lists is believed, but what it recorded as durable must still be
        // there: a forged one can make the read refuse, never hide a record.
        let view = rebuild(storage, session_id)?;
        let durable = read_data(storage, &path)
            .ok()
            .and_then(|bytes| recorded_durable(&bytes, session_id));
        if let Some(durable) = durable {
            kept_what_was_durable(storage, &view, &durable)?;
        }
        return Ok(ReadOnly::General(view));
    }
    // The sidecar is read once: bytes that do not vouch for the log serve the general way. It
    // is read as a log is, up to its last non-zero byte and at most a frame's length of zeros:
    // nothing after its last section belongs to it, and a sparse file of any length costs its
    // maker nothing (a section that itself ended in more zeros than are kept would read as cut
    // short: the general way, then).
    let mut sidecar = None;
    match read_data(storage, &path) {
        Ok(bytes) => {
            if let Some(vouched) = vouched_view(storage, session_id, &bytes)? {
                return Ok(ReadOnly::Vouched(vouched));
            }
            sidecar = Some(bytes);
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if let Some(first) = first_segment_alone(storage, session_id)? {
                return Ok(ReadOnly::Vouched(Vouched {
                    view: first.view,
                    paths: vec![first.path],
                    last_ordinal: 0,
                    bytes: first.bytes,
                    from: 0,
                    layout: first.layout,
                }));
            }
        }
        Err(_) => {}
    }
    let durable = sidecar
        .as_deref()
        .and_then(|bytes| recorded_durable(bytes, session_id));
    let loaded = match sidecar {
        Some(bytes) => sidecar_of(storage, session_id, FileBytes::Owned(bytes))?,
        None => SidecarFile::Absent,
    };
    let view = match loaded {
        SidecarFile::Trusted(mut live) => match caught_up(storage, &mut live)? {
            true => live.view,
            false => rebuild(storage, session_id)?,
        },
        SidecarFile::Untrusted(_) | SidecarFile::Absent => rebuild(storage, session_id)?,
    };
    if let Some(durable) = durable {
        kept_what_was_durable(storage, &view, &durable)?;
    }
    Ok(ReadOnly::General(view))
}

/// What a sidecar recorded as durable (`durable`: its last cover, whether or not its covers
/// still hold) is not read as a write in flight (FORMAT.md, "What a sidecar recorded as durable
/// is never cut"): where the log now stops short of it, the log is checked as an open for
/// writing checks it: a torn tail or torn create there, or a log that ends before it, is damage
/// to acknowledged records, reported as that open refuses the session.
fn kept_what_was_durable(
    storage: &dyn Storage,
    view: &SessionIndex,
    durable: &Resume,
) -> Result<()> {
    let reached = view.covers.last().is_some_and(|c| {
        (c.ordinal, c.data_end) >= (durable.ordinal, durable.data_end)
            && c.last_seq >= durable.last_seq
    });
    if reached {
        return Ok(());
    }
    let (_, scanned) = scan_session_files(storage, &view.session_id, None)?;
    let check = check_session(&view.session_id, &scanned, None);
    refuse_losing_durable(&view.session_id, &check, &scanned, 0, durable)
}

/// Applies the frames `cursor` finds in `bytes` to `view`: frames of the segment at `path`
/// with that ordinal and format version. A record the view refuses is damage there.
pub(super) fn apply_frames(
    view: &mut SessionIndex,
    cursor: &mut FrameCursor<RecordKind>,
    bytes: &[u8],
    (path, ordinal, format_version): (&std::path::Path, u64, u16),
    known: &dyn Fn(&str) -> bool,
) -> Result<()> {
    while let Some((offset, frame)) = cursor.next_frame(bytes) {
        let at = RecordRef {
            ordinal,
            format_version,
            offset,
            end: cursor.data_end(),
            seq: frame.seq,
            chain: frame.chain,
            kind: frame.kind,
            payload: frame.payload,
        };
        view.apply_record(&at, known)
            .map_err(|what| Error::corrupt(path, offset, what))?;
    }
    Ok(())
}
