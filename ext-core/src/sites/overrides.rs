//! The profile in force per site: the built-in profile, unless a user's override of it
//! validates (docs/PROTOCOL.md "Site profile files").
//!
//! Purpose: a user fixes a site's drift the same day, by importing a profile file on the
//! options page (stored in `chrome.storage.local` [`STORAGE_KEY`]) or dropping one into
//! the companion home (served by `profiles.get`). [`ProfileOverrides`] holds both per site,
//! each already validated ([`super::file`]), and answers which profile is in force, from
//! where, and the problem of a refused one; the worker posts the one in force to pages.
//!
//! Invariants:
//! - Precedence: options > companion > built-in; an override is in force only while it
//!   validates, a refused one is never posted (its problem is kept for the options page).
//! - Every text is validated when it arrives (`set_options`, `set_companion`, `import`),
//!   with the caller's JSON parser (the worker's is the browser's `JSON.parse`).
//! - `import` and `reset` return the whole new stored record and change nothing here: the
//!   record comes back through `set_options` once the worker stored it.

use serde_json::{Map, Value};

use super::file::{validate_profile_with, ProfileProblem};

/// The `chrome.storage.local` key of the options page's overrides:
/// `{<site>: {"text": <file text>, "imported_at": ms}}`.
pub const STORAGE_KEY: &str = "herdrContinuityProfileOverridesV1";

/// A JSON text parser (the worker's `JSON.parse`; serde_json in native code).
pub type Parse<'a> = &'a dyn Fn(&str) -> Result<Value, String>;

/// Where the profile in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileSource {
    /// The extension's own profile.
    Builtin,
    /// Imported on the options page.
    Options,
    /// `<home>/profiles/<site>.json` of the companion.
    Companion,
}

impl ProfileSource {
    /// Every source, builtin first.
    pub const ALL: [Self; 3] = [Self::Builtin, Self::Options, Self::Companion];

    /// The wire name (`source` of the page's `profile` message).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Options => "options",
            Self::Companion => "companion",
        }
    }
}

/// One site's profile file as the companion served it (`profiles.get`): its text, or why
/// the companion did not read it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CompanionProfile {
    /// The site.
    pub site: String,
    /// The file's text, or the companion's problem with the file.
    pub text: Result<String, String>,
    /// When the file was last modified (ms).
    pub modified_ms: u64,
}

/// Every profile file the companion has (`profiles.get`; empty when it has none or does not
/// know the method).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompanionFiles {
    /// One per file found.
    pub files: Vec<CompanionProfile>,
}

/// An override as supplied: the validated profile or its problem.
type Checked = Result<Value, String>;

/// The profile in force for one site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InForce {
    /// The v2 profile (`null` for a site without one).
    pub profile: Value,
    /// Where it comes from.
    pub source: ProfileSource,
    /// Why an override of the site is not in force (`options: …`, `companion: …`).
    pub problem: Option<String>,
}

/// The overrides per site (not persisted: the stored record and the companion are read
/// again at every start).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileOverrides {
    /// The stored record as read (kept whole: `import` / `reset` change one site of it).
    record: Map<String, Value>,
    /// Options overrides by site.
    options: Vec<(&'static str, Checked)>,
    /// Companion files by site.
    companion: Vec<(&'static str, Checked)>,
}

/// The known site named `site` (its `'static` name).
fn known_site(site: &str) -> Option<&'static str> {
    super::PROFILES.iter().map(|profile| profile.site).find(|known| *known == site)
}

fn of<'a>(list: &'a [(&'static str, Checked)], site: &str) -> Option<&'a Checked> {
    list.iter().find(|(known, _)| *known == site).map(|(_, checked)| checked)
}

/// The built-in v2 profile of `site` (`null` for an unknown one).
fn builtin(site: &str) -> Value {
    super::builtin_profile_json(site)
}

impl ProfileOverrides {
    /// The profile in force for `site`.
    pub fn in_force(&self, site: &str) -> InForce {
        let options = of(&self.options, site);
        let companion = of(&self.companion, site);
        let mut problem = None;
        for (source, checked) in [(ProfileSource::Options, options), (ProfileSource::Companion, companion)] {
            match checked {
                Some(Ok(profile)) => return InForce { profile: profile.clone(), source, problem },
                Some(Err(why)) if problem.is_none() => problem = Some(crate::text::concat(&[source.as_str(), ": ", why])),
                _ => {}
            }
        }
        InForce { profile: builtin(site), source: ProfileSource::Builtin, problem }
    }

    /// The options page's stored record changed (or was read at start; `None`: nothing
    /// stored). Returns the sites whose profile in force changed.
    pub fn set_options(&mut self, record: Option<&Value>, parse: Parse<'_>) -> Vec<&'static str> {
        let record = record.and_then(Value::as_object).cloned().unwrap_or_default();
        let mut options = Vec::new();
        for (site, entry) in &record {
            let Some(site) = known_site(site) else { continue };
            let checked = match entry.get("text").and_then(Value::as_str) {
                Some(text) => validate_profile_with(text, parse, Some(site)).map_err(|problem| problem.to_string()),
                None => Err("the stored override has no text: import the file again".to_owned()),
            };
            options.push((site, checked));
        }
        self.record = record;
        self.replace(|this| this.options = options)
    }

    /// The companion's `profiles.get` answer: every file it has (a site without one has
    /// none). Returns the sites whose profile in force changed.
    pub fn set_companion(&mut self, files: &[CompanionProfile], parse: Parse<'_>) -> Vec<&'static str> {
        let mut companion = Vec::new();
        for file in files {
            let Some(site) = known_site(&file.site) else { continue };
            if of(&companion, site).is_some() {
                continue;
            }
            let checked = match &file.text {
                Ok(text) => validate_profile_with(text, parse, Some(site)).map_err(|problem| problem.to_string()),
                Err(why) => Err(why.clone()),
            };
            companion.push((site, checked));
        }
        self.replace(|this| this.companion = companion)
    }

    /// Applies `change`; the known sites whose profile in force differs after it.
    fn replace(&mut self, change: impl FnOnce(&mut Self)) -> Vec<&'static str> {
        let sites: Vec<&'static str> = super::PROFILES.iter().map(|profile| profile.site).collect();
        let before: Vec<(ProfileSource, Value)> = sites.iter().map(|site| self.key(site)).collect();
        change(self);
        sites.into_iter().zip(before).filter(|(site, before)| self.key(site) != *before).map(|(site, _)| site).collect()
    }

    /// What a page is sent for `site`: the source and the override's profile (`null` for
    /// the built-in one, which does not change).
    fn key(&self, site: &str) -> (ProfileSource, Value) {
        let options = of(&self.options, site).and_then(|checked| checked.as_ref().ok());
        let companion = of(&self.companion, site).and_then(|checked| checked.as_ref().ok());
        match (options, companion) {
            (Some(profile), _) => (ProfileSource::Options, profile.clone()),
            (None, Some(profile)) => (ProfileSource::Companion, profile.clone()),
            (None, None) => (ProfileSource::Builtin, Value::Null),
        }
    }

    /// The options page imports `text` for `site` at `now_ms`: the new stored record (to
    /// write whole) with the validated profile's `version` and `date`, or the file's first
    /// problem (nothing to store).
    pub fn import(&self, site: &str, text: &str, now_ms: u64, parse: Parse<'_>) -> Result<(Value, Value), ProfileProblem> {
        let Some(site) = known_site(site) else {
            return Err(ProfileProblem { path: String::new(), message: "no such site: choose chatgpt, zai or deepseek".to_owned() });
        };
        let profile = validate_profile_with(text, parse, Some(site))?;
        let mut record = self.record.clone();
        let mut entry = Map::new();
        entry.insert("text".to_owned(), Value::from(text));
        entry.insert("imported_at".to_owned(), Value::from(now_ms));
        record.insert(site.to_owned(), Value::Object(entry));
        Ok((Value::Object(record), profile))
    }

    /// The stored record without `site`'s override ("Reset to built-in").
    pub fn reset(&self, site: &str) -> Value {
        let mut record = Map::new();
        for (key, value) in self.record.iter().filter(|(key, _)| key.as_str() != site) {
            record.insert(key.clone(), value.clone());
        }
        Value::Object(record)
    }
}

#[cfg(test)]
mod tests;
