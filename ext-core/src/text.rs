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

/// The byte offset of the last `needle` in `text` (`Some(text.len())` for an empty needle).
pub fn rfind_str(text: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return Some(text.len());
    }
    text.as_bytes().windows(needle.len()).rposition(|window| window == needle.as_bytes())
}

/// True when `text` contains `needle`.
pub fn contains_str(text: &str, needle: &str) -> bool {
    find_str(text, needle).is_some()
}

/// The number of characters of `text`, as `text.chars().count()` says: the bytes that do
/// not continue a character. (No smaller than std's counter any more, which `Formatter::pad`
/// brings into the wasm anyway: measured equal, docs/BENCH-LOG.md wasmsize30.)
pub fn char_count(text: &str) -> usize {
    text.bytes().filter(|byte| byte & 0xC0 != 0x80).count()
}

/// The byte offset of the character `n` of `text` (its length when it has `n` characters
/// or fewer): where `text.chars().skip(n)` starts (as small as `char_indices().nth(n)`).
pub fn char_offset(text: &str, n: usize) -> usize {
    for (seen, (at, _)) in text.char_indices().enumerate() {
        if seen == n {
            return at;
        }
    }
    text.len()
}

/// The first `n` characters of `text` (`text.chars().take(n)`).
pub fn first_chars(text: &str, n: usize) -> &str {
    text.get(..char_offset(text, n)).unwrap_or(text)
}

/// `text` from its character `n` on (`text.chars().skip(n)`).
pub fn chars_from(text: &str, n: usize) -> &str {
    text.get(char_offset(text, n)..).unwrap_or("")
}

/// `parts` one after another (what `[a, b].concat()` gives, without std's generic join).
pub fn concat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

/// `text` with every whitespace run (newlines included) turned into one space and none at
/// either end: `text.split_whitespace().collect::<Vec<_>>().join(" ")`.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
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
            prop_assert_eq!(rfind_str(&text, &needle), text.rfind(needle.as_str()));
            prop_assert_eq!(contains_str(&text, &needle), text.contains(needle.as_str()));
        }

        /// `char_count`, `first_chars`, `chars_from`, `concat` and `one_line` give what std's `chars().count()`,
        /// `concat()` and `split_whitespace` + `join(" ")` give.
        #[test]
        fn std_helpers_agree(a in "[a中 \\n\\t😀]{0,12}", b in "[b\\u{3000} ]{0,6}") {
            prop_assert_eq!(char_count(&a), a.chars().count());
            for n in 0..14 {
                prop_assert_eq!(first_chars(&a, n), a.chars().take(n).collect::<String>());
                prop_assert_eq!(chars_from(&a, n), a.chars().skip(n).collect::<String>());
            }
            prop_assert_eq!(concat(&[&a, "/", &b]), [a.as_str(), "/", b.as_str()].concat());
            prop_assert_eq!(one_line(&a), a.split_whitespace().collect::<Vec<_>>().join(" "));
            prop_assert_eq!(one_line(&b), b.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
}
