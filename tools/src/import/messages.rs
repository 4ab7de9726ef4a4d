//! A session's stored messages as planned records, a large one joined from its chunks.

use super::lifecycle::record;
use super::order::{fits, Rank, Timed};
use super::report::Report;
use super::sql::{int, key, select, text, time};
use makalog::format::RecordKind;
use makalog::model::StoredMessage;
use rusqlite::types::Value;
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};

/// A session's payload rows (messages kept in chunks), counted by sequence.
pub(super) const CHUNKED: &str =
    "SELECT sequence, count(*) FROM session_message_payloads WHERE session_id = ?1 GROUP BY sequence";

/// A session's message rows, each with one of its payload rows.
pub(super) const MESSAGES: &str =
    "SELECT m.sequence, m.message_ts, m.record_json, p.record_bytes, p.sha256 FROM session_messages m LEFT JOIN (SELECT sequence, record_bytes, sha256 FROM session_message_payloads WHERE session_id = ?1 GROUP BY sequence) p ON p.sequence = m.sequence WHERE m.session_id = ?1 ORDER BY m.sequence";

/// A chunked message's chunks: index, type, length and digest.
pub(super) const CHUNK_SHAPES: &str =
    "SELECT chunk_index, typeof(data), length(data), sha256 FROM session_message_chunks WHERE session_id = ?1 AND sequence = ?2 ORDER BY chunk_index";

/// A session's payload rows that name no message.
pub(super) const ORPHAN_PAYLOADS: &str =
    "SELECT sequence FROM session_message_payloads p WHERE p.session_id = ?1 AND NOT EXISTS (SELECT 1 FROM session_messages m WHERE m.session_id = p.session_id AND m.sequence = p.sequence)";

/// A session's chunk rows that name no message with a payload.
pub(super) const ORPHAN_CHUNKS: &str =
    "SELECT sequence, chunk_index FROM session_message_chunks c WHERE c.session_id = ?1 AND NOT EXISTS (SELECT 1 FROM session_message_payloads p JOIN session_messages m ON m.session_id = p.session_id AND m.sequence = p.sequence WHERE p.session_id = c.session_id AND p.sequence = c.sequence)";

/// A chunked message's chunks' data, in order.
pub(super) const CHUNK_DATA: &str =
    "SELECT data FROM session_message_chunks WHERE session_id = ?1 AND sequence = ?2 ORDER BY chunk_index";

/// Stored messages in sequence order; one kept in chunks is joined from them, its length and
/// digests checked.
pub fn messages(conn: &Connection, sid: &str, report: &mut Report) -> rusqlite::Result<Vec<Timed>> {
    let mut out = Vec::new();
    // Payload rows by sequence: a source without its primary keys may hold one twice.
    let chunked: BTreeMap<i64, i64> = select(conn, CHUNKED, [sid])?
        .iter()
        .filter_map(|r| Some((int(&r[0]).ok()?, int(&r[1]).ok()?)))
        .collect();
    let mut seen = HashSet::new();
    // Each message row with one of its payload rows (any: repeats are refused below).
    for r in select(conn, MESSAGES, [sid])? {
        let seq = int(&r[0]).unwrap_or(-1);
        let row_key = format!("{sid}/{}", key(&[&r[0]]));
        // A message row repeated (a source without its keys): the first is imported.
        if !seen.insert(seq) {
            report.refused(
                "session_messages",
                row_key,
                "repeats an earlier row of the message".into(),
            );
            continue;
        }
        // The chunks' indexes, lengths and digests, not their data: a message is joined only
        // once they add up to what its payload row states, within what a record could become.
        let chunks = if chunked.contains_key(&seq) {
            Some(select(conn, CHUNK_SHAPES, rusqlite::params![sid, seq])?)
        } else {
            None
        };
        let whole = match &chunks {
            Some(chunks) => Some(joined(conn, (sid, seq), chunks, (&r[3], &r[4]))?),
            None => None,
        };
        let decoded = (|| {
            let text_json = match whole {
                Some(whole) => whole?,
                None => text(&r[2])?.to_owned(),
            };
            let value =
                serde_json::from_str(&text_json).map_err(|e| format!("is not JSON: {e}"))?;
            let m = StoredMessage::from_value(value).map_err(|e| e.to_string())?;
            fits(m.canonical_json())?;
            Ok::<_, String>((m, time(&r[1])?))
        })();
        let n_chunks = chunks.as_ref().map_or(0, Vec::len) as u64;
        match decoded {
            Ok((m, ts)) => {
                report.imported("session_messages", 1);
                if chunks.is_some() {
                    report.imported("session_message_payloads", 1);
                    report.imported("session_message_chunks", n_chunks);
                }
                out.push(Timed::new(
                    ts,
                    Rank::Message,
                    record(RecordKind::Message, m.canonical_json()),
                ));
            }
            Err(why) => {
                if let Some(chunks) = &chunks {
                    report.refused(
                        "session_message_payloads",
                        row_key.clone(),
                        "its message was not imported".into(),
                    );
                    for c in chunks {
                        report.refused(
                            "session_message_chunks",
                            format!("{row_key}/{}", key(&[&c[0]])),
                            "its message was not imported".into(),
                        );
                    }
                }
                report.refused("session_messages", row_key, why);
            }
        }
    }
    for (seq, rows) in &chunked {
        if seen.contains(seq) {
            for _ in 1..*rows {
                report.refused(
                    "session_message_payloads",
                    format!("{sid}/{seq}"),
                    "repeats an earlier payload row of the message".into(),
                );
            }
        }
    }
    // A payload or chunk row whose message is not there was not read above.
    for r in select(conn, ORPHAN_PAYLOADS, [sid])? {
        report.refused(
            "session_message_payloads",
            format!("{sid}/{}", key(&[&r[0]])),
            "names no message".into(),
        );
    }
    for r in select(conn, ORPHAN_CHUNKS, [sid])? {
        report.refused(
            "session_message_chunks",
            format!("{sid}/{}", key(&[&r[0], &r[1]])),
            "names no message with a payload".into(),
        );
    }
    Ok(out)
}

/// The most bytes a message's record may state to be joined: six records' worth. The original
/// writes a record as `JSON.stringify` prints it, which canonical JSON shortens by far less (a
/// `\u0041` escape, six bytes for one, is the most); a crafted text padded past this is refused
/// unread though it might canonicalize within a record.
const MAX_JOINED: i64 = 6 * makalog::format::DEFAULT_MAX_PAYLOAD as i64;

/// A large message's record joined from its chunks (`chunks`: index, type, length and digest
/// of each): indexes from 0 without a gap, blobs whose lengths add up to the payload's stated
/// length, which a record could become; then each chunk's data, read one at a time, against
/// its digest, and the whole's digest. Refused, with why, before any data is read otherwise.
fn joined(
    conn: &Connection,
    (sid, seq): (&str, i64),
    chunks: &[Vec<Value>],
    (bytes, sha256): (&Value, &Value),
) -> rusqlite::Result<Result<String, String>> {
    let stated = match int(bytes) {
        Ok(n) if (0..=MAX_JOINED).contains(&n) => n,
        Ok(n) => {
            return Ok(Err(format!(
                "its payload states {n} bytes, more than the {MAX_JOINED} a message is joined from"
            )))
        }
        Err(why) => return Ok(Err(format!("record_bytes {why}"))),
    };
    let mut total = 0i64;
    for (i, c) in chunks.iter().enumerate() {
        if int(&c[0]) != Ok(i as i64) {
            return Ok(Err(format!("its chunks skip index {i}")));
        }
        if text(&c[1]) != Ok("blob") {
            return Ok(Err(format!("chunk {i} is not a blob")));
        }
        total = total.saturating_add(int(&c[2]).unwrap_or(i64::MAX));
    }
    if total != stated {
        return Ok(Err(format!(
            "its chunks hold {total} bytes, not the {stated} its payload states"
        )));
    }
    let mut whole = Vec::with_capacity(stated as usize);
    let mut stmt = conn.prepare_cached(CHUNK_DATA)?;
    let mut rows = stmt.query(rusqlite::params![sid, seq])?;
    let mut i = 0;
    while let Some(row) = rows.next()? {
        let data = match row.get_ref(0)? {
            rusqlite::types::ValueRef::Blob(data) => data,
            _ => return Ok(Err(format!("chunk {i} is not a blob"))),
        };
        // The rows read now are the ones measured above, unless the source changed meanwhile.
        if whole.len() + data.len() > stated as usize {
            return Ok(Err(format!(
                "its chunks hold more than the {stated} bytes its payload states"
            )));
        }
        match chunks.get(i).map(|c| text(&c[3])) {
            Some(Ok(digest)) if hex(&Sha256::digest(data)) == digest => {}
            _ => return Ok(Err(format!("chunk {i} does not match its sha256"))),
        }
        whole.extend_from_slice(data);
        i += 1;
    }
    if whole.len() as i64 != stated {
        return Ok(Err(format!(
            "its chunks hold {} bytes, not the {stated} its payload states",
            whole.len()
        )));
    }
    if text(sha256) != Ok(hex(&Sha256::digest(&whole)).as_str()) {
        return Ok(Err("its chunks do not match the payload's sha256".into()));
    }
    Ok(String::from_utf8(whole).map_err(|_| "its record is not UTF-8".into()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
