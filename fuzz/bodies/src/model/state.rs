//! What a root holds, as the model keeps it and as the stores answer it.

use makalog::store::{ExecutionStores, ReadOnlySessions};
use makalog::Result;
use std::collections::BTreeMap;

/// Sessions (by creation), their messages (in append order) and runs, and graph claims (by
/// number, with the operator each names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub sessions: Vec<String>,
    pub messages: BTreeMap<String, Vec<String>>,
    pub runs: BTreeMap<String, Vec<String>>,
    pub claims: BTreeMap<u8, String>,
}

impl State {
    /// What the writable stores answer.
    pub fn of_stores(stores: &ExecutionStores) -> Result<State> {
        let mut state = State::default();
        for header in stores.sessions.list_sessions()? {
            let id = header.id().to_owned();
            let messages = stores.sessions.read_messages(&id, None)?;
            let runs = stores.runs.list_session_runs(&id)?;
            state.add(
                &id,
                messages.iter().map(|m| m.id()),
                runs.iter().map(|r| r.run_id()),
            );
        }
        for c in stores.claims.list_agent_graph_intent_claims(None)? {
            let n = super::records::claim_number(&c.claim.intent_id);
            state.claims.insert(n, c.claim.target_operator_id.clone());
        }
        Ok(state)
    }

    /// What the read-only stores answer (claims aside: they are read by the owner only).
    pub fn of_files(reads: &ReadOnlySessions) -> Result<State> {
        let mut state = State::default();
        for header in reads.list_sessions()? {
            let id = header.id().to_owned();
            let messages = reads.read_messages(&id, None)?;
            let runs = reads.list_session_runs(&id)?;
            state.add(
                &id,
                messages.iter().map(|m| m.id()),
                runs.iter().map(|r| r.run_id()),
            );
        }
        Ok(state)
    }

    fn add<'a>(
        &mut self,
        id: &str,
        messages: impl Iterator<Item = &'a str>,
        runs: impl Iterator<Item = &'a str>,
    ) {
        self.sessions.push(id.to_owned());
        let messages: Vec<String> = messages.map(str::to_owned).collect();
        if !messages.is_empty() {
            self.messages.insert(id.to_owned(), messages);
        }
        let mut runs: Vec<String> = runs.map(str::to_owned).collect();
        runs.sort();
        if !runs.is_empty() {
            self.runs.insert(id.to_owned(), runs);
        }
    }

    /// This state without its claims.
    pub fn without_claims(&self) -> State {
        State {
            claims: BTreeMap::new(),
            ..self.clone()
        }
    }
}
