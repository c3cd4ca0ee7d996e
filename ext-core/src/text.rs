//! Substring search without std's `&str` patterns. `str::contains("…")`, `find("…")`,
//! `replace("…", …)` and the like instantiate std's two-way substring searcher, and with it
//! the slicing-panic message and `char`/`str` `Debug` formatting: about 5 KB of the wasm's
//! gzip for three `contains` calls (issue 8's budget). These compare bytes instead, which is
//! as fast for the short needles used here and cannot panic.
//!
//! Invariant (`tests/it/shape.rs`): no other ext-core or ext-shell source calls a `&str`
//! pattern method outside its tests.

/// The byte offset of the first `needle` in `text` (`Some(0)` for an empty needle).
pub fn find_str(text: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    text.as_bytes().windows(needle.len()).position(|window| window == needle.as_bytes())
}

/// True when `text` contains `needle`.
pub fn contains_str(text: &str, needle: &str) -> bool {
    find_str(text, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The same answers as std's searcher, on ASCII and multi-byte text.
        #[test]
        fn find_str_agrees_with_std(text in "[ab中 ]{0,16}", needle in "[ab中]{0,3}") {
            prop_assert_eq!(find_str(&text, &needle), text.find(needle.as_str()));
            prop_assert_eq!(contains_str(&text, &needle), text.contains(needle.as_str()));
        }
    }
}
