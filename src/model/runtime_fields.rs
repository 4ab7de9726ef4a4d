//! The members of a session's header the runtime sets itself (MAKA-MODEL §12: the connection
//! locked at a turn's opening, the session's status and when it changed, its last message and
//! unread flag at a turn's end), and the room a header must leave under the record bound for
//! them. The runtime sets them on the header the session holds when it writes (a host's update
//! stays), so a header a host wrote close to the bound would make that write fail midway
//! through a turn, after the records before it were queued: a host's header leaves the room.

use super::session::STATUSES;

/// The longest text a number prints as (`-0.0000012345678901234567`: a sign, a point, the
/// five zeros JavaScript prints before switching to an exponent, and 17 digits).
const NUMBER_TEXT_MAX: usize = 25;

/// Each member the runtime sets, with the length of the longest canonical value it can take.
pub(crate) const RUNTIME_FIELDS: [(&str, usize); 5] = [
    ("connectionLocked", "false".len()),
    ("hasUnread", "false".len()),
    ("status", longest_status() + 2),
    ("lastMessageAt", NUMBER_TEXT_MAX),
    ("statusUpdatedAt", NUMBER_TEXT_MAX),
];

/// Bytes a host's header leaves under the record bound: every runtime member set as a new one
/// (`,"key":` and its longest value), whatever the header held for it before.
pub const RUNTIME_FIELDS_ROOM: usize = room();

const fn longest_status() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < STATUSES.len() {
        if STATUSES[i].len() > n {
            n = STATUSES[i].len();
        }
        i += 1;
    }
    n
}

const fn room() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < RUNTIME_FIELDS.len() {
        n += RUNTIME_FIELDS[i].0.len() + ",\"\":".len() + RUNTIME_FIELDS[i].1;
        i += 1;
    }
    n
}

/// Whether setting `key` to `value` can never grow a valid header, whatever it holds: a
/// required member set to the shortest value it can take (`active`, the shortest status;
/// `true`). What the runtime still sets on a header that leaves it no room.
pub(crate) fn never_grows(key: &str, value: &serde_json::Value) -> bool {
    match key {
        "status" => value == "active",
        "hasUnread" | "connectionLocked" => value == &serde_json::Value::Bool(true),
        _ => false,
    }
}

/// True when the runtime sets `key`, and `value`, canonical, is no longer than it may be.
pub(crate) fn is_runtime_field(key: &str, canonical_value: &str) -> bool {
    RUNTIME_FIELDS
        .iter()
        .any(|&(k, max)| k == key && canonical_value.len() <= max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::canonical_string;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn every_status_and_extreme_time_is_within_its_members_longest() {
        for status in STATUSES {
            assert!(is_runtime_field(
                "status",
                &canonical_string(&json!(status))
            ));
        }
        assert!(!is_runtime_field("name", "\"x\""));
        for n in [
            -0.000_001_234_567_890_123_456_7,
            -1.234_567_890_123_456_7e-300,
            -9e20,
        ] {
            assert!(is_runtime_field(
                "statusUpdatedAt",
                &canonical_string(&json!(n))
            ));
        }
    }

    /// What never grows a header is a required member at the shortest value it can take.
    #[test]
    fn what_never_grows_a_header_is_a_required_member_at_its_shortest() {
        let shortest = STATUSES.iter().map(|s| s.len()).min();
        assert_eq!(shortest, Some("active".len()));
        assert!(never_grows("status", &json!("active")));
        assert!(!never_grows("status", &json!("running")));
        assert!(never_grows("hasUnread", &json!(true)));
        assert!(!never_grows("hasUnread", &json!(false)));
        assert!(!never_grows("statusUpdatedAt", &json!(1)));
        assert!(!never_grows("lastMessageAt", &json!(1)));
    }

    /// Every member set as a new one at its longest grows a header by the room exactly: the
    /// room is what they can take, no less and no more.
    #[test]
    fn every_member_set_anew_at_its_longest_takes_the_room_exactly() {
        let base = json!({"name": "x"});
        let mut set = base.clone();
        // 17 significant digits after five zeros: the longest text a double prints as.
        let longest = -1.000_000_000_000_000_2e-6;
        assert_eq!(canonical_string(&json!(longest)).len(), NUMBER_TEXT_MAX);
        for (key, value) in [
            ("connectionLocked", json!(false)),
            ("hasUnread", json!(false)),
            ("status", json!("waiting_for_user")),
            ("lastMessageAt", json!(longest)),
            ("statusUpdatedAt", json!(longest)),
        ] {
            set[key] = value;
        }
        let grew = canonical_string(&set).len() - canonical_string(&base).len();
        assert_eq!(grew, RUNTIME_FIELDS_ROOM);
    }

    proptest! {
        /// No double prints longer than the room allows a time.
        #[test]
        fn every_double_prints_within_the_longest_number(bits in any::<u64>()) {
            let f = f64::from_bits(bits);
            prop_assume!(f.is_finite());
            let text = canonical_string(&json!(f));
            prop_assert!(text.len() <= NUMBER_TEXT_MAX, "{text}");
        }
    }
}
