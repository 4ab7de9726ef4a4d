//! A session's messages read back: many, in append order whatever their lengths and
//! segments, a long read shared by threads, messages straddling the read window, and frames
//! at impossible offsets an error rather than an overflow.

mod support;

use makalog::model::StoredMessage;
use makalog::storage::Storage;
use makalog::Error;
use serde_json::json;
use support::messages::*;
use support::stores::{self, session_header};
use support::temp_root;

/// Many messages of one segment are read back in one read of their span; a message longer
/// than the span holds past its start, in any position, is read on its own, and every segment
/// of a rolled session is read back in order.
#[test]
fn many_messages_read_back_in_order_whatever_their_lengths_and_segments() {
    let (_t, storage) = temp_root();
    let owner = support::owner(&storage);
    let config = makalog::segment::WriterConfig {
        segment_size: 16 << 10,
        ..makalog::segment::WriterConfig::default()
    };
    let s = makalog::store::open_execution_stores_with(&owner, config).expect("stores");
    s.sessions.create(session_header("s", 1)).expect("session");
    let mut sent = Vec::new();
    for i in 0..200u64 {
        let mut m = user(&format!("m{i}"), &format!("t{}", i % 3), i);
        if i % 37 == 0 || i == 199 {
            m["text"] = json!("long ".repeat(600));
        }
        sent.push(appended(&s, m));
    }
    assert_eq!(
        texts(s.sessions.read_messages("s", None).expect("live")),
        sent
    );
    s.close().expect("close");
    let segments = std::fs::read_dir(storage.describe_root().join("sessions/s"))
        .expect("dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".seg"))
        })
        .count();
    assert!(segments > 1, "{segments} segments: the session rolled");
    let read_only = makalog::store::ReadOnlySessions::new(&*storage);
    assert_eq!(
        texts(read_only.read_messages("s", None).expect("read-only")),
        sent
    );
    let turn: Vec<String> = sent
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 1)
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(
        texts(read_only.read_messages("s", Some("t1")).expect("turn")),
        turn
    );
}

/// A read long enough to be shared by several threads (more than 2,048 messages a part) gives
/// exactly what one thread gives: every message once, in append order, also by turn.
#[test]
fn a_long_read_shared_by_threads_keeps_append_order() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions
        .create(session_header("long", 1))
        .expect("session");
    let n = 4_200u64;
    for i in 0..n {
        let turn = format!("t{}", i % 5);
        s.sessions
            .append_message("long", user(&format!("m{i}"), &turn, i))
            .expect("append");
    }
    let read_only = makalog::store::ReadOnlySessions::new(&*storage);
    let ids = |got: Vec<StoredMessage>| -> Vec<String> {
        got.iter().map(|m| m.id().to_owned()).collect()
    };
    let all: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    assert_eq!(
        ids(s.sessions.read_messages("long", None).expect("owner's")),
        all
    );
    assert_eq!(
        ids(read_only.read_messages("long", None).expect("read-only")),
        all
    );
    let turn: Vec<String> = (0..n)
        .filter(|i| i % 5 == 3)
        .map(|i| format!("m{i}"))
        .collect();
    assert_eq!(
        ids(read_only.read_messages("long", Some("t3")).expect("turn")),
        turn
    );
    // Damage in both halves: the refusal is the first one in append order, as on one thread.
    let records = support::read_all(&*storage, "long").expect("records");
    let frame_of = |id: &str| {
        let needle = format!("\"id\":\"{id}\"");
        records
            .iter()
            .find(|r| String::from_utf8_lossy(&r.payload).contains(&needle))
            .map(|r| (r.file.clone(), r.offset))
            .expect("the message's frame")
    };
    let root = storage.describe_root();
    for id in ["m3000", "m100"] {
        let (file, offset) = frame_of(id);
        let path = root.join(&file);
        let mut bytes = std::fs::read(&path).expect("segment");
        let text = format!("text of {id}\"");
        let at = bytes
            .windows(text.len())
            .position(|w| w == text.as_bytes())
            .expect("the text");
        assert!(at as u64 > offset, "inside the frame");
        bytes[at] ^= 0x20;
        std::fs::write(&path, bytes).expect("damage");
    }
    let (_, first) = frame_of("m100");
    match read_only.read_messages("long", None) {
        Err(Error::Corrupt { offset, .. }) => assert_eq!(offset, first, "m100's frame"),
        other => panic!("{other:?}"),
    }
}

/// A long read takes the log a window at a time: frames that straddle a window's end, and one
/// longer than a window, read back whole and in order.
#[test]
fn messages_straddling_the_read_window_read_back_whole() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    let window = makalog::segment::WINDOW as usize;
    let mut sent = Vec::new();
    for i in 0..400u64 {
        let mut m = user(&format!("m{i}"), "t", i);
        let len = match i % 4 {
            0 => 10,
            1 => 3_000,
            2 => 9_000,
            _ => 500,
        };
        let len = if i == 201 { window + 5_000 } else { len };
        m["text"] = json!("x".repeat(len));
        sent.push(appended(&s, m));
    }
    s.close().expect("close");
    let got = texts(
        makalog::store::ReadOnlySessions::new(&*storage)
            .read_messages("s", None)
            .expect("read"),
    );
    assert!(
        sent.iter().map(String::len).sum::<usize>() > 4 * window,
        "the read spans several windows"
    );
    assert_eq!(got, sent);
}

/// Positions from a damaged index (offsets at the end of the range) are an error naming the
/// segment, never an overflow, however many of them there are.
#[test]
fn frames_read_at_impossible_offsets_are_an_error_not_an_overflow() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.close().expect("close");
    let mut frames = makalog::segment::FramesAt::new(&*storage, "s");
    let positions = vec![(0, u64::MAX - 5, 1); 20];
    let err = frames
        .each_payload(&positions, |_, _| Ok(()))
        .expect_err("no frame there");
    assert!(err.to_string().contains(".seg"), "{err}");
}

/// Session `s` of `storage`'s root with three messages, closed; then its sidecar rewritten with
/// `edit` applied to its list of messages, its CRCs recomputed and its covers as they were.
/// The messages' texts, and the sidecar's new bytes.
fn forged_messages(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    edit: impl FnOnce(&mut makalog::index::Messages),
) -> (Vec<String>, Vec<u8>) {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state, encode_sidecar};
    use makalog::index::{id_entries, section};
    let (_owner, s) = stores::open(storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    let sent: Vec<String> = (0..3)
        .map(|i| appended(&s, user(&format!("m{i}"), "t", i)))
        .collect();
    s.close().expect("close");
    let path = storage.describe_root().join("sessions/s/index");
    let good = std::fs::read(&path).expect("sidecar");
    let header = decode_sidecar_header(&good).expect("header");
    let mut view = decode_sidecar_state(&good, &header).expect("state");
    edit(&mut view.session.messages);
    let ids = section(&good, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    let crafted = encode_sidecar(&view, &ids).expect("encode");
    std::fs::write(&path, &crafted).expect("forge");
    (sent, crafted)
}

/// A sidecar is a cache, and a crafted one must not make a read cost more than the log holds:
/// one whose lists name a record twice (here one message a thousand times, its covers and
/// CRCs intact) is not trusted, and the messages come from the log, once each.
#[test]
fn a_sidecar_naming_one_record_twice_is_not_trusted() {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state};
    let (_t, storage) = temp_root();
    let (sent, crafted) = forged_messages(&storage, |messages| {
        let first = messages.iter().next().expect("a message");
        let (id, turn, at) = (
            first.id.to_owned(),
            first.turn_id.map(str::to_owned),
            first.at,
        );
        for _ in 0..1_000 {
            messages.push(&id, turn.as_deref(), at);
        }
    });
    let crafted_header = decode_sidecar_header(&crafted).expect("its header is sound");
    assert!(decode_sidecar_state(&crafted, &crafted_header).is_err());
    let read = makalog::store::ReadOnlySessions::new(&*storage)
        .read_messages("s", None)
        .expect("read");
    assert_eq!(texts(read), sent);
}

/// A sidecar forged to leave a message out, its covers and CRCs intact, is believed by the
/// short way (its covers say where the log is, not that every record is listed); a read from
/// the segments alone ([`Sidecars::Ignored`](makalog::store::Sidecars)) answers what the log
/// holds.
#[test]
fn a_read_from_the_segments_alone_answers_what_a_forged_sidecar_leaves_out() {
    use makalog::store::{ReadOnlySessions, Sidecars};
    let (_t, storage) = temp_root();
    let (sent, _) = forged_messages(&storage, |messages| {
        *messages = messages.iter().skip(1).collect();
    });
    let believed = ReadOnlySessions::new(&*storage)
        .read_messages("s", None)
        .expect("read");
    assert_eq!(texts(believed), sent[1..]);
    let read = ReadOnlySessions::with(&*storage, Sidecars::Ignored)
        .read_messages("s", None)
        .expect("read");
    assert_eq!(texts(read), sent);
    let index = makalog::store::read_only_index(&*storage, "s", Sidecars::Ignored)
        .expect("read")
        .expect("a session");
    assert_eq!(index.session.messages.len(), 3);
}
