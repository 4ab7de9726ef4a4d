//! Targets for the JSON decoders: the canonical RuntimeEvent and every store payload. What
//! decodes has a canonical form that decodes to itself.

use makalog::event::RuntimeEvent;
use makalog::model::{
    RootTurnAdmission, RootTurnRejection, RunEvent, RunHeader, SessionHeader, StoredMessage,
};

/// Decodes `data` as JSON text with `decode`; what decodes must decode again, from its
/// canonical JSON, to the same canonical JSON and value.
fn canonical_fixpoint<T, E>(
    data: &[u8],
    decode: fn(&str) -> Result<T, E>,
    canonical: fn(&T) -> &str,
    value: fn(&T) -> &serde_json::Value,
) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(first) = decode(text) else { return };
    let again = match decode(canonical(&first)) {
        Ok(a) => a,
        Err(_) => panic!("canonical JSON refused: {}", canonical(&first)),
    };
    assert_eq!(
        canonical(&again),
        canonical(&first),
        "canonical JSON is a fixpoint"
    );
    assert_eq!(value(&again), value(&first), "value is a fixpoint");
}

macro_rules! payload_target {
    ($(#[$doc:meta])* $fn:ident, $ty:ty) => {
        $(#[$doc])*
        pub fn $fn(data: &[u8]) {
            canonical_fixpoint(data, <$ty>::decode, <$ty>::canonical_json, <$ty>::value);
        }
    };
}

payload_target!(
    /// A RuntimeEvent (MAKA-MODEL §1–§3).
    runtime_event,
    RuntimeEvent
);
payload_target!(
    /// A session header (§5).
    session_header,
    SessionHeader
);
payload_target!(
    /// A stored message (§6).
    message,
    StoredMessage
);
payload_target!(
    /// A run header (§7).
    run_header,
    RunHeader
);
payload_target!(
    /// A run event (§7).
    run_event,
    RunEvent
);

/// A root-turn admission or start rejection (§8): the same bytes go to both decoders.
pub fn admission(data: &[u8]) {
    canonical_fixpoint(
        data,
        RootTurnAdmission::decode,
        RootTurnAdmission::canonical_json,
        RootTurnAdmission::value,
    );
    canonical_fixpoint(
        data,
        RootTurnRejection::decode,
        RootTurnRejection::canonical_json,
        RootTurnRejection::value,
    );
}
