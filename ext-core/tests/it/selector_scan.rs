//! The selector scanner behind the declared-surface test (issue 25, acceptance 4): finds
//! the CSS selectors a content script passes to the DOM, so `selector_surface` can hold
//! them against the declared surface (the site profiles and `sites::surface`).
//!
//! How it reads JavaScript: a small lexer (comments, strings, template literals, regular
//! expressions, identifiers, punctuation; no full parser) and these rules:
//! - Sinks: the DOM methods `querySelector`, `querySelectorAll`, `closest`, `matches`,
//!   `webkitMatchesSelector` (their first argument), and every local wrapper — a
//!   `const f = (a, css) => …` or `function f(a, css) {…}` that passes one of its own
//!   parameters to a sink (found to a fixpoint, so wrappers of wrappers count). The
//!   content scripts share one world: a wrapper one of them defines counts in all
//!   (`scan_sharing`).
//! - At a sink call the selector argument is a *literal* when it is a string literal, a
//!   template literal without `${}`, or a name bound in the same file by
//!   `const NAME = <string literal>` (reported at the call, naming the constant). A
//!   template literal with `${}` whose fixed text holds more than commas and spaces is a
//!   *pattern* (`button[data-action="${}"]`, every substitution written `${}`); one whose
//!   fixed text is only commas and spaces joins selectors made elsewhere (profile data)
//!   and is *dynamic*. An argument holding string literals inside a larger expression
//!   (`a ? 'x' : 'y'`) reports each of them. Anything else (`probe.css`, a parameter) is
//!   dynamic: selectors built from the site profile, which the profile declares.
//! - A call whose receiver is a name that, where the call is, is bound by
//!   `const|let|var NAME = <x>.attachShadow(` (the innermost binding in scope: blocks and
//!   parameters count, so another `root` in a nested function is the host page's) queries
//!   the extension's own closed shadow root (the HUD, the Queue button), not the host
//!   page: it is reported as `OwnUi` and needs no declaration. Every other receiver —
//!   `document`, a page element, a member such as `ctx.root` — is the host page.
//! - Besides the calls, a string literal anywhere that is unmistakably a selector (an
//!   attribute selector `[name…]`, `:has(`, `:not(`, `:is(`, `:where(`, `:nth-`) is
//!   reported as `shaped`, so a selector that reaches the DOM through an array or a
//!   variable is still seen. Stylesheet templates (holding `{`) are not selectors.
//!   Not seen: a bare tag name (`'button'`) that reaches a sink only through an array or a
//!   variable — nothing tells it from any other word; declare it when you write it.

use std::collections::{BTreeMap, BTreeSet};

/// A token with the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    Str(String),
    /// A template literal: its fixed parts, and whether it has `${}` substitutions.
    Template {
        parts: Vec<String>,
        substituted: bool,
    },
    Punct(String),
    Other,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

/// How a selector reached the DOM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A literal (or a constant bound to one) at a sink call on the host page.
    Literal,
    /// A template literal with substitutions written `${}`.
    Pattern,
    /// A selector-shaped string literal outside a sink call.
    Shaped,
    /// A sink call on the extension's own shadow root.
    OwnUi,
}

/// One selector the scanner found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Found {
    pub line: usize,
    pub css: String,
    pub kind: Kind,
    /// The call (`document.querySelector`, `queryAll`) or, for a constant, `NAME (line N)`.
    pub via: String,
}

const PUNCT3: &[&str] = &["===", "!==", "...", "**=", "<<=", ">>=", "&&=", "||=", "??="];
const PUNCT2: &[&str] =
    &["=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>", "**"];
const REGEX_AFTER_WORDS: &[&str] =
    &["return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "instanceof", "yield", "await"];

/// Splits JavaScript source into tokens. Errors name the line of an unterminated string,
/// template, comment or regular expression.
/// Returns the source's tokens and, apart, each template substitution's tokens (an
/// expression of its own; a substitution nested in one is listed too).
pub fn lex(source: &str) -> Result<(Vec<Token>, Vec<Vec<Token>>), String> {
    let chars: Vec<char> = source.chars().collect();
    let mut lexer = Lexer { chars: &chars, at: 0, line: 1, out: Vec::new(), substitutions: Vec::new() };
    lexer.run(None)?;
    Ok((lexer.out, lexer.substitutions))
}

struct Lexer<'a> {
    chars: &'a [char],
    at: usize,
    line: usize,
    out: Vec<Token>,
    substitutions: Vec<Vec<Token>>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn push(&mut self, tok: Tok, line: usize) {
        self.out.push(Token { tok, line });
    }

    fn regex_allowed(&self) -> bool {
        match self.out.last().map(|t| &t.tok) {
            None => true,
            Some(Tok::Punct(p)) => !matches!(p.as_str(), ")" | "]" | "}" | "++" | "--"),
            Some(Tok::Ident(word)) => REGEX_AFTER_WORDS.contains(&word.as_str()),
            Some(_) => false,
        }
    }

    /// Lexes until the end, or (inside a template's `${`) until its closing `}`.
    fn run(&mut self, until_brace: Option<usize>) -> Result<(), String> {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            let line = self.line;
            if c.is_whitespace() {
                self.bump();
            } else if c == '/' && self.peek(1) == Some('/') {
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else if c == '/' && self.peek(1) == Some('*') {
                self.at += 2;
                loop {
                    match self.bump() {
                        Some('*') if self.peek(0) == Some('/') => {
                            self.bump();
                            break;
                        }
                        Some(_) => {}
                        None => return Err(format!("line {line}: unterminated /* comment")),
                    }
                }
            } else if c == '\'' || c == '"' {
                self.bump();
                let text = self.string(c, line)?;
                self.push(Tok::Str(text), line);
            } else if c == '`' {
                self.bump();
                self.template(line)?;
            } else if c == '/' && self.regex_allowed() {
                self.bump();
                self.regex(line)?;
                self.push(Tok::Other, line);
            } else if c.is_alphabetic() || c == '_' || c == '$' {
                let mut word = String::new();
                while let Some(c) = self.peek(0).filter(|c| c.is_alphanumeric() || *c == '_' || *c == '$') {
                    word.push(c);
                    self.bump();
                }
                self.push(Tok::Ident(word), line);
            } else if c.is_ascii_digit() {
                while self.peek(0).is_some_and(|c| c.is_alphanumeric() || c == '.' || c == '_') {
                    self.bump();
                }
                self.push(Tok::Other, line);
            } else {
                if until_brace.is_some() {
                    if c == '{' {
                        depth += 1;
                    } else if c == '}' {
                        if depth == 0 {
                            self.bump();
                            return Ok(());
                        }
                        depth -= 1;
                    }
                }
                let rest: String = self.chars[self.at..(self.at + 3).min(self.chars.len())].iter().collect();
                let punct =
                    PUNCT3.iter().chain(PUNCT2).find(|p| rest.starts_with(**p)).map(|p| p.to_string()).unwrap_or_else(|| c.to_string());
                // `?.5` is a conditional and a number, not optional chaining.
                let punct = if punct == "?." && self.peek(2).is_some_and(|c| c.is_ascii_digit()) { "?".to_string() } else { punct };
                self.at += punct.chars().count();
                self.push(Tok::Punct(punct), line);
            }
        }
        match until_brace {
            Some(start) => Err(format!("line {start}: unterminated ${{ in a template literal")),
            None => Ok(()),
        }
    }

    fn escape(&mut self, line: usize) -> Result<char, String> {
        let c = self.bump().ok_or_else(|| format!("line {line}: unterminated escape"))?;
        Ok(match c {
            'n' => '\n',
            't' => '\t',
            other => other,
        })
    }

    fn string(&mut self, quote: char, line: usize) -> Result<String, String> {
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('\\') => text.push(self.escape(line)?),
                Some(c) if c == quote => return Ok(text),
                Some('\n') | None => return Err(format!("line {line}: unterminated string")),
                Some(c) => text.push(c),
            }
        }
    }

    fn template(&mut self, line: usize) -> Result<(), String> {
        let mut parts = vec![String::new()];
        let mut substituted = false;
        loop {
            match self.bump() {
                Some('\\') => {
                    let c = self.escape(line)?;
                    parts.last_mut().into_iter().for_each(|part| part.push(c));
                }
                Some('`') => break,
                Some('$') if self.peek(0) == Some('{') => {
                    self.bump();
                    substituted = true;
                    // The substitution is an expression, not fixed text: its tokens are
                    // kept apart, scanned as a source of their own.
                    let mark = self.out.len();
                    self.run(Some(self.line))?;
                    let substitution = self.out.split_off(mark);
                    self.substitutions.push(substitution);
                    parts.push(String::new());
                }
                Some(c) => parts.last_mut().into_iter().for_each(|part| part.push(c)),
                None => return Err(format!("line {line}: unterminated template literal")),
            }
        }
        self.push(Tok::Template { parts, substituted }, line);
        Ok(())
    }

    fn regex(&mut self, line: usize) -> Result<(), String> {
        let mut class = false;
        loop {
            match self.bump() {
                Some('\\') => {
                    self.bump();
                }
                Some('[') => class = true,
                Some(']') => class = false,
                Some('/') if !class => break,
                Some('\n') | None => return Err(format!("line {line}: unterminated regular expression")),
                Some(_) => {}
            }
        }
        while self.peek(0).is_some_and(|c| c.is_alphabetic()) {
            self.bump();
        }
        Ok(())
    }
}

/// The DOM methods whose first argument is a selector.
pub const DOM_SINKS: &[&str] = &["querySelector", "querySelectorAll", "closest", "matches", "webkitMatchesSelector"];

pub fn ident(tokens: &[Token], i: usize) -> Option<&str> {
    match tokens.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(name)) => Some(name),
        _ => None,
    }
}

pub fn punct(tokens: &[Token], i: usize, want: &str) -> bool {
    matches!(tokens.get(i).map(|t| &t.tok), Some(Tok::Punct(p)) if p == want)
}

pub fn is_member(tokens: &[Token], i: usize) -> bool {
    i > 0 && (punct(tokens, i - 1, ".") || punct(tokens, i - 1, "?."))
}

/// The index just past the bracket that closes the one opened at `open` (or the end).
pub fn close_of(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0i32;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        if let Tok::Punct(p) = &token.tok {
            match p.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
        }
    }
    tokens.len()
}

/// The arguments of a call whose `(` is at `open`: token ranges split at top-level commas.
pub fn arguments(tokens: &[Token], open: usize) -> Vec<std::ops::Range<usize>> {
    let end = close_of(tokens, open).saturating_sub(1);
    let mut args = Vec::new();
    let mut start = open + 1;
    let mut i = open + 1;
    while i < end {
        if matches!(&tokens[i].tok, Tok::Punct(p) if matches!(p.as_str(), "(" | "[" | "{")) {
            i = close_of(tokens, i);
            continue;
        }
        if punct(tokens, i, ",") {
            args.push(start..i);
            start = i + 1;
        }
        i += 1;
    }
    if start < end {
        args.push(start..end);
    }
    args
}

/// Parameter names of a parameter list `( … )` at `open` (plain names only).
fn parameters(tokens: &[Token], open: usize) -> Vec<String> {
    arguments(tokens, open).into_iter().map(|range| ident(tokens, range.start).unwrap_or("").to_string()).collect()
}

/// Local wrappers: name → index of the parameter that reaches a sink as the selector.
fn wrappers(tokens: &[Token], shared: &BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    // Every function definition: (name, parameter names, body range).
    let mut functions = Vec::new();
    for i in 0..tokens.len() {
        let (name, open) =
            if matches!(ident(tokens, i), Some("const" | "let" | "var")) && punct(tokens, i + 2, "=") && punct(tokens, i + 3, "(") {
                (ident(tokens, i + 1), i + 3)
            } else if ident(tokens, i) == Some("function") && punct(tokens, i + 2, "(") {
                (ident(tokens, i + 1), i + 2)
            } else {
                continue;
            };
        let Some(name) = name else { continue };
        let after = close_of(tokens, open);
        let body_start = if punct(tokens, after, "=>") { after + 1 } else { after };
        let body_end = if punct(tokens, body_start, "{") || punct(tokens, body_start, "(") {
            close_of(tokens, body_start)
        } else {
            (body_start..tokens.len()).find(|&j| punct(tokens, j, ";")).unwrap_or(tokens.len())
        };
        functions.push((name.to_string(), parameters(tokens, open), body_start..body_end));
    }
    let mut found: BTreeMap<String, usize> = shared.clone();
    loop {
        let before = found.len();
        for (name, params, body) in &functions {
            if found.contains_key(name) {
                continue;
            }
            for call in sink_calls(tokens, &found, body.clone()) {
                if let Some(param) = ident(tokens, call.arg.start).filter(|_| call.arg.len() == 1) {
                    if let Some(index) = params.iter().position(|p| p == param) {
                        found.insert(name.clone(), index);
                        break;
                    }
                }
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

struct SinkCall {
    /// `receiver.method`, `method` or the wrapper's name.
    via: String,
    /// The receiver's name when it is a plain name (`root.querySelector`).
    receiver: Option<String>,
    arg: std::ops::Range<usize>,
    line: usize,
    /// The method's or wrapper's token.
    at: usize,
}

fn sink_calls(tokens: &[Token], wrappers: &BTreeMap<String, usize>, within: std::ops::Range<usize>) -> Vec<SinkCall> {
    let mut calls = Vec::new();
    for i in within.clone() {
        let Some(name) = ident(tokens, i) else { continue };
        // `f(` or an optional call `f?.(`.
        let open = if punct(tokens, i + 1, "?.") { i + 2 } else { i + 1 };
        if !punct(tokens, open, "(") || open >= within.end {
            continue;
        }
        let (index, via, receiver) = if is_member(tokens, i) && DOM_SINKS.contains(&name) {
            let receiver = (i >= 2).then(|| ident(tokens, i - 2)).flatten().filter(|_| !is_member(tokens, i - 2));
            let via = match receiver {
                Some(receiver) => format!("{receiver}.{name}"),
                None => format!(".{name}"),
            };
            (0, via, receiver.map(str::to_string))
        } else if !(is_member(tokens, i) || i > 0 && matches!(ident(tokens, i - 1), Some("const" | "let" | "var" | "function"))) {
            match wrappers.get(name) {
                Some(&index) => (index, name.to_string(), None),
                None => continue,
            }
        } else {
            continue;
        };
        if let Some(arg) = arguments(tokens, open).into_iter().nth(index) {
            calls.push(SinkCall { via, receiver, arg, line: tokens[i].line, at: i });
        }
    }
    calls
}

/// `const NAME = <string literal>` bindings: name → (literal, line).
fn string_constants(tokens: &[Token]) -> BTreeMap<String, Vec<(String, usize)>> {
    let mut constants: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    for i in 0..tokens.len() {
        if ident(tokens, i) != Some("const") || !punct(tokens, i + 2, "=") {
            continue;
        }
        let Some(name) = ident(tokens, i + 1) else { continue };
        let terminated = punct(tokens, i + 4, ";") || punct(tokens, i + 4, ",") || tokens.len() == i + 4;
        let literal = match tokens.get(i + 3).map(|t| &t.tok) {
            Some(Tok::Str(text)) => Some(text.clone()),
            Some(Tok::Template { parts, substituted: false }) => Some(parts.concat()),
            _ => None,
        };
        if let (Some(literal), true) = (literal, terminated) {
            constants.entry(name.to_string()).or_default().push((literal, tokens[i].line));
        }
    }
    constants
}

/// For each token, the range of the innermost `{ … }` holding it (the whole file outside
/// every brace).
fn blocks(tokens: &[Token]) -> Vec<std::ops::Range<usize>> {
    // Each `{`'s end (just past its `}`), in one pass.
    let mut ends = vec![tokens.len(); tokens.len()];
    let mut open: Vec<usize> = Vec::new();
    for i in 0..tokens.len() {
        if punct(tokens, i, "{") {
            open.push(i);
        } else if punct(tokens, i, "}") {
            if let Some(start) = open.pop() {
                ends[start] = i + 1;
            }
        }
    }
    open.clear();
    let mut inner = Vec::with_capacity(tokens.len());
    for i in 0..tokens.len() {
        inner.push(open.last().map_or(0..tokens.len(), |&start| start..ends[start]));
        if punct(tokens, i, "{") {
            open.push(i);
        } else if punct(tokens, i, "}") {
            open.pop();
        }
    }
    inner
}

/// Where each binding of a name holds: `const|let|var NAME` (its block) and parameters
/// named so (the function's body); `true` for a binding `= <x>.attachShadow(`.
fn bindings(tokens: &[Token], blocks: &[std::ops::Range<usize>], name: &str) -> Vec<(std::ops::Range<usize>, bool)> {
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        if ident(tokens, i) != Some(name) || is_member(tokens, i) {
            continue;
        }
        if i > 0 && matches!(ident(tokens, i - 1), Some("const" | "let" | "var")) {
            let shadow = punct(tokens, i + 1, "=") && ident(tokens, i + 4) == Some("attachShadow");
            out.push((blocks[i].clone(), shadow));
            continue;
        }
        // A parameter: inside a `( … )` that is followed by `=>` or preceded by `function`.
        let mut depth = 0i32;
        let open = (0..i).rev().find(|&j| {
            match &tokens[j].tok {
                Tok::Punct(p) if matches!(p.as_str(), ")" | "]" | "}") => depth += 1,
                Tok::Punct(p) if matches!(p.as_str(), "(" | "[" | "{") => {
                    if depth == 0 {
                        return true;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            false
        });
        let Some(open) = open.filter(|&open| punct(tokens, open, "(")) else { continue };
        let close = close_of(tokens, open);
        let function =
            (open >= 1 && ident(tokens, open - 1) == Some("function")) || (open >= 2 && ident(tokens, open - 2) == Some("function"));
        if punct(tokens, close, "=>") || function {
            let body = if punct(tokens, close, "=>") { close + 1 } else { close };
            let end = if punct(tokens, body, "{") { close_of(tokens, body) } else { blocks[open].end };
            out.push((open..end, false));
        }
    }
    out
}

/// Whether the receiver `name` of the call at `at` is, there, a closed shadow root this
/// file attached (`= <x>.attachShadow(`): the innermost binding in scope decides.
fn own_shadow_root(tokens: &[Token], blocks: &[std::ops::Range<usize>], name: &str, at: usize) -> bool {
    bindings(tokens, blocks, name)
        .into_iter()
        .filter(|(scope, _)| scope.contains(&at))
        .max_by_key(|(scope, _)| scope.start)
        .is_some_and(|(_, shadow)| shadow)
}

/// Whether a string is unmistakably a CSS selector (see the module comment).
pub fn selector_shaped(text: &str) -> bool {
    if text.contains('{') || text.contains('\n') {
        return false;
    }
    let chars: Vec<char> = text.chars().collect();
    let attribute = chars.windows(2).enumerate().any(|(i, pair)| {
        pair[0] == '['
            && (pair[1].is_ascii_alphabetic() || pair[1] == '_')
            && chars[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
                .count()
                .checked_add(i + 1)
                .and_then(|end| chars.get(end))
                .is_some_and(|c| matches!(c, ']' | '=' | '^' | '$' | '*' | '~' | '|'))
    });
    attribute || [":has(", ":not(", ":is(", ":where(", ":nth-"].iter().any(|p| text.contains(p))
}

fn fixed_text(tok: &Tok) -> Option<String> {
    match tok {
        Tok::Str(text) => Some(text.clone()),
        Tok::Template { parts, substituted: false } => Some(parts.concat()),
        _ => None,
    }
}

/// Every selector one content script's source passes to the DOM (see the module comment).
pub fn scan(source: &str) -> Result<Vec<Found>, String> {
    scan_sharing(source, &BTreeMap::new())
}

/// The wrappers `source` defines (name → the index of the parameter passed to a sink).
pub fn wrappers_of(source: &str) -> Result<BTreeMap<String, usize>, String> {
    Ok(wrappers(&lex(source)?.0, &BTreeMap::new()))
}

/// `scan` with the wrappers other files of the same world define (the content scripts share
/// one isolated world and pass their helpers to each other: see `wrappers_of`).
pub fn scan_sharing(source: &str, shared: &BTreeMap<String, usize>) -> Result<Vec<Found>, String> {
    let (tokens, substitutions) = lex(source)?;
    let wrappers = wrappers(&tokens, shared);
    let constants = string_constants(&tokens);
    let mut found = BTreeSet::new();
    for stream in std::iter::once(&tokens).chain(&substitutions) {
        scan_stream(stream, &wrappers, &constants, &mut found);
    }
    Ok(found.into_iter().collect())
}

/// The sink calls and selector-shaped literals of one token stream (the source, or a
/// template substitution: wrappers and constants are the source's).
fn scan_stream(
    tokens: &[Token],
    wrappers: &BTreeMap<String, usize>,
    constants: &BTreeMap<String, Vec<(String, usize)>>,
    found: &mut BTreeSet<Found>,
) {
    let blocks = blocks(tokens);
    let mut at_calls = BTreeSet::new();
    for call in sink_calls(tokens, wrappers, 0..tokens.len()) {
        let own = call.receiver.as_ref().is_some_and(|r| own_shadow_root(tokens, &blocks, r, call.at));
        let kind = if own { Kind::OwnUi } else { Kind::Literal };
        let arg = &tokens[call.arg.clone()];
        let mut report = |css: String, kind: Kind, via: String| {
            found.insert(Found { line: call.line, css, kind, via });
        };
        match arg {
            [Token { tok: Tok::Ident(name), .. }] => {
                if let Some(bindings) = constants.get(name) {
                    for (css, line) in bindings {
                        report(css.clone(), kind, format!("{} ({name}, line {line})", call.via));
                    }
                }
            }
            [Token { tok: Tok::Template { parts, substituted: true }, .. }] => {
                if parts.iter().any(|part| part.chars().any(|c| c != ',' && !c.is_whitespace())) {
                    report(parts.join("${}"), if own { Kind::OwnUi } else { Kind::Pattern }, call.via.clone());
                }
            }
            _ => {
                for token in arg {
                    if let Some(css) = fixed_text(&token.tok) {
                        report(css, kind, call.via.clone());
                    }
                }
            }
        }
        for i in call.arg.clone() {
            at_calls.insert(i);
        }
    }
    let constant_lines: BTreeSet<usize> = constants.values().flatten().map(|(_, line)| *line).collect();
    for (i, token) in tokens.iter().enumerate() {
        if at_calls.contains(&i) {
            continue;
        }
        if let Some(text) = fixed_text(&token.tok).filter(|text| selector_shaped(text)) {
            // A constant used at a call is reported there; one never used is reported here.
            let used = constant_lines.contains(&token.line) && found.iter().any(|f| f.css == text);
            if !used {
                found.insert(Found { line: token.line, css: text, kind: Kind::Shaped, via: "string literal".into() });
            }
        }
    }
}
