//! `herdr_fs_patch`: a unified diff (`--- a/x` / `+++ b/x` / `@@ -l,n +l,n @@`, as `git diff`
//! writes it) or the `*** Begin Patch` format (`*** Update File:` / `*** Add File:` /
//! `*** Delete File:` / `*** Move to:`), parsed ([`parse`]), applied to texts in memory
//! ([`apply_hunks`]) and written all-or-nothing by the tool layer.
//!
//! Invariants:
//! - A hunk applies only where its old side (context and removed lines) matches the file
//!   exactly; a unified hunk prefers its stated line, then the nearest match after the
//!   previous hunk. A hunk that matches nowhere fails the whole patch with the file and the
//!   hunk's number; nothing is written (the dry run always comes first).
//! - [`reverse`] swaps the two sides of every hunk, so applying a patch and then its
//!   reverse gives the original text (a property test proves it).

use std::fmt;

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// Unchanged (on both sides), with its line ending.
    Context(String),
    /// Only on the old side.
    Remove(String),
    /// Only on the new side.
    Add(String),
}

/// One hunk: where the unified header says it starts (1-based, old side) and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The unified header's old start line (`None` for `*** Begin Patch` hunks): the first
    /// old line, or for a hunk without old lines the line after which it inserts.
    pub old_start: Option<usize>,
    /// The unified header's new start line (same conventions), `None` when not known.
    pub new_start: Option<usize>,
    /// Its lines.
    pub lines: Vec<HunkLine>,
}

/// What a patch does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Creates the file with this text (it must not exist).
    Add(String),
    /// Deletes the file (it must exist; with a unified diff, its text must match).
    Delete(Option<Vec<Hunk>>),
    /// Changes the file by hunks, and optionally moves it.
    Update {
        /// The hunks, in file order.
        hunks: Vec<Hunk>,
        /// The new path, when the patch moves the file.
        move_to: Option<String>,
    },
}

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// The path as the patch names it (relative to the patch's root, or absolute).
    pub path: String,
    /// What happens to it.
    pub change: FileChange,
}

/// Why a patch was not applied (the message says where and what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError(pub String);

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(message: String) -> Result<T, PatchError> {
    Err(PatchError(message))
}

/// The lines of `text`, each with its ending (the last may have none).
fn lines_of(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A diff path without its `a/` / `b/` prefix and its trailing timestamp.
fn diff_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end_matches(['\r', '\n']);
    if raw == "/dev/null" {
        return None;
    }
    let stripped = raw.strip_prefix("a/").or_else(|| raw.strip_prefix("b/")).unwrap_or(raw);
    Some(stripped.to_owned())
}

/// `@@ -l[,n] +l[,n] @@…` → (old start, old count, new start, new count).
fn hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_count) = range(old)?;
    let (new_start, new_count) = range(new)?;
    Some((old_start, old_count, new_start, new_count))
}

/// Parses a patch in either format (a text starting with `*** Begin Patch`, after blank
/// lines, is the second one).
pub fn parse(text: &str) -> Result<Vec<FilePatch>, PatchError> {
    let files = if text.trim_start().starts_with("*** Begin Patch") { parse_begin_patch(text)? } else { parse_unified(text)? };
    if files.is_empty() {
        return err("the patch changes no file: send a unified diff (--- a/path, +++ b/path, @@ hunks, as `git diff` writes it) or a *** Begin Patch … *** End Patch block".to_owned());
    }
    let mut seen = std::collections::BTreeSet::new();
    for file in &files {
        if !seen.insert(file.path.as_str()) {
            return err(format!("the patch changes {} twice; merge its hunks into one file section", file.path));
        }
    }
    Ok(files)
}

fn parse_unified(text: &str) -> Result<Vec<FilePatch>, PatchError> {
    let lines = lines_of(text);
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(old_raw) = lines[i].strip_prefix("--- ") else {
            i += 1;
            continue;
        };
        let Some(new_raw) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")) else {
            return err(format!("line {}: `--- {}` is not followed by a `+++ ` line", i + 1, old_raw.trim_end()));
        };
        let (old_path, new_path) = (diff_path(old_raw), diff_path(new_raw));
        i += 2;
        let mut hunks = Vec::new();
        while let Some(header) = lines.get(i).filter(|l| l.starts_with("@@ ")) {
            let Some((old_start, mut old_left, new_start, mut new_left)) = hunk_header(header) else {
                return err(format!("line {}: `{}` is not a hunk header (@@ -start,count +start,count @@)", i + 1, header.trim_end()));
            };
            let header_line = i + 1;
            i += 1;
            let mut hunk_lines: Vec<HunkLine> = Vec::new();
            while old_left > 0 || new_left > 0 {
                let Some(line) = lines.get(i) else {
                    return err(format!("line {header_line}: the hunk ends early; its header counts more lines than follow"));
                };
                let (kind, body) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
                match kind {
                    " " | "" if old_left > 0 && new_left > 0 => {
                        old_left -= 1;
                        new_left -= 1;
                        hunk_lines.push(HunkLine::Context(if kind.is_empty() { "\n".to_owned() } else { body.to_owned() }));
                    }
                    "\n" if old_left > 0 && new_left > 0 => {
                        // An empty context line whose leading blank was trimmed by a mailer.
                        old_left -= 1;
                        new_left -= 1;
                        hunk_lines.push(HunkLine::Context("\n".to_owned()));
                    }
                    "-" if old_left > 0 => {
                        old_left -= 1;
                        hunk_lines.push(HunkLine::Remove(body.to_owned()));
                    }
                    "+" if new_left > 0 => {
                        new_left -= 1;
                        hunk_lines.push(HunkLine::Add(body.to_owned()));
                    }
                    _ => return err(format!("line {}: `{}` does not fit the hunk that starts at line {header_line} (its counts say {old_left} old and {new_left} new lines remain)", i + 1, line.trim_end())),
                }
                i += 1;
                no_newline_marker(&lines, &mut i, &mut hunk_lines);
            }
            no_newline_marker(&lines, &mut i, &mut hunk_lines);
            hunks.push(Hunk { old_start: Some(old_start), new_start: Some(new_start), lines: hunk_lines });
        }
        let change = match (&old_path, &new_path) {
            (None, Some(_)) => FileChange::Add(
                hunks
                    .iter()
                    .flat_map(|h| h.lines.iter())
                    .filter_map(|l| match l {
                        HunkLine::Add(s) => Some(s.as_str()),
                        _ => None,
                    })
                    .collect(),
            ),
            (Some(_), None) => FileChange::Delete(Some(hunks)),
            (Some(old), Some(new)) => {
                if hunks.is_empty() {
                    return err(format!("the diff of {old} has no hunk; send its @@ hunks"));
                }
                FileChange::Update { hunks, move_to: (old != new).then(|| new.clone()) }
            }
            (None, None) => return err("a file section names /dev/null on both sides".to_owned()),
        };
        let path = old_path.or(new_path).unwrap_or_default();
        files.push(FilePatch { path, change });
    }
    Ok(files)
}

/// A `\ No newline at end of file` line after a hunk line takes that line's ending away.
fn no_newline_marker(lines: &[&str], i: &mut usize, hunk_lines: &mut [HunkLine]) {
    if lines.get(*i).is_some_and(|l| l.starts_with("\\ ")) {
        if let Some(last) = hunk_lines.last_mut() {
            let (HunkLine::Context(s) | HunkLine::Remove(s) | HunkLine::Add(s)) = last;
            if s.ends_with('\n') {
                s.pop();
                if s.ends_with('\r') {
                    s.pop();
                }
            }
        }
        *i += 1;
    }
}

fn parse_begin_patch(text: &str) -> Result<Vec<FilePatch>, PatchError> {
    let lines = lines_of(text.trim_start());
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 1;
    let mut ended = false;
    while i < lines.len() {
        let line = lines[i].trim_end_matches(['\n', '\r']);
        if line == "*** End Patch" {
            ended = true;
            break;
        }
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            i += 1;
            let mut content = String::new();
            while let Some(body) = lines.get(i).and_then(|l| l.strip_prefix('+')) {
                content.push_str(body);
                i += 1;
            }
            files.push(FilePatch { path: path.trim().to_owned(), change: FileChange::Add(content) });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            i += 1;
            files.push(FilePatch { path: path.trim().to_owned(), change: FileChange::Delete(None) });
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            i += 1;
            let mut move_to = None;
            if let Some(to) = lines.get(i).and_then(|l| l.trim_end_matches(['\n', '\r']).strip_prefix("*** Move to: ")) {
                move_to = Some(to.trim().to_owned());
                i += 1;
            }
            let mut hunks: Vec<Hunk> = Vec::new();
            let mut current: Vec<HunkLine> = Vec::new();
            while let Some(l) = lines.get(i) {
                let bare = l.trim_end_matches(['\n', '\r']);
                if bare == "*** End of File" {
                    i += 1;
                    continue;
                }
                if bare.starts_with("*** ") {
                    break;
                }
                if bare.starts_with("@@") {
                    if !current.is_empty() {
                        hunks.push(Hunk { old_start: None, new_start: None, lines: std::mem::take(&mut current) });
                    }
                    i += 1;
                    continue;
                }
                let (kind, body) = l.split_at(l.chars().next().map_or(0, char::len_utf8));
                let body = body.to_owned();
                match kind {
                    " " => current.push(HunkLine::Context(body)),
                    "-" => current.push(HunkLine::Remove(body)),
                    "+" => current.push(HunkLine::Add(body)),
                    "\n" => current.push(HunkLine::Context("\n".to_owned())),
                    _ => {
                        return err(format!(
                            "line {}: `{bare}` in the section of {} starts with neither ' ', '-', '+' nor @@",
                            i + 1,
                            path.trim()
                        ))
                    }
                }
                i += 1;
            }
            if !current.is_empty() {
                hunks.push(Hunk { old_start: None, new_start: None, lines: current });
            }
            if hunks.is_empty() && move_to.is_none() {
                return err(format!("*** Update File: {} has no change lines", path.trim()));
            }
            files.push(FilePatch { path: path.trim().to_owned(), change: FileChange::Update { hunks, move_to } });
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            return err(format!("line {}: `{line}` is not a *** Add File / *** Update File / *** Delete File / *** End Patch line", i + 1));
        }
    }
    if !ended {
        return err("the patch has no *** End Patch line; send the whole block".to_owned());
    }
    Ok(files)
}

/// Whether the file line `have` matches the hunk line `want`: exactly, or — for the file's
/// last line without an ending — up to that missing ending (the `*** Begin Patch` format
/// cannot say "no newline at end of file").
fn line_matches(have: &str, want: &str, last_of_file: bool) -> bool {
    have == want || (last_of_file && !have.ends_with('\n') && want.strip_suffix('\n') == Some(have))
}

/// Applies `hunks` to `text`; the error names the hunk (1-based) that does not match.
pub fn apply_hunks(text: &str, hunks: &[Hunk]) -> Result<String, PatchError> {
    let file: Vec<&str> = lines_of(text);
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0usize;
    for (n, hunk) in hunks.iter().enumerate() {
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect();
        let fits = |at: usize| -> bool {
            at + old.len() <= file.len()
                && old.iter().enumerate().all(|(k, want)| line_matches(file[at + k], want, at + k + 1 == file.len()))
        };
        let hint = hunk.old_start.map(|s| s.saturating_sub(1)).unwrap_or(cursor).max(cursor);
        let at = if old.is_empty() {
            // A pure insertion: at its stated line (or the end for the other format).
            Some(hunk.old_start.map_or(file.len(), |s| if s == 0 { 0 } else { s }).clamp(cursor, file.len()))
        } else {
            let forward = (hint..file.len()).find(|&at| fits(at));
            let backward = (cursor..hint.min(file.len())).rev().find(|&at| fits(at));
            match (forward, backward) {
                (Some(f), Some(b)) => Some(if f - hint <= hint - b { f } else { b }),
                (f, b) => f.or(b),
            }
        };
        let Some(at) = at else {
            let first = old.first().map(|l| l.trim_end()).unwrap_or("");
            return err(format!(
                "hunk {} does not match the file (its old lines, starting `{first}`, are not there{}); read the file again and rebuild the patch against its current text",
                n + 1,
                hunk.old_start.map(|s| format!(" at or after line {s}")).unwrap_or_default()
            ));
        };
        for line in &file[cursor..at] {
            out.push_str(line);
        }
        let touches_end = at + old.len() == file.len() && file.last().is_some_and(|l| !l.ends_with('\n'));
        let new: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Add(s) => Some(s.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect();
        let lenient_end = touches_end && old.last().is_some_and(|l| l.ends_with('\n'));
        for (k, line) in new.iter().enumerate() {
            if lenient_end && k + 1 == new.len() {
                out.push_str(line.strip_suffix('\n').unwrap_or(line));
            } else {
                out.push_str(line);
            }
        }
        cursor = at + old.len();
    }
    for line in &file[cursor..] {
        out.push_str(line);
    }
    Ok(out)
}

/// The hunks that undo `hunks` (old and new sides swapped, start lines too).
pub fn reverse_hunks(hunks: &[Hunk]) -> Vec<Hunk> {
    hunks
        .iter()
        .map(|h| Hunk {
            old_start: h.new_start,
            new_start: h.old_start,
            lines: h
                .lines
                .iter()
                .map(|l| match l {
                    HunkLine::Context(s) => HunkLine::Context(s.clone()),
                    HunkLine::Remove(s) => HunkLine::Add(s.clone()),
                    HunkLine::Add(s) => HunkLine::Remove(s.clone()),
                })
                .collect(),
        })
        .collect()
}

/// Added and removed line counts of a set of hunks.
pub fn counts(hunks: &[Hunk]) -> (usize, usize) {
    let added = hunks.iter().flat_map(|h| &h.lines).filter(|l| matches!(l, HunkLine::Add(_))).count();
    let removed = hunks.iter().flat_map(|h| &h.lines).filter(|l| matches!(l, HunkLine::Remove(_))).count();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_diff_parses_and_applies() {
        let patch = "diff --git a/src/x.txt b/src/x.txt\nindex 1..2 100644\n--- a/src/x.txt\n+++ b/src/x.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";
        let files = parse(patch).expect("parses");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "src/x.txt");
        let FileChange::Update { hunks, move_to: None } = &files[0].change else { panic!("an update") };
        assert_eq!(apply_hunks("one\ntwo\nthree\n", hunks).expect("applies"), "one\nTWO\nthree\n");
        assert!(apply_hunks("one\n2\nthree\n", hunks).is_err_and(|e| e.0.contains("hunk 1 does not match")));
    }

    #[test]
    fn a_begin_patch_parses_adds_updates_and_deletes() {
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: a.txt\n@@\n keep\n-old\n+new\n*** Delete File: gone.txt\n*** End Patch\n";
        let files = parse(patch).expect("parses");
        assert_eq!(files[0], FilePatch { path: "new.txt".into(), change: FileChange::Add("hello\n".into()) });
        let FileChange::Update { hunks, .. } = &files[1].change else { panic!("an update") };
        assert_eq!(apply_hunks("keep\nold", hunks).expect("applies"), "keep\nnew");
        assert_eq!(files[2].change, FileChange::Delete(None));
        assert!(parse("*** Begin Patch\n*** Update File: a\n-x\n").is_err_and(|e| e.0.contains("End Patch")));
    }

    #[test]
    fn no_newline_at_end_of_file_is_kept() {
        let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n";
        let files = parse(patch).expect("parses");
        let FileChange::Update { hunks, .. } = &files[0].change else { panic!("an update") };
        assert_eq!(apply_hunks("a", hunks).expect("applies"), "b");
    }

    use proptest::collection::vec;
    use proptest::prelude::*;

    /// One generated edit: where, how many old lines go, which lines come, how much context.
    type Edit = (usize, usize, Vec<String>, usize);

    /// The original text, the unified diff of `edits` against it, and the expected new text.
    fn diff_of(lines: &[String], final_newline: bool, edits: &[Edit]) -> (String, String, String) {
        let n = lines.len();
        let mut old: Vec<String> = lines.iter().map(|l| format!("{l}\n")).collect();
        if !final_newline {
            if let Some(last) = old.last_mut() {
                last.pop();
                // An empty last line without a newline is no line at all.
                if last.is_empty() {
                    last.push('a');
                }
            }
        }
        let mut sorted = edits.to_vec();
        sorted.sort_by_key(|e| e.0);
        let (mut patch, mut new_text) = ("--- a/f\n+++ b/f\n".to_owned(), String::new());
        let (mut cursor, mut taken, mut delta) = (0usize, 0usize, 0isize);
        let emit = |patch: &mut String, prefix: char, line: &str| {
            patch.push(prefix);
            patch.push_str(line);
            if !line.ends_with('\n') {
                patch.push_str("\n\\ No newline at end of file\n");
            }
        };
        for (start, del, adds, ctx) in sorted {
            let start = start.min(n);
            let del = del.min(n - start);
            let before = ctx.min(start);
            if start < cursor + before || (del == 0 && adds.is_empty()) || (start == n && !final_newline && n > 0 && del == 0) {
                continue;
            }
            let end = start + del;
            let after = ctx.min(n - end);
            let mut added: Vec<String> = adds.iter().map(|a| format!("{a}\n")).collect();
            if end == n && !final_newline && n > 0 {
                if let Some(last) = added.last_mut() {
                    last.pop();
                    if last.is_empty() {
                        last.push('x');
                    }
                }
            }
            let i = start - before;
            let old_count = before + del + after;
            let new_count = before + added.len() + after;
            let j = i.cast_signed() + delta;
            let header = |at: isize, count: usize| if count == 0 { at } else { at + 1 };
            patch.push_str(&format!("@@ -{},{old_count} +{},{new_count} @@\n", header(i.cast_signed(), old_count), header(j, new_count)));
            for line in &old[i..start] {
                emit(&mut patch, ' ', line);
            }
            for line in &old[start..end] {
                emit(&mut patch, '-', line);
            }
            for line in &added {
                emit(&mut patch, '+', line);
            }
            for line in &old[end..end + after] {
                emit(&mut patch, ' ', line);
            }
            for line in &old[taken..start] {
                new_text.push_str(line);
            }
            for line in &added {
                new_text.push_str(line);
            }
            taken = end;
            cursor = end + after;
            delta += added.len().cast_signed() - del.cast_signed();
        }
        for line in &old[taken..] {
            new_text.push_str(line);
        }
        (old.concat(), patch, new_text)
    }

    proptest! {
        /// Applying a patch and then its reverse gives the original text (issue 27,
        /// acceptance 3), with duplicate lines, context of 0–3 lines, insertions, deletions
        /// and a last line without a newline.
        #[test]
        fn a_patch_applied_then_reversed_gives_the_original(
            lines in vec("[ab]{0,2}", 0..20),
            final_newline in any::<bool>(),
            edits in vec((0usize..22, 0usize..4, vec("[abx]{0,2}", 0..4), 0usize..4), 1..5),
        ) {
            let (original, text, expected) = diff_of(&lines, final_newline, &edits);
            prop_assume!(text.contains("@@"));
            let files = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            let FileChange::Update { hunks, .. } = &files[0].change else { return Err(TestCaseError::fail("not an update")) };
            let applied = apply_hunks(&original, hunks).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(&applied, &expected, "patch:\n{}", text);
            let back = apply_hunks(&applied, &reverse_hunks(hunks)).map_err(|e| TestCaseError::fail(format!("reverse: {e}\n{text}")))?;
            prop_assert_eq!(back, original, "patch:\n{}", text);
        }
    }
}
