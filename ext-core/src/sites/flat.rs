//! The flat profile (wire v2): what the worker posts to a page and what a profile file
//! holds.
//!
//! Purpose: the adapter resolves each fact through its own ordered chain of probes across
//! every known generation of a site, not through one detected generation's list. The
//! per-generation tables ([`super::Generation`]) stay the authoring format; [`flatten`]
//! merges them into one [`FlatProfile`] whose `facts` are those chains.
//!
//! Shape of the merge (docs/PROTOCOL.md "Site profiles and page diagnostics"):
//! - A fact's chain walks the generations in profile order and each generation's probes in
//!   order (then primaries are moved first, below); a probe identical to one already in the chain is kept once, at its first
//!   position, and its `gens` lists every generation that has it.
//! - `fallback` is true iff the probe is the first probe of that fact in none of the
//!   generations listing it (a probe that leads some generation is a primary path).
//! - The chain lists every primary before every fallback, each half in walk order: a
//!   generic fallback of one generation never wins over another generation's primary on a
//!   healthy page, so a fact served by a fallback is the sign of drift diagnostics count.
//! - Label sets are unioned by key (first appearance order), their en and zh labels
//!   deduplicated in order; `never` and `disabled` are unioned the same way.
//! - `date` is the newest `checked` of the generations; `version` is `builtin`.
//!
//! Invariant: every [`FACT_NAMES`] key is present in `facts`, in that order, each an array
//! (empty when no generation has a probe for it).

use serde::Serialize;

use super::{AppMentions, Detect, Probe, SiteProfile, FACT_NAMES};
use crate::json_read::{Object, WriteJson};

/// The profile file schema this build writes and reads.
pub const SCHEMA: u32 = 1;

/// `version` of a built-in profile (an override carries its own).
pub const BUILTIN_VERSION: &str = "builtin";

/// A generation as the flat profile lists it: a diagnostic label with its detection rule,
/// its streaming rule, and when and from what it was last checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
pub struct GenerationHead {
    /// `site.layout`, e.g. `chatgpt.thread`.
    pub id: &'static str,
    /// Which markers prove this layout (the diagnostic label; it gates nothing).
    pub detect: Detect,
    /// See [`super::Generation::pending_until_complete`].
    pub pending_until_complete: bool,
    /// The date (YYYY-MM-DD) its facts were last checked against its sources.
    pub checked: &'static str,
    /// The sources its facts come from.
    pub source: &'static str,
}

/// One entry of a fact's chain: the probe, the generations that list it, and whether it
/// is only ever a fallback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainProbe {
    /// The probe.
    #[serde(flatten)]
    pub probe: Probe,
    /// Every generation that lists this probe for the fact, in profile order.
    pub gens: Vec<&'static str>,
    /// True iff no generation listing it has it first for the fact.
    pub fallback: bool,
}

/// A label set unioned over the generations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct MergedLabels {
    /// The key probes use.
    pub key: &'static str,
    /// English labels or phrases, deduplicated in order.
    pub en: Vec<&'static str>,
    /// Chinese labels or phrases, deduplicated in order.
    pub zh: Vec<&'static str>,
}

/// One site's built-in profile as the page and a profile file see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlatProfile {
    /// [`SCHEMA`].
    pub schema: u32,
    /// Site name.
    pub site: &'static str,
    /// The origin the profile is for.
    pub origin: &'static str,
    /// [`BUILTIN_VERSION`].
    pub version: &'static str,
    /// The newest `checked` of the generations.
    pub date: &'static str,
    /// The generations, in profile order.
    pub generations: Vec<GenerationHead>,
    /// Per fact ([`FACT_NAMES`] order) its merged chain.
    #[serde(serialize_with = "facts_as_map")]
    pub facts: Vec<(&'static str, Vec<ChainProbe>)>,
    /// Label sets unioned by key.
    pub labels: Vec<MergedLabels>,
    /// Selectors a Send or Stop candidate must not match, unioned.
    pub never: Vec<&'static str>,
    /// Selectors that mark a control disabled, unioned.
    pub disabled: Vec<&'static str>,
    /// See [`SiteProfile::streaming_recheck_ms`].
    pub streaming_recheck_ms: u32,
    /// See [`SiteProfile::turn_index_attr`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_index_attr: Option<&'static str>,
    /// See [`SiteProfile::app_mentions`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_mentions: Option<&'static AppMentions>,
}

fn facts_as_map<S: serde::Serializer>(facts: &[(&'static str, Vec<ChainProbe>)], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(facts.iter().map(|(name, chain)| (name, chain)))
}

/// Appends each of `items` not yet in `into`.
fn union<T: PartialEq + Copy>(into: &mut Vec<T>, items: &[T]) {
    for item in items {
        if !into.contains(item) {
            into.push(*item);
        }
    }
}

/// Merges `profile`'s generations into its flat profile (module doc).
pub fn flatten(profile: &SiteProfile) -> FlatProfile {
    let generations = profile.generations;
    let facts = FACT_NAMES
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let mut chain: Vec<ChainProbe> = Vec::new();
            for generation in generations {
                let probes = generation.facts.named()[index].1;
                for (position, probe) in probes.iter().enumerate() {
                    let entry = match chain.iter().position(|entry| entry.probe == *probe) {
                        Some(at) => &mut chain[at],
                        None => {
                            chain.push(ChainProbe { probe: *probe, gens: Vec::new(), fallback: true });
                            let last = chain.len() - 1;
                            &mut chain[last]
                        }
                    };
                    union(&mut entry.gens, &[generation.id]);
                    entry.fallback &= position != 0;
                }
            }
            // Primaries first: a fallback wins only when no generation's primary finds the
            // fact (each half keeps the walk's order).
            let (mut primaries, fallbacks): (Vec<ChainProbe>, Vec<ChainProbe>) = chain.into_iter().partition(|entry| !entry.fallback);
            primaries.extend(fallbacks);
            (*name, primaries)
        })
        .collect();
    let mut labels: Vec<MergedLabels> = Vec::new();
    let (mut never, mut disabled) = (Vec::new(), Vec::new());
    for generation in generations {
        for set in generation.labels {
            let at = match labels.iter().position(|merged| merged.key == set.key) {
                Some(at) => at,
                None => {
                    labels.push(MergedLabels { key: set.key, en: Vec::new(), zh: Vec::new() });
                    labels.len() - 1
                }
            };
            union(&mut labels[at].en, set.en);
            union(&mut labels[at].zh, set.zh);
        }
        union(&mut never, generation.never);
        union(&mut disabled, generation.disabled);
    }
    FlatProfile {
        schema: SCHEMA,
        site: profile.site,
        origin: profile.origin,
        version: BUILTIN_VERSION,
        date: generations.iter().map(|generation| generation.checked).max().unwrap_or(""),
        generations: generations
            .iter()
            .map(|generation| GenerationHead {
                id: generation.id,
                detect: generation.detect,
                pending_until_complete: generation.pending_until_complete,
                checked: generation.checked,
                source: generation.source,
            })
            .collect(),
        facts,
        labels,
        never,
        disabled,
        streaming_recheck_ms: profile.streaming_recheck_ms,
        turn_index_attr: profile.turn_index_attr,
        app_mentions: profile.app_mentions,
    }
}

// Hand-written writers (`crate::json_read`), not serde's derived `Serialize` (kept for the
// test that the two agree: smaller wasm).

impl WriteJson for ChainProbe {
    fn write_json(&self) -> serde_json::Value {
        let mut value = self.probe.write_json();
        if let Some(object) = value.as_object_mut() {
            object.insert("gens".to_owned(), self.gens.write_json());
            object.insert("fallback".to_owned(), self.fallback.into());
        }
        value
    }
}

impl WriteJson for FlatProfile {
    fn write_json(&self) -> serde_json::Value {
        let mut facts = Object::default();
        for (name, chain) in &self.facts {
            facts.put(name, chain.write_json());
        }
        let object = Object::default()
            .with("schema", &self.schema)
            .with("site", self.site)
            .with("origin", self.origin)
            .with("version", self.version)
            .with("date", self.date)
            .with("generations", &self.generations)
            .with("facts", &facts.done())
            .with("labels", &self.labels)
            .with("never", &self.never)
            .with("disabled", &self.disabled)
            .with("streaming_recheck_ms", &self.streaming_recheck_ms);
        let object = match self.turn_index_attr {
            Some(attr) => object.with("turn_index_attr", attr),
            None => object,
        };
        match self.app_mentions {
            Some(apps) => object.with("app_mentions", apps),
            None => object,
        }
        .done()
    }
}
