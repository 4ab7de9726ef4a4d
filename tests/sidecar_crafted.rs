//! Sidecars crafted with their CRCs intact: a sidecar is a cache read before the log, so
//! whatever it names is bounded by what its covers vouch for, and one that breaks a rule is
//! untrusted and rebuilt, never a hang, a panic or an I/O error blamed on a sound segment (one
//! whose last cover names a record the log does not hold refuses the session, as a log cut
//! short of its sidecar does: FORMAT.md, "What a sidecar recorded as durable is never cut").

mod support;

use makalog::index::encode_sidecar;
use makalog::segment::{Durability, WriterConfig};
use makalog::store::RuntimeEventStore;
use support::event_store::*;
use support::events::*;
use support::*;

/// An id table piling entries on one hash (its CRC intact) would make every lookup of that
/// hash read each entry's event back, so a crafted one could make catching up quadratic: at
/// most 16 entries may share a hash, a lookup past that is refused, and such a table is damage
/// found on first use, the index rebuilt.
#[test]
fn an_id_table_piling_entries_on_one_hash_is_damage_and_the_index_rebuilt() {
    use makalog::index::{decode_sidecar_header, find_ids, section};
    let (_t, storage) = temp_root();
    let (good, view, mut ids) = one_turn_closed(&storage);
    let first = ids[0];
    ids.extend(std::iter::repeat_n(first, 100_000));
    let crafted = encode_sidecar(&view, &ids).expect("encode");
    let crafted_header = decode_sidecar_header(&crafted).expect("header");
    let body = section(&crafted, &crafted_header, 2).expect("its CRC holds");
    assert!(
        find_ids(body, first.hash).is_err(),
        "a lookup stops past 16"
    );
    let path = sidecar_path(&storage);
    std::fs::write(&path, &crafted).expect("craft");
    let store = self::store(&storage);
    let repeat = user(S, "run-1", "turn-of-run-1", "run-1-user", 2.0, "hello");
    let again = store.append(&repeat, Durability::Durable).expect("repeat");
    assert!(!again.created, "identity answered after the rebuild");
    assert_eq!(sidecar_bytes(&storage), good, "rebuilt and rewritten");
}

#[test]
fn a_sidecar_with_covers_at_the_end_of_their_range_is_untrusted_never_a_panic() {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state, id_entries, section};
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        segment_size: 2048,
        ..WriterConfig::default()
    };
    let owner = owner(&storage);
    let store = RuntimeEventStore::open(&owner, config.clone());
    for r in 0..4 {
        turn(
            &store,
            &format!("run-{r}"),
            f64::from(r) * 100.0,
            2,
            "completed",
        );
    }
    store.close().expect("close");
    let want = {
        let store = RuntimeEventStore::open(&owner, config.clone());
        let listed = store.list_session_invocations(S).expect("list");
        assert_eq!(listed.len(), 4);
        listed
    };
    let path = sidecar_path(&storage);
    let good = std::fs::read(&path).expect("sidecar");
    let header = decode_sidecar_header(&good).expect("header");
    assert!(header.covers.len() >= 2, "the log rolled");
    let ids = section(&good, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    // The last case: a frame at 2^63, which no file offset reaches (a read there failed with
    // EINVAL, an I/O error blamed on a sound segment, where the sidecar is what is wrong).
    let cases = [
        (None, u64::MAX - 10, 3),
        (None, 100, u64::MAX),
        (None, u64::MAX, u64::MAX),
        (Some(1 << 63), (1 << 63) + 100, 3),
    ];
    // Crafted in the first cover (a rolled segment's) and in the last (the live segment's,
    // whose frame is read where the cover says rather than checked against the file's size).
    // A last_seq of 0 keeps the cover's own.
    let last = header.covers.len() - 1;
    let cases = cases
        .into_iter()
        .chain([(Some(1 << 63), (1 << 63) + 100, 0)]);
    for (which, (frame_offset, data_end, last_seq)) in cases.flat_map(|c| [(0, c), (last, c)]) {
        let mut view = decode_sidecar_state(&good, &header).expect("state");
        if let Some(offset) = frame_offset {
            view.covers[which].last_frame_offset = offset;
        }
        view.covers[which].data_end = data_end;
        if last_seq != 0 {
            view.covers[which].last_seq = last_seq;
        }
        // A last cover naming a record the log does not hold says records acknowledged as
        // durable are gone: a log cut or a sidecar forged, which no reader can tell apart, so
        // the session is refused, naming where its log ends, and nothing is written.
        let lost = which == last && view.covers[last].last_seq > header.covers[last].last_seq;
        let crafted = encode_sidecar(&view, &ids).expect("encode");
        std::fs::write(&path, &crafted).expect("write");
        if lost {
            let before = snapshot(&makalog::storage::Storage::describe_root(&*storage));
            let reader = makalog::store::ReadOnlySessions::new(&*storage);
            let e = reader
                .read_messages(S, None)
                .expect_err(&format!("refused: {:?}", view.covers[last]));
            assert!(e.to_string().contains("recorded as durable"), "{e}");
            let store = RuntimeEventStore::open(&owner, config.clone());
            let e = store.open_session_now(S).expect_err("refused");
            assert!(matches!(e, makalog::Error::Corrupt { .. }), "{e}");
            store.close().expect("close");
            assert_eq!(
                snapshot(&makalog::storage::Storage::describe_root(&*storage)),
                before,
                "nothing written"
            );
            continue;
        }
        let reader = makalog::store::ReadOnlySessions::new(&*storage);
        assert!(reader.read_session(S).expect("read-only").is_none());
        assert_eq!(reader.read_messages(S, None).expect("read-only").len(), 0);
        let store = RuntimeEventStore::open(&owner, config.clone());
        assert_eq!(store.list_session_invocations(S).expect("read-only"), want);
        store
            .open_session_now(S)
            .expect("open: the sidecar is rebuilt");
        assert_eq!(store.list_session_invocations(S).expect("list"), want);
        store.close().expect("close");
    }
}

/// An id entry naming a record past the last the covers vouch for (CRC intact): an append of
/// that id looked it up and waited for that record to be durable, which it never would be,
/// holding the session's lock (every reader and writer of the session hung). Such a table is
/// damage found on first use, and the index rebuilt.
#[test]
fn an_id_entry_past_the_covers_is_damage_and_the_index_rebuilt() {
    let past = |e: &mut makalog::index::IdEntry| e.record_seq = 1_000_000;
    an_id_entry_crafted_is_damage_and_the_index_rebuilt(&past);
}

/// An id entry within the covers naming a frame that is not there (a segment the log does not
/// have, an offset no file reaches, another record's frame): every append of that id failed,
/// and the index was never rebuilt. Such an entry is damage met on use, and the index rebuilt.
#[test]
fn an_id_entry_naming_no_such_frame_is_damage_and_the_index_rebuilt() {
    let crafts: [&dyn Fn(&mut makalog::index::IdEntry); 3] =
        [&|e| e.ordinal = 99, &|e| e.offset = 1 << 63, &|e| {
            e.offset = 256
        }];
    for craft in crafts {
        an_id_entry_crafted_is_damage_and_the_index_rebuilt(craft);
    }
}

fn an_id_entry_crafted_is_damage_and_the_index_rebuilt(
    craft: &dyn Fn(&mut makalog::index::IdEntry),
) {
    let (_t, storage) = temp_root();
    let (good, view, mut ids) = one_turn_closed(&storage);
    let user_id = "run-1-user";
    let entry = ids
        .iter_mut()
        .find(|e| e.hash == makalog::index::id_hash(user_id))
        .expect("the user event's entry");
    craft(entry);
    let crafted = encode_sidecar(&view, &ids).expect("encode");
    let path = sidecar_path(&storage);
    std::fs::write(&path, &crafted).expect("craft");
    let store = self::store(&storage);
    let repeat = user(S, "run-1", "turn-of-run-1", user_id, 2.0, "hello");
    let again = store.append(&repeat, Durability::Durable).expect("repeat");
    assert!(!again.created, "identity answered after the rebuild");
    store.close().expect("close");
    assert_eq!(sidecar_bytes(&storage), good, "rebuilt and rewritten");
}

/// One whole turn written through a store and closed: its sidecar's bytes, the view they hold
/// and their id entries, for a test to craft from.
fn one_turn_closed(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
) -> (
    Vec<u8>,
    makalog::index::SessionIndex,
    Vec<makalog::index::IdEntry>,
) {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state, id_entries, section};
    let store = store(storage);
    turn(&store, "run-1", 1.0, 3, "completed");
    store.close().expect("close");
    let good = sidecar_bytes(storage);
    let header = decode_sidecar_header(&good).expect("header");
    let view = decode_sidecar_state(&good, &header).expect("state");
    let ids = section(&good, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    (good, view, ids)
}

/// FORMAT.md: every id entry's `record_seq` is within the last record the sidecar's covers
/// vouch for. The check ran on first use against the view as caught up by then, so an entry
/// naming a record past the covers (one the log holds) was trusted. It is now damage, and the
/// index rebuilt and its sidecar rewritten at once.
#[test]
fn an_id_entry_past_the_covers_naming_a_record_the_log_holds_is_damage() {
    use makalog::format::RecordKind;
    use makalog::segment::SegmentWriter;
    let (_t, storage) = temp_root();
    let (_, view, mut ids) = one_turn_closed(&storage);
    let extra = user(S, "run-1", "turn-of-run-1", "extra", 9.0, "past the covers");
    {
        let owner = owner(&storage);
        let (writer, _) = SegmentWriter::open(&owner, S, WriterConfig::default()).expect("writer");
        writer
            .append(
                RecordKind::RuntimeEvent,
                extra.canonical_json().as_bytes(),
                Durability::Durable,
            )
            .expect("a record past the covers");
        writer.close().expect("close");
    }
    let rebuilt = makalog::index::rebuild(&*storage, S).expect("rebuild");
    let entry = rebuilt.ids["extra"];
    assert!(entry.record_seq > view.covers.last().expect("a cover").last_seq);
    ids.push(entry);
    ids.sort_by_key(|e| (e.hash, e.record_seq));
    let crafted = encode_sidecar(&view, &ids).expect("encode");
    std::fs::write(sidecar_path(&storage), &crafted).expect("craft");
    let store = self::store(&storage);
    let again = store.append(&extra, Durability::Durable).expect("repeat");
    assert!(!again.created, "a repeat either way");
    assert!(
        sidecar_bytes(&storage) != crafted,
        "the id table was damage: the index rebuilt and its sidecar rewritten"
    );
    store.close().expect("close");
}
