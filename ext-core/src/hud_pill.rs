//! The collapsed HUD, the pill: what it says and in which tone (issue 28: the view is
//! data). The page renders `parts` joined by " · " and a dot in `tone`; it decides nothing.
//!
//! Invariants:
//! - The first part is the brand; then the link (companion down, else Herdr down, else —
//!   on a page without continuity — connected); then, on a continuity page, the binding
//!   (or "not bound"), Auto, the scope's work, an unresolved fact, a held message and tool
//!   calls waiting for Run / Skip, in that order.
//! - Auto has one state name in the view (`on | off | not_allowed`) and the pill and the
//!   panel's Auto line take their keys from the same table ([`auto_keys`]), so they agree.
//! - The tone is the worst tone of what the pill says (good < pending < warning < bad).

use serde::Serialize;

use crate::json_read::WriteJson;

use crate::continuity::{ContinuityView, Say, UnresolvedWhy};
use crate::hud::{HudView, Tone};

/// The pill: its parts (message keys with substitutions) and the worst tone among them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct PillView {
    /// In display order.
    pub parts: Vec<Say>,
    /// The dot's tone.
    pub tone: Tone,
}

/// The keys of Auto's state `auto` (`ContinuityView::auto`): the panel's line, the pill's part.
pub fn auto_keys(auto: &str) -> (&'static str, &'static str) {
    match auto {
        "on" => ("hudAutoOn", "pillAutoOn"),
        "not_allowed" => ("hudAutoNotAllowed", "pillAutoNotAllowed"),
        _ => ("hudAutoOff", "pillAutoOff"),
    }
}

const fn rank(tone: Tone) -> u8 {
    match tone {
        Tone::Good => 0,
        Tone::Pending => 1,
        Tone::Warning => 2,
        Tone::Bad => 3,
    }
}

/// The pill of a page: the link's view and, on a continuity page, its continuity view.
pub fn pill(hud: &HudView, continuity: Option<&ContinuityView>) -> PillView {
    let mut parts = vec![Say::new("pillBrand", Vec::new())];
    let mut tone = Tone::Good;
    let mut say = |key: &str, args: Vec<String>, said: Tone| {
        parts.push(Say::new(key, args));
        if rank(said) > rank(tone) {
            tone = said;
        }
    };
    if hud.companion.tone != Tone::Good {
        say("pillCompanionDown", Vec::new(), hud.companion.tone);
    } else if hud.herdr.tone != Tone::Good {
        say("pillHerdrDown", Vec::new(), hud.herdr.tone);
    } else if continuity.is_none() {
        say("pillConnected", Vec::new(), Tone::Good);
    }
    let Some(c) = continuity else { return PillView { parts, tone } };
    match &c.binding {
        Some(b) => say("pillBinding", vec![if b.label.is_empty() { b.workspace_id.clone() } else { b.label.clone() }], Tone::Good),
        None => say("pillNotBound", Vec::new(), Tone::Pending),
    }
    say(auto_keys(c.auto).1, Vec::new(), Tone::Good);
    if c.binding.is_some() {
        match c.scope_state {
            "working" => say("pillWorking", vec![c.working_panes.to_string()], Tone::Pending),
            "settled" => say("pillSettled", Vec::new(), Tone::Good),
            _ => say("pillIdle", Vec::new(), Tone::Good),
        }
    }
    if let Some(u) = &c.unresolved {
        let key = if u.why == UnresolvedWhy::Ambiguous { "pillFactAmbiguous" } else { "pillFactMissing" };
        say(key, vec![u.fact.clone()], Tone::Warning);
    }
    if c.withheld.is_some() {
        say("pillHeld", Vec::new(), Tone::Warning);
    }
    // Tool calls waiting for Run / Skip: the collapsed HUD says so.
    if let Some(waiting) = c.bridge.as_ref().map(|b| b.pending.len()).filter(|n| *n > 0) {
        say("pillBridgeApproval", vec![waiting.to_string()], Tone::Warning);
    }
    PillView { parts, tone }
}
