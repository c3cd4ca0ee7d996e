//! Byte scans of JSON written inside prose (a model's reply): where its strings are, so a
//! brace inside one does not count. Used by the chat judge's verdict finder
//! (`providers::chat`) and the JSON bridge's call detection (`bridge::machine`).

/// The state of a byte scan relative to JSON strings (with `\` escapes).
#[derive(Debug, Default)]
pub struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Takes `byte` while inside a string: true when it belongs to the string (its closing
    /// quote included), so the scan skips it; false outside any string.
    pub fn skip(&mut self, byte: u8) -> bool {
        if !self.inside {
            return false;
        }
        match (self.escaped, byte) {
            (true, _) => self.escaped = false,
            (false, b'\\') => self.escaped = true,
            (false, b'"') => self.inside = false,
            _ => {}
        }
        true
    }

    /// A `"` the scan took as a string's start.
    pub fn open(&mut self) {
        self.inside = true;
    }
}

#[cfg(test)]
mod tests {
    use super::Strings;

    #[test]
    fn braces_and_escaped_quotes_inside_a_string_are_skipped() {
        let text = br#"{"a":"x\"}{","b":1}"#;
        let mut strings = Strings::default();
        let counted: String = text
            .iter()
            .filter(|&&b| {
                if strings.skip(b) {
                    return false;
                }
                if b == b'"' {
                    strings.open();
                    return false;
                }
                true
            })
            .map(|&b| b as char)
            .collect();
        assert_eq!(counted, "{:,:1}");
    }
}
