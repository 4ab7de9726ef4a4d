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
        let st = self.commit.lock()?;
        let (st, answer) = self.queue_record(st, record)?;
        Ok((self.commit.wait_durable(st, answer.seq)?, answer.appended))
    }

    /// Decides each record in turn and queues the new ones, then waits once until every record
    /// that answers is durable: records taken together cost one sync. Stops at the first
    /// conflict (what was queued before it stays queued, and is waited for).
    pub(super) fn commit_records(
        &self,
        records: Vec<ClaimRecord>,
    ) -> Result<(Guard<'_>, Vec<bool>)> {
        let mut st = self.commit.lock()?;
        let (mut last, mut appended) = (0, Vec::with_capacity(records.len()));
        for record in records {
            let (next, answer) = self.queue_record(st, record)?;
            st = next;
            last = last.max(answer.seq);
            appended.push(answer.appended);
        }
        Ok((self.commit.wait_durable(st, last)?, appended))
    }

    /// Decides `record` against the tables and, if it is new, queues it (applied to the tables,
    /// not yet durable); returns the sequence number of the record that answers. A conflict is
    /// returned once everything queued is durable.
    fn queue_record<'a>(
        &'a self,
        mut st: Guard<'a>,
        record: ClaimRecord,
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
                let payload = record.encode()?;
                if payload.len() > self.max_payload as usize {
                    return Err(Error::InvalidInput(format!(
                        "claim of {} bytes exceeds the bound of {} bytes",
                        payload.len(),
                        self.max_payload
                    )));
                }
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
