//! The reading of one exact-shape JSON object: every accessor names the key it allows, checks its
//! value with the field's path in the error, and keeps what it accepts for the decoded object,
//! so `finish` can refuse unknown keys and hand back exactly what was checked.
//!
//! A decoded value is the input itself, borrowed, when decoding kept every member as given (so
//! for most records a store wrote, which are already decoded): only a normalization builds a
//! new value, so reading such a record copies nothing.

use super::super::path::Path;
use super::fields::{expect_array, expect_object, invalid, Result};
use serde_json::{Map, Value};
use smallvec::SmallVec;
use std::borrow::Cow;

mod typed;

/// A decoded value: the input itself when decoding changed nothing, or the value it made.
pub type Decoded<'a> = Cow<'a, Value>;

/// Decodes the exact-shape object at `path` with `read`, refusing keys it did not ask for.
pub fn decode_object<'a>(
    value: &'a Value,
    path: &Path,
    read: impl FnOnce(&mut Obj<'a>) -> Result<()>,
) -> Result<Decoded<'a>> {
    let mut obj = Obj::new(value, path)?;
    read(&mut obj)?;
    obj.finish()
}

/// Objects of at most this many members are searched by a scan of them.
const MEMBERS_INLINE: usize = 32;
const _: () = assert!(
    MEMBERS_INLINE <= u32::BITS as usize,
    "`asked` has a bit a member"
);

/// One exact-shape object being read.
pub struct Obj<'a> {
    value: &'a Value,
    map: &'a Map<String, Value>,
    /// The input's members when it has few (most objects): looked up by a scan of them,
    /// without the map's search by comparison, and marked in `asked` when asked for.
    members: SmallVec<[(&'a str, &'a Value); MEMBERS_INLINE]>,
    /// Which of `members` were asked for, a bit each.
    asked: u32,
    /// The keys asked for, when the input has too many members to hold inline.
    allowed: Vec<&'static str>,
    path: Path,
    /// The output's members in the order they were kept; a later one of the same key wins.
    out: SmallVec<[(&'static str, Decoded<'a>); 24]>,
}

impl<'a> Obj<'a> {
    /// Starts reading the object at `path`.
    pub fn new(value: &'a Value, path: &Path) -> Result<Obj<'a>> {
        let map = expect_object(value, path)?;
        let members = match map.len() <= MEMBERS_INLINE {
            true => map.iter().map(|(k, v)| (k.as_str(), v)).collect(),
            false => SmallVec::new(),
        };
        Ok(Obj {
            value,
            map,
            members,
            asked: 0,
            allowed: Vec::new(),
            path: path.clone(),
            out: SmallVec::new(),
        })
    }

    /// The path of one of its members.
    pub fn at(&self, key: &str) -> Path {
        self.path.key(key)
    }

    /// The keys the input holds, as given.
    pub fn input(&self) -> &'a Map<String, Value> {
        self.map
    }

    /// Allows `key` and returns its value without copying it.
    pub fn raw(&mut self, key: &'static str) -> Option<&'a Value> {
        if self.map.len() > MEMBERS_INLINE {
            self.allowed.push(key);
            return self.map.get(key);
        }
        let i = self.members.iter().position(|m| m.0 == key)?;
        self.asked |= 1 << i;
        Some(self.members[i].1)
    }

    /// Whether the input's member `key` was asked for.
    fn was_asked(&self, key: &str) -> bool {
        match self.members.iter().position(|m| m.0 == key) {
            Some(i) => self.asked & (1 << i) != 0,
            None => self.allowed.contains(&key),
        }
    }

    /// Allows `key`, which must be present, and returns its value without copying it.
    pub fn raw_required(&mut self, key: &'static str) -> Result<&'a Value> {
        match self.raw(key) {
            Some(value) => Ok(value),
            None => Err(invalid(&self.at(key), "missing required key")),
        }
    }

    /// Puts a value decoding made into the output.
    pub fn put(&mut self, key: &'static str, value: Value) {
        self.keep(key, Cow::Owned(value));
    }

    /// Puts a decoded member into the output: borrowed, it is the input's member `key` itself.
    pub fn keep(&mut self, key: &'static str, value: Decoded<'a>) {
        debug_assert!(
            self.map.get(key).is_none() || self.was_asked(key),
            "a kept member was asked for"
        );
        debug_assert!(match &value {
            Cow::Borrowed(v) => self.map.get(key).is_some_and(|m| std::ptr::eq(m, *v)),
            Cow::Owned(_) => true,
        });
        self.out.push((key, value));
    }

    fn copy(&mut self, key: &'static str, value: &'a Value) {
        self.keep(key, Cow::Borrowed(value));
    }

    /// A required member checked by `check`, copied as given.
    pub fn required<T>(
        &mut self,
        key: &'static str,
        check: impl Fn(&'a Value, &Path) -> Result<T>,
    ) -> Result<T> {
        let value = self.raw_required(key)?;
        let checked = self.checked(key, value, check)?;
        self.copy(key, value);
        Ok(checked)
    }

    /// `check` of a member's value. Its path is spelled out only for an error: a value that
    /// passes is checked against the root's path, which costs nothing to make, and a failure
    /// is checked again at its own path to name it.
    fn checked<T>(
        &self,
        key: &'static str,
        value: &'a Value,
        check: impl Fn(&'a Value, &Path) -> Result<T>,
    ) -> Result<T> {
        check(value, &Path::root()).or_else(|_| check(value, &self.at(key)))
    }

    /// An optional member checked by `check` when present, copied as given.
    pub fn optional<T>(
        &mut self,
        key: &'static str,
        check: impl Fn(&'a Value, &Path) -> Result<T>,
    ) -> Result<Option<T>> {
        match self.raw(key) {
            None => Ok(None),
            Some(value) => {
                let checked = self.checked(key, value, check)?;
                self.copy(key, value);
                Ok(Some(checked))
            }
        }
    }

    /// A required nested exact-shape object read by `read`.
    pub fn object(
        &mut self,
        key: &'static str,
        read: impl FnOnce(&mut Obj<'a>) -> Result<()>,
    ) -> Result<()> {
        let value = self.raw_required(key)?;
        let decoded = decode_object(value, &self.at(key), read)?;
        self.keep(key, decoded);
        Ok(())
    }

    /// An optional nested exact-shape object read by `read`.
    pub fn opt_object(
        &mut self,
        key: &'static str,
        read: impl FnOnce(&mut Obj<'a>) -> Result<()>,
    ) -> Result<bool> {
        match self.raw(key) {
            None => Ok(false),
            Some(value) => {
                let decoded = decode_object(value, &self.at(key), read)?;
                self.keep(key, decoded);
                Ok(true)
            }
        }
    }

    /// A required member decoded by `decode` into the value to keep.
    pub fn decoded(
        &mut self,
        key: &'static str,
        decode: impl FnOnce(&'a Value, &Path) -> Result<Decoded<'a>>,
    ) -> Result<()> {
        let value = self.raw_required(key)?;
        let decoded = decode(value, &self.at(key))?;
        self.keep(key, decoded);
        Ok(())
    }

    /// An optional member decoded by `decode` into the value to keep.
    pub fn opt_decoded(
        &mut self,
        key: &'static str,
        decode: impl FnOnce(&'a Value, &Path) -> Result<Decoded<'a>>,
    ) -> Result<bool> {
        match self.raw(key) {
            None => Ok(false),
            Some(value) => {
                let decoded = decode(value, &self.at(key))?;
                self.keep(key, decoded);
                Ok(true)
            }
        }
    }

    /// Refuses keys nobody asked for and returns the decoded object.
    pub fn finish(self) -> Result<Decoded<'a>> {
        // Unchanged, every member of the input was kept, so asked for: none is unknown.
        if self.unchanged() {
            return Ok(Cow::Borrowed(self.value));
        }
        if let Some(key) = self.map.keys().find(|key| !self.was_asked(key)) {
            return Err(invalid(&self.path.key(key), "unknown key"));
        }
        let mut out = Map::new();
        for (key, value) in self.out {
            out.insert(key.to_owned(), value.into_owned());
        }
        Ok(Cow::Owned(Value::Object(out)))
    }

    /// Whether the output is the input: every member kept as given, each once, and no other.
    /// A borrowed member is the input's member of its key (see `keep`), so borrowed members
    /// that are distinct values and as many as the input's are all of them.
    fn unchanged(&self) -> bool {
        self.out.len() == self.map.len()
            && self
                .out
                .iter()
                .enumerate()
                .all(|(i, (_, value))| match value {
                    Cow::Borrowed(v) => !self.out[..i].iter().any(
                        |(_, earlier)| matches!(earlier, Cow::Borrowed(e) if std::ptr::eq(*e, *v)),
                    ),
                    Cow::Owned(_) => false,
                })
    }
}

/// Decodes every element of the array at `path` with `decode`.
pub fn decode_array<'a>(
    value: &'a Value,
    path: &Path,
    mut decode: impl FnMut(&'a Value, &Path) -> Result<Decoded<'a>>,
) -> Result<Vec<Decoded<'a>>> {
    expect_array(value, path)?
        .iter()
        .enumerate()
        .map(|(i, item)| decode(item, &path.index(i)))
        .collect()
}

/// The array `value` once its elements were decoded into `items`: `value` itself when every
/// element was kept as given.
pub fn array_of<'a>(value: &'a Value, items: Vec<Decoded<'a>>) -> Decoded<'a> {
    if items.iter().all(|item| matches!(item, Cow::Borrowed(_))) {
        debug_assert!(value
            .as_array()
            .is_some_and(|input| input.len() == items.len()));
        return Cow::Borrowed(value);
    }
    Cow::Owned(Value::Array(
        items.into_iter().map(Cow::into_owned).collect(),
    ))
}

#[cfg(test)]
mod tests;
