//! A sidecar's id entries are confirmed by reading the frame each names back: crafted tables
//! (their CRCs intact) cost no more reads than the frames they name, and never more than the
//! segments hold, past which the sidecar is dropped and the index rebuilt.

mod support;

use makalog::index::encode_sidecar;
use makalog::segment::{Durability, WriterConfig};
use makalog::store::RuntimeEventStore;
use support::event_store::*;
use support::events::*;
use support::*;

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
    let large = large_entry(&ids);
    ids.extend((0..16).map(|_| makalog::index::IdEntry {
        hash: id_hash("x"),
        ..large
    }));
    craft(&storage, &view, ids);
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

/// A log whose sidecar covers one large event (and with `small_after`, a small one after it,
/// so that the large frame is not the one its covers end with), then `repeats` events past its
/// covers, each with an id of its own (`x0`, `x1`, …) written by a raw writer: the sidecar's
/// bytes, view and id entries, for a test to craft from.
fn large_then_repeats(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    (big, small_after): (usize, bool),
    repeats: usize,
) -> (makalog::index::SessionIndex, Vec<makalog::index::IdEntry>) {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state, id_entries, section};
    {
        let store = store(storage);
        let large = user(S, "run-1", "turn-1", "big", 1.0, &"a".repeat(big));
        store.append(&large, Durability::Durable).expect("large");
        if small_after {
            let small = user(S, "run-1", "turn-1", "small", 2.0, "after");
            store.append(&small, Durability::Durable).expect("small");
        }
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
    ids: Vec<makalog::index::IdEntry>,
    events: usize,
) -> (u64, u64) {
    use std::sync::atomic::Ordering;
    craft(storage, view, ids);
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
    let (view, mut ids) = large_then_repeats(&storage, (big, false), repeats);
    let large = large_entry(&ids);
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
    let (view, mut ids) = large_then_repeats(&storage, (2048, false), repeats);
    let large = large_entry(&ids);
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

/// The large event's entry among a sidecar's id entries.
fn large_entry(ids: &[makalog::index::IdEntry]) -> makalog::index::IdEntry {
    *ids.iter()
        .find(|e| e.hash == makalog::index::id_hash("big"))
        .expect("the large event's entry")
}

/// Entries naming places inside the covered region where a crafted length (`00 00 FF 00`,
/// nearly 16 MiB) reads as a frame's: each costs a read of that length. Confirmations were
/// held to the segments' sizes as the file system states them, which a sparse file makes any
/// length for nothing: a segment stretched to 1 GiB let them read a gigabyte. They are now held
/// to what a rebuild reads of each segment (to its last non-zero byte, and a frame's length of
/// zeros after it).
#[test]
fn confirmations_are_held_to_what_a_rebuild_reads_not_to_a_sparse_files_size() {
    use makalog::index::{id_hash, IdEntry};
    use std::io::{Seek, SeekFrom, Write};
    use std::sync::atomic::Ordering;
    let (_t, storage) = temp_root();
    let repeats = 40;
    let (view, mut ids) = large_then_repeats(&storage, (256 * 1024, true), repeats);
    let large = large_entry(&ids);
    let dir = makalog::storage::Storage::describe_root(&*storage)
        .join("sessions")
        .join(S);
    let segment = std::fs::read_dir(&dir)
        .expect("session dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .expect("a segment");
    let data = std::fs::metadata(&segment).expect("stat").len();
    let start = large.offset + 4096;
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&segment)
            .expect("open");
        file.seek(SeekFrom::Start(start)).expect("seek");
        file.write_all(&[0x00, 0x00, 0xFF, 0x00].repeat(1024))
            .expect("pattern");
        file.set_len(1 << 30).expect("sparse");
    }
    for i in 0..repeats {
        ids.extend((0..16).map(|k| IdEntry {
            hash: id_hash(&format!("x{i}")),
            offset: start + 4 * (16 * i + k) as u64,
            ..large
        }));
    }
    craft(&storage, &view, ids);
    let root = makalog::storage::Storage::describe_root(&*storage);
    let (counted, _) = counting::counting(root, u64::MAX);
    let reader = makalog::store::ReadOnlySessions::new(&*counted);
    // The pattern broke the large frame: the rebuild the sidecar falls back to finds it, and
    // both readers refuse the log at that frame.
    let rebuild = data + makalog::storage::data_end::ZEROS_KEPT;
    let store = RuntimeEventStore::open(&owner(&counted), WriterConfig::default());
    let read_only = || reader.read_messages(S, None).is_err();
    let open = || store.open_session_now(S).is_err();
    for (how, refused) in [
        ("read-only", &read_only as &dyn Fn() -> bool),
        ("open", &open),
    ] {
        let before = counted.meter.read_bytes.load(Ordering::SeqCst);
        assert!(refused(), "{how}: the broken frame is damage");
        let read = counted.meter.read_bytes.load(Ordering::SeqCst) - before;
        // Each try at the sidecar (a reader makes two before it rebuilds) confirms at most a
        // rebuild's worth and one frame more; then the rebuild; before, a gigabyte.
        assert!(
            read < 10 * rebuild,
            "{how}: {read} bytes read where a rebuild reads {rebuild}"
        );
    }
}

/// Writes `view` with `ids` (sorted by hash, as a sidecar holds them) as the session's sidecar.
fn craft(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    view: &makalog::index::SessionIndex,
    mut ids: Vec<makalog::index::IdEntry>,
) {
    ids.sort_by_key(|e| e.hash);
    std::fs::write(
        sidecar_path(storage),
        encode_sidecar(view, &ids).expect("encode"),
    )
    .expect("craft");
}
