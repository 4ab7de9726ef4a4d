//! A turn's deltas coalesced into buffered partial events (MAKA-MODEL §11, §12 step 7): text
//! and reasoning alike, each partial with `refs.providerEventId` = the message's id and a
//! content of the deltas' kind (`text` or `thinking`).

use super::super::begin::{built, runtime_event, Begun};
use super::super::manager::Inner;
use crate::event::RuntimeEvent;
use crate::segment::Durability;
use serde_json::json;

/// Deltas coalesced into one partial event at most.
const COALESCE: usize = 16;

/// Deltas not yet written, all of one message and one kind.
struct Pending {
    kind: &'static str,
    /// The first delta's id, which the partial takes.
    id: String,
    message_id: String,
    text: String,
    count: usize,
}

/// The deltas in hand and the last partial written.
#[derive(Default)]
pub(super) struct Partials {
    pending: Option<Pending>,
    /// The last partial event written: the next of the same message and kind is made from it.
    last: Option<RuntimeEvent>,
}

impl Partials {
    /// Takes a delta of content `kind`; a delta of another message or kind first writes
    /// those in hand. Returns how many appends failed (fail-open: the turn goes on).
    pub fn delta(
        &mut self,
        inner: &Inner,
        begun: &Begun,
        (kind, id, message_id, text): (&'static str, &str, &str, &str),
    ) -> usize {
        let mut failed = 0;
        match &mut self.pending {
            Some(p) if p.kind == kind && p.message_id == message_id => {
                p.text.push_str(text);
                p.count += 1;
            }
            _ => {
                failed += self.flush(inner, begun);
                self.pending = Some(Pending {
                    kind,
                    id: id.to_owned(),
                    message_id: message_id.to_owned(),
                    text: text.to_owned(),
                    count: 1,
                });
            }
        }
        if self.pending.as_ref().is_some_and(|p| p.count >= COALESCE) {
            failed += self.flush(inner, begun);
        }
        failed
    }

    /// Writes the deltas in hand as one partial event, buffered (not synced by itself);
    /// returns how many appends failed.
    pub fn flush(&mut self, inner: &Inner, begun: &Begun) -> usize {
        let Some(p) = self.pending.take() else {
            return 0;
        };
        let now = inner.sources.now();
        let same = |last: &RuntimeEvent| {
            let v = last.value();
            v["refs"]["providerEventId"] == p.message_id.as_str() && v["content"]["kind"] == p.kind
        };
        let event = match self.last.take() {
            // The envelope and the message are the last partial's: only id, time and text
            // change, which spares the strict path's decode (a dozen partials a turn). After
            // a failed append there is none, and the next takes the strict path.
            Some(last) if same(&last) => built(last.with_partial_text(&p.id, now, &p.text)),
            _ => {
                let fields = json!({"content": {"kind": p.kind, "text": p.text},
                                    "refs": {"providerEventId": p.message_id}});
                runtime_event(begun.ids.event(&p.id, now, true, "model", "agent", fields))
            }
        };
        let written = event.and_then(|e| {
            inner
                .stores
                .runtime_events
                .append(&e, Durability::Buffered)?;
            Ok(e)
        });
        match written {
            Ok(e) => {
                self.last = Some(e);
                0
            }
            Err(_) => 1,
        }
    }
}
