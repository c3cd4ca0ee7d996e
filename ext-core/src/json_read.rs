//! Hand-written readers of the persisted state's JSON ([`crate::snapshot`]).
//!
//! serde's derived `Deserialize` generates a visitor per type and field set, and that code
//! was most of the wasm bundle (about 190 KB of 540 KB, Cargo.toml records the measurements).
//! A reader here walks a parsed `serde_json::Value` instead: one small function per type,
//! with the field lookups, the error and the primitive readers shared and not generic.
//!
//! The writer stays serde's derived `Serialize`, so each reader follows the shape serde
//! writes for its type: structs as objects keyed by field name (unknown keys ignored, an
//! absent `Option` field is `None`, an absent `#[serde(default)]` field its default),
//! `rename_all = "snake_case"` unit enums as strings, internally tagged enums as objects
//! with their tag, maps with string keys (integers as decimal text).
//!
//! Invariant: for every persisted value `v`, reading what serde wrote gives `v` back
//! (`tests/it/continuity_props.rs` checks write → read → write on every worker restart;
//! the machines' own property tests restore through these readers).

use std::collections::VecDeque;

use serde_json::{Map, Value};

use crate::vec_map::VecMap;

/// Why a JSON value does not have the shape of the type read from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// What was expected, e.g. `a string`.
    expected: &'static str,
    /// The innermost field whose value it was, when it was a field's.
    field: Option<&'static str>,
}

impl ReadError {
    /// A value that is not `expected`.
    pub fn expected(expected: &'static str) -> Self {
        Self { expected, field: None }
    }

    /// The same error, naming `name` unless an inner field is named already (kept small:
    /// this runs inlined for every field of every type).
    #[inline(never)]
    fn in_field(self, name: &'static str) -> Self {
        Self { field: self.field.or(Some(name)), ..self }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("expected ")?;
        f.write_str(self.expected)?;
        if let Some(field) = self.field {
            f.write_str(" in `")?;
            f.write_str(field)?;
            f.write_str("`")?;
        }
        Ok(())
    }
}

impl std::error::Error for ReadError {}

/// A type read from the JSON its serde `Serialize` writes.
pub trait ReadJson: Sized {
    /// Reads `value`.
    fn read_json(value: &Value) -> Result<Self, ReadError>;
}

/// Reads a type from JSON text (the snapshot's and the tests' entry point).
pub fn from_str<T: ReadJson>(text: &str) -> Result<T, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    T::read_json(&value).map_err(|e| e.to_string())
}

/// The fields of a JSON object, for a struct's or a tagged enum's reader.
#[derive(Clone, Copy)]
pub struct Fields<'a>(&'a Map<String, Value>);

/// What an absent field reads as: `null` (so an `Option` field is `None`).
static NULL: Value = Value::Null;

impl<'a> Fields<'a> {
    /// The fields of `value`, which must be an object.
    pub fn of(value: &'a Value) -> Result<Self, ReadError> {
        value.as_object().map(Fields).ok_or(ReadError::expected("an object"))
    }

    #[inline(never)]
    fn raw(self, name: &str) -> Option<&'a Value> {
        self.0.get(name)
    }

    /// Field `name`; an absent one reads as `null`.
    pub fn get<T: ReadJson>(self, name: &'static str) -> Result<T, ReadError> {
        T::read_json(self.raw(name).unwrap_or(&NULL)).map_err(|e| e.in_field(name))
    }

    /// Field `name`, or `T::default()` when it is absent (`#[serde(default)]`).
    pub fn or_default<T: ReadJson + Default>(self, name: &'static str) -> Result<T, ReadError> {
        match self.raw(name) {
            Some(value) => T::read_json(value).map_err(|e| e.in_field(name)),
            None => Ok(T::default()),
        }
    }

    /// Refuses an object with a field not in `known` (`#[serde(deny_unknown_fields)]`).
    pub fn only(self, known: &[&str]) -> Result<Self, ReadError> {
        match self.0.keys().all(|key| known.contains(&key.as_str())) {
            true => Ok(self),
            false => Err(ReadError::expected("no unknown field")),
        }
    }

    /// The string tag `name` of an internally tagged enum.
    pub fn tag(self, name: &'static str) -> Result<&'a str, ReadError> {
        self.raw(name).and_then(Value::as_str).ok_or(ReadError::expected("a known tag").in_field(name))
    }
}

/// The error of a tag or unit-variant string no variant has.
pub fn unknown_variant(what: &'static str) -> ReadError {
    ReadError::expected(what)
}

/// The string of a unit enum's value.
pub fn variant_name(value: &Value) -> Result<&str, ReadError> {
    value.as_str().ok_or(ReadError::expected("a string naming a variant"))
}

impl ReadJson for String {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        value.as_str().map(str::to_owned).ok_or(ReadError::expected("a string"))
    }
}

impl ReadJson for bool {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        value.as_bool().ok_or(ReadError::expected("a boolean"))
    }
}

impl ReadJson for u64 {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        value.as_u64().ok_or(ReadError::expected("an unsigned integer"))
    }
}

impl ReadJson for u32 {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        value.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or(ReadError::expected("a 32-bit unsigned integer"))
    }
}

impl<T: ReadJson> ReadJson for Option<T> {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        match value {
            Value::Null => Ok(None),
            value => T::read_json(value).map(Some),
        }
    }
}

/// The items of a JSON array.
fn items(value: &Value) -> Result<&[Value], ReadError> {
    value.as_array().map(Vec::as_slice).ok_or(ReadError::expected("an array"))
}

impl<T: ReadJson> ReadJson for Vec<T> {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        items(value)?.iter().map(T::read_json).collect()
    }
}

impl<T: ReadJson> ReadJson for VecDeque<T> {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        items(value)?.iter().map(T::read_json).collect()
    }
}

/// A map key as serde_json writes it: a string, integers in decimal.
pub trait ReadKey: Sized {
    /// Reads `key`.
    fn read_key(key: &str) -> Result<Self, ReadError>;
}

impl ReadKey for String {
    fn read_key(key: &str) -> Result<Self, ReadError> {
        Ok(key.to_owned())
    }
}

impl ReadKey for u32 {
    fn read_key(key: &str) -> Result<Self, ReadError> {
        key.parse().map_err(|_| ReadError::expected("a 32-bit unsigned integer key"))
    }
}

impl<K: ReadKey + Ord, V: ReadJson> ReadJson for VecMap<K, V> {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let object = value.as_object().ok_or(ReadError::expected("an object"))?;
        let mut map = VecMap::new();
        for (key, value) in object {
            map.insert(K::read_key(key)?, V::read_json(value)?);
        }
        Ok(map)
    }
}

/// `impl ReadJson` for a unit-only enum written as its variant's snake_case name:
/// `read_unit_enum!(Language { "en" => En, "zh" => Zh });`
#[macro_export]
macro_rules! read_unit_enum {
    ($ty:ident { $($wire:literal => $variant:ident),* $(,)? }) => {
        impl $crate::json_read::ReadJson for $ty {
            fn read_json(value: &::serde_json::Value) -> Result<Self, $crate::json_read::ReadError> {
                match $crate::json_read::variant_name(value)? {
                    $($wire => Ok($ty::$variant),)*
                    _ => Err($crate::json_read::unknown_variant(concat!("a known ", stringify!($ty)))),
                }
            }
        }
    };
}
pub use read_unit_enum;

/// `impl ReadJson` for a struct written as an object keyed by field name:
/// `read_struct!(Baseline { page_load, user_turns: default } skip { cached });` — a plain
/// field is required (an `Option` one may be absent), `: default` is `#[serde(default)]`,
/// `skip { … }` lists the `#[serde(skip)]` fields (their `Default`).
#[macro_export]
macro_rules! read_struct {
    ($ty:ident { $($field:ident $(: $how:ident)?),* $(,)? } $(skip { $($skipped:ident),* $(,)? })?) => {
        impl $crate::json_read::ReadJson for $ty {
            fn read_json(value: &::serde_json::Value) -> Result<Self, $crate::json_read::ReadError> {
                let fields = $crate::json_read::Fields::of(value)?;
                Ok($ty {
                    $($field: $crate::read_struct!(@field fields, $field $(, $how)?),)*
                    $($($skipped: Default::default(),)*)?
                })
            }
        }
    };
    (@field $fields:ident, $field:ident) => { $fields.get(stringify!($field))? };
    (@field $fields:ident, $field:ident, default) => { $fields.or_default(stringify!($field))? };
}
pub use read_struct;
