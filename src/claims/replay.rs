//! Reading the claims log: its header, then every frame replayed into the claim tables, then a
//! verdict on what follows. Pure: bytes in, tables and problems out. The owner's open, `verify`
//! and `makalog claims` all read the log through this.

use super::record::ClaimRecord;
use super::table::{ClaimTables, Decision};
use crate::format::{
    claims_genesis, ChainValue, ClaimKind, ClaimsHeader, FrameCursor, Tail, CLAIMS_HEADER_LEN,
};
use crate::recovery::Problem;
use std::path::Path;

/// The claims log's file name inside the root.
pub const CLAIMS_FILE: &str = "claims.log";

/// What reading the claims log found.
#[derive(Debug, Clone, Default)]
pub struct ClaimsReplay {
    /// The tables rebuilt from the valid prefix.
    pub tables: ClaimTables,
    /// Records in the valid prefix.
    pub record_count: u64,
    /// Sequence number and chain value after the valid prefix.
    pub head: (u64, ChainValue),
    /// Offset just past the valid prefix; 0 when the header did not decode.
    pub data_end: u64,
    /// Offset just past the last record the valid prefix proves was synced: the one its last
    /// frame's durable sequence number names (the header's end when none is named, or in
    /// version 1, whose frames carry none). What follows was written by the last write.
    pub proven_end: u64,
    /// Everything wrong, for the recovery table or for `verify`.
    pub problems: Vec<Problem>,
    /// The payload bound the header declares (0 when the header did not decode).
    pub max_payload: u32,
    /// The header's format version (0 when the header did not decode).
    pub version: u16,
}

/// Replays the bytes of a claims log that belongs to the root with `root_id`.
pub fn replay_claims(bytes: &[u8], root_id: &[u8; 32]) -> ClaimsReplay {
    replay_claims_visiting(bytes, root_id, &mut |_, _| {})
}

/// Where one record of the valid prefix lives, and the chain value after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimsLink {
    pub seq: u64,
    pub kind: ClaimKind,
    pub chain: ChainValue,
    /// Byte offset of its frame.
    pub offset: u64,
    /// Byte offset just past it.
    pub end: u64,
}

/// [`replay_claims`], calling `visit` for each record of the valid prefix in order, with its
/// payload: what the forensic commands compare chains by, without the replay keeping every
/// record.
pub fn replay_claims_visiting(
    bytes: &[u8],
    root_id: &[u8; 32],
    visit: &mut dyn FnMut(ClaimsLink, &[u8]),
) -> ClaimsReplay {
    let file = Path::new(CLAIMS_FILE).to_path_buf();
    let genesis = claims_genesis(root_id);
    let mut out = ClaimsReplay {
        head: (0, genesis),
        ..ClaimsReplay::default()
    };
    let header = match ClaimsHeader::decode(bytes) {
        Ok((h, _)) => h,
        Err(e) => {
            let body = bytes.get(CLAIMS_HEADER_LEN..).unwrap_or(&[]);
            out.problems.push(if body.iter().all(|&b| b == 0) {
                Problem::TornCreate { file, what: e.what }
            } else {
                Problem::Damage {
                    file,
                    offset: e.offset as u64,
                    what: format!("claims header does not decode: {}", e.what),
                }
            });
            return out;
        }
    };
    out.max_payload = header.max_payload;
    out.version = header.version;
    if header.root_id != *root_id {
        out.problems.push(Problem::Damage {
            file,
            offset: 16,
            what: "the claims log belongs to another root".into(),
        });
        return out;
    }
    let mut cursor = FrameCursor::<ClaimKind>::new(
        CLAIMS_HEADER_LEN,
        header.layout(),
        header.max_payload,
        1,
        genesis,
        false,
    );
    out.data_end = cursor.data_end();
    out.proven_end = out.data_end;
    // Where each record of the valid prefix ends, by sequence number, and the durable number
    // of the last.
    let (mut ends, mut last_durable) = (Vec::new(), None);
    while let Some((offset, frame)) = cursor.next_frame(bytes) {
        if let Err(what) = out.tables.replay(frame.kind, frame.payload, frame.seq) {
            out.problems.push(Problem::Damage {
                file,
                offset,
                what: format!("record {}: {what}", frame.seq),
            });
            return out;
        }
        out.record_count += 1;
        out.head = (frame.seq, frame.chain);
        out.data_end = cursor.data_end();
        ends.push(out.data_end);
        last_durable = frame.durable_seq;
        visit(
            ClaimsLink {
                seq: frame.seq,
                kind: frame.kind,
                chain: frame.chain,
                offset,
                end: out.data_end,
            },
            frame.payload,
        );
    }
    // Sequence numbers run from 1 without gaps and a durable number is below its frame's.
    if let Some(end) = last_durable
        .and_then(|d| d.checked_sub(1))
        .and_then(|i| ends.get(i as usize))
    {
        out.proven_end = *end;
    }
    match cursor.end() {
        Some(Tail::Torn { len, what }) => out.problems.push(Problem::TornTail {
            file,
            offset: out.data_end,
            len: *len,
            what: what.clone(),
        }),
        Some(Tail::Damaged { offset, what }) => out.problems.push(Problem::Damage {
            file,
            offset: *offset,
            what: what.clone(),
        }),
        Some(Tail::Sealed { .. }) | Some(Tail::Eof) | Some(Tail::Zeros { .. }) | None => {}
    }
    out
}

impl ClaimTables {
    /// Replays one record read from the log. An identical duplicate (a retry's record) changes
    /// nothing; a record that contradicts the tables is corruption, described in the error.
    pub fn replay(
        &mut self,
        kind: ClaimKind,
        payload: &[u8],
        seq: u64,
    ) -> std::result::Result<(), String> {
        let record = ClaimRecord::decode(kind, payload)?;
        let duplicate = match &record {
            ClaimRecord::Graph(c) => self
                .graph_claim(&c.graph_id, &c.intent_id)
                .map(|s| s.claim == *c),
            ClaimRecord::Status(s) => self
                .graph_claim(&s.graph_id, &s.intent_id)
                .filter(|g| g.status == s.status && g.cancel_reason == s.reason)
                .map(|_| true),
            ClaimRecord::Spawn(c) => self.spawn_claim(&c.key()).map(|s| s.claim == *c),
            ClaimRecord::Session(c) => self.session_claim(&c.session_id).map(|s| s.claim == *c),
        };
        match duplicate {
            Some(true) => return Ok(()),
            Some(false) => {
                return Err(format!(
                    "a {} record contradicts an earlier one for the same key",
                    kind_name(kind)
                ))
            }
            None => {}
        }
        match self.decide(&record) {
            Ok(Decision::Append) => {
                self.apply(record, seq);
                Ok(())
            }
            Ok(Decision::Stored { .. }) => Err(format!(
                "a {} record repeats a claim with different details",
                kind_name(kind)
            )),
            Err(e) => Err(format!(
                "a {} record cannot be replayed: {e}",
                kind_name(kind)
            )),
        }
    }
}

fn kind_name(kind: ClaimKind) -> &'static str {
    crate::format::FrameKind::name(kind)
}
