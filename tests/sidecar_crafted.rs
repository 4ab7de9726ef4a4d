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

/// Events repeated past the covers (an id the sidecar also names, as a raw writer could leave
/// them) are each confirmed against the sidecar's entries for their id by reading the entry's
/// frame back. A crafted table piling the most entries allowed on one hash, each naming a large
/// frame, made every repeat read all of them again: a tail of N repeats read N × 16 large
/// frames, with no end a hostile root could not push out. Each frame is now read back once.
#[test]
fn repeats_past_the_covers_read_each_named_frame_back_once() {
    use makalog::index::{
        decode_sidecar_header, decode_sidecar_state, id_entries, id_hash, section,
    };
    use std::sync::atomic::Ordering;
    let (_t, storage) = temp_root();
    let big = 256 * 1024;
    {
        let store = store(&storage);
        let large = user(S, "run-1", "turn-1", "big", 1.0, &"a".repeat(big));
        store.append(&large, Durability::Durable).expect("large");
        store.close().expect("close");
    }
    let good = sidecar_bytes(&storage);
    {
        let raw =
            makalog::segment::SegmentWriter::open(&owner(&storage), S, WriterConfig::default())
                .expect("raw writer")
                .0;
        for i in 0..40 {
            let repeat = user(
                S,
                "run-2",
                "turn-2",
                "x",
                10.0 + f64::from(i),
                &format!("repeat {i}"),
            );
            raw.append(
                makalog::format::RecordKind::RuntimeEvent,
                repeat.canonical_json().as_bytes(),
                Durability::Durable,
            )
            .expect("raw append");
        }
    }
    let header = decode_sidecar_header(&good).expect("header");
    let view = decode_sidecar_state(&good, &header).expect("state");
    let mut ids = section(&good, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    let large = *ids
        .iter()
        .find(|e| e.hash == id_hash("big"))
        .expect("the large event's entry");
    ids.extend((0..16).map(|_| makalog::index::IdEntry {
        hash: id_hash("x"),
        ..large
    }));
    ids.sort_by_key(|e| e.hash);
    std::fs::write(
        sidecar_path(&storage),
        encode_sidecar(&view, &ids).expect("encode"),
    )
    .expect("craft");
    let root = makalog::storage::Storage::describe_root(&*storage);
    let (counted, _) = counting::counting(root, u64::MAX);
    let reader = makalog::store::ReadOnlySessions::new(&*counted);
    reader.read_messages(S, None).expect("read-only");
    let store = RuntimeEventStore::open(&owner(&counted), WriterConfig::default());
    store.open_session_now(S).expect("open");
    let events = store.read_session_runtime_events(S).expect("read");
    assert_eq!(events.len(), 41);
    store.close().expect("close");
    let read = counted.meter.read_bytes.load(Ordering::SeqCst);
    assert!(
        read < 40 * big as u64,
        "{read} bytes read for a log of about {big}"
    );
}

/// A log whose sidecar covers one large event, then `repeats` events past its covers, each
/// with an id of its own (`x0`, `x1`, …) written by a raw writer: the sidecar's bytes, view and
/// id entries, for a test to craft from.
fn large_then_repeats(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    big: usize,
    repeats: usize,
) -> (makalog::index::SessionIndex, Vec<makalog::index::IdEntry>) {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state, id_entries, section};
    {
        let store = store(storage);
        let large = user(S, "run-1", "turn-1", "big", 1.0, &"a".repeat(big));
        store.append(&large, Durability::Durable).expect("large");
        store.close().expect("close");
    }
    let good = sidecar_bytes(storage);
    let raw = makalog::segment::SegmentWriter::open(&owner(storage), S, WriterConfig::default())
        .expect("raw writer")
        .0;
    for i in 0..repeats {
        let repeat = user(
            S,
            "run-2",
            "turn-2",
            &format!("x{i}"),
            10.0 + i as f64,
            "again",
        );
        raw.append(
            makalog::format::RecordKind::RuntimeEvent,
            repeat.canonical_json().as_bytes(),
            Durability::Durable,
        )
        .expect("raw append");
    }
    drop(raw);
    let header = decode_sidecar_header(&good).expect("header");
    let view = decode_sidecar_state(&good, &header).expect("state");
    let ids = section(&good, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    (view, ids)
}

/// Writes `view` with `ids` as the session's sidecar, then reads the session read-only and
/// opens it for writing through a storage that counts what is read: (bytes read, bytes of the
/// session's segments and its sidecar). Both readers must find every event.
fn read_through_crafted(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    view: &makalog::index::SessionIndex,
    mut ids: Vec<makalog::index::IdEntry>,
    events: usize,
) -> (u64, u64) {
    use std::sync::atomic::Ordering;
    ids.sort_by_key(|e| e.hash);
    std::fs::write(
        sidecar_path(storage),
        encode_sidecar(view, &ids).expect("encode"),
    )
    .expect("craft");
    let root = makalog::storage::Storage::describe_root(&**storage);
    let dir = root.join("sessions").join(S);
    let log: u64 = std::fs::read_dir(&dir)
        .expect("session dir")
        .map(|e| e.expect("entry"))
        .filter(|e| e.file_name().to_string_lossy().ends_with(".seg"))
        .map(|e| e.metadata().expect("stat").len())
        .sum::<u64>()
        + std::fs::metadata(sidecar_path(storage))
            .expect("sidecar")
            .len();
    let (counted, _) = counting::counting(root, u64::MAX);
    let reader = makalog::store::ReadOnlySessions::new(&*counted);
    reader.read_messages(S, None).expect("read-only");
    let store = RuntimeEventStore::open(&owner(&counted), WriterConfig::default());
    store.open_session_now(S).expect("open");
    let read = store.read_session_runtime_events(S).expect("read");
    assert_eq!(read.len(), events);
    store.close().expect("close");
    (counted.meter.read_bytes.load(Ordering::SeqCst), log)
}

/// Entries for each repeat's id all naming the large frame, each with another record
/// sequence number: a frame read back was remembered by its sequence number as well as its
/// place, so every entry read the large frame again (one repeat, sixteen reads of it). A frame
/// is now remembered by where it lies, and read back once whatever its entries claim.
#[test]
fn entries_naming_one_frame_under_many_sequence_numbers_read_it_once() {
    use makalog::index::{id_hash, IdEntry};
    let (_t, storage) = temp_root();
    let (big, repeats) = (256 * 1024, 40);
    let (view, mut ids) = large_then_repeats(&storage, big, repeats);
    let large = *ids
        .iter()
        .find(|e| e.hash == id_hash("big"))
        .expect("the large event's entry");
    for i in 0..repeats {
        ids.extend((0..16).map(|k| IdEntry {
            hash: id_hash(&format!("x{i}")),
            record_seq: 1_000_000 + (16 * i + k) as u64,
            ..large
        }));
    }
    let (read, log) = read_through_crafted(&storage, &view, ids, repeats + 1);
    assert!(
        read < 16 * log,
        "{read} bytes read for a log and sidecar of {log} bytes"
    );
}

/// Entries naming places inside a frame, each another place: none is a frame, and each costs
/// a read, so a crafted table could make confirming a tail read far more than the whole log.
/// Confirmations now read at most what the session's segments hold; past that the sidecar is
/// not worth its cost and the index is rebuilt from the segments.
#[test]
fn entries_naming_no_frame_cost_no_more_than_a_rebuild() {
    use makalog::index::{id_hash, IdEntry};
    let (_t, storage) = temp_root();
    let repeats = 40;
    let (view, mut ids) = large_then_repeats(&storage, 2048, repeats);
    let large = *ids
        .iter()
        .find(|e| e.hash == id_hash("big"))
        .expect("the large event's entry");
    for i in 0..repeats {
        ids.extend((0..16).map(|k| IdEntry {
            hash: id_hash(&format!("x{i}")),
            offset: large.offset + 1 + (16 * i + k) as u64,
            ..large
        }));
    }
    let (read, log) = read_through_crafted(&storage, &view, ids, repeats + 1);
    assert!(
        read < 16 * log,
        "{read} bytes read for a log and sidecar of {log} bytes"
    );
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
