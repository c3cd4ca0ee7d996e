//! The HUD's lines as data (issue 28: the view is data): which lines the expanded HUD
//! shows, in which order and tone, with their message keys, substitutions and test hooks.
//! The content script (`extension/content-hud-lines.js`) renders each line as one
//! paragraph and decides nothing: no key, tone or line is chosen in JavaScript.
//!
//! Invariants:
//! - [`lines`] is a pure function of the [`ContinuityView`] it is part of.
//! - The JSON bridge's lines come first (the approval card shows without scrolling).
//! - Every line that says something is held back or needs the user has tone `withheld`.
//! - A substitution that is itself text of ours is sent as a key ([`Arg::Key`]); a time as
//!   epoch ms ([`Arg::Time`], [`Arg::Clock`]) that the page writes in the user's locale.

use serde::Serialize;

use super::{ContinuityView, Say};
use crate::json_read::WriteJson;
use crate::text::concat;
use crate::Millis;

/// How a line looks (its class in the HUD's closed shadow root).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum LineTone {
    /// Plain text.
    Plain,
    /// Something is held back, failed or needs the user.
    Withheld,
    /// Semantic Auto's / the judge's word.
    Judge,
}

/// How a line is built on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum LinePart {
    /// One paragraph (and the list of its `items`, if any).
    Text,
    /// The head of the JSON bridge's approval card: the page builds the card (calls, Run /
    /// Skip) from `ContinuityView::bridge` under it.
    BridgeCard,
}

/// One substitution of a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Arg {
    /// Shown as is (data: a label, an id, a figure).
    Text {
        /// The text.
        v: String,
    },
    /// The text of another message key of ours.
    Key {
        /// The key.
        v: String,
    },
    /// A time of day with seconds, in the user's locale.
    Time {
        /// Epoch ms.
        v: Millis,
    },
    /// A time of day as hours and minutes, in the user's locale.
    Clock {
        /// Epoch ms.
        v: Millis,
    },
}

/// A `data-*` hook of a line (for tests and the Control Center; never on the page's DOM).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct Hook {
    /// The dataset name (`state`, `code`, …).
    pub name: &'static str,
    /// Its value.
    pub value: String,
}

/// One line of the expanded HUD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct HudLine {
    /// Its `data-line` name.
    pub line: &'static str,
    /// How it is built.
    pub part: LinePart,
    /// Its message key.
    pub key: String,
    /// The key's substitutions.
    pub args: Vec<Arg>,
    /// How it looks.
    pub tone: LineTone,
    /// Its `data-*` hooks.
    pub hooks: Vec<Hook>,
    /// A second message appended to the line's text (a quoted note, a remark).
    pub more: Option<Say>,
    /// Items listed under the line (`data-line="<line>-items"`), as data.
    pub items: Vec<String>,
}

fn text(v: impl Into<String>) -> Arg {
    Arg::Text { v: v.into() }
}

fn key(v: impl Into<String>) -> Arg {
    Arg::Key { v: v.into() }
}

/// A key or, for an empty code, an empty substitution.
fn key_or_empty(prefix: &str, code: &str) -> Arg {
    if code.is_empty() {
        text("")
    } else {
        key(concat(&[prefix, "_", code]))
    }
}

struct Lines(Vec<HudLine>);

impl Lines {
    fn say(&mut self, line: &'static str, key: impl Into<String>, args: Vec<Arg>, tone: LineTone) -> &mut HudLine {
        self.0.push(HudLine { line, part: LinePart::Text, key: key.into(), args, tone, hooks: Vec::new(), more: None, items: Vec::new() });
        let last = self.0.len() - 1;
        &mut self.0[last]
    }
}

impl HudLine {
    fn hook(&mut self, name: &'static str, value: impl Into<String>) -> &mut Self {
        self.hooks.push(Hook { name, value: value.into() });
        self
    }
}

fn withheld_if(bad: bool) -> LineTone {
    if bad {
        LineTone::Withheld
    } else {
        LineTone::Plain
    }
}

/// The lines of `c`, in display order.
pub fn lines(c: &ContinuityView) -> Vec<HudLine> {
    use LineTone::{Judge, Plain, Withheld};
    let mut out = Lines(Vec::new());
    if let Some(bridge) = &c.bridge {
        match &bridge.rounds {
            Some(r) if bridge.round_limit => {
                out.say("bridge-round-limit", "hudBridgeRoundLimit", vec![text(r.used.to_string()), text(r.limit.to_string())], Withheld);
            }
            None if bridge.round_limit => {
                out.say("bridge-round-limit", "hudBridgeRoundLimit", vec![text(""), text("")], Withheld);
            }
            Some(r) if r.used > 0 => {
                out.say("bridge-rounds", "hudBridgeRounds", vec![text(r.used.to_string()), text(r.limit.to_string())], Plain);
            }
            _ => {}
        }
        if bridge.batch_id.is_some() && !bridge.pending.is_empty() {
            out.say("bridge-approval-head", "hudBridgeApproval", vec![text(bridge.pending.len().to_string())], Withheld).part =
                LinePart::BridgeCard;
        }
    }
    match (&c.binding, &c.pending_binding) {
        (Some(b), _) => out.say("binding", "hudBound", vec![text(&b.label), text(&b.workspace_id)], Plain),
        (None, Some(p)) => out.say("binding", "hudPendingBinding", vec![text(&p.label), text(&p.workspace_id)], Plain),
        (None, None) => out.say("binding", "hudNotBound", Vec::new(), Plain),
    };
    if c.page_kind == "project_chat" || c.page_kind == "project_home" {
        match &c.active_target {
            Some(t) => out.say("target", "hudActiveTarget", vec![text(concat(&["/c/", t]))], Plain),
            None => out.say("target", "hudNoActiveTarget", Vec::new(), Plain),
        };
    }
    if let Some(app) = &c.app {
        out.say("app", "hudApp", vec![text(&app.name)], Plain);
    }
    if let Some(r) = &c.session_ref {
        out.say("session", "hudSessionRef", vec![text(r)], Plain).hook("ref", r);
    }
    // Fail closed, visibly: nothing is typed into a page whose needed fact is missing or
    // ambiguous; the line names the fact.
    if let Some(u) = &c.unresolved {
        let why = u.why.wire_name();
        out.say("layout", "hudFactUnresolved", vec![text(&u.fact), key(concat(&["factWhy_", why]))], Withheld)
            .hook("fact", &u.fact)
            .hook("why", why);
    }
    if c.delivery_state == Some("uncertain") {
        out.say("delivery", "hudDeliveryUncertain", Vec::new(), Withheld);
    }
    out.say("auto", c.auto_line, Vec::new(), Plain);
    if let Some(note) = c.auto_note {
        out.say("auto-note", concat(&["withheld_", note.wire_name()]), Vec::new(), Withheld);
    }
    if c.binding.is_some() {
        match c.scope_state {
            "working" => out.say("scope", "hudScopeWorking", vec![text(c.working_panes.to_string())], Plain),
            "settled" => out.say("scope", "hudScopeSettled", Vec::new(), Plain),
            _ => out.say("scope", "hudScopeIdle", Vec::new(), Plain),
        };
        if c.inbox_missing {
            out.say("tasks", "hudInboxMissing", Vec::new(), Plain);
        } else if let Some(t) = &c.tasks {
            out.say("tasks", "hudTasks", vec![text(t.running.to_string()), text(t.unacked.to_string()), text(t.acked.to_string())], Plain);
        }
        // Parent guidance (I5): advice in our words; the model's note shown as quoted data.
        for g in &c.guidance {
            let line = out.say("guidance", concat(&["hudGuidance_", &g.kind]), vec![text(&g.task_id)], Plain);
            line.hook("task", &g.task_id).hook("kind", &g.kind);
            line.more = g.note.as_ref().map(|note| Say::new("hudGuidanceNote", vec![note.clone()]));
        }
        match &c.last_wake {
            Some(w) => out.say(
                "last-wake",
                "hudLastWake",
                vec![text(w.kind.wire_name()), Arg::Time { v: w.at }, text(c.wake_count.to_string())],
                Plain,
            ),
            None => out.say("last-wake", "hudNoWakeYet", Vec::new(), Plain),
        };
        match &c.withheld {
            Some(w) => {
                let code = w.code.wire_name();
                out.say("withheld", concat(&["withheld_", code]), Vec::new(), Withheld).hook("code", code);
            }
            None => {
                out.say("withheld", "hudNothingWithheld", Vec::new(), Plain);
            }
        }
    }
    // Semantic Auto and the judge (J1–J3, M7): the worker's last word on this chat.
    if let Some(judge) = &c.judge {
        out.say("judge", &judge.key, judge.args.iter().map(text).collect(), Judge);
    }
    // ChatGPT rate-limits the account: automatic messages wait until (local HH:MM).
    if let Some(until) = c.cooldown_until {
        out.say("cooldown", "hudCooldownUntil", vec![Arg::Clock { v: until }], Withheld);
    }
    if let Some(r) = &c.recovery {
        let args = vec![
            key(concat(&["recoveryState_", r.state])),
            key_or_empty("recoveryReason", r.reason),
            text(r.retries_left.to_string()),
            text(r.reloads_left.to_string()),
            text(r.probes.to_string()),
        ];
        let bad = matches!(r.state, "needs_user" | "rollover" | "cooling");
        let line = out.say("recovery", "hudRecovery", args, withheld_if(bad));
        line.hook("state", r.state).hook("reasoning", if r.reasoning { "true" } else { "false" });
        // The model shows a thinking placeholder: the stall allowance is the long one
        // (stale_view REASONING_STALL_MS), so say so rather than read as plainly "synced".
        line.more = r.reasoning.then(|| Say::new("hudRecoveryReasoning", Vec::new()));
    }
    if let Some(h) = &c.health {
        let args = vec![
            key(concat(&["healthLevel_", h.level])),
            key(concat(&["healthDecision_", h.decision])),
            key_or_empty("healthReason", h.reason),
            text(h.spikes.to_string()),
            text(h.long_tasks.to_string()),
        ];
        out.say("health", "hudHealth", args, withheld_if(h.level == "high" || h.decision == "withheld")).hook("level", h.level);
        if let Some(problem) = h.settings_problem {
            out.say("health-settings", "healthSettingsInvalid", vec![text(problem)], Withheld);
        }
    }
    if let Some(card) = &c.card {
        let key = match card.state {
            "accepted" if card.tool.is_empty() => "hudCardAcceptedUnnamed".to_owned(),
            "accepted" => "hudCardAccepted".to_owned(),
            "accepted_before" => "hudCardAcceptedBefore".to_owned(),
            "gone" => "hudCardGone".to_owned(),
            _ => concat(&["card_refused_", card.code]),
        };
        let at = card.at.map_or_else(|| text(""), |v| Arg::Time { v });
        let accepted = matches!(card.state, "accepted" | "accepted_before");
        out.say("card", key, vec![text(&card.connector), at, text(&card.tool)], withheld_if(!accepted))
            .hook("state", card.state)
            .hook("tool", &card.tool);
    }
    // The Continuity Journal (C1) and the context pressure (R1).
    if let Some(j) = &c.journal {
        let fine = j.key == "journalRecorded" || j.key == "journalNothingYet";
        out.say("journal", &j.key, j.args.iter().map(text).collect(), withheld_if(!fine));
    }
    if let Some(p) = &c.pressure {
        use crate::context_pressure::PressureLevel;
        let level = p.level.wire_name();
        let args = vec![
            text(p.tokens.saturating_add(500).div_euclid(1000).to_string()),
            text(p.messages.to_string()),
            key(concat(&["pressureLevel_", level])),
        ];
        let bad = matches!(p.level, PressureLevel::Recommend | PressureLevel::Auto | PressureLevel::HighRisk);
        out.say("pressure", "hudPressure", args, withheld_if(bad)).hook("level", level);
    }
    // Automatic rollover (R2), once the pressure is at the auto level: started, or what
    // holds it back.
    if let Some(r) = c.rollover {
        out.say("rollover", concat(&["hudRollover_", r]), Vec::new(), withheld_if(r != "started")).hook("state", r);
    }
    // The Queue (Q1–Q8): the worker's line and the first characters of each item.
    if let Some(q) = c.queue.as_ref().filter(|q| q.state != "empty") {
        let args = vec![text(q.count.to_string()), text(q.merged_chars.to_string())];
        let line = out.say("queue", concat(&["queueLine_", q.state]), args, withheld_if(!matches!(q.state, "waiting" | "sending")));
        line.hook("state", q.state);
        line.items = q.previews.clone();
    }
    // The HUD's Handoff (X1–X8): the worker's line.
    if let Some((h, say)) = c.handoff.as_ref().and_then(|h| h.line.as_ref().map(|s| (h, s))) {
        let bad = matches!(h.step, "failed" | "seed_uncertain" | "copy_prompt");
        out.say("handoff", &say.key, say.args.iter().map(text).collect(), withheld_if(bad)).hook("step", h.step);
    }
    out.0
}
