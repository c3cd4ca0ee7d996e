//! The worker's page and panel ports: who is connected, what each was last sent, and what
//! a message from each may do.
//!
//! Purpose: the registry of ports showing the HUD or the side panel, the view each is sent
//! (the link's HUD with the tab's continuity view; a panel also gets its panel view and the
//! newest `page_diagnostics` of the tab it shows) and the site profile a page is sent.
//!
//! Invariants: a page gets its site profile before anything else the core posts, then the
//! HUD (docs/PROTOCOL.md "One delivery path"; only `worker.js`'s start view, built by
//! [`page_hud`] too, comes before: [`super::start_view`]); a port is sent its views only when they changed; a
//! delivery goes to the newest port of its tab only (never typed twice); a tab is gone for
//! continuity (`PageGone`) when its last port closed; a message from a port the worker does
//! not know is refused.
//!
//! Driver contract: part of [`Worker::handle`]; outputs are `Post`s, `PostNative` (a
//! diagnostics report) and `Warn`s.

use serde_json::Value;

use super::commands::{companion_watch, ExtensionPage};
use super::{commands_for, PageInput, PortCommand, PortId, Probe, Sender, Worker, WorkerOutput, CALL_ID_PREFIX};
use crate::binding::TabId;
use crate::companion_link::Input;
use crate::continuity::{ContinuityInput, ContinuityView};
use crate::hud::HudView;
use crate::json_object;
use crate::json_read::WriteJson;
use crate::sites::overrides::InForce;

/// A page or panel port showing the HUD.
pub(super) struct Page {
    pub(super) port: PortId,
    /// The page's URL, once reported.
    pub(super) url: Option<String>,
    /// The tab of a content-script port; `None` for panels (even one opened in a tab).
    pub(super) tab: Option<TabId>,
    /// A side-panel port.
    panel: bool,
    /// The tab a panel asked to show (`None` = the last active chat tab).
    panel_tab: Option<TabId>,
    /// The messages last posted as view, to post only changes.
    last_view: Option<Vec<Value>>,
    /// The page's last checked `page_diagnostics` (content-script ports only).
    diagnostics: Option<Value>,
    /// The site of a content-script port's origin (its profile is posted to it).
    site: Option<&'static str>,
    /// Which of our pages opened a panel port (its companion calls, [`super::calls`]).
    pub(super) extension: ExtensionPage,
    /// A page watching the companion's state (and, a side panel, the Herdr stream).
    pub(super) watch: bool,
    /// The last `companion_state` posted to a watching page.
    pub(super) state_sent: Option<Value>,
}

/// `{"type":"profile","profile":…,"source":…}`: the flat profile (wire v2) in force for a
/// page's site and where it comes from; `null` for an origin with no profile (the adapter
/// then types and clicks nothing).
pub fn profile_message(in_force: Option<&InForce>) -> Value {
    match in_force {
        Some(in_force) => json_object!("type": "profile", "profile": in_force.profile, "source": in_force.source.as_str()),
        None => json_object!("type": "profile", "profile": Value::Null, "source": "builtin"),
    }
}

/// `{"type":"hud","view":…}`: the link's view (`hud`, written) with the pill of it and the
/// continuity view, and that view itself on a tab's page (`continuity`: `Some` for a tab's
/// page, its view `None` on a page that is no chat) — what a page or panel port is posted.
pub(super) fn page_hud(link_view: &HudView, mut hud: Value, continuity: Option<Option<ContinuityView>>) -> Value {
    if let Some(view) = hud.as_object_mut() {
        let shown = continuity.as_ref().and_then(Option::as_ref);
        view.insert("pill".to_owned(), crate::hud_pill::pill(link_view, shown).write_json());
        if let Some(continuity) = continuity {
            view.insert("continuity".to_owned(), continuity.write_json());
        }
    }
    json_object!("type": "hud", "view": hud)
}

/// `{"type":"diagnostics","tab_id":…,"diagnostics":…|null,"fact_order":[…]}` for a side
/// panel showing `tab`: its page's newest report and the order the panel lists the facts
/// in — `sites::FACT_NAMES` order, then any others (in key order).
pub fn panel_diagnostics_message(tab: Option<TabId>, diagnostics: Option<&Value>) -> Value {
    let mut order: Vec<&str> = Vec::new();
    if let Some(facts) = diagnostics.and_then(|d| d.get("facts")).and_then(Value::as_object) {
        let known = crate::sites::FACT_NAMES;
        order.extend(known.iter().copied().filter(|name| facts.contains_key(*name)));
        order.extend(facts.keys().map(String::as_str).filter(|name| !known.contains(name)));
    }
    json_object!("type": "diagnostics", "tab_id": tab, "diagnostics": diagnostics, "fact_order": order)
}

impl Page {
    /// A side panel's port (not the options page's, which shows no view).
    pub(super) fn is_panel(&self) -> bool {
        self.panel && self.extension != ExtensionPage::Options
    }
}

impl Worker {
    pub(super) fn port_connected(&mut self, port: PortId, tab: Option<TabId>, panel: bool, url: &str) {
        // The tab bookkeeping (the active tab, a tab's newest port, `PageGone`) is the content
        // scripts' only: an extension page opened in a tab (the options page, `open_in_tab`)
        // has `sender.tab` but is no chat page of that tab.
        let tab = tab.filter(|_| !panel);
        let mut site = None;
        let extension = if panel { ExtensionPage::of_url(url) } else { ExtensionPage::Other };
        if !panel {
            if tab.is_some() {
                self.start_view_seen(url);
            }
            site = crate::sites::profile_for(url).map(|profile| profile.site);
            let in_force = site.map(|site| self.profiles.in_force(site));
            self.post(port, profile_message(in_force.as_ref()));
        }
        // The new port's first HUD view (with its pill) goes out with the broadcast: it has
        // no last view yet.
        self.pages.push(Page {
            port,
            url: None,
            tab,
            panel,
            panel_tab: None,
            last_view: None,
            diagnostics: None,
            site,
            extension,
            watch: false,
            state_sent: None,
        });
        self.broadcast_views();
    }

    pub(super) fn port_closed(&mut self, port: PortId) {
        let tab = self.pages.iter().find(|page| page.port == port).and_then(|page| page.tab);
        self.pages.retain(|page| page.port != port);
        self.probes.retain(|_, probe| probe.port != port);
        self.page_calls_port_closed(port);
        if let Some(tab) = tab.filter(|tab| !self.pages.iter().any(|page| page.tab == Some(*tab))) {
            self.continuity_input(ContinuityInput::PageGone { tab });
        }
    }

    pub(super) fn page_message(&mut self, port: PortId, message: PageInput) {
        let Some(page) = self.pages.iter_mut().find(|page| page.port == port) else {
            return self.warn("herdr-continuity: a message from a port that was not accepted was dropped".to_owned());
        };
        let sender = Sender { tab: page.tab, panel: page.panel };
        match message {
            PageInput::Facts { url, report } => {
                // A URL the page did not report before (it navigated) joins the start view's
                // pages; the same URL again costs nothing.
                let seen = (sender.tab.is_some() && page.url.as_ref() != Some(&url)).then(|| url.clone());
                page.url = Some(url);
                if sender.tab.is_some() && self.last_active_tab.is_none() {
                    self.last_active_tab = sender.tab;
                }
                if let (Some(tab), Some(report)) = (sender.tab, report) {
                    self.continuity_input(ContinuityInput::PageReported { tab, report });
                }
                if let Some(url) = seen {
                    self.start_view_seen(&url);
                }
            }
            PageInput::RetryCompanion => self.link_input(Input::RetryNow),
            PageInput::RoundTrip { at } => {
                let probe = self.next_probe;
                self.next_probe = self.next_probe.wrapping_add(1);
                self.probes.insert(probe, Probe { port, started_at: at });
                self.link_input(Input::ProbeRequested { probe });
            }
            PageInput::Diagnostics { seen, report } => {
                if sender.panel {
                    return self.warn("herdr-continuity: a side panel sent page_diagnostics; dropped".to_owned());
                }
                page.diagnostics = Some(seen);
                self.broadcast_views();
                // The companion keeps the newest report for `herdr-companion doctor`. Fire and
                // forget: the answer carries an id no call waits for, so it is dropped.
                if self.native.is_some() {
                    let message = json_object!(
                        "id": format!("{CALL_ID_PREFIX}diag-{}", self.now),
                        "method": continuity_protocol::Method::DiagnosticsReport.as_str(),
                        "params": json_object!("diagnostics": report),
                    );
                    self.outputs.push_back(WorkerOutput::PostNative { message });
                }
            }
            PageInput::Command(PortCommand::CompanionCall { id, method, params }) => {
                let extension = page.extension;
                self.page_call(port, sender, extension, id, &method, params);
            }
            PageInput::Command(PortCommand::CompanionWatch) => {
                if companion_watch(sender, page.extension) {
                    page.watch = true;
                    self.post_companion_state();
                } else {
                    self.warn("herdr-continuity: only an extension page may watch the companion; companion_watch dropped".to_owned());
                }
            }
            PageInput::Command(PortCommand::QueueAsideRemove { id, question }) => {
                let extension = page.extension;
                self.aside_remove(sender.panel, extension, id, question);
            }
            PageInput::Command(command) => {
                if let PortCommand::PanelHello { tab_id } = &command {
                    if sender.panel {
                        page.panel_tab = *tab_id;
                        page.last_view = None;
                    }
                }
                // A panel's hello or refresh reads the queue records kept aside for it too.
                if sender.panel && matches!(command, PortCommand::PanelHello { .. } | PortCommand::PanelRefresh) {
                    self.aside_view_read();
                }
                match commands_for(command, sender) {
                    Ok(inputs) => inputs.into_iter().for_each(|input| self.continuity_input(input)),
                    Err(refused) => self.warn(refused),
                }
            }
        }
    }

    /// Posts each page its HUD (link view + continuity view) and each panel its panel view,
    /// only when they changed.
    pub(super) fn broadcast_views(&mut self) {
        let link_view = self.link.hud();
        let hud = link_view.write_json();
        let default_tab = self.last_active_tab;
        let views: Vec<Vec<Value>> = self
            .pages
            .iter()
            .map(|page| {
                let mut messages = Vec::new();
                // The options page shows no view: it opens its port for companion calls only.
                if page.extension == ExtensionPage::Options {
                    return messages;
                }
                let continuity = page.tab.map(|tab| self.continuity.page_view(tab));
                messages.push(page_hud(&link_view, hud.clone(), continuity));
                if page.panel {
                    let tab = page.panel_tab.or(default_tab);
                    messages.push(json_object!("type": "panel", "view": self.continuity.panel_view(tab).write_json()));
                    // The newest report of the tab's page ("What the extension sees").
                    let seen = tab.and_then(|tab| self.pages.iter().rev().find(|p| p.tab == Some(tab) && p.diagnostics.is_some()));
                    messages.push(panel_diagnostics_message(tab, seen.and_then(|p| p.diagnostics.as_ref())));
                }
                messages
            })
            .collect();
        let mut posts = Vec::new();
        for (page, messages) in self.pages.iter_mut().zip(views) {
            if page.last_view.as_ref() != Some(&messages) {
                page.last_view = Some(messages.clone());
                posts.extend(messages.into_iter().map(|message| (page.port, message)));
            }
        }
        for (port, message) in posts {
            self.post(port, message);
        }
    }

    /// Posts the profile in force to every content-script port of `sites`.
    pub(super) fn post_profiles(&mut self, sites: &[&'static str]) {
        let posts: Vec<(PortId, Value)> = self
            .pages
            .iter()
            .filter_map(|page| {
                let site = page.site.filter(|site| !page.panel && sites.contains(site))?;
                Some((page.port, profile_message(Some(&self.profiles.in_force(site)))))
            })
            .collect();
        for (port, message) in posts {
            self.post(port, message);
        }
    }

    /// Posts to the newest port of `tab` (one page port per tab is the norm; a delivery
    /// goes to the newest only so it is never typed twice).
    pub(super) fn post_to_tab(&mut self, tab: TabId, message: Value) {
        if let Some(port) = self.pages.iter().rev().find(|page| page.tab == Some(tab)).map(|page| page.port) {
            self.post(port, message);
        }
    }

    fn post(&mut self, port: PortId, message: Value) {
        self.outputs.push_back(WorkerOutput::Post { port, message });
    }

    pub(super) fn warn(&mut self, text: String) {
        self.outputs.push_back(WorkerOutput::Warn(text));
    }
}
