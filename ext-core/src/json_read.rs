//! Hand-written readers and writers of the persisted state's JSON ([`crate::snapshot`]).
//!
//! serde's derived `Deserialize` generates a visitor per type and field set, and that code
//! was most of the wasm bundle (about 190 KB of 540 KB, Cargo.toml records the measurements).
//! A reader here walks a parsed `serde_json::Value` instead: one small function per type,
//! with the field lookups, the error and the primitive readers shared and not generic.
//!
//! The writer ([`WriteJson`]) is hand-written too, for the same reason (serde's derived
//! `Serialize`, inlined into the persist timer, was the largest function left):
//! [`json_struct!`] emits a struct's reader and writer from one field list, and each
//! tagged enum's writer sits next to its reader. Both keep the shape serde's derives write
//! (the types still derive `Serialize` for the tests and native tools): structs as objects
//! keyed by field name (unknown keys ignored, an absent `Option` field is `None`, an absent
//! `#[serde(default)]` field its default), `rename_all = "snake_case"` unit enums as
//! strings, internally tagged enums as objects with their tag, maps with string keys
//! (integers as decimal text).
//!
//! Invariants: for every persisted value `v`, reading what was written gives `v` back
//! (`tests/it/continuity_props.rs` checks write → read → write on every worker restart;
//! the machines' own property tests restore through these readers), and what
//! [`WriteJson`] writes equals what serde's `Serialize` writes (`tests/it/snapshot.rs`).

use std::collections::VecDeque;

use serde_json::{Map, Value};

use crate::vec_map::VecMap;

/// `#[derive(ReadJson, WriteJson)]`: a type's reader and writer generated from its
/// definition and its `#[serde(...)]` attributes (the `json-derive` crate says which).
pub use json_derive::{ReadJson, WriteJson};

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
    fn in_field(mut self, name: &'static str) -> Self {
        self.name_field(name);
        self
    }

    /// Names `name` as the error's field unless an inner field is named already.
    #[inline(never)]
    fn name_field(&mut self, name: &'static str) {
        if self.field.is_none() {
            self.field = Some(name);
        }
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
        let mut read = T::read_json(self.raw(name).unwrap_or(&NULL));
        // The error named in place, not by `map_err`: that copies the value read into a
        // new `Result`, code repeated for every field type.
        if let Err(error) = &mut read {
            error.name_field(name);
        }
        read
    }

    /// Field `name`, or `T::default()` when it is absent (`#[serde(default)]`).
    pub fn or_default<T: ReadJson + Default>(self, name: &'static str) -> Result<T, ReadError> {
        let Some(value) = self.raw(name) else {
            return Ok(T::default());
        };
        let mut read = T::read_json(value);
        if let Err(error) = &mut read {
            error.name_field(name);
        }
        read
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
        // A loop, not `collect()` into a `Result`: its adapter is several times larger
        // in wasm for each item type.
        let items = items(value)?;
        let mut read = Vec::with_capacity(items.len());
        for item in items {
            read.push(T::read_json(item)?);
        }
        Ok(read)
    }
}

impl<T: ReadJson> ReadJson for VecDeque<T> {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        Vec::read_json(value).map(VecDeque::from)
    }
}

/// A type written as the JSON its [`ReadJson`] reads.
pub trait WriteJson {
    /// The JSON of `self`.
    fn write_json(&self) -> Value;
}

/// The fields of a JSON object being written, for a struct's or a tagged enum's writer.
#[derive(Default)]
pub struct Object(Map<String, Value>);

impl Object {
    /// An object whose tag field `name` is `tag` (an internally tagged enum's variant).
    pub fn tagged(name: &'static str, tag: &'static str) -> Self {
        let mut object = Self::default();
        object.put(name, Value::from(tag));
        object
    }

    /// Sets field `name` (not generic and not inlined: it runs for every field written).
    #[inline(never)]
    pub fn put(&mut self, name: &'static str, value: Value) {
        insert(&mut self.0, name.to_owned(), value);
    }

    /// Sets field `name` to `value`'s JSON.
    pub fn with<T: WriteJson + ?Sized>(mut self, name: &'static str, value: &T) -> Self {
        self.put(name, value.write_json());
        self
    }

    /// The object.
    pub fn done(self) -> Value {
        Value::Object(self.0)
    }
}

impl<T: WriteJson + ?Sized> WriteJson for &T {
    fn write_json(&self) -> Value {
        (**self).write_json()
    }
}

impl WriteJson for str {
    fn write_json(&self) -> Value {
        Value::from(self)
    }
}

impl WriteJson for String {
    fn write_json(&self) -> Value {
        Value::from(self.as_str())
    }
}

/// Scalars written as serde_json's `From` writes them.
macro_rules! write_scalar {
    ($($ty:ty),*) => {$(
        impl WriteJson for $ty {
            fn write_json(&self) -> Value {
                Value::from(*self)
            }
        }
    )*};
}
write_scalar!(bool, u64, usize, u32, i64, f64);

impl WriteJson for Value {
    fn write_json(&self) -> Value {
        self.clone()
    }
}

impl<T: WriteJson> WriteJson for Option<T> {
    fn write_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::write_json)
    }
}

impl<T: WriteJson> WriteJson for [T] {
    fn write_json(&self) -> Value {
        Value::Array(self.iter().map(T::write_json).collect())
    }
}

impl<T: WriteJson> WriteJson for Vec<T> {
    fn write_json(&self) -> Value {
        self.as_slice().write_json()
    }
}

impl<T: WriteJson> WriteJson for VecDeque<T> {
    fn write_json(&self) -> Value {
        Value::Array(self.iter().map(T::write_json).collect())
    }
}

/// One entry into a map being written (not generic, not inlined).
#[inline(never)]
fn insert(map: &mut Map<String, Value>, key: String, value: Value) {
    map.insert(key, value);
}

/// A map key written as serde_json writes it (integers as decimal text).
pub trait WriteKey {
    /// The key text.
    fn write_key(&self) -> String;
}

impl WriteKey for String {
    fn write_key(&self) -> String {
        self.clone()
    }
}

impl WriteKey for u32 {
    fn write_key(&self) -> String {
        self.to_string()
    }
}

impl<K: WriteKey + Ord, V: WriteJson> WriteJson for VecMap<K, V> {
    fn write_json(&self) -> Value {
        // Inserted one by one: collecting into serde_json's map sorts first, and that sort
        // instantiated for (String, Value) costs more wasm than the inserts.
        let mut map = Map::new();
        for (key, value) in self.iter() {
            insert(&mut map, key.write_key(), value.write_json());
        }
        Value::Object(map)
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

/// `impl WriteJson` for a unit-only enum written as its variant's snake_case name:
/// `write_unit_enum!(Tone { "good" => Good, "bad" => Bad });`
#[macro_export]
macro_rules! write_unit_enum {
    ($ty:ident { $($wire:literal => $variant:ident),* $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order (tests walk them: each has its texts).
            pub const ALL: &'static [$ty] = &[$($ty::$variant),*];

            /// The variant's wire name (snake_case), also the suffix of its `_locales` keys.
            pub fn wire_name(&self) -> &'static str {
                match self {
                    $($ty::$variant => $wire,)*
                }
            }
        }

        impl $crate::json_read::WriteJson for $ty {
            fn write_json(&self) -> ::serde_json::Value {
                ::serde_json::Value::from(self.wire_name())
            }
        }
    };
}
pub use write_unit_enum;

/// [`read_unit_enum!`] and [`write_unit_enum!`] from one list of names.
#[macro_export]
macro_rules! json_unit_enum {
    ($ty:ident { $($wire:literal => $variant:ident),* $(,)? } $(aliases { $($alias:literal => $aliased:ident),* $(,)? })?) => {
        $crate::read_unit_enum!($ty { $($wire => $variant,)* $($($alias => $aliased,)*)? });
        $crate::write_unit_enum!($ty { $($wire => $variant),* });
    };
}
pub use json_unit_enum;

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

/// `impl WriteJson` for a struct written as an object keyed by field name:
/// `write_struct!(HudView { companion, herdr, actions });` (fields not listed are not
/// written).
#[macro_export]
macro_rules! write_struct {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        impl $crate::json_read::WriteJson for $ty {
            fn write_json(&self) -> ::serde_json::Value {
                let mut object = $crate::json_read::Object::default();
                $(object.put(stringify!($field), $crate::json_read::WriteJson::write_json(&self.$field));)*
                object.done()
            }
        }
    };
}
pub use write_struct;

/// A JSON object of the given members, each written by its [`WriteJson`]:
/// `json_object!("type": "notice", "text": text)` — what `serde_json::json!` gives for
/// the same members, without serde's `Serialize` (and its panicking `to_value`) in the wasm.
#[macro_export]
macro_rules! json_object {
    ($($key:literal : $value:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut object = $crate::json_read::Object::default();
        $(object.put($key, $crate::json_read::WriteJson::write_json(&$value));)*
        object.done()
    }};
}
pub use json_object;

/// [`read_struct!`] and [`write_struct!`] from one field list: every field but the
/// skipped ones is written under its name (`: default` only changes the reading).
#[macro_export]
macro_rules! json_struct {
    ($ty:ident { $($field:ident $(: $how:ident)?),* $(,)? } $(skip { $($skipped:ident),* $(,)? })?) => {
        $crate::read_struct!($ty { $($field $(: $how)?),* } $(skip { $($skipped),* })?);
        $crate::write_struct!($ty { $($field),* });
    };
}
pub use json_struct;
