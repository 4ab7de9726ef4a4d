//! The typed accessors of [`Obj`]: a required or optional member of one JSON type or shape,
//! each through [`Obj::required`] or [`Obj::optional`], so each is checked and kept as given.

use super::super::super::path::Path;
use super::super::fields::{
    expect_array, expect_bool, expect_int, expect_nonempty, expect_number, expect_object,
    expect_one_of, expect_sha256, expect_str, invalid, Result,
};
use super::Obj;
use serde_json::Value;

impl<'a> Obj<'a> {
    /// A required string.
    pub fn string(&mut self, key: &'static str) -> Result<&'a str> {
        self.required(key, expect_str)
    }

    /// An optional string.
    pub fn opt_string(&mut self, key: &'static str) -> Result<Option<&'a str>> {
        self.optional(key, expect_str)
    }

    /// A required non-empty string.
    pub fn nonempty(&mut self, key: &'static str) -> Result<&'a str> {
        self.required(key, expect_nonempty)
    }

    /// An optional string that is non-empty when present.
    pub fn opt_nonempty(&mut self, key: &'static str) -> Result<Option<&'a str>> {
        self.optional(key, expect_nonempty)
    }

    /// A required string from a closed set.
    pub fn one_of(&mut self, key: &'static str, allowed: &[&str]) -> Result<&'a str> {
        self.required(key, |v, p| expect_one_of(v, p, allowed))
    }

    /// An optional string from a closed set.
    pub fn opt_one_of(&mut self, key: &'static str, allowed: &[&str]) -> Result<Option<&'a str>> {
        self.optional(key, |v, p| expect_one_of(v, p, allowed))
    }

    /// A required member that must equal the string `literal`.
    pub fn literal(&mut self, key: &'static str, literal: &str) -> Result<()> {
        self.one_of(key, &[literal]).map(|_| ())
    }

    /// A required member that must be the number `literal` (`1.0` counts as `1`).
    pub fn number_literal(&mut self, key: &'static str, literal: i64) -> Result<()> {
        self.required(key, |v, p| {
            if expect_int(v, p)? != literal {
                return Err(invalid(p, format!("must be {literal}")));
            }
            Ok(())
        })
    }

    /// A required finite number.
    pub fn number(&mut self, key: &'static str) -> Result<f64> {
        self.required(key, expect_number)
    }

    /// An optional finite number.
    pub fn opt_number(&mut self, key: &'static str) -> Result<Option<f64>> {
        self.optional(key, expect_number)
    }

    /// A required safe integer of at least `min`.
    pub fn int_at_least(&mut self, key: &'static str, min: i64) -> Result<i64> {
        self.required(key, |v, p| at_least(v, p, min))
    }

    /// An optional safe integer of at least `min`.
    pub fn opt_int_at_least(&mut self, key: &'static str, min: i64) -> Result<Option<i64>> {
        self.optional(key, |v, p| at_least(v, p, min))
    }

    /// A required boolean.
    pub fn boolean(&mut self, key: &'static str) -> Result<bool> {
        self.required(key, expect_bool)
    }

    /// An optional boolean.
    pub fn opt_boolean(&mut self, key: &'static str) -> Result<Option<bool>> {
        self.optional(key, expect_bool)
    }

    /// A required member that must be `true`.
    pub fn true_literal(&mut self, key: &'static str) -> Result<()> {
        self.required(key, expect_true)
    }

    /// An optional member that must be `true` when present.
    pub fn opt_true_literal(&mut self, key: &'static str) -> Result<()> {
        self.optional(key, expect_true).map(|_| ())
    }

    /// A required `sha256:` digest.
    pub fn sha256(&mut self, key: &'static str) -> Result<&'a str> {
        self.required(key, expect_sha256)
    }

    /// An optional `sha256:` digest.
    pub fn opt_sha256(&mut self, key: &'static str) -> Result<Option<&'a str>> {
        self.optional(key, expect_sha256)
    }

    /// A required member of any JSON value; only its presence is checked.
    pub fn any(&mut self, key: &'static str) -> Result<&'a Value> {
        self.required(key, |v, _| Ok(v))
    }

    /// An optional member of any JSON value.
    pub fn opt_any(&mut self, key: &'static str) -> Result<Option<&'a Value>> {
        self.optional(key, |v, _| Ok(v))
    }

    /// An optional free-form object (any keys, any values), such as `providerOptions`.
    pub fn opt_record(&mut self, key: &'static str) -> Result<()> {
        self.optional(key, expect_object).map(|_| ())
    }

    /// An optional array of strings.
    pub fn opt_string_array(&mut self, key: &'static str) -> Result<()> {
        self.optional(key, |v, p| {
            for (i, item) in expect_array(v, p)?.iter().enumerate() {
                expect_str(item, &p.index(i))?;
            }
            Ok(())
        })
        .map(|_| ())
    }

    /// An optional object whose values are all finite numbers.
    pub fn opt_number_record(&mut self, key: &'static str) -> Result<()> {
        self.optional(key, |v, p| {
            for (k, item) in expect_object(v, p)? {
                expect_number(item, &p.key(k))?;
            }
            Ok(())
        })
        .map(|_| ())
    }
}

fn at_least(value: &Value, path: &Path, min: i64) -> Result<i64> {
    let n = expect_int(value, path)?;
    if n < min {
        return Err(invalid(path, format!("must be at least {min}")));
    }
    Ok(n)
}

fn expect_true(value: &Value, path: &Path) -> Result<()> {
    if value != &Value::Bool(true) {
        return Err(invalid(path, "must be true"));
    }
    Ok(())
}
