//! Numbers as JavaScript sees them: one representation per value, safe integers, and the text
//! `Number.prototype.toString` prints (MAKA-MODEL §2).

use super::parse::MAX_DEPTH;
use serde_json::{Number, Value};

/// `Number.MAX_SAFE_INTEGER`: the largest integer field value (2^53 − 1).
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// The one representation of a number inside a decoded event: integral values as integers (so
/// `1.0` and `1` compare equal and `-0` is `0`), everything else as `f64`.
///
/// Integers that arrived as integers are kept exactly, even beyond 2^53: printing rounds them to
/// the nearest double, and the lossless check then refuses them instead of silently rounding.
pub(crate) fn normalize(n: &Number) -> Number {
    if n.is_u64() || n.is_i64() {
        return n.clone();
    }
    match n.as_f64().and_then(from_f64) {
        Some(normal) => normal,
        None => n.clone(),
    }
}

/// True when `v`'s canonical text parses back to `v` itself without being tried: every number
/// in it is a safe integer (strings, literals and safe integers print exactly; only doubles and
/// integers past 2^53 can come back changed) and it is no deeper than the parser reads (the
/// outermost container is level 1; the normalizing pass counts from 0, one level more).
pub(crate) fn prints_exactly(v: &Value) -> bool {
    prints_exactly_at(v, 1)
}

fn prints_exactly_at(v: &Value, level: usize) -> bool {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i),
            (None, Some(u)) => u <= MAX_SAFE_INTEGER as u64,
            (None, None) => false,
        },
        Value::Array(items) => {
            level <= MAX_DEPTH && items.iter().all(|i| prints_exactly_at(i, level + 1))
        }
        Value::Object(map) => {
            level <= MAX_DEPTH && map.values().all(|i| prints_exactly_at(i, level + 1))
        }
        Value::Null | Value::Bool(_) | Value::String(_) => true,
    }
}

/// The normalized number for a finite double; `None` for NaN and the infinities.
pub(crate) fn from_f64(f: f64) -> Option<Number> {
    if !f.is_finite() {
        return None;
    }
    if f == 0.0 {
        return Some(Number::from(0u64));
    }
    // Both bounds are powers of two, so every integral double inside them converts exactly.
    if f.fract() == 0.0 {
        if f > 0.0 && f < 18_446_744_073_709_551_616.0 {
            return Some(Number::from(f as u64));
        }
        if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
            return Some(Number::from(f as i64));
        }
    }
    Number::from_f64(f)
}

/// The value of a normalized number when it is a safe integer (|n| ≤ 2^53 − 1).
pub(crate) fn safe_integer(n: &Number) -> Option<i64> {
    n.as_i64()
        .filter(|i| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(i))
}

/// A JSON number as JavaScript prints it; integers beyond 2^53 print as the nearest double.
pub(crate) fn format_json_number(n: &Number) -> String {
    n.as_f64()
        .and_then(format_number)
        .unwrap_or_else(|| "null".to_string())
}

/// `Number.prototype.toString` for a finite double; `None` for NaN and the infinities.
///
/// Shortest round-trip digits, `1.0` → `1`, `-0` → `0`, plain notation for decimal exponents
/// from −7 to 20 and `d.ddde±x` outside them (ECMA-262 Number::toString).
pub fn format_number(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    if x == 0.0 {
        return Some("0".to_string());
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, as ECMAScript requires.
    let scientific = format!("{:e}", x.abs());
    let (mantissa, exponent) = scientific.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exponent + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let exponent = n - 1;
        out.push('e');
        out.push(if exponent >= 0 { '+' } else { '-' });
        out.push_str(&exponent.abs().to_string());
    }
    Some(out)
}
