//! The chain of a log's valid prefix, record by record: what the forensic commands compare two
//! histories by. A chain value commits to every record before it, so two logs that hold the
//! same chain value at a sequence number hold the same history up to it.

use crate::claims::{replay_claims_visiting, CLAIMS_FILE};
use crate::error::{Error, Result};
use crate::format::{claims_genesis, genesis_chain, ChainValue};
use crate::root::read_marker;
use crate::segment::SessionReader;
use crate::storage::Storage;
use std::path::{Path, PathBuf};

/// One record of a valid prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub seq: u64,
    /// The chain value stored with the record.
    pub chain: ChainValue,
    /// Its record kind's name.
    pub kind: &'static str,
    /// The file holding it, relative to the root, and that file's segment ordinal (0 for the
    /// claims log).
    pub file: PathBuf,
    pub ordinal: u64,
    /// Byte offset of its frame, and just past it.
    pub offset: u64,
    pub end: u64,
}

impl Link {
    /// Where a session record read back lives.
    pub fn of(r: &crate::segment::Record) -> Link {
        Link {
            seq: r.seq,
            chain: r.chain,
            kind: r.kind.name(),
            file: r.file.clone(),
            ordinal: r.ordinal,
            offset: r.offset,
            end: r.end,
        }
    }
}

/// A log's valid prefix as links, and the damage that ended it early, if any.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    /// In sequence order; `links[i].seq == i + 1` (sequence numbers start at 1, without gaps).
    pub links: Vec<Link>,
    /// Why reading stopped before the end of the files.
    pub stopped: Option<String>,
    /// The chain value before the first record.
    pub genesis: ChainValue,
}

impl Chain {
    /// The record with sequence number `seq`, if the prefix reaches it.
    pub fn at(&self, seq: u64) -> Option<&Link> {
        let i = usize::try_from(seq.checked_sub(1)?).ok()?;
        self.links.get(i)
    }

    /// Sequence number of the last record (0 when empty).
    pub fn head_seq(&self) -> u64 {
        self.links.last().map_or(0, |l| l.seq)
    }

    /// The chain value after the last record (the genesis value when empty).
    pub fn head_chain(&self) -> ChainValue {
        self.links.last().map_or(self.genesis, |l| l.chain)
    }
}

/// The chain of a session's valid prefix; `Err` only when the session cannot be listed or its
/// id is not valid.
pub fn session_chain(storage: &dyn Storage, session_id: &str) -> Result<Chain> {
    let mut out = Chain {
        genesis: genesis_chain(session_id),
        ..Chain::default()
    };
    for record in SessionReader::open(storage, session_id, 1)? {
        match record {
            Ok(r) => {
                debug_assert_eq!(r.seq, out.links.len() as u64 + 1, "the reader checks seqs");
                out.links.push(Link::of(&r));
            }
            Err(e) => {
                out.stopped = Some(e.to_string());
                break;
            }
        }
    }
    Ok(out)
}

/// The chain of the claims log's valid prefix; `None` when the root has no claims log.
pub fn claims_chain(storage: &dyn Storage) -> Result<Option<Chain>> {
    let marker = read_marker(storage)?;
    let bytes = match crate::storage::data_end::read_data(storage, Path::new(CLAIMS_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(CLAIMS_FILE, "read", e)),
    };
    let root_id = marker.root_id_bytes()?;
    let mut out = Chain {
        genesis: claims_genesis(&root_id),
        ..Chain::default()
    };
    let replay = replay_claims_visiting(&bytes, &root_id, &mut |l, _| {
        out.links.push(Link {
            seq: l.seq,
            chain: l.chain,
            kind: crate::format::FrameKind::name(l.kind),
            file: PathBuf::from(CLAIMS_FILE),
            ordinal: 0,
            offset: l.offset,
            end: l.end,
        })
    });
    out.stopped = replay
        .problems
        .first()
        .map(crate::recovery::Problem::describe);
    Ok(Some(out))
}
