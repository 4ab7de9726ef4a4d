//! One record of the claims log: a claim or a status change, with its frame kind, its JSON
//! payload, and its strict decoding.

use super::request::{
    validate_graph_request, validate_session_claim, validate_spawn_claim, AdmissionStatusChange,
    AgentGraphIntentClaim, SessionCreateClaim, SubagentSpawnClaim,
};
use crate::error::{Error, Result};
use crate::format::ClaimKind;

/// One record of the claims log, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimRecord {
    Graph(AgentGraphIntentClaim),
    Status(AdmissionStatusChange),
    Spawn(SubagentSpawnClaim),
    Session(SessionCreateClaim),
}

impl ClaimRecord {
    /// The frame kind of this record.
    pub fn kind(&self) -> ClaimKind {
        match self {
            ClaimRecord::Graph(_) => ClaimKind::GraphIntentClaim,
            ClaimRecord::Status(_) => ClaimKind::GraphIntentStatus,
            ClaimRecord::Spawn(_) => ClaimKind::SubagentSpawnClaim,
            ClaimRecord::Session(_) => ClaimKind::SessionCreateClaim,
        }
    }

    /// The payload: JSON with keys sorted at every depth. Each claim's fields are declared in
    /// the order of their JSON names and a header's members are a sorted map (serde_json's
    /// map is a `BTreeMap` without its `preserve_order` feature), so serializing the record
    /// directly keeps that order without building a JSON value first.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let bytes = match self {
            ClaimRecord::Graph(c) => serde_json::to_vec(c),
            ClaimRecord::Status(s) => serde_json::to_vec(s),
            ClaimRecord::Spawn(c) => serde_json::to_vec(c),
            ClaimRecord::Session(c) => serde_json::to_vec(c),
        };
        bytes.map_err(|e| Error::InvalidInput(format!("claim does not encode: {e}")))
    }

    /// The payload, refused if it is over `max_payload` bytes or would not read back as the
    /// claim it is (replay must take every record the log holds: a spawn claim carries its
    /// child's header, which its decoder may take nested deeper than the claim's reader can,
    /// at 128 levels). What a claims log appends, and what an import checks a row against.
    pub fn encode_within(&self, max_payload: u32) -> Result<Vec<u8>> {
        let payload = self.encode()?;
        if payload.len() > max_payload as usize {
            return Err(Error::InvalidInput(format!(
                "claim of {} bytes exceeds the bound of {max_payload} bytes",
                payload.len()
            )));
        }
        // What the encoder wrote from typed fields reads back unless it nests too deep.
        let nesting = payload_nesting(&payload);
        if nesting > MAX_PAYLOAD_NESTING {
            return Err(Error::InvalidInput(format!(
                "claim does not read back as written: it nests {nesting} levels deep, past \
                 the {MAX_PAYLOAD_NESTING} replay reads"
            )));
        }
        debug_assert!(
            ClaimRecord::decode(self.kind(), &payload).is_ok(),
            "a claim within the nesting bound reads back"
        );
        Ok(payload)
    }

    /// Decodes and validates a payload of `kind`.
    pub fn decode(kind: ClaimKind, payload: &[u8]) -> std::result::Result<ClaimRecord, String> {
        fn parse<T: serde::de::DeserializeOwned>(payload: &[u8]) -> std::result::Result<T, String> {
            crate::format::json_object::from_object(payload)
                .map_err(|e| format!("payload does not decode: {e}"))
        }
        let record = match kind {
            ClaimKind::GraphIntentClaim => {
                let c: AgentGraphIntentClaim = parse(payload)?;
                validate_graph_request(&c.request()).map_err(|e| e.to_string())?;
                ClaimRecord::Graph(c)
            }
            ClaimKind::GraphIntentStatus => ClaimRecord::Status(parse(payload)?),
            ClaimKind::SubagentSpawnClaim => {
                let c: SubagentSpawnClaim = parse(payload)?;
                validate_spawn_claim(&c).map_err(|e| e.to_string())?;
                ClaimRecord::Spawn(c)
            }
            ClaimKind::SessionCreateClaim => {
                let c: SessionCreateClaim = parse(payload)?;
                validate_session_claim(&c).map_err(|e| e.to_string())?;
                ClaimRecord::Session(c)
            }
        };
        Ok(record)
    }
}

/// The deepest nesting of arrays and objects replay takes in a payload (serde_json's reader
/// refuses a 128th level).
pub const MAX_PAYLOAD_NESTING: usize = 127;

/// How deep arrays and objects nest in `json`, a well-formed JSON text: brackets are counted
/// outside strings, where an escaped quote does not end the string. A writer checks this
/// instead of decoding what it has just encoded, which would cost it as much again. A string's
/// body is skipped a run at a time (a claim is mostly strings: its child's header).
pub fn payload_nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut at = 0;
    while let Some(&b) = json.get(at) {
        at += 1;
        match b {
            b'"' => at = crate::format::json_object::past_string(json, at),
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::request::AdmissionStatus;
    use serde_json::json;

    /// What the payload must be: the record as a JSON value, whose maps sort their keys at
    /// every depth, printed.
    fn sorted(record: &ClaimRecord) -> Vec<u8> {
        let value = match record {
            ClaimRecord::Graph(c) => serde_json::to_value(c),
            ClaimRecord::Status(s) => serde_json::to_value(s),
            ClaimRecord::Spawn(c) => serde_json::to_value(c),
            ClaimRecord::Session(c) => serde_json::to_value(c),
        };
        value.unwrap().to_string().into_bytes()
    }

    fn spawn(child_header: Option<serde_json::Value>) -> ClaimRecord {
        ClaimRecord::Spawn(SubagentSpawnClaim {
            child_header,
            child_session_id: "child".into(),
            item_id: "item".into(),
            parent_run_id: "run".into(),
            parent_session_id: "parent".into(),
            request_fingerprint: "f".repeat(64),
            swarm_id: "graph:g".into(),
            tool_call_id: "tool \"1\" é".into(),
        })
    }

    /// Payloads FORMAT.md refuses are damage: the fields as an array (serde's struct reader
    /// takes one), a member written `null` (read as left out), a child header that is no object.
    #[test]
    fn a_payload_is_an_object_without_nulls() {
        let refused = [
            (ClaimKind::SessionCreateClaim, r#"[1000,"s1"]"#.to_owned()),
            (
                ClaimKind::GraphIntentStatus,
                r#"{"graphId":"g","intentId":"i","reason":null,"status":"executing"}"#.to_owned(),
            ),
            (ClaimKind::SubagentSpawnClaim, {
                let mut v: serde_json::Value =
                    serde_json::from_slice(&spawn(None).encode().unwrap()).unwrap();
                v["childHeader"] = json!(5);
                v.to_string()
            }),
        ];
        for (kind, payload) in refused {
            assert!(
                ClaimRecord::decode(kind, payload.as_bytes()).is_err(),
                "{payload}"
            );
        }
        let session = r#"{"createdAt":1000,"sessionId":"s1"}"#;
        assert!(ClaimRecord::decode(ClaimKind::SessionCreateClaim, session.as_bytes()).is_ok());
    }

    /// Every kind of record encodes with its keys sorted at every depth, byte for byte as its
    /// JSON value prints, so a field declared out of order fails here.
    #[test]
    fn payloads_keep_keys_sorted_at_every_depth() {
        let records = [
            ClaimRecord::Graph(AgentGraphIntentClaim {
                claim_id: format!("graph_claim_{}", "a".repeat(32)),
                claimed_at: 1_700_000_000_000,
                graph_id: "g".into(),
                intent_fingerprint: format!("sha256:{}", "1".repeat(64)),
                intent_id: format!("graph_intent_{}", "b".repeat(32)),
                readiness_context_fingerprint: format!("sha256:{}", "2".repeat(64)),
                schema_version: 1,
                target_operator_id: "op".into(),
                target_run_id: "run".into(),
                target_session_id: "s".into(),
                target_turn_id: "turn".into(),
            }),
            ClaimRecord::Status(AdmissionStatusChange {
                graph_id: "g".into(),
                intent_id: "i".into(),
                status: AdmissionStatus::Executing,
                reason: Some("started".into()),
            }),
            ClaimRecord::Status(AdmissionStatusChange {
                graph_id: "g".into(),
                intent_id: "i".into(),
                status: AdmissionStatus::Cancelled,
                reason: None,
            }),
            spawn(None),
            spawn(Some(json!({
                "id": "child", "labels": ["b", "a"], "zeta": 1.5, "alpha": {"z": null, "a": -3},
                "subagentSpawn": {"schemaVersion": 1, "initialTurnId": "t"},
            }))),
            ClaimRecord::Session(SessionCreateClaim {
                session_id: "s".into(),
                created_at: 42,
            }),
        ];
        for record in &records {
            let bytes = record.encode().unwrap();
            assert_eq!(
                String::from_utf8_lossy(&bytes),
                String::from_utf8_lossy(&sorted(record)),
                "{record:?}"
            );
            assert_eq!(
                &ClaimRecord::decode(record.kind(), &bytes),
                &Ok(record.clone())
            );
        }
        // Written out, so a map that kept insertion order would fail here too.
        let header = json!({"zeta": 1.5, "id": "child", "alpha": {"z": null, "a": -3}});
        let bytes = spawn(Some(header)).encode().unwrap();
        let want = concat!(
            r#"{"childHeader":{"alpha":{"a":-3,"z":null},"id":"child","zeta":1.5},"#,
            r#""childSessionId":"child","itemId":"item","parentRunId":"run","#,
            r#""parentSessionId":"parent","requestFingerprint":"FP","swarmId":"graph:g","#,
            r#""toolCallId":"tool \"1\" é"}"#,
        );
        let want = want.replace("FP", &"f".repeat(64));
        assert_eq!(String::from_utf8(bytes).unwrap(), want);
    }

    /// A spawn claim whose child header is a string wrapped `levels` times, in arrays holding
    /// an object beside it and objects in turn, with brackets and escapes inside strings.
    fn nested(levels: usize) -> ClaimRecord {
        let mut v = json!("x\\\"]}[{");
        for i in 0..levels {
            v = match i % 2 {
                0 => json!([v, "]", {"k\"{": "}"}]),
                _ => json!({"a": v, "b": "\\"}),
            };
        }
        spawn(Some(v))
    }

    /// The scan agrees with the reader: a payload it finds within the bound decodes (as far
    /// as nesting goes: a bare array is not a header, so such payloads fail validation
    /// instead), one past it does not, and brackets inside strings (with escaped quotes and
    /// backslashes before them) are not counted.
    #[test]
    fn nesting_scan_agrees_with_the_reader_at_its_bound() {
        for levels in [0, 1, 2, 5, 125, 126, 127, 130] {
            let bytes = nested(levels).encode().unwrap();
            let depth = payload_nesting(&bytes);
            // The claim's object, then the first array's object beside the string, then a
            // level a wrap.
            let want = if levels == 0 { 1 } else { levels + 2 };
            assert_eq!(depth, want, "{levels} levels");
            let decoded = ClaimRecord::decode(ClaimKind::SubagentSpawnClaim, &bytes);
            let too_deep = decoded
                .as_ref()
                .is_err_and(|e| e.contains("recursion limit"));
            assert_eq!(
                too_deep,
                depth > MAX_PAYLOAD_NESTING,
                "{levels}: {decoded:?}"
            );
        }
        assert_eq!(payload_nesting(br#"{"a":"[[[{{\\"}"#), 1);
        assert_eq!(payload_nesting(br#"[[],[[{}]]]"#), 4);
        assert_eq!(payload_nesting(b"7"), 0);
    }

    /// The scan a byte at a time, as the run-skipping one must count.
    fn nesting_bytewise(json: &[u8]) -> usize {
        let (mut depth, mut deepest) = (0usize, 0usize);
        let (mut in_string, mut escaped) = (false, false);
        for &b in json {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        deepest
    }

    proptest::proptest! {
        /// Any bytes at all (well-formed or not, cut inside a string or an escape): the
        /// run-skipping scan counts what the bytewise one counts.
        #[test]
        fn the_run_skipping_scan_counts_as_a_bytewise_one(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(b"[]{}\"\\ a\n".to_vec()),
                    proptest::num::u8::ANY,
                ],
                0..200,
            )
        ) {
            proptest::prop_assert_eq!(payload_nesting(&bytes), nesting_bytewise(&bytes));
        }
    }
}
