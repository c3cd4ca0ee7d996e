//! Small ordered maps and sets backed by a sorted `Vec`.
//!
//! The machines keep a few dozen entries per map at most (scopes, tabs, panes, calls in
//! flight). A `BTreeMap` costs several kilobytes of wasm per key/value type (its node code
//! is instantiated for each); a sorted `Vec` with binary search costs a few hundred bytes
//! and is as fast at this size. [`VecMap`] and [`VecSet`] keep `BTreeMap`'s and
//! `BTreeSet`'s observable behaviour:
//!
//! - iteration is in ascending key order;
//! - serde writes a map (a sequence for the set) in that order, so persisted JSON is
//!   unchanged; `crate::json_read` reads a map in any order, a repeated key keeping its
//!   last value;
//! - `Debug` prints like the std collections.

use std::borrow::Borrow;
use std::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// An ordered map: entries sorted by key, unique keys.
#[derive(Clone, PartialEq, Eq)]
pub struct VecMap<K, V> {
    /// The entries, sorted by key, no key twice.
    entries: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self { entries: Vec::new() }
    }
}

impl<K: Ord, V> VecMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where `key` is (`Ok`) or would be inserted (`Err`).
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// The value of `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let index = self.find(key).ok()?;
        self.entries.get(index).map(|(_, v)| v)
    }

    /// The value of `key`, mutable.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let index = self.find(key).ok()?;
        self.entries.get_mut(index).map(|(_, v)| v)
    }

    /// Whether `key` has a value.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// Sets the value of `key`; the value it replaced, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(index) => self.entries.get_mut(index).map(|(_, v)| std::mem::replace(v, value)),
            Err(index) => {
                self.entries.insert(index, (key, value));
                None
            }
        }
    }

    /// Removes `key`; its value, if it had one.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let index = self.find(key).ok()?;
        Some(self.entries.remove(index).1)
    }

    /// The entry of `key`, for in-place insertion.
    pub fn entry(&mut self, key: K) -> Entry<'_, K, V> {
        let found = self.find(&key);
        Entry { map: self, key, found }
    }
}

impl<K, V> VecMap<K, V> {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Keeps only the entries for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + ExactSizeIterator + Clone {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The entries in key order, values mutable.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (&K, &mut V)> + ExactSizeIterator {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator + Clone {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + Clone {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in key order, mutable.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// The values in key order, by value.
    pub fn into_values(self) -> impl DoubleEndedIterator<Item = V> + ExactSizeIterator {
        self.entries.into_iter().map(|(_, v)| v)
    }
}

/// A key's place in a [`VecMap`], from [`VecMap::entry`].
pub struct Entry<'a, K, V> {
    /// The map.
    map: &'a mut VecMap<K, V>,
    /// The key.
    key: K,
    /// Its index (`Ok`) or insertion point (`Err`).
    found: Result<usize, usize>,
}

impl<'a, K, V> Entry<'a, K, V> {
    /// The value, inserting `make()` first if the key had none.
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        let index = match self.found {
            Ok(index) => index,
            Err(index) => {
                self.map.entries.insert(index, (self.key, make()));
                index
            }
        };
        // `index` is in bounds: it was found, or an entry was just inserted there.
        &mut self.map.entries[index].1
    }

    /// The value, inserting `value` first if the key had none.
    pub fn or_insert(self, value: V) -> &'a mut V {
        self.or_insert_with(|| value)
    }

    /// The value, inserting `V::default()` first if the key had none.
    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for VecMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = Self::new();
        map.extend(iter);
        map
    }
}

impl<K: Ord, V> Extend<(K, V)> for VecMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K, V> IntoIterator for VecMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl<'a, K, V> IntoIterator for &'a mut VecMap<K, V> {
    type Item = (&'a K, &'a mut V);
    type IntoIter = std::iter::Map<std::slice::IterMut<'a, (K, V)>, fn(&'a mut (K, V)) -> (&'a K, &'a mut V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for VecMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.entries.iter().map(|(k, v)| (k, v))).finish()
    }
}

impl<K: Serialize, V: Serialize> Serialize for VecMap<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// An ordered set: values sorted, no value twice.
#[derive(Clone, PartialEq, Eq)]
pub struct VecSet<T> {
    /// The values, sorted, no value twice.
    items: Vec<T>,
}

impl<T> Default for VecSet<T> {
    fn default() -> Self {
        Self { items: Vec::new() }
    }
}

impl<T: Ord> VecSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `value`; whether it was new.
    pub fn insert(&mut self, value: T) -> bool {
        match self.items.binary_search(&value) {
            Ok(_) => false,
            Err(index) => {
                self.items.insert(index, value);
                true
            }
        }
    }

    /// Whether `value` is in the set.
    pub fn contains<Q>(&self, value: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.items.binary_search_by(|t| t.borrow().cmp(value)).is_ok()
    }

    /// Removes `value`; whether it was in the set.
    pub fn remove<Q>(&mut self, value: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.items.binary_search_by(|t| t.borrow().cmp(value)) {
            Ok(index) => {
                self.items.remove(index);
                true
            }
            Err(_) => false,
        }
    }
}

impl<T> VecSet<T> {
    /// The number of values.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Keeps only the values for which `keep` is true.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.retain(keep);
    }

    /// The values in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }
}

impl<T: Ord> FromIterator<T> for VecSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        // Inserted one by one (binary search) rather than sorted: the sets are small, and
        // the standard sort's code is 4 KB of wasm.
        let mut set = Self { items: Vec::new() };
        set.extend(iter);
        set
    }
}

impl<T: Ord> Extend<T> for VecSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for value in iter {
            self.insert(value);
        }
    }
}

impl<T> IntoIterator for VecSet<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a VecSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T: fmt::Debug> fmt::Debug for VecSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(&self.items).finish()
    }
}

impl<T: Serialize> Serialize for VecSet<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.items.len()))?;
        for value in &self.items {
            seq.serialize_element(value)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn map_behaves_like_btreemap() {
        let ops: &[(u8, i32)] = &[(5, 1), (3, 2), (5, 3), (9, 4), (1, 5), (3, 6)];
        let mut ours = VecMap::new();
        let mut std = BTreeMap::new();
        for &(k, v) in ops {
            assert_eq!(ours.insert(k, v), std.insert(k, v));
            assert!(ours.iter().eq(std.iter()));
        }
        assert_eq!(ours.remove(&3), std.remove(&3));
        assert_eq!(ours.remove(&3), std.remove(&3));
        *ours.entry(7).or_default() += 1;
        *std.entry(7).or_default() += 1;
        *ours.entry(7).or_default() += 1;
        *std.entry(7).or_default() += 1;
        ours.retain(|k, _| *k != 9);
        std.retain(|k, _| *k != 9);
        assert!(ours.iter().eq(std.iter()));
        assert_eq!(format!("{ours:?}"), format!("{std:?}"));
    }

    #[test]
    fn set_behaves_like_btreeset() {
        let ours: VecSet<u8> = [4, 1, 4, 2].into_iter().collect();
        let std: BTreeSet<u8> = [4, 1, 4, 2].into_iter().collect();
        assert!(ours.iter().eq(std.iter()));
        assert_eq!(format!("{ours:?}"), format!("{std:?}"));
    }
}
