//! Deciding claim records against the tables and queueing the new ones in the log's group
//! commit: one record waited for alone, or several taken together in one sync.

use super::{ClaimsLog, Guard};
use crate::claims::table::{ClaimRecord, Decision};
use crate::error::{Error, Result};
use crate::format::{next_chain, FrameBatch, FrameKind};

impl ClaimsLog {
    /// Decides `record` against the tables and, if it is new, appends it; in both cases waits
    /// until the record that answers is durable. Returns whether a record was appended.
    pub(super) fn commit_record(&self, record: ClaimRecord) -> Result<(Guard<'_>, bool)> {
        let payload = record.encode_within(self.max_payload)?;
        let st = self.commit.lock()?;
        let (st, answer) = self.queue_record(st, record, payload)?;
        Ok((self.commit.wait_durable(st, answer.seq)?, answer.appended))
    }

    /// Decides each record in turn and queues the new ones, then waits once until every record
    /// that answers is durable: records taken together cost one sync. Every record is encoded,
    /// bounded and decided against the tables before any is queued, so one too big to append,
    /// or refused (a spawn whose key another request holds), leaves nothing queued: an id
    /// claim beside a refused spawn took the id for good. A record refused only because of an
    /// earlier one of the batch stops the batch there (what was queued stays, waited for).
    pub(super) fn commit_records(
        &self,
        records: Vec<ClaimRecord>,
    ) -> Result<(Guard<'_>, Vec<bool>)> {
        let encoded = records
            .into_iter()
            .map(|r| Ok((r.encode_within(self.max_payload)?, r)))
            .collect::<Result<Vec<_>>>()?;
        let mut st = self.commit.lock()?;
        for (_, record) in &encoded {
            if let Err(conflict) = st.log.tables.decide(record) {
                // As a conflict met while queueing: refused once what it rests on is durable.
                let queued = st.next_seq() - 1;
                drop(self.commit.wait_durable(st, queued)?);
                return Err(conflict);
            }
        }
        let (mut last, mut appended) = (0, Vec::with_capacity(encoded.len()));
        for (payload, record) in encoded {
            let (next, answer) = self.queue_record(st, record, payload)?;
            st = next;
            last = last.max(answer.seq);
            appended.push(answer.appended);
        }
        Ok((self.commit.wait_durable(st, last)?, appended))
    }

    /// Decides `record` (encoded as `payload`) against the tables and, if it is new, queues it
    /// (applied to the tables, not yet durable); returns the sequence number of the record
    /// that answers. A conflict is returned once everything queued is durable.
    fn queue_record<'a>(
        &'a self,
        mut st: Guard<'a>,
        record: ClaimRecord,
        payload: Vec<u8>,
    ) -> Result<(Guard<'a>, Answer)> {
        let decision = match st.log.tables.decide(&record) {
            Ok(d) => d,
            // A conflict may rest on a claim still being synced: refuse only once everything
            // queued is durable (if its sync fails, the caller gets that failure instead).
            Err(conflict) => {
                let queued = st.next_seq() - 1;
                drop(self.commit.wait_durable(st, queued)?);
                return Err(conflict);
            }
        };
        match decision {
            Decision::Stored { seq } => Ok((
                st,
                Answer {
                    seq,
                    appended: false,
                },
            )),
            Decision::Append => {
                let kind = record.kind();
                let seq = st.next_seq();
                if seq == u64::MAX {
                    return Err(Error::InvalidInput(
                        "the claims log has used every sequence number".into(),
                    ));
                }
                let chain = next_chain(&st.log.chain, seq, kind.code(), &payload);
                if st.chunks.is_empty() {
                    st.chunks.push(FrameBatch::new(self.layout));
                }
                if let Some(chunk) = st.chunks.last_mut() {
                    chunk.push(seq, kind, &payload, &chain);
                }
                st.queued(self.layout.overhead() + payload.len());
                st.log.chain = chain;
                st.log.tables.apply(record, seq);
                Ok((
                    st,
                    Answer {
                        seq,
                        appended: true,
                    },
                ))
            }
        }
    }
}

/// The record that answers a claim: its sequence number, and whether this call appended it.
struct Answer {
    seq: u64,
    appended: bool,
}
