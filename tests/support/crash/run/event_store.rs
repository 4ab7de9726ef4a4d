//! The runtime-event store's operations: the event session's events and closes, and the
//! small sessions' store with its cap.

use super::*;

impl Run<'_> {
    /// An event through the event session's store. A failed append poisons the session's
    /// writer; the store's next call opens it again, writing back and syncing what the failed
    /// writer had written before reading it, so the failed event may or may not survive.
    pub(super) fn event(&mut self, run: u32, e: RuntimeEvent, terminal: bool) {
        let opened = self
            .event_store()
            .and_then(|s| s.open_session_now(EVENT_SESSION));
        if opened.is_err() {
            self.model.errors += 1;
            return;
        }
        let json = e.canonical_json().to_owned();
        let maybe = self.maybe_stored.contains(&json);
        let repeat = self.model.events.contains(&json) && !maybe;
        let sealed = self.sealed.contains(&run) && !repeat && !maybe;
        let maybe_sealed = self.maybe_sealed.contains(&run) && !repeat && !maybe;
        let immutable = !e.partial();
        if immutable && !sealed && !repeat && !maybe {
            self.model.events.push(json.clone());
        }
        let result = self
            .event_store()
            .and_then(|s| s.append(&e, Durability::Buffered));
        match result {
            Ok(_) if sealed => panic!("an event for sealed run {run} was accepted"),
            Ok(a) if repeat => assert!(!a.created, "an identical event was stored twice"),
            Ok(_) if immutable => {
                if !self.model.events_acked.contains(&json) {
                    self.model.events_acked.push(json.clone());
                }
                self.maybe_stored.retain(|m| *m != json);
                if terminal {
                    self.sealed.push(run);
                }
            }
            Ok(_) => {}
            Err(Error::RunSealed { .. }) if sealed => {}
            // The failed terminal survived: the run is sealed after all.
            Err(Error::RunSealed { .. }) if maybe_sealed => self.sealed.push(run),
            Err(e) if sealed => panic!("expected RunSealed, got {e}"),
            Err(_) => {
                self.model.errors += 1;
                if immutable && !self.maybe_stored.contains(&json) {
                    self.maybe_stored.push(json);
                }
                if terminal {
                    self.maybe_sealed.push(run);
                }
            }
        }
    }

    /// An event through the small sessions' store. A failure poisons only that session's
    /// writer; evicting it closes it, and a later call opens it again and recovers it from
    /// disk, which is allowed: so a failed event may or may not survive, and later ones still
    /// count.
    pub(super) fn small_event(&mut self, session: u32, i: u32) {
        let id = small_session(session);
        let e = events::text(
            &id,
            &format!("small-run-{i}"),
            &format!("small-turn-{i}"),
            &format!("small-{session}-{i}"),
            f64::from(i),
            "a small session's words",
        );
        let json = e.canonical_json().to_owned();
        let submitted = self.model.small.entry(session).or_default();
        if !submitted.contains(&json) {
            submitted.push(json.clone());
        }
        if self.small.is_none() {
            match self.owner() {
                Ok(o) => {
                    let store = RuntimeEventStore::with_open_limit(o, small_config(), SMALL_OPEN);
                    self.small = Some(store);
                }
                Err(_) => {
                    self.model.errors += 1;
                    return;
                }
            }
        }
        let result = self
            .small
            .as_ref()
            .map(|s| s.append(&e, Durability::Durable));
        match result {
            Some(Ok(_)) => {
                let acked = self.model.small_acked.entry(session).or_default();
                if !acked.contains(&json) {
                    acked.push(json);
                }
            }
            _ => self.model.errors += 1,
        }
    }

    pub(super) fn close_small(&mut self) {
        if let Some(store) = self.small.take() {
            if store.close().is_err() {
                self.model.errors += 1;
            }
        }
    }

    pub(super) fn close_events(&mut self) {
        // A failed close loses nothing acknowledged (immutable events were durable before they
        // were acknowledged); the next call opens the store again and recovers.
        if let Some(store) = self.events.take() {
            if store.close().is_err() {
                self.model.errors += 1;
            }
        }
    }
}
