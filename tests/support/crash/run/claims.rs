//! The claims log's operations, checked against the claim rules as they are applied.

use super::*;

impl Run<'_> {
    pub(super) fn claim(&mut self, record: ClaimRecord) {
        if self.unopened.contains(&CLAIMS) {
            return;
        }
        if self.claims().is_err() {
            self.model.errors += 1;
            return self.unopened.push(CLAIMS);
        }
        if self.broken.contains(&CLAIMS) {
            let acked = match self.claims() {
                Ok(log) => log.list_agent_graph_intent_claims(None).is_ok(),
                Err(_) => false,
            };
            return self.require_failed(CLAIMS, acked);
        }
        let decision = self.shadow.decide(&record);
        let appends = matches!(decision, Ok(Decision::Append));
        if appends {
            self.model.claim_records.push(record.clone());
        }
        let log = match self.claims() {
            Ok(l) => l,
            Err(_) => return self.fail(CLAIMS),
        };
        let result = match &record {
            ClaimRecord::Graph(c) => log
                .claim_agent_graph_intent_at(c.request(), c.claimed_at)
                .map(|o| o.created),
            ClaimRecord::Status(s) => log
                .set_agent_graph_intent_status(
                    &s.graph_id,
                    &s.intent_id,
                    s.status,
                    s.reason.as_deref(),
                )
                .map(|_| appends),
            ClaimRecord::Spawn(c) => log.claim_subagent_spawn(c.clone()).map(|o| o.created),
            ClaimRecord::Session(c) => log
                .claim_session_create_at(&c.session_id, c.created_at)
                .map(|_| true),
        };
        match (&decision, result) {
            (Ok(Decision::Append), Ok(true)) => {
                self.shadow
                    .apply(record, self.model.claim_records.len() as u64);
                self.model.claims_acked = self.model.claim_records.len();
            }
            (Ok(Decision::Stored { .. }), Ok(false)) => {}
            (Err(Error::ClaimConflict { .. }), Err(Error::ClaimConflict { .. })) => {}
            (Err(Error::InvalidInput(_)), Err(Error::InvalidInput(_))) => {}
            (Ok(Decision::Append), Err(_)) => {
                self.shadow
                    .apply(record, self.model.claim_records.len() as u64);
                self.fail(CLAIMS);
            }
            (_, Err(Error::Poisoned { .. } | Error::Io { .. })) => self.fail(CLAIMS),
            (d, r) => {
                panic!("the log disagrees with the rules: decided {d:?}, got {r:?} for {record:?}")
            }
        }
    }
}
