//! Page health, driven (SPEC H1–H6): each watched ChatGPT page's `health_sample`s go into
//! a [`HealthMeter`] of that page load, with the page's activity from the facts the
//! composition already has (a reply streaming, a human draft, a permission card, one of our
//! deliveries not yet confirmed); what the meter makes eligible is asked of the
//! conversation's [`crate::recovery::RecoveryPlanner`], whose budgets and durable pending
//! record apply to it as to every other reload.
//!
//! - H3: sustained pressure and no assistant progress (the body's signature unchanged for
//!   the sustained time) → the planner's [`RecoveryPlanner::health_pressure`]: a probe
//!   first, and a reload only if the snapshot proves a finished assistant `current_node`.
//! - H4: a critical heap after the page was quiet for the quiet time →
//!   [`RecoveryPlanner::health_maintenance`]: one maintenance reload.
//! - H5: the planner's level 1 is `location.reload()`, level 2 `chrome.tabs.reload`, which
//!   the worker carries out only when [`Continuity::tab_reload_accepted`] says so.
//! - H6: both reloads spent → the planner recommends a rollover, and nothing more is asked.
//!
//! Invariants (property test `continuity_health_props` in `tests/it/continuity_health.rs`):
//! - A single spike is recorded (the HUD's health line says so), never acted on: nothing is
//!   asked of the planner before pressure lasted the sustained time.
//! - Nothing is asked while a blocker holds (human draft, permission card, unconfirmed
//!   delivery; for H4 also a reply streaming or a page not yet quiet), with Auto off, or off
//!   a ChatGPT conversation.
//! - H2: nothing here removes or changes page DOM; the meters only read samples, and every
//!   action is one of the planner's budgeted reloads.
//! - The meters are not persisted (a reload starts them again); the last decision is kept
//!   per tab so the HUD still shows it on the reloaded page.

use super::recovery::chatgpt_conversation;
use super::*;
use crate::health::{Activity as PageActivity, HealthLevel, HealthMeter, HealthSample, HealthThresholds};
use crate::json_read::WriteJson;
use crate::recovery::{RecoveryAction, RecoveryPlanner};
use crate::recovery_config::{ConfigError, RecoveryConfig};

/// The meters of a tab's page load, and the tab's last decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PageMeters {
    /// The page load they measure (a new load starts them again).
    page_load: String,
    /// The last decision, kept across page loads so the reloaded page still shows it.
    decision: Decision,
    /// The planner has a probe out that the meters asked for.
    probe_out: bool,
    /// The meters.
    meter: HealthMeter,
    /// The assistant body's signature last seen, and since when it has not changed.
    signature: String,
    /// When the assistant last made progress (its signature changed, or the page loaded).
    progress_at: Option<Millis>,
    /// Spikes already reported in the HUD.
    spikes_seen: u64,
}

/// The HUD's last health decision of a tab: what and why, as codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decision {
    /// `none | recorded | probe | reload | withheld`.
    what: &'static str,
    /// `spike | sustained_pressure | heap_critical | not_proven | auto_off | human_input |
    /// permission_card | delivery_uncertain | not_quiet | budgets_spent`, or `""`.
    why: &'static str,
}

impl Default for Decision {
    fn default() -> Self {
        Self { what: "none", why: "" }
    }
}

/// The composition's health state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct HealthFlow {
    /// The meters per tab (of the tabs that still report a page).
    meters: VecMap<TabId, PageMeters>,
    /// The thresholds in force (options page).
    thresholds: HealthThresholds,
    /// Why the stored thresholds were refused, if they were.
    pub(super) settings_problem: Option<ConfigError>,
}

/// The HUD's health line of a watched ChatGPT page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct HealthLine {
    /// `normal | warn | high`.
    pub level: &'static str,
    /// The last decision (see the module doc): `none | recorded | probe | reload | withheld`.
    pub decision: &'static str,
    /// Its reason code, `""` when there is none.
    pub reason: &'static str,
    /// Pressure spikes seen on this page load.
    pub spikes: u64,
    /// Long Tasks in the running window.
    pub long_tasks: u64,
    /// The field of the options page's record that was refused (the defaults apply).
    pub settings_problem: Option<&'static str>,
}

/// Every decision code of [`HealthLine::decision`] (the HUD shows `healthDecision_<code>`).
pub const HEALTH_DECISIONS: [&str; 5] = ["none", "recorded", "probe", "reload", "withheld"];
/// Every reason code of [`HealthLine::reason`] (the HUD shows `healthReason_<code>`).
pub const HEALTH_REASONS: [&str; 10] = [
    "spike",
    "sustained_pressure",
    "heap_critical",
    "not_proven",
    "auto_off",
    "human_input",
    "permission_card",
    "delivery_uncertain",
    "not_quiet",
    "budgets_spent",
];

impl Continuity {
    /// A page's `health_sample` (counted since its previous one).
    pub(super) fn health_sample(&mut self, now: Millis, tab: TabId, page_load: &str, sample: HealthSample) {
        let Some(report) = self.pages.get(&tab) else { return };
        let Some(key) = chatgpt_key(report) else { return };
        if report.page_load != page_load {
            return;
        }
        let scope = classify_url(&report.url).scope();
        let auto_on = scope.as_ref().is_some_and(|s| self.auto.state(s) == AutoState::On);
        let activity = PageActivity {
            busy: report.generating,
            human_input: report.draft,
            permission_card: report.permission_card,
            delivery_uncertain: scope.as_ref().is_some_and(|s| self.ledger.active_for(&s.key()).is_some()),
        };
        let signature = self.recovery_signature(tab).unwrap_or_default().to_owned();
        let thresholds = self.health.thresholds;
        // Tabs that no longer report a page keep no meters (a reloaded tab reports again first).
        let pages = &self.pages;
        self.health.meters.retain(|t, _| pages.contains_key(t));
        let meters = self.health.meters.entry(tab).or_default();
        if meters.page_load != page_load {
            let decision = meters.decision;
            *meters = PageMeters {
                page_load: page_load.to_owned(),
                decision,
                meter: HealthMeter::with_thresholds(thresholds),
                ..PageMeters::default()
            };
            meters.progress_at = Some(now);
            meters.signature.clone_from(&signature);
        }
        if meters.signature != signature {
            meters.signature = signature;
            meters.progress_at = Some(now);
        }
        meters.meter.sample(now, sample, activity);
        let pressure = meters.meter.live_turn_reload_eligible(now, meters.progress_at);
        let heap = meters.meter.maintenance_reload_eligible(now, activity);
        let spike = meters.meter.spikes() > meters.spikes_seen;
        meters.spikes_seen = meters.meter.spikes();
        let blocker = if !auto_on {
            Some("auto_off")
        } else if activity.human_input {
            Some("human_input")
        } else if activity.permission_card {
            Some("permission_card")
        } else if activity.delivery_uncertain {
            Some("delivery_uncertain")
        } else {
            None
        };
        let decision = match (pressure || meters.meter.heap_critical(), blocker) {
            (false, _) if spike => Some(Decision { what: "recorded", why: "spike" }),
            (false, _) => None,
            (true, Some(why)) => Some(Decision { what: "withheld", why }),
            (true, None) => self.health_ask(now, tab, &key, pressure, heap),
        };
        if let Some((decision, meters)) = decision.zip(self.health.meters.get_mut(&tab)) {
            meters.decision = decision;
        }
    }

    /// Asks the planner what the meters made eligible; the decision the HUD shows, if any.
    fn health_ask(&mut self, now: Millis, tab: TabId, key: &str, pressure: bool, heap: bool) -> Option<Decision> {
        // The planner sees the page as it is now before it is asked.
        self.recovery_page(now, tab);
        let probes = self.recovery.planners.get(key).is_some_and(|p| p.reloads_left(now) > 0);
        if pressure && probes && !self.pacer_may_request(now, tab) {
            // The account's request pacer has no slot for the probe now: the last decision
            // stands (spent budgets are said at once, they ask nothing of the site).
            return None;
        }
        let planner = self.recovery.planners.get_mut(key)?;
        let (action, why) = if pressure {
            (planner.health_pressure(now), "sustained_pressure")
        } else if heap {
            (planner.health_maintenance(now), "heap_critical")
        } else {
            // A critical heap on a page that has not been quiet long enough.
            return Some(Decision { what: "withheld", why: "not_quiet" });
        };
        let spent = planner.spent_why().is_some();
        let conversation_id =
            self.pages.get(&tab).and_then(|r| classify_url(&r.url).conversation().map(|c| c.conversation_id.to_owned()))?;
        let decision = match &action {
            Some(RecoveryAction::Probe) => {
                if let Some(meters) = self.health.meters.get_mut(&tab) {
                    meters.probe_out = true;
                }
                Decision { what: "probe", why }
            }
            Some(_) => Decision { what: "reload", why },
            None if spent => Decision { what: "withheld", why: "budgets_spent" },
            None => return None,
        };
        self.recovery_act(tab, key, &conversation_id, why, action);
        Some(decision)
    }

    /// The planner answered a probe of `tab` with `action`: if the meters asked for it, the
    /// HUD says whether it reloaded or the snapshot did not prove a finished reply.
    pub(super) fn health_answered(&mut self, tab: TabId, action: Option<&RecoveryAction>) {
        let Some(meters) = self.health.meters.get_mut(&tab).filter(|m| m.probe_out) else { return };
        meters.probe_out = false;
        meters.decision = match action {
            Some(RecoveryAction::ReloadPage | RecoveryAction::ReloadTab) => Decision { what: "reload", why: "sustained_pressure" },
            _ => Decision { what: "withheld", why: "not_proven" },
        };
    }

    /// A tab's page went away: a probe the meters asked of it is no longer theirs (the
    /// tab's last decision stays for its next page load).
    pub(super) fn health_page_gone(&mut self, tab: TabId) {
        if let Some(meters) = self.health.meters.get_mut(&tab) {
            meters.probe_out = false;
        }
    }

    /// The options page's stored thresholds (`None`: nothing stored, the defaults). A record
    /// that does not validate changes nothing and is named in the HUD.
    pub(super) fn recovery_settings(&mut self, stored: Option<Result<&serde_json::Value, &()>>) {
        let read = match stored {
            None => Ok(RecoveryConfig::default()),
            Some(Ok(record)) => RecoveryConfig::read(record),
            Some(Err(())) => Err(ConfigError { field: "record", min: 0, max: 0 }),
        };
        let config = match read {
            Ok(config) => {
                self.health.settings_problem = None;
                config
            }
            Err(problem) => {
                self.health.settings_problem = Some(problem);
                RecoveryConfig::default()
            }
        };
        self.health.thresholds = config.health;
        self.recovery.timings = config.timings;
        for meters in self.health.meters.values_mut() {
            meters.meter.set_thresholds(config.health);
        }
        for planner in self.recovery.planners.values_mut() {
            planner.set_timings(config.timings);
        }
    }

    /// The thresholds in force.
    pub fn recovery_config_in_force(&self) -> RecoveryConfig {
        RecoveryConfig { timings: self.recovery.timings, health: self.health.thresholds }
    }

    /// H5, level 2: whether the worker may carry out `chrome.tabs.reload(tab)` now — the
    /// tab still shows a ChatGPT conversation whose scope has Auto on, and that
    /// conversation's planner holds the durable pending record of a tab reload decided on
    /// this very page load. Anything else (another tab, another conversation, Auto turned
    /// off, no or another pending action) is refused.
    pub fn tab_reload_accepted(&self, tab: TabId) -> bool {
        let Some(report) = self.pages.get(&tab) else { return false };
        let Some(key) = chatgpt_key(report) else { return false };
        let auto_on = classify_url(&report.url).scope().is_some_and(|s| self.auto.state(&s) == AutoState::On);
        let pending = self.recovery.planners.get(&key).and_then(RecoveryPlanner::pending);
        auto_on && pending.is_some_and(|p| p.action == RecoveryAction::ReloadTab && p.page_load == report.page_load)
    }

    /// The HUD's health line for `tab`, on a ChatGPT conversation that sent samples.
    pub(super) fn health_line(&self, tab: TabId) -> Option<HealthLine> {
        let report = self.pages.get(&tab)?;
        chatgpt_key(report)?;
        let tab_meters = self.health.meters.get(&tab);
        let decision = tab_meters.map(|m| m.decision).unwrap_or_default();
        let meters = tab_meters.filter(|m| m.page_load == report.page_load);
        let level = match meters.map(|m| m.meter.level(self.now)) {
            Some(HealthLevel::High) => "high",
            Some(HealthLevel::Warn) => "warn",
            _ => "normal",
        };
        Some(HealthLine {
            level,
            decision: decision.what,
            reason: decision.why,
            spikes: meters.map_or(0, |m| m.meter.spikes()),
            long_tasks: meters.map_or(0, |m| m.meter.window().long_tasks),
            settings_problem: self.health.settings_problem.map(|p| p.field),
        })
    }
}

/// The conversation key of a ChatGPT conversation page.
fn chatgpt_key(report: &PageReport) -> Option<String> {
    chatgpt_conversation(report).map(|(key, _)| key)
}
