//! Reading SQLite values as the importer needs them: text that must be UTF-8, integers, times,
//! and a row's key for the report.

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, Params};

/// Every row `sql` selects, each column as a value. SQLite does not check that TEXT is UTF-8:
/// text that is not comes back as a blob, which no caller takes for text, so its row is refused
/// by its key rather than read wrong (or, as rusqlite would, panic).
pub fn select(
    conn: &Connection,
    sql: &str,
    params: impl Params,
) -> rusqlite::Result<Vec<Vec<Value>>> {
    let mut stmt = conn.prepare_cached(sql)?;
    debug_assert!(
        stmt.parameter_count() == 0 || super::plans::is_checked(sql),
        "a repeated query whose plan is not checked: {sql}"
    );
    let n = stmt.column_count();
    let rows = stmt.query_map(params, |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    ValueRef::Text(bytes) => match std::str::from_utf8(bytes) {
                        Ok(text) => Value::Text(text.to_owned()),
                        Err(_) => Value::Blob(bytes.to_vec()),
                    },
                    ValueRef::Blob(bytes) => Value::Blob(bytes.to_vec()),
                    ValueRef::Integer(i) => Value::Integer(i),
                    ValueRef::Real(f) => Value::Real(f),
                    ValueRef::Null => Value::Null,
                })
            })
            .collect()
    })?;
    rows.collect()
}

/// The value as text, or why it is not.
pub fn text(v: &Value) -> Result<&str, String> {
    match v {
        Value::Text(s) => Ok(s),
        Value::Null => Err("is NULL".into()),
        Value::Blob(_) => Err("is not UTF-8 text".into()),
        other => Err(format!("is not text ({:?})", other.data_type())),
    }
}

/// The value as text, `None` for NULL.
pub fn opt_text(v: &Value) -> Result<Option<&str>, String> {
    match v {
        Value::Null => Ok(None),
        v => text(v).map(Some),
    }
}

/// The value as an integer, or why it is not.
pub fn int(v: &Value) -> Result<i64, String> {
    match v {
        Value::Integer(i) => Ok(*i),
        other => Err(format!("is not an integer ({:?})", other.data_type())),
    }
}

/// The value as a time in ms: an integer, or a finite real (a `ts` may have a fraction).
pub fn time(v: &Value) -> Result<f64, String> {
    match v {
        Value::Integer(i) => Ok(*i as f64),
        Value::Real(f) if f.is_finite() => Ok(*f),
        other => Err(format!("is not a time ({:?})", other.data_type())),
    }
}

/// The value as a claim time in ms: a non-negative integer.
pub fn claim_time(v: &Value) -> Result<u64, String> {
    u64::try_from(int(v)?).map_err(|_| "is a negative time".to_owned())
}

/// The value as the report names a key part: text as it is, integers in decimal.
pub fn key_part(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Null => "NULL".into(),
        Value::Blob(b) => format!("<{} bytes, not UTF-8 text>", b.len()),
    }
}

/// A key of several parts, joined by `/`.
pub fn key(parts: &[&Value]) -> String {
    parts
        .iter()
        .map(|v| key_part(v))
        .collect::<Vec<_>>()
        .join("/")
}

/// JSON text parsed, or why it is not JSON.
pub fn json(v: &Value) -> Result<serde_json::Value, String> {
    let t = text(v)?;
    serde_json::from_str(t).map_err(|e| format!("is not JSON: {e}"))
}
