//! Records a store never writes but the format accepts reach the same verdict everywhere: a
//! runtime event whose payload repeats a key (the strict decoder keeps the last value, as
//! FORMAT.md says) is sound to `verify`, so the index rebuild and the reads take it too; they
//! refused it, and so every read tool failed on a session `verify` called clean.

mod support;

use makalog::format::RecordKind;
use makalog::index::rebuild;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::store::RuntimeEventStore;
use support::{owner, temp_root};

#[test]
fn a_runtime_event_repeating_a_key_is_read_where_verify_finds_it_sound() {
    let (_t, storage) = temp_root();
    let event = support::events::text("s", "run-1", "turn-1", "e1", 1.0, "words");
    let canonical = event.canonical_json();
    assert!(canonical.starts_with('{'));
    let repeated = format!("{{\"id\":\"e1\",{}", &canonical[1..]);
    {
        let owner = owner(&storage);
        let (writer, _) =
            SegmentWriter::open(&owner, "s", WriterConfig::default()).expect("writer");
        writer
            .append(
                RecordKind::RuntimeEvent,
                repeated.as_bytes(),
                Durability::Durable,
            )
            .expect("append");
        writer.close().expect("close");
    }
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
    let view = rebuild(&*storage, "s").expect("the rebuild takes what verify finds sound");
    assert!(view.runs.contains_key("run-1"));
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    let events = store.read_session_runtime_events("s").expect("read");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].id(), "e1");
}
