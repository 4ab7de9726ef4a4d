//! What the index needs to know of an event: its ids, ts, whether it is partial, terminal or an
//! opening. Read straight from the stored canonical JSON without the full strict decode (the
//! event was decoded strictly before it was written, and the chain vouches for its bytes), so a
//! rebuild runs at the speed of the log rather than of the validator.
//!
//! The members it reads are read as the strict decoder reads them: objects only (never the
//! array serde's derived reader would take), a decimal to the nearest double. Rules on members
//! it does not read (an unknown member, a content the schema refuses) are `verify`'s: an event
//! that breaks only those is indexed by its facts, and `verify` reports it.

use crate::event::RuntimeEvent;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::marker::PhantomData;

/// The facts of one event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventFacts<'a> {
    pub id: Cow<'a, str>,
    pub invocation_id: Cow<'a, str>,
    pub run_id: Cow<'a, str>,
    pub session_id: Cow<'a, str>,
    pub turn_id: Cow<'a, str>,
    pub ts: f64,
    pub partial: bool,
    /// Status completed, failed, aborted or cancelled, or `actions.endInvocation` (§1.1).
    pub terminal: bool,
    /// `content.kind` is `invocation_opened`.
    pub opening: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Peek<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    invocation_id: Cow<'a, str>,
    #[serde(borrow)]
    run_id: Cow<'a, str>,
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    turn_id: Cow<'a, str>,
    ts: f64,
    partial: bool,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<Object<PeekContent<'a>>>,
    #[serde(default)]
    actions: Option<Object<PeekActions>>,
}

/// `T` read from a JSON object only: serde's derived struct reader also takes an array of the
/// members in order, which the strict decoder (and so `verify`) refuses.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Members<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Members(PhantomData)).map(Object)
    }
}

#[derive(Deserialize)]
struct PeekContent<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PeekActions {
    #[serde(default)]
    end_invocation: Option<bool>,
}

fn terminal_status(status: Option<&str>) -> bool {
    matches!(
        status,
        Some("completed" | "failed" | "aborted" | "cancelled")
    )
}

impl<'a> EventFacts<'a> {
    /// Reads the facts of a stored event's canonical JSON.
    pub fn peek(json: &'a str) -> Result<EventFacts<'a>, String> {
        let Object(p): Object<Peek<'a>> = serde_json::from_str(json)
            .map_err(|e| format!("runtime event does not decode: {e}"))?;
        Ok(EventFacts {
            terminal: terminal_status(p.status.as_deref())
                || p.actions.and_then(|a| a.0.end_invocation) == Some(true),
            opening: p.content.is_some_and(|c| c.0.kind == "invocation_opened"),
            id: p.id,
            invocation_id: p.invocation_id,
            run_id: p.run_id,
            session_id: p.session_id,
            turn_id: p.turn_id,
            ts: p.ts,
            partial: p.partial,
        })
    }

    /// The facts of a stored event's payload: [`EventFacts::peek`]'s, or, for a payload the
    /// peek refuses and the strict decoder takes (one repeating a key, whose last value counts,
    /// as FORMAT.md says), the decoder's: what `verify` finds sound is read alike.
    pub fn read(json: &'a str) -> Result<EventFacts<'a>, String> {
        EventFacts::peek(json).or_else(|peeked| {
            let event = RuntimeEvent::decode(json).map_err(|_| peeked)?;
            Ok(EventFacts::of(&event).into_owned())
        })
    }

    fn into_owned(self) -> EventFacts<'static> {
        let own = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        EventFacts {
            id: own(self.id),
            invocation_id: own(self.invocation_id),
            run_id: own(self.run_id),
            session_id: own(self.session_id),
            turn_id: own(self.turn_id),
            ts: self.ts,
            partial: self.partial,
            terminal: self.terminal,
            opening: self.opening,
        }
    }

    /// The facts of a decoded event.
    pub fn of(event: &'a RuntimeEvent) -> EventFacts<'a> {
        EventFacts {
            id: Cow::Borrowed(event.id()),
            invocation_id: Cow::Borrowed(event.invocation_id()),
            run_id: Cow::Borrowed(event.run_id()),
            session_id: Cow::Borrowed(event.session_id()),
            turn_id: Cow::Borrowed(event.turn_id()),
            ts: event.ts(),
            partial: event.partial(),
            terminal: event.is_terminal(),
            opening: event.opening().is_some(),
        }
    }
}
