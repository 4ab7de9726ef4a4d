//! Records and headers a store never writes reach the same verdict everywhere: a runtime event
//! whose payload repeats a key (the strict decoder keeps the last value, as FORMAT.md says) is
//! sound to `verify`, so the index rebuild and the reads take it too (they refused it, and so
//! every read tool failed on a session `verify` called clean); a segment whose header gives it
//! another ordinal than its place is a gap to `verify`, so the reader refuses it too (it read
//! on, and `dump` and `salvage` took the gap for a sound log).

mod support;

use makalog::format::RecordKind;
use makalog::index::rebuild;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::storage::{RealStorage, Storage};
use makalog::store::RuntimeEventStore;
use std::sync::Arc;
use support::{owner, temp_root};

/// A root whose session `s` holds one runtime-event record of `payload`, written as a raw
/// writer writes it (no store would).
fn one_raw_event(payload: &str) -> (tempfile::TempDir, Arc<RealStorage>) {
    let (t, storage) = temp_root();
    let owner = owner(&storage);
    let (writer, _) = SegmentWriter::open(&owner, "s", WriterConfig::default()).expect("writer");
    writer
        .append(
            RecordKind::RuntimeEvent,
            payload.as_bytes(),
            Durability::Durable,
        )
        .expect("append");
    writer.close().expect("close");
    (t, storage)
}

#[test]
fn a_runtime_event_repeating_a_key_is_read_where_verify_finds_it_sound() {
    let event = support::events::text("s", "run-1", "turn-1", "e1", 1.0, "words");
    let canonical = event.canonical_json();
    assert!(canonical.starts_with('{'));
    let repeated = format!("{{\"id\":\"e1\",{}", &canonical[1..]);
    let (_t, storage) = one_raw_event(&repeated);
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
    let view = rebuild(&*storage, "s").expect("the rebuild takes what verify finds sound");
    assert!(view.runs.contains_key("run-1"));
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    let events = store.read_session_runtime_events("s").expect("read");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].id(), "e1");
}

#[test]
fn a_segment_whose_header_gives_another_ordinal_is_refused_by_the_reader_as_by_verify() {
    use makalog::format::SegmentHeader;
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        segment_size: 2048,
        ..WriterConfig::default()
    };
    support::write_n(&storage, "s", &config, 1, 40, 200);
    let paths = support::segment_paths(&storage.describe_root(), "s");
    assert!(paths.len() >= 2, "the log rolled");
    let mut bytes = std::fs::read(&paths[1]).expect("second segment");
    let (mut header, len) = SegmentHeader::decode(&bytes).expect("header");
    assert_eq!(header.ordinal, 1);
    header.ordinal = 7;
    bytes[..len].copy_from_slice(&header.encode());
    std::fs::write(&paths[1], &bytes).expect("crafted");
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(!report.is_clean(), "verify finds the gap");
    // A gap in ordinals: a mismatch of the two files, as verify reports it.
    match support::read_all(&*storage, "s") {
        Err(makalog::Error::Inconsistent {
            first,
            second,
            what,
        }) => {
            assert!(
                first.ends_with(paths[0].file_name().expect("name")),
                "{first:?}"
            );
            assert!(
                second.ends_with(paths[1].file_name().expect("name")),
                "{second:?}"
            );
            assert!(what.contains("ordinals 0 then 7"), "{what}");
        }
        other => panic!("the reader reads on: {:?}", other.map(|r| r.len())),
    }
}

/// A runtime event in a form the strict decoder refuses (an array where an object belongs)
/// is a problem to `verify`; the index read its facts from it all the same (serde's struct
/// reader takes an array for a struct), so the reads served an event `verify` refused, counted
/// as ending its invocation. The rebuild now refuses it, naming the file and byte, as `verify`
/// does. (Rules on members the index does not read stay `verify`'s alone: `index/facts.rs`.)
#[test]
fn a_runtime_event_in_array_form_is_refused_by_the_rebuild_as_by_verify() {
    let terminal = support::events::terminal("s", "run-1", "turn-1", "e1", 1.0, "completed");
    let canonical = terminal.canonical_json();
    let object = r#""actions":{"endInvocation":true,"stateDelta":{"stopReason":"end_turn"}}"#;
    assert!(canonical.contains(object), "{canonical}");
    let inner = canonical.replace(object, r#""actions":[true]"#);
    let whole = r#"["e1","run-1","run-1","s","turn-1",1,false,"completed"]"#.to_owned();
    for crafted in [inner, whole] {
        let (_t, storage) = one_raw_event(&crafted);
        let report = makalog::verify::verify_root(&*storage).expect("verify");
        assert!(!report.is_clean(), "verify refuses {crafted}");
        match rebuild(&*storage, "s") {
            Err(makalog::Error::Corrupt { file, offset, what }) => {
                assert!(file.to_string_lossy().ends_with(".seg"), "{file:?}");
                assert_eq!(offset, 256, "the first frame, after the header: {what}");
            }
            other => panic!("{crafted}: the rebuild took it: {other:?}"),
        }
    }
}
