//! Where a session's stored messages lie, with their ids and turns, in append order. The ids and
//! turns share one buffer, so a view of a long session is decoded from its sidecar without an
//! allocation a message (a read of 10,000 messages spent a tenth of its time decoding and
//! dropping two strings a message). Encoded exactly as a sequence of `{id, turn_id, at}` would
//! be, so the sidecar's bytes are what they were (FORMAT.md, the session state section).

use super::entries::StoredAt;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One stored message: its id and turn, and where its frame lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageEntry<'a> {
    pub id: &'a str,
    pub turn_id: Option<&'a str>,
    pub at: StoredAt,
}

/// Every stored message of a session, in append order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Messages {
    /// Each message's id, then its turn if it has one, one message after another.
    text: String,
    ends: Vec<Ends>,
}

/// Where a message's strings end in [`Messages::text`]; its id starts where the message before
/// it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ends {
    id: usize,
    /// `None` when the message has no turn.
    turn: Option<usize>,
    at: StoredAt,
}

impl Messages {
    /// How many messages.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Appends a message.
    pub fn push(&mut self, id: &str, turn_id: Option<&str>, at: StoredAt) {
        self.text.push_str(id);
        let id_end = self.text.len();
        let turn = turn_id.map(|t| {
            self.text.push_str(t);
            self.text.len()
        });
        self.ends.push(Ends {
            id: id_end,
            turn,
            at,
        });
    }

    /// The turn of the last message that has a turn other than `turn`: the turn before it
    /// (read from the end, so a session's length does not matter).
    pub fn last_turn_other_than(&self, turn: &str) -> Option<&str> {
        self.ends.iter().rev().find_map(|e| {
            let t = &self.text[e.id..e.turn?];
            (t != turn).then_some(t)
        })
    }

    /// The messages in append order.
    pub fn iter(&self) -> impl Iterator<Item = MessageEntry<'_>> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |e| {
            let id = &self.text[start..e.id];
            let turn_id = e.turn.map(|end| &self.text[e.id..end]);
            start = e.turn.unwrap_or(e.id);
            MessageEntry {
                id,
                turn_id,
                at: e.at,
            }
        })
    }
}

impl<'a> FromIterator<MessageEntry<'a>> for Messages {
    fn from_iter<I: IntoIterator<Item = MessageEntry<'a>>>(iter: I) -> Self {
        let mut out = Messages::default();
        for m in iter {
            out.push(m.id, m.turn_id, m.at);
        }
        out
    }
}

impl Serialize for Messages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Messages {
    /// Borrows each string from the input: the state is only ever decoded from bytes in memory
    /// (a sidecar's section), whose strings bincode lends.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = Messages;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sequence of stored messages")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Messages, A::Error> {
                let mut out = Messages::default();
                // The count comes from the file: what it reserves is bounded, the rest grows
                // with what actually decodes.
                out.ends.reserve(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(m) = seq.next_element::<MessageEntry<'de>>()? {
                    out.push(m.id, m.turn_id, m.at);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_seq(Seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The layout a sidecar has always had for its messages.
    #[derive(Serialize)]
    struct Owned {
        id: String,
        turn_id: Option<String>,
        at: StoredAt,
    }

    fn at(seq: u64) -> StoredAt {
        StoredAt {
            record_seq: seq,
            ordinal: seq / 3,
            offset: 256 + seq * 40,
        }
    }

    proptest! {
        #[test]
        fn messages_encode_as_a_sequence_of_entries_and_decode_back(
            list in proptest::collection::vec(
                (".{0,12}", proptest::option::of(".{0,12}")), 0..40),
        ) {
            let owned: Vec<Owned> = list
                .iter()
                .enumerate()
                .map(|(i, (id, turn))| Owned { id: id.clone(), turn_id: turn.clone(), at: at(i as u64) })
                .collect();
            let messages: Messages = owned
                .iter()
                .map(|o| MessageEntry { id: &o.id, turn_id: o.turn_id.as_deref(), at: o.at })
                .collect();
            prop_assert_eq!(messages.len(), owned.len());
            let bytes = bincode::serialize(&messages).expect("encodes");
            prop_assert_eq!(&bytes, &bincode::serialize(&owned).expect("encodes"));
            let back: Messages = bincode::deserialize(&bytes).expect("decodes");
            prop_assert_eq!(&back, &messages);
            for (m, o) in back.iter().zip(&owned) {
                prop_assert_eq!(m.id, o.id.as_str());
                prop_assert_eq!(m.turn_id, o.turn_id.as_deref());
                prop_assert_eq!(m.at, o.at);
            }
        }
    }

    #[test]
    fn an_empty_turn_is_kept_apart_from_none() {
        let mut m = Messages::default();
        m.push("a", Some(""), at(1));
        m.push("", None, at(2));
        m.push("b", Some("t"), at(3));
        let got: Vec<_> = m.iter().map(|e| (e.id, e.turn_id)).collect();
        assert_eq!(got, [("a", Some("")), ("", None), ("b", Some("t"))]);
    }

    #[test]
    fn a_count_beyond_the_bytes_fails_without_reserving_it() {
        let mut bytes = u64::MAX.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0; 8]);
        assert!(bincode::deserialize::<Messages>(&bytes).is_err());
    }
}
