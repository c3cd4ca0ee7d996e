//! Readers and writers of the persisted state's JSON ([`crate::snapshot`]) and of what the
//! worker posts, without serde's derived `Deserialize` / `Serialize` in the wasm.
//!
//! serde's derived `Deserialize` generates a visitor per type and field set, and that code
//! was most of the wasm bundle (about 190 KB of 540 KB, docs/BENCH-LOG.md). A reader here
//! walks a parsed `serde_json::Value` instead, with the field lookups, the error and the
//! primitive readers shared and not generic; a writer builds a `Value` through
//! [`Object::put`] (serde's derived `Serialize`, inlined into the persist timer, was the
//! largest function left).
//!
//! Each type's reader and writer is derived from its definition: `#[derive(ReadJson,
//! WriteJson)]` (the `json-derive` crate) reads the type's `#[serde(...)]` attributes, the
//! one description of its shape, and generates the calls below. The shapes are serde's:
//! structs as objects keyed by field name (unknown keys ignored, an absent `Option` field is
//! `None`, an absent `#[serde(default)]` field its default), `rename_all = "snake_case"` unit
//! enums as strings, internally tagged enums as objects with their tag, maps with string
//! keys (integers as decimal text). Shapes the derive does not know keep a hand-written
//! `impl` next to the type.
//!
//! Invariants: for every persisted value `v`, reading what was written gives `v` back
//! (`tests/it/continuity_props.rs` checks write → read → write on every worker restart;
//! `tests/it/json_derive.rs` checks the derive itself), and what [`WriteJson`] writes equals
//! what serde's `Serialize` writes (`tests/it/snapshot.rs`).

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

/// A struct's fields read one by one without returning early: each read gives the value,
/// or `None` and keeps the first error. The derive reads every field into a slot and builds
/// the value once all are `Some`, so a reader has one drop of its slots instead of one
/// ladder of drops per `?` (most of a derived reader's wasm, docs/BENCH-LOG.md).
pub struct FieldReader<'a> {
    fields: Fields<'a>,
    error: Option<ReadError>,
}

impl<'a> FieldReader<'a> {
    /// The reader of `value`'s fields; `value` must be an object.
    pub fn of(value: &'a Value) -> Result<Self, ReadError> {
        Ok(Self { fields: Fields::of(value)?, error: None })
    }

    /// The fields, for `only` and `tag`.
    pub fn fields(&self) -> Fields<'a> {
        self.fields
    }

    /// Field `name` (absent reads as `null`), or `None` after keeping its error.
    pub fn get<T: ReadJson>(&mut self, name: &'static str) -> Option<T> {
        let value = self.fields.raw(name).unwrap_or(&NULL);
        self.slot(T::read_json(value), name)
    }

    /// Field `name`, `T::default()` when absent (`#[serde(default)]`), or `None` after
    /// keeping its error.
    pub fn or_default<T: ReadJson + Default>(&mut self, name: &'static str) -> Option<T> {
        match self.fields.raw(name) {
            Some(value) => self.slot(T::read_json(value), name),
            None => Some(T::default()),
        }
    }

    fn slot<T>(&mut self, read: Result<T, ReadError>, name: &'static str) -> Option<T> {
        match read {
            Ok(value) => Some(value),
            Err(error) => {
                self.keep(error, name);
                None
            }
        }
    }

    /// Keeps `error`, found in field `name`, unless an earlier field's error is kept.
    #[inline(never)]
    fn keep(&mut self, error: ReadError, name: &'static str) {
        if self.error.is_none() {
            self.error = Some(error.in_field(name));
        }
    }

    /// The first error kept (called when a slot is `None`, so there is one).
    #[inline(never)]
    pub fn error(self) -> ReadError {
        self.error.unwrap_or(ReadError::expected("a readable field"))
    }
}

/// The error of a tag or unit-variant string no variant has.
pub fn unknown_variant(what: &'static str) -> ReadError {
    ReadError::expected(what)
}

/// Where `name` is in `names` (a unit enum's or a tag's variant names), `names.len()` when
/// it is none of them (one loop, not a string match per variant in every enum's reader).
#[inline(never)]
pub fn variant_index(name: &str, names: &[&str]) -> usize {
    names.iter().position(|known| *known == name).unwrap_or(names.len())
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

/// The array of `items`' JSON. A loop, not `collect()`: its iterator adapters are
/// instantiated for each item type (the push of a `Value` is one function for all).
fn write_items<'a, T: WriteJson + 'a>(items: impl ExactSizeIterator<Item = &'a T>) -> Value {
    let mut written = Vec::with_capacity(items.len());
    for item in items {
        written.push(item.write_json());
    }
    Value::Array(written)
}

impl<T: WriteJson> WriteJson for [T] {
    fn write_json(&self) -> Value {
        write_items(self.iter())
    }
}

impl<T: WriteJson> WriteJson for Vec<T> {
    fn write_json(&self) -> Value {
        self.as_slice().write_json()
    }
}

impl<T: WriteJson> WriteJson for VecDeque<T> {
    fn write_json(&self) -> Value {
        write_items(self.iter())
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

/// Calls `each` with every entry of the object `value` (not generic: the walk of
/// serde_json's map is here once, not in every map type's reader).
#[inline(never)]
fn each_entry(value: &Value, each: &mut dyn FnMut(&str, &Value) -> Result<(), ReadError>) -> Result<(), ReadError> {
    let object = value.as_object().ok_or(ReadError::expected("an object"))?;
    for (key, value) in object {
        each(key, value)?;
    }
    Ok(())
}

impl<K: ReadKey + Ord, V: ReadJson> ReadJson for VecMap<K, V> {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let mut map = VecMap::new();
        each_entry(value, &mut |key, value| {
            map.insert(K::read_key(key)?, V::read_json(value)?);
            Ok(())
        })?;
        Ok(map)
    }
}

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
