//! Property tests over the composed [`Continuity`] machine (issue 4, acceptance 2; SPEC P7,
//! P8, P9, M1, M7, I3, I4, B7).
//!
//! The world drives the service worker's [`Worker`] exactly as `ext-shell` does (issue 28):
//! the native port opens, says hello and disconnects through the companion link (Retry
//! brings it back), continuity calls are answered by wire id, pages connect, report and
//! send commands on their ports (a page gone is its port closing), the side panel binds,
//! storage (the snapshot and the queue record, with failures) answers by token after the
//! step's outputs were carried out, and time moves to `Worker::next_deadline`. Only the
//! worker restart reads the snapshot from the machine in place (the newest state, as if
//! its last debounced write had landed) rather than from the last stored write.
//!
//! A simulated world drives one `Continuity` with random interleavings: a faithful runtime
//! (pane events of 1–3 workspaces × 1–3 panes with seq gaps, a replayable log, restarts
//! with a new `boot_id` while seq continues, replays of old-generation events as stale),
//! a flaky stream (duplicates, late copies, link down/up with `after_seq` resubscribe), a
//! service worker that restarts (snapshot → serde_json → restore), two chat pages whose
//! facts change (generating, draft, composer missing, permission card, gone) and which
//! confirm, fail or never answer deliveries, a parent inbox holding tasks of this chat,
//! of the other chat and of a third chat nobody opened, Auto toggles, bind/unbind, and
//! time advancing from deadline to deadline.
//!
//! The world keeps the *truth* (the runtime's log: which event completed a real
//! working → settled transition of which workspace) and checks after every output:
//! (a) a wake id is never delivered again once confirmed; (b) a wake only reports a full
//! settle and never goes out while the extension knows a pane of that workspace works;
//! (c) nothing is delivered automatically with Auto off; (d) nothing is delivered while
//! the page generates, holds a draft, has no composer or shows a permission card;
//! (e) never two deliveries in flight for one scope; (f) `inbox.ack` only for tasks of a
//! confirmed delivery of the same scope and ref; (g) a stale-generation event never wakes;
//! I3: a wake carries only its own chat's tasks; (i) I2/I4: a task carried by a confirmed
//! delivery is never carried by another delivery (settle wakes and inbox wakes together:
//! never two deliveries carrying the same task), and an inbox wake (`inbox:<ws>#<task>`) is
//! only offered for the chat's bound workspace while no pane of it works. At the end the
//! world heals (link up, pages idle) and checks that a wake whose delivery failed is
//! delivered once the page is idle again, and (j) P9/I4: every terminal, unacknowledged
//! task of a bound, Auto-on chat whose workspace is settled and whose page is idle is
//! eventually delivered and acknowledged — even when its settle was never seen.
//!
//! (h) Progress: `Continuity` answers every summary check with "no summary" (the runtime
//! has no summary service yet), so only fallback statuses can go out through it; the
//! unchanged-summary property is therefore checked through [`WakeScheduler`] (which owns
//! the [`ext_core::progress_push::ProgressPush`] of a scope) with real summaries,
//! failed deliveries and serde restarts.
//!
//! The delivery path (issue 7, acceptance 2): the pages answer through `delivery_report`
//! or not at all; a message may land late, land although its answer was lost, stay in the
//! composer, or be lost with a reload or a closed tab; the runtime may drop events to
//! retention (its hello then carries the agent snapshot); the extension may lose its whole
//! state (a new epoch, old markers still on the pages). After every step: nothing typed
//! twice (a landed wake is never typed again, and no message goes out while the previous
//! one of its scope has landed unconfirmed); no ack without a confirmed delivery (f); two
//! wakes of one scope are separated by a working event of its workspace; at most one
//! active delivery per scope; and at the end, liveness: with the pages idle, every
//! delivery resolves within the ledger's bound.
//!
//! Evidence of a loss (issue 23, item 7): a second tab opens a conversation and closes again,
//! and a reloaded page reports first with its thread not rendered yet. (n) A delivery is
//! resolved as failed (to be typed again) only when the page it was typed into showed that
//! it can never land — never because another tab or a half-rendered page lacks its marker.
//!
//! `CONTINUITY_PROPS_TRACE=1` prints every input and output of the world to stderr.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ext_core::auto_gate::AutoState;
use ext_core::binding::CatalogWorkspace;
use ext_core::companion_link::{
    HerdrConnection, HerdrStatus, PortGeneration, Request, RuntimeMessage, PROTOCOL_VERSION, REQUIRED_CAPABILITIES,
};
use ext_core::continuity::{
    Activity, Continuity, ContinuityInput, DeliveryOutcome, InboxTask, JudgeAnswer, PageReport, RuntimeAnswer, RuntimeCall, TaskCounts,
    Unresolved, UnresolvedWhy,
};
use ext_core::delivery_ledger::{SUBMITTED_DEADLINE_MS, TYPING_DEADLINE_MS, UNCERTAIN_GIVE_UP_MS};
use ext_core::json_read::{ReadJson, WriteJson};
use ext_core::progress_push::ProgressConfig;
use ext_core::semantic_auto::Verdict;
use ext_core::settle_tracker::{AgentSnapshot, PaneEventKind, SettleOutput, SettledStatus, StreamEvent, WakeId};
use ext_core::snapshot::Snapshot;
use ext_core::wake::{InFlight, Language, MessageKind, PageFacts, SchedulerInput, SchedulerOutput, WakeScheduler};
use ext_core::worker::{PageInput, PortCommand, Worker, WorkerInput, WorkerOutput, STORAGE_KEY};
use ext_core::Millis;
use proptest::prelude::*;
use serde_json::Value;

/// The two chat tabs of the world and the conversation each shows.
const CHATS: [(u32, &str); 2] = [(1, "0a000000-0000-4000-8000-00000000000a"), (2, "0b000000-0000-4000-8000-00000000000b")];
/// Semantic Auto's bound in this world (options page: judge use "in Auto").
const JUDGE_MAX: u32 = 2;
/// The side panel's port (it binds and unbinds, and presses Retry for the world).
const PANEL_PORT: u32 = 1_000;
/// The extension's version in the link's `hello`.
const EXTENSION_VERSION: &str = "0.1.0";

/// JSON text as the shell parses it (`JSON.parse`).
fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// A third chat that is never open: its tasks must never reach the two tabs (I3).
const OTHER_CONV: &str = "0c000000-0000-4000-8000-00000000000c";

fn url(conv: &str) -> String {
    format!("https://chatgpt.com/c/{conv}")
}
fn scope_key(conv: &str) -> String {
    format!("chatgpt:{conv}")
}
fn session_ref(conv: &str) -> String {
    format!("chatgpt:conv:{conv}")
}
fn conv_of_tab(tab: u32) -> &'static str {
    CHATS.iter().find(|(t, _)| *t == tab || mirror_tab(*t) == tab).map_or(OTHER_CONV, |(_, c)| c)
}
/// A second tab showing the same conversation as `tab` (issue 23, item 7).
fn mirror_tab(tab: u32) -> u32 {
    tab + 10
}
/// The user turn every conversation starts with (the human's first message): a rendered
/// thread always has at least one user turn.
const FIRST_TURN: &str = "human:first";
fn is_ours(turn: &str) -> bool {
    !turn.starts_with("human:")
}
fn workspace(i: u8) -> String {
    format!("w{}", i + 1)
}
fn pane(ws: u8, p: u8) -> String {
    format!("w{}:p{}", ws + 1, p + 1)
}

/// One step of the world.
#[derive(Debug, Clone)]
enum Op {
    /// The runtime sees a pane start working.
    Work { ws: u8, pane: u8 },
    /// The runtime sees a working pane settle.
    Settle { ws: u8, pane: u8, status: SettledStatus },
    /// The runtime sees a pane go away.
    RemovePane { ws: u8, pane: u8 },
    /// The runtime skips some seq numbers (gaps are allowed).
    SeqGap(u8),
    /// The stream delivers an old event again (duplicate / late reordered copy).
    Duplicate(usize),
    /// The stream replays the tail of what it already sent.
    ReplayTail(usize),
    /// The runtime restarts: new `boot_id`, seq continues, the link drops and comes back.
    RuntimeRestart,
    /// The companion link drops.
    LinkDown,
    /// The companion link comes back (resubscribe with `after_seq`).
    LinkUp,
    /// The service worker restarts from its persisted snapshot.
    WorkerRestart,
    /// The extension's stored state is lost (storage cleared, reinstall): a fresh machine
    /// with a new epoch; bindings and Auto are gone, the pages still show old markers.
    LoseState,
    /// A page reports new facts.
    /// `unresolved`: a needed page fact is missing or ambiguous there (issue 25).
    Page { chat: usize, composer: bool, draft: bool, generating: bool, permission_card: bool, unresolved: bool },
    /// A page's port goes away (navigation, reload, tab closed); the next report of that
    /// chat is a fresh page load rendered from the server.
    PageGone { chat: usize },
    /// The page reloads; its first report comes before its thread is rendered (no user
    /// turn, no marker, idle composer); the next report of that chat shows the thread.
    ReloadHalfRendered { chat: usize },
    /// A second tab opens the chat's conversation (a fresh load rendered from the server,
    /// idle, the chat's own tab still open), reports once and closes again.
    SecondTab { chat: usize },
    /// A message whose answer was lost lands late (a slow submit), if nothing since showed
    /// that it cannot any more (a reload, our text still in the composer).
    LandLate { chat: usize },
    /// A page answers its oldest unanswered delivery.
    Answer { chat: usize, how: Answer },
    /// A task of chat 0, chat 1 or the unopened chat becomes terminal in the inbox.
    TaskDone { owner: usize },
    /// The HUD's Auto switch.
    ToggleAuto { chat: usize },
    /// The side panel binds a chat to a workspace.
    Bind { chat: usize, ws: u8 },
    /// The side panel removes a chat's binding.
    Unbind { chat: usize },
    /// The HUD's manual Continue.
    Continue { chat: usize },
    /// Time passes, firing every deadline on the way.
    Advance(Millis),
    /// The user types a message and presses Queue (Q1), whatever the page is doing.
    Queue { chat: usize },
    /// The next read of the queue's stored record fails (Q4: nothing is overwritten).
    QueueReadFails,
    /// The next write of the queue's stored record fails.
    QueueWriteFails,
    /// The page's reply ends (semantic Auto, J1); `pending`: it announces a next step.
    ReplyEnds { chat: usize, pending: bool },
}

/// How a page answers a delivery.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// The new user turn with the marker appeared.
    Confirmed,
    /// Submitting failed.
    Failed,
    /// The answer is lost; `landed` says whether the turn appeared anyway, `left` whether
    /// our text stayed in the composer (Send never took it).
    NeverAnswered { landed: bool, left: bool },
}

fn op_strategy(workspaces: u8, panes: u8) -> impl Strategy<Value = Op> {
    let ws = 0..workspaces;
    let p = 0..panes;
    let status = prop_oneof![Just(SettledStatus::Idle), Just(SettledStatus::Done), Just(SettledStatus::Blocked)];
    let chat = 0..CHATS.len();
    let answer = prop_oneof![
        4 => Just(Answer::Confirmed),
        2 => Just(Answer::Failed),
        2 => (any::<bool>(), any::<bool>()).prop_map(|(landed, left)| Answer::NeverAnswered { landed, left: left && !landed }),
    ];
    prop_oneof![
        6 => (ws.clone(), p.clone()).prop_map(|(ws, pane)| Op::Work { ws, pane }),
        6 => (ws.clone(), p.clone(), status).prop_map(|(ws, pane, status)| Op::Settle { ws, pane, status }),
        1 => (ws.clone(), p).prop_map(|(ws, pane)| Op::RemovePane { ws, pane }),
        1 => (1u8..4).prop_map(Op::SeqGap),
        2 => any::<usize>().prop_map(Op::Duplicate),
        1 => any::<usize>().prop_map(Op::ReplayTail),
        1 => Just(Op::RuntimeRestart),
        2 => Just(Op::LinkDown),
        2 => Just(Op::LinkUp),
        2 => Just(Op::WorkerRestart),
        1 => Just(Op::LoseState),
        4 => (chat.clone(), prop::bool::weighted(0.85), prop::bool::weighted(0.2), prop::bool::weighted(0.25), prop::bool::weighted(0.1), prop::bool::weighted(0.15))
            .prop_map(|(chat, composer, draft, generating, permission_card, unresolved)| Op::Page { chat, composer, draft, generating, permission_card, unresolved }),
        1 => chat.clone().prop_map(|chat| Op::PageGone { chat }),
        1 => chat.clone().prop_map(|chat| Op::ReloadHalfRendered { chat }),
        1 => chat.clone().prop_map(|chat| Op::SecondTab { chat }),
        1 => chat.clone().prop_map(|chat| Op::LandLate { chat }),
        5 => (chat.clone(), answer).prop_map(|(chat, how)| Op::Answer { chat, how }),
        2 => (0usize..3).prop_map(|owner| Op::TaskDone { owner }),
        2 => chat.clone().prop_map(|chat| Op::ToggleAuto { chat }),
        2 => (chat.clone(), ws).prop_map(|(chat, ws)| Op::Bind { chat, ws }),
        1 => chat.clone().prop_map(|chat| Op::Unbind { chat }),
        1 => chat.prop_map(|chat| Op::Continue { chat }),
        3 => (1_000u64..(25 * 60_000)).prop_map(Op::Advance),
        2 => (0..CHATS.len()).prop_map(|chat| Op::Queue { chat }),
        1 => Just(Op::QueueReadFails),
        1 => Just(Op::QueueWriteFails),
        3 => (0..CHATS.len(), any::<bool>()).prop_map(|(chat, pending)| Op::ReplyEnds { chat, pending }),
    ]
}

/// One event the runtime produced, with what it did to the truth.
#[derive(Debug, Clone)]
struct Produced {
    event: StreamEvent,
    /// Some pane of its workspace works after it.
    working_after: bool,
}

/// What a page shows.
#[derive(Debug, Clone, Default)]
struct PageTruth {
    composer: bool,
    draft: bool,
    generating: bool,
    permission_card: bool,
    /// A needed fact (here: Send, ambiguous) does not resolve: nothing may be typed.
    unresolved: bool,
    /// The user turns on the page (the server's thread): [`FIRST_TURN`], then delivery ids
    /// (each turn's message id and marker).
    markers: Vec<String>,
    /// Which load of the page this is (a reload draws a new one).
    load: u32,
    /// Our unsent text in the composer (its delivery id).
    composer_marker: Option<String>,
}

impl PageTruth {
    fn idle() -> Self {
        PageTruth { composer: true, ..PageTruth::default() }
    }
    fn report(&self, conv: &str) -> PageReport {
        PageReport {
            url: url(conv),
            composer: self.composer,
            draft: self.draft,
            generating: self.generating,
            permission_card: self.permission_card,
            user_turns: u32::try_from(self.markers.len()).unwrap_or(u32::MAX),
            last_user_turn_id: self.markers.last().map(|turn| format!("msg-{turn}")),
            markers: self.markers.iter().rev().take(5).rev().filter(|t| is_ours(t)).cloned().collect(),
            // The layout label never gates (issue 25): a mixed page is as good as a known one.
            generation: Some(if self.load.is_multiple_of(2) { "chatgpt.classic" } else { "mixed" }.into()),
            unresolved: self.unresolved.then(|| Unresolved { fact: "send".into(), why: UnresolvedWhy::Ambiguous }),
            composer_marker: self.composer_marker.clone(),
            page_load: format!("L{}", self.load),
            ..PageReport::default()
        }
    }
    /// The report of a page whose thread is not rendered yet.
    fn half_rendered_report(&self, conv: &str) -> PageReport {
        PageReport { user_turns: 0, last_user_turn_id: None, markers: Vec::new(), ..self.report(conv) }
    }
    fn accepts_submission(&self) -> bool {
        self.composer && !self.draft && !self.generating && !self.permission_card && !self.unresolved && self.composer_marker.is_none()
    }
}

/// A delivery posted to a page and not resolved yet.
#[derive(Debug, Clone)]
struct Outstanding {
    id: String,
    tab: u32,
    tasks: Vec<String>,
    /// The page will never answer it (its answer was lost).
    lost: bool,
    /// Its user turn exists (the server has it).
    landed: bool,
    /// It can no longer land (the page reloaded, or Send never took the text).
    cannot_land: bool,
}

/// The simulated world around one `Continuity`.
struct World {
    now: Millis,
    /// The service worker's machine, driven as `ext-shell` drives it (see "The shell").
    worker: Worker,
    // --- the shell around it ---
    /// The open native port.
    native: Option<PortGeneration>,
    /// Each open page's port, by tab (one per tab; a reload or a worker restart connects a
    /// new one).
    ports: BTreeMap<u32, u32>,
    next_port: u32,
    /// The continuity snapshot as last written to `chrome.storage.local`.
    stored_snapshot: Option<Value>,
    /// The start view record as last written (`worker::START_VIEW_KEY`).
    stored_start_view: Option<Value>,
    // --- runtime truth ---
    boot: u32,
    next_seq: u64,
    log: Vec<Produced>,
    panes: BTreeMap<String, BTreeMap<String, bool>>,
    /// Inbox: task id → (owner ref, acknowledged).
    inbox: BTreeMap<String, (String, bool)>,
    next_task: u32,
    // --- link and stream ---
    link_up: bool,
    /// The `boot_id` of the last `hello` the machine received.
    hello_boot: Option<String>,
    /// The replay horizon (`last_seq`) of that `hello`.
    hello_last_seq: Option<u64>,
    /// Highest seq handed to the machine.
    handed_high_water: u64,
    /// Seqs first handed to the machine while their generation was not the current one.
    stale_seqs: BTreeSet<u64>,
    /// What JS feeds the worker next: answers to its outputs (native messages, storage),
    /// the pages' reactions, in order, after the current input's outputs were carried out.
    inputs: VecDeque<WorkerInput>,
    // --- the Activity timeline (O1) ---
    /// Per delivery id of an automatic wake typed into a page: its `sent` entries so far.
    wake_sent_entries: BTreeMap<String, u32>,
    /// Wake deliveries the worker posted to a page.
    wake_posted: BTreeSet<String>,
    /// Per scope: its newest Activity entry.
    last_activity: BTreeMap<String, Activity>,
    // --- pages and user ---
    pages: BTreeMap<u32, PageTruth>,
    auto_on: BTreeMap<String, bool>,
    bound: BTreeMap<String, String>,
    outstanding: BTreeMap<String, Outstanding>,
    /// Confirmed deliveries: `<scope key>|<id>` → (scope key, carried tasks). Two chats bound
    /// to one workspace get the same wake id, so ids are only unique per scope.
    confirmed: BTreeMap<String, (String, Vec<String>)>,
    /// Per scope: a wake whose delivery failed and is still owed, `(id, workspace, seq)`.
    owed_wake: BTreeMap<String, (String, String, u64)>,
    /// Every `Deliver` id since the last heal mark.
    delivered_since_mark: Vec<(String, String)>,
    /// Per conversation: the ids whose user turn the server has (survives reloads).
    threads: BTreeMap<String, Vec<String>>,
    /// Per scope: the last settle wake that landed, `(workspace, seq)`.
    last_landed_wake: BTreeMap<String, (String, u64)>,
    /// Page loads drawn so far.
    loads: u32,
    /// Worker lives so far (the epoch of each restore).
    lives: u32,
    /// The runtime keeps only the newest this-many events for replay (retention overflow);
    /// `None`: it keeps all.
    retention: Option<usize>,
    /// The stream `hello` carries the runtime's agent snapshot.
    agents_in_hello: bool,
    /// A replay lost events to retention since the last heal of the stream.
    replay_gap: bool,
    /// Seqs a replay lost to retention: never handed to the machine, so nothing it knows.
    lost_seqs: BTreeSet<u64>,
    /// Ids the server got since the extension last lost its state: a wake or inbox stem in
    /// here is never typed again. (Before a loss, a confirmed task whose ack was lost with
    /// the state may rightly be reported again.)
    landed_since_loss: BTreeSet<String>,
    /// Deliveries of a machine whose state was lost: they may still land late.
    orphans: Vec<Outstanding>,
    /// Deliveries the machine resolved as not confirmed, until its Activity entry says how
    /// (failed: it may be offered again; not confirmed: given up on).
    unconfirmed_ends: BTreeMap<String, (String, Outstanding)>,
    // --- the queue (Q1–Q8) ---
    /// The stored queue record (`chrome.storage.local`; survives worker restarts and a
    /// lost continuity state).
    queue_store: Option<String>,
    /// The next read / write of it fails.
    queue_read_fails: bool,
    queue_write_fails: bool,
    /// Per conversation: texts durably queued and not yet in the thread, in order.
    queue_model: BTreeMap<String, Vec<String>>,
    /// Queued texts that reached the thread.
    queue_landed: BTreeSet<String>,
    /// Queue deliveries: id → (conversation, texts).
    queue_sent: BTreeMap<String, (String, Vec<String>)>,
    /// The text each tab's user is queueing (typed, Queue pressed, not yet accepted).
    queue_typing: BTreeMap<u32, String>,
    next_queue_text: u32,
    /// The continuity state was lost while something was queued: exactly-once is then
    /// best effort (markers in view), no loss is still required.
    queue_state_lost: bool,
    // --- semantic Auto (J1, M7) ---
    /// Per conversation: judge continues in the thread since the last human turn or stream
    /// event of the workspace it is bound to.
    judge_run: BTreeMap<String, u32>,
    next_reply: u32,
}

/// The workspace and first task of an inbox wake id `inbox:<ws>#<task>`.
fn inbox_parts(id: &str) -> Option<(String, String)> {
    let (ws, task) = id.strip_prefix("inbox:")?.split_once('#')?;
    Some((ws.to_owned(), task.to_owned()))
}

fn wake_parts(id: &str) -> Option<(String, u64)> {
    let rest = stem(id).strip_prefix("wake:")?;
    let (ws, seq) = rest.split_once('#')?;
    Some((ws.to_owned(), seq.parse().ok()?))
}

/// What a delivery id is about, without its unique suffix (`wake:w1#4/e.1.0` → `wake:w1#4`).
fn stem(id: &str) -> &str {
    id.split_once('/').map_or(id, |(stem, _)| stem)
}

impl World {
    fn new(retention: Option<usize>, agents_in_hello: bool) -> Result<Self, TestCaseError> {
        let mut world = World {
            now: 0,
            worker: Worker::new(EXTENSION_VERSION, Continuity::new(), parse),
            native: None,
            ports: BTreeMap::new(),
            next_port: 1,
            stored_snapshot: None,
            stored_start_view: None,
            boot: 1,
            next_seq: 1,
            log: Vec::new(),
            panes: BTreeMap::new(),
            inbox: BTreeMap::new(),
            next_task: 0,
            link_up: false,
            hello_boot: None,
            hello_last_seq: None,
            handed_high_water: 0,
            stale_seqs: BTreeSet::new(),
            lost_seqs: BTreeSet::new(),
            inputs: VecDeque::new(),
            pages: BTreeMap::new(),
            auto_on: BTreeMap::new(),
            bound: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            confirmed: BTreeMap::new(),
            owed_wake: BTreeMap::new(),
            delivered_since_mark: Vec::new(),
            threads: CHATS.iter().map(|(_, conv)| ((*conv).to_owned(), vec![FIRST_TURN.to_owned()])).collect(),
            last_landed_wake: BTreeMap::new(),
            loads: 0,
            lives: 0,
            retention,
            agents_in_hello,
            replay_gap: false,
            landed_since_loss: BTreeSet::new(),
            orphans: Vec::new(),
            unconfirmed_ends: BTreeMap::new(),
            queue_store: None,
            queue_read_fails: false,
            queue_write_fails: false,
            queue_model: BTreeMap::new(),
            queue_landed: BTreeSet::new(),
            queue_sent: BTreeMap::new(),
            queue_typing: BTreeMap::new(),
            next_queue_text: 0,
            queue_state_lost: false,
            wake_sent_entries: BTreeMap::new(),
            wake_posted: BTreeSet::new(),
            last_activity: BTreeMap::new(),
            judge_run: BTreeMap::new(),
            next_reply: 0,
        };
        let settings = format!(r#"{{"mode":"in_auto","max_continues":{JUDGE_MAX}}}"#);
        world.feed(ContinuityInput::JudgeSettings { stored: Some(serde_json::from_str(&settings).map_err(|_| ())) })?;
        world.link_up = true;
        world.start_worker()?;
        for (tab, _) in CHATS {
            world.open_page(tab);
            world.report_page(tab)?;
        }
        Ok(world)
    }

    fn boot_id(&self) -> String {
        format!("b{}", self.boot)
    }

    /// The continuity machine inside the worker (read-only).
    fn machine(&self) -> &Continuity {
        self.worker.continuity()
    }

    // --- The shell: the world's actions become `WorkerInput`s, exactly as `ext-shell`
    // feeds them (page facts and commands on the page's port, bindings on the side panel's,
    // native events and settings one to one), and `WorkerOutput`s become what the world
    // observes (see `drain`). ---

    /// A (new) worker starts: the side panel connects, then the native port opens at the
    /// start's timer (it fails while the companion is unreachable). The pages connect as they report.
    fn start_worker(&mut self) -> Result<(), TestCaseError> {
        self.native = None;
        self.ports.clear();
        self.inputs.push_back(WorkerInput::PortConnected { port: PANEL_PORT, tab: None, panel: true, url: String::new() });
        self.inputs.push_back(WorkerInput::Start);
        // The shell's timer for `next_deadline`, due at once: the link starts.
        self.inputs.push_back(WorkerInput::Timer);
        self.run()
    }

    /// What the shell feeds the worker for `input`: a page's facts and commands on its port
    /// (the port connects first when the tab has none: a new page load), bindings on the
    /// side panel's port, a page gone as its port closing, native events and settings as
    /// they are. A page without a port sends nothing.
    fn shell_inputs(&mut self, input: ContinuityInput) -> Result<Vec<WorkerInput>, TestCaseError> {
        let page = |world: &Self, tab: u32, command: PortCommand| {
            world.ports.get(&tab).map(|&port| WorkerInput::Page { port, message: PageInput::Command(command) }).into_iter().collect()
        };
        Ok(match input {
            ContinuityInput::PageReported { tab, report } => {
                let mut inputs = Vec::new();
                let port = match self.ports.get(&tab) {
                    Some(port) => *port,
                    None => {
                        let port = self.next_port;
                        self.next_port += 1;
                        self.ports.insert(tab, port);
                        inputs.push(WorkerInput::PortConnected { port, tab: Some(tab), panel: false, url: report.url.clone() });
                        port
                    }
                };
                inputs.push(WorkerInput::Page { port, message: PageInput::Facts { url: report.url.clone(), report: Some(report) } });
                inputs
            }
            ContinuityInput::PageGone { tab } => self.ports.remove(&tab).map(|port| WorkerInput::PortClosed { port }).into_iter().collect(),
            ContinuityInput::DeliveryReport { tab, id, outcome } => page(self, tab, PortCommand::DeliveryReport { id, outcome }),
            ContinuityInput::ToggleAuto { tab } => page(self, tab, PortCommand::HudAction("toggle_auto")),
            ContinuityInput::Continue { tab } => page(self, tab, PortCommand::HudAction("continue")),
            ContinuityInput::QueueAdd { tab, text, whole_chars } => page(self, tab, PortCommand::QueueAdd { text, whole_chars }),
            ContinuityInput::TurnEnded {
                tab,
                user_text,
                assistant_text,
                user_marker,
                message_id,
                user_message_id,
                pressed,
                user_stopped,
            } => {
                let command =
                    PortCommand::TurnEnded { user_text, assistant_text, user_marker, message_id, user_message_id, pressed, user_stopped };
                page(self, tab, command)
            }
            ContinuityInput::Bind { tab, workspace } => {
                let command = PortCommand::Bind { tab_id: tab, workspace };
                vec![WorkerInput::Page { port: PANEL_PORT, message: PageInput::Command(command) }]
            }
            ContinuityInput::Unbind { scope_key } => {
                vec![WorkerInput::Page { port: PANEL_PORT, message: PageInput::Command(PortCommand::Unbind { scope_key }) }]
            }
            input @ (ContinuityInput::StreamEvent(_)
            | ContinuityInput::StreamHello { .. }
            | ContinuityInput::InboxChanged { .. }
            | ContinuityInput::JudgeSettings { .. }) => vec![WorkerInput::Continuity(input)],
            other => return Err(TestCaseError::fail(format!("the world has no shell path for {other:?}"))),
        })
    }

    /// Queues what the shell feeds for `input` after what is queued already.
    fn push(&mut self, input: ContinuityInput) -> Result<(), TestCaseError> {
        let inputs = self.shell_inputs(input)?;
        self.inputs.extend(inputs);
        Ok(())
    }

    /// Feeds one input (through the shell) and everything it causes, checking each output.
    fn feed(&mut self, input: ContinuityInput) -> Result<(), TestCaseError> {
        self.push(input)?;
        self.run()
    }

    /// Feeds one input the shell gives the worker directly.
    fn feed_worker(&mut self, input: WorkerInput) -> Result<(), TestCaseError> {
        self.inputs.push_back(input);
        self.run()
    }

    fn run(&mut self) -> Result<(), TestCaseError> {
        let mut steps = 0u32;
        while let Some(input) = self.inputs.pop_front() {
            steps += 1;
            prop_assert!(steps < 10_000, "runaway input loop");
            if let WorkerInput::Continuity(ContinuityInput::StreamEvent(event)) = &input {
                if event.seq > self.handed_high_water {
                    self.handed_high_water = event.seq;
                    // Another generation's event outside the replay horizon: an old source.
                    let replayed = self.hello_last_seq.is_some_and(|last| event.seq <= last);
                    if self.hello_boot.as_deref() != Some(event.boot_id.as_str()) && !replayed {
                        self.stale_seqs.insert(event.seq);
                    }
                }
                let bound = &self.bound;
                self.judge_run.retain(|conv, _| bound.get(&scope_key(conv)) != Some(&event.workspace_id));
            }
            if let WorkerInput::Continuity(ContinuityInput::StreamHello { boot_id, last_seq, .. }) = &input {
                self.hello_boot = Some(boot_id.clone());
                self.hello_last_seq = *last_seq;
            }
            if std::env::var_os("CONTINUITY_PROPS_TRACE").is_some() {
                eprintln!("{:>8} <- {input:?}", self.now);
            }
            self.worker.handle(self.now, input);
            // The machine resolves deliveries before anything it outputs.
            self.observe_ledger();
            self.drain()?;
            self.check_ledger()?;
        }
        Ok(())
    }

    /// A page load of `tab` (first open or reload): it shows the server's thread.
    fn open_page(&mut self, tab: u32) {
        self.loads += 1;
        let markers = self.threads.get(conv_of_tab(tab)).cloned().unwrap_or_default();
        let page = PageTruth { markers, load: self.loads, ..PageTruth::idle() };
        self.pages.insert(tab, page);
        // A message that had not reached the server when its page went away never will.
        for out in self.outstanding.values_mut().filter(|o| o.tab == tab && !o.landed) {
            out.cannot_land = true;
        }
    }

    /// The server gets the message `out` of scope `key`: its user turn joins the thread
    /// and every open page of the conversation.
    fn land(&mut self, key: &str) -> Result<(), TestCaseError> {
        let Some(out) = self.outstanding.get_mut(key) else { return Ok(()) };
        prop_assert!(!out.cannot_land, "the model landed {} after it could not land", out.id);
        out.landed = true;
        let (id, tab) = (out.id.clone(), out.tab);
        let conv = conv_of_tab(tab).to_owned();
        self.landed_since_loss.insert(format!("{conv}|{}", stem(&id)));
        self.threads.entry(conv.clone()).or_default().push(id.clone());
        for (page_tab, page) in self.pages.iter_mut() {
            if conv_of_tab(*page_tab) == conv {
                page.markers.push(id.clone());
            }
        }
        if let Some(ws_seq) = wake_parts(&id) {
            self.last_landed_wake.insert(key.to_owned(), ws_seq);
        }
        self.queue_batch_landed(&id);
        if id.starts_with("judge:") {
            // M7: at most JUDGE_MAX automatic continues in a row.
            let run = self.judge_run.entry(conv.clone()).or_default();
            *run += 1;
            prop_assert!(*run <= JUDGE_MAX, "M7: {} judge continues in a row in {} ({})", run, conv, id);
        }
        Ok(())
    }

    /// A queue batch's texts are in the thread now.
    fn queue_batch_landed(&mut self, id: &str) {
        if let Some((conv, texts)) = self.queue_sent.get(id).cloned() {
            for text in texts {
                self.queue_model.entry(conv.clone()).or_default().retain(|t| *t != text);
                self.queue_landed.insert(text);
            }
        }
    }

    /// Mirrors what the machine decided: a delivery no longer in its ledger was resolved —
    /// confirmed if it landed, otherwise not sent, lost or abandoned.
    fn observe_ledger(&mut self) {
        let keys: Vec<String> = self.outstanding.keys().cloned().collect();
        for key in keys {
            let Some(out) = self.outstanding.get(&key).cloned() else { continue };
            if self.machine().ledger().active().any(|d| d.id == out.id) {
                continue;
            }
            self.resolve(&key, out.landed);
        }
    }

    /// Ledger invariants after every step: at most one active delivery per scope, and
    /// (liveness) none older than the bound while its page is idle.
    fn check_ledger(&self) -> Result<(), TestCaseError> {
        let mut scopes = BTreeSet::new();
        for delivery in self.machine().ledger().active() {
            prop_assert!(scopes.insert(delivery.scope_key.clone()), "(e) two active deliveries for {}", delivery.scope_key);
        }
        Ok(())
    }

    fn resolve(&mut self, key: &str, ok: bool) {
        let Some(out) = self.outstanding.remove(key) else { return };
        if ok {
            self.confirmed.insert(format!("{key}|{}", stem(&out.id)), (key.to_owned(), out.tasks));
            self.owed_wake.remove(key);
            return;
        }
        // Abandoned (no evidence either way) until its Activity entry says it failed: the
        // machine does not offer it again.
        if self.owed_wake.get(key).is_some_and(|(id, ..)| stem(id) == stem(&out.id)) {
            self.owed_wake.remove(key);
        }
        self.unconfirmed_ends.insert(out.id.clone(), (key.to_owned(), out));
    }

    /// A delivery resolved as failed (not sent, or lost with a reload) may be offered again:
    /// (n) issue 23, item 7: only when the page it was typed into showed it can never land —
    /// never because another tab, or a reloaded page whose thread is not rendered yet,
    /// lacks its marker.
    fn unconfirmed_end(&mut self, id: &str, failed: bool) -> Result<(), TestCaseError> {
        let Some((key, out)) = self.unconfirmed_ends.remove(id) else { return Ok(()) };
        if !failed {
            return Ok(());
        }
        prop_assert!(!out.landed, "(n) {id} resolved as failed (to be typed again) although it landed");
        prop_assert!(out.cannot_land, "(n) {id} resolved as failed (to be typed again) although it may still land");
        if let Some((ws, seq)) = wake_parts(&out.id) {
            self.owed_wake.insert(key, (out.id.clone(), ws, seq));
        }
        Ok(())
    }

    /// The inbox counters of a ref (what `inbox.counts` / `inbox_changed` report).
    fn counts_of(&self, owner: &str) -> TaskCounts {
        let mine = self.inbox.values().filter(|(o, _)| o == owner);
        let acked = mine.clone().filter(|(_, acked)| *acked).count() as u64;
        TaskCounts { running: 0, unacked: mine.count() as u64 - acked, acked }
    }

    /// Whether a pane of `ws` works now (runtime truth).
    fn working_now(&self, ws: &str) -> bool {
        self.panes.get(ws).is_some_and(|panes| panes.values().any(|w| *w))
    }

    /// Whether the machine has been handed an event of `ws` after `seq` that made it work.
    /// An event a replay lost to retention was never handed: the machine cannot know of it
    /// (regression, CI of stop 19: a working event lost between a settle and the pane's
    /// removal was counted as known, though the replay skipped it).
    fn known_working_after(&self, ws: &str, seq: u64) -> bool {
        self.log.iter().any(|p| {
            p.event.workspace_id == ws
                && p.event.seq > seq
                && p.event.seq <= self.handed_high_water
                && p.event.kind == PaneEventKind::Working
                && !self.stale_seqs.contains(&p.event.seq)
                && !self.lost_seqs.contains(&p.event.seq)
        })
    }

    /// Whether a working event of `ws` reached the machine only from an old source (another
    /// generation, outside the subscription's replay horizon). The modelled runtime never
    /// produces one, so this stays false; it documents the one case the strict checks would
    /// have to exempt. Regression: `[LinkDown, Work{w1,p2}, RuntimeRestart, Bind{chat0,w1},
    /// ToggleAuto{chat0}, Work{w1,p1}, Settle{w1,p1}]` then link up used to wake while p2
    /// worked, because replayed history of the old generation was dropped as "stale".
    fn has_stale_working(&self, ws: &str) -> bool {
        self.log
            .iter()
            .any(|p| p.event.workspace_id == ws && p.event.kind == PaneEventKind::Working && self.stale_seqs.contains(&p.event.seq))
    }

    /// The truth about `ws` as of the last event handed to the machine.
    fn truth_working_at_handed(&self, ws: &str) -> bool {
        self.log.iter().rev().find(|p| p.event.workspace_id == ws && p.event.seq <= self.handed_high_water).is_some_and(|p| p.working_after)
    }

    /// The shell carries out the worker's outputs in order: `OpenNative` is answered at
    /// once (a port while the companion is reachable, a failure otherwise); the runtime's
    /// answers (the `hello`, continuity calls, the stream), the storage's answers (read,
    /// written, or the failure the world set up) and the pages' reactions are fed after
    /// this input's outputs were carried out.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        while let Some(output) = self.worker.poll() {
            if std::env::var_os("CONTINUITY_PROPS_TRACE").is_some() {
                eprintln!("{:>8} -> {output:?}", self.now);
            }
            match output {
                WorkerOutput::OpenNative { port } => {
                    prop_assert!(self.native.is_none(), "a second native port while {:?} is open", self.native);
                    if self.link_up {
                        self.native = Some(port);
                        self.worker.handle(self.now, WorkerInput::NativeOpened { port });
                    } else {
                        let error = Some("Specified native messaging host not found.".to_owned());
                        self.worker.handle(self.now, WorkerInput::NativeClosed { port, error });
                    }
                }
                WorkerOutput::CloseNative { port } => {
                    if self.native == Some(port) {
                        self.native = None;
                    }
                }
                WorkerOutput::SendLink { request } => {
                    let Some(port) = self.native else { return Err(TestCaseError::fail("a link request without a native port")) };
                    let message = match request {
                        Request::Hello { id, .. } => RuntimeMessage::HelloAnswer {
                            id,
                            runtime_version: "0.1.0".into(),
                            protocol: PROTOCOL_VERSION,
                            compatible: true,
                            capabilities: Some(REQUIRED_CAPABILITIES.iter().map(|c| (*c).to_owned()).collect()),
                            herdr: HerdrStatus {
                                state: HerdrConnection::Connected,
                                protocol: None,
                                version: None,
                                socket: "/tmp/herdr.sock".into(),
                                detail: None,
                            },
                        },
                        Request::Ping { id } => RuntimeMessage::Pong { id },
                    };
                    self.inputs.push_back(WorkerInput::LinkMessage { port, message });
                }
                WorkerOutput::Call { wire_id, call } => {
                    prop_assert!(self.native.is_some() && self.link_up, "a continuity call {call:?} without a native port");
                    self.answer_request(wire_id, call)?;
                }
                WorkerOutput::StorageRead { token, key } => {
                    prop_assert_eq!(key, ext_core::queue::STORE_KEY, "a read of an unexpected storage key");
                    let outcome = if std::mem::take(&mut self.queue_read_fails) {
                        Err("read failed".to_owned())
                    } else {
                        // The items `chrome.storage.local.get` gives.
                        Ok(match &self.queue_store {
                            Some(text) => serde_json::json!({ ext_core::queue::STORE_KEY: text }),
                            None => serde_json::json!({}),
                        })
                    };
                    self.inputs.push_back(WorkerInput::Stored { token, outcome });
                }
                WorkerOutput::StorageWrite { token, key, value } if key == STORAGE_KEY => {
                    self.stored_snapshot = Some(value);
                    self.inputs.push_back(WorkerInput::Stored { token, outcome: Ok(Value::Null) });
                }
                WorkerOutput::StorageWrite { token, key, value } if key == ext_core::worker::START_VIEW_KEY => {
                    prop_assert_eq!(token, 0, "the start view is written fire and forget");
                    self.stored_start_view = Some(value);
                }
                WorkerOutput::StorageWrite { token, key, value } => {
                    prop_assert_eq!(key, ext_core::queue::STORE_KEY, "a write of an unexpected storage key");
                    let outcome = if std::mem::take(&mut self.queue_write_fails) {
                        Err("quota".to_owned())
                    } else {
                        self.queue_store = Some(value.to_string());
                        Ok(Value::Null)
                    };
                    self.inputs.push_back(WorkerInput::Stored { token, outcome });
                }
                WorkerOutput::Post { port, message } => self.page_post(port, &message)?,
                WorkerOutput::Activity(entry) => self.check_activity(entry)?,
                WorkerOutput::OpenTab { .. } => return Err(TestCaseError::fail("X1: a handoff step without the HUD's Handoff")),
                // These pages never report recovery facts: recovery has nothing to act on.
                WorkerOutput::ReloadTab { tab } => {
                    prop_assert!(false, "recovery reloaded tab {tab} without recovery facts");
                }
                WorkerOutput::Warn(text) => prop_assert!(false, "the worker warned: {text}"),
                WorkerOutput::PostNative { .. } | WorkerOutput::RoundTrip { .. } => {}
            }
        }
        Ok(())
    }

    /// A message the worker posted on a page or panel port, as the page (or panel) takes it.
    fn page_post(&mut self, port: u32, message: &Value) -> Result<(), TestCaseError> {
        let kind = message["type"].as_str().unwrap_or_default();
        if port == PANEL_PORT {
            prop_assert!(matches!(kind, "hud" | "panel" | "diagnostics"), "the side panel was sent {message}");
            return Ok(());
        }
        let tab = self.ports.iter().find(|(_, p)| **p == port).map(|(tab, _)| *tab);
        let Some(tab) = tab else { return Err(TestCaseError::fail(format!("a post to closed port {port}: {message}"))) };
        let text = |field: &str| message[field].as_str().unwrap_or_default().to_owned();
        match kind {
            "deliver" => {
                // The delivery names the page it was decided for: this page's URL and load.
                let page_load = self.pages.get(&tab).map(|p| format!("L{}", p.load));
                prop_assert_eq!(Some(text("page_load")), page_load, "a delivery for another page load of tab {}", tab);
                prop_assert_eq!(text("url"), url(conv_of_tab(tab)), "a delivery for another conversation");
                self.check_delivery(tab, text("id"), &text("text"))?;
            }
            "clear_composer" => {
                let id = text("id");
                if let Some(page) = self.pages.get_mut(&tab).filter(|p| p.composer_marker.as_deref() == Some(id.as_str())) {
                    page.composer_marker = None;
                    let report = page.report(conv_of_tab(tab));
                    self.push(ContinuityInput::PageReported { tab, report })?;
                }
            }
            "queue_accepted" => self.queue_accepted(tab, &text("text"))?,
            // These pages never report permission cards (M5: nothing to click).
            "card_allow" => prop_assert!(false, "a card command without a card report: {message} on tab {tab}"),
            // These pages never report recovery facts: recovery has nothing to act on.
            "snapshot_probe" | "recovery_reload" | "recovery_retry" => {
                prop_assert!(false, "recovery acted without recovery facts: {message} on tab {tab}");
            }
            "profile" | "hud" | "delivery_seen" | "notice" | "insert" => {}
            other => prop_assert!(false, "a page was sent an unknown message {other}: {message}"),
        }
        Ok(())
    }

    /// The Activity timeline (O1): (k) every automatic wake typed into a page has exactly
    /// one `sent` entry with its delivery id; (l) M1/M7: with Auto off nothing automatic is
    /// recorded as sent but the user's own queued turn (Q2, Q10), and a wake held back says
    /// why with a reason the gate checks no later than Auto; (m) a withheld entry never
    /// repeats the scope's previous entry (once per change, not per page fact).
    fn check_activity(&mut self, entry: Activity) -> Result<(), TestCaseError> {
        let json = entry.write_json();
        let (kind, outcome, reason) = (
            json["kind"].as_str().unwrap_or_default(),
            json["outcome"].as_str().unwrap_or_default(),
            json["reason"].as_str().unwrap_or_default(),
        );
        let auto = self.auto_on.get(&entry.scope_key).copied().unwrap_or(false);
        if let Some(id) = entry.id.as_deref().filter(|_| matches!(outcome, "failed" | "not_confirmed")) {
            self.unconfirmed_end(id, outcome == "failed")?;
        }
        if (kind, outcome) == ("wake", "sent") {
            let id = entry.id.clone().unwrap_or_default();
            // The entry goes out when the machine decides the delivery; the worker posts the
            // delivery once the snapshot naming it is written, so the entry comes first (the
            // end of the run checks that every entry's delivery was posted).
            let count = self.wake_sent_entries.entry(id.clone()).or_insert(0);
            *count += 1;
            prop_assert_eq!(*count, 1, "(k) {} recorded as sent twice", id);
        }
        let named =
            ext_core::continuity::REASON_CODES.contains(&reason) || ext_core::auto_gate::WakeWithheld::read_json(&json["reason"]).is_ok();
        prop_assert!(named, "the reason {reason} of {kind} {outcome} has no text in the side panel");
        if outcome == "sent" {
            prop_assert!(auto || kind == "queue_batch", "(l) {kind} {outcome} ({reason}) recorded with Auto off in {}", entry.scope_key);
        }
        if outcome == "withheld" && kind == "wake" && !auto {
            prop_assert!(
                matches!(reason, "auto_off" | "not_bound" | "no_active_conversation" | "project_auto_not_allowed"),
                "(l) a wake withheld with Auto off for {reason} in {}",
                entry.scope_key
            );
        }
        if outcome == "withheld" {
            prop_assert_ne!(self.last_activity.get(&entry.scope_key), Some(&entry), "(m) the same withheld entry twice in a row");
        }
        self.last_activity.insert(entry.scope_key.clone(), entry);
        Ok(())
    }

    fn check_delivery(&mut self, tab: u32, id: String, text: &str) -> Result<(), TestCaseError> {
        prop_assert!(!id.starts_with("handoff:"), "X1: a handoff seed {} without the HUD's Handoff", id);
        // (o) Durable first (issue 23, item 7): the shell writes the machine's snapshot before
        // it posts a `deliver`; that snapshot must name the delivery, so a worker that dies
        // right after posting finds it in its ledger and never offers it again.
        let written = self.stored_snapshot.as_ref().map(Value::to_string).unwrap_or_default();
        prop_assert!(written.contains(&format!("\"id\":\"{id}\"")), "(o) {} posted before a snapshot naming it was stored", id);
        let conv = conv_of_tab(tab);
        prop_assert_ne!(conv, OTHER_CONV, "delivered to an unknown tab {}", tab);
        let key = scope_key(conv);
        let page = self.pages.get(&tab);
        // (d) M7: only an idle page with a composer and no draft or permission card.
        prop_assert!(page.is_some_and(PageTruth::accepts_submission), "(d) {id} delivered to a busy or absent page: {page:?}");
        // (e) never two deliveries in flight for one scope; nothing typed twice: the previous
        // message of this scope is resolved, and if it landed the machine knew it.
        if let Some(previous) = self.outstanding.get(&key) {
            prop_assert!(!previous.landed, "typed twice: {id} while {} had landed", previous.id);
            prop_assert!(false, "(e) {id} while {:?} is in flight", previous);
        }
        // A landed wake of this settle is never typed again (whatever its id).
        let landed_before = self.landed_since_loss.contains(&format!("{conv}|{}", stem(&id)));
        prop_assert!(!(landed_before && (id.starts_with("wake:") || id.starts_with("inbox:"))), "typed twice: {id} landed before");
        // The marker names the delivery and the chat it was typed into (issue 24).
        prop_assert!(
            text.ends_with(&format!("[herdr-continuity {id} ref={}]", session_ref(conv))),
            "marker line missing or naming another chat: {text}"
        );
        let auto = self.auto_on.get(&key).copied().unwrap_or(false);
        if id.starts_with("wake:") || id.starts_with("inbox:") {
            self.wake_sent_entries.entry(id.clone()).or_insert(0);
            self.wake_posted.insert(id.clone());
        }
        if id.starts_with("qb:") {
            // The user's own queued turn: Auto and bindings do not matter (Q10).
            self.check_queue_delivery(tab, &id, text)?;
        } else if id.starts_with("judge:") {
            // Semantic Auto: Auto on, bound, and the user's queued turn goes first (Q2).
            prop_assert!(auto && self.bound.contains_key(&key), "{id} with Auto off or unbound");
            let queued = self.queue_model.get(&key).is_some_and(|q| !q.is_empty());
            prop_assert!(!queued || self.queue_state_lost, "Q2: judge continue {id} while {conv} has queued messages");
        } else if id.starts_with("continue:") {
            // M4: a manual continue exists only while Auto is off.
            prop_assert!(!auto, "manual continue {id} with Auto on");
        } else {
            // (c) M1/M7: nothing automatic with Auto off.
            prop_assert!(auto, "(c) {id} delivered automatically with Auto off");
            let bound = self.bound.get(&key);
            prop_assert!(bound.is_some(), "{id} delivered to an unbound chat");
        }
        // I3: a wake carries only this chat's own tasks.
        let carried: Vec<String> = self.inbox.keys().filter(|task| text.contains(&format!("- {task} ["))).cloned().collect();
        for task in &carried {
            let owner = self.inbox.get(task).map(|(owner, _)| owner.clone()).unwrap_or_default();
            prop_assert_eq!(&owner, &session_ref(conv), "I3: {} of {} carried into {}", task, owner, conv);
            // (i) I2/I4: never two deliveries carrying the same task (one confirmed before).
            let earlier = self.confirmed.iter().find(|(_, (_, tasks))| tasks.contains(task)).map(|(k, _)| k.clone());
            prop_assert!(earlier.is_none(), "(i) {id} carries {task} already carried by confirmed {earlier:?}");
        }
        // (a) no delivery id is offered again once confirmed (inbox wakes included).
        if id.starts_with("wake:") || id.starts_with("inbox:") {
            prop_assert!(
                !self.confirmed.contains_key(&format!("{key}|{}", stem(&id))),
                "(a) {id} delivered again to {key} after it was confirmed"
            );
        }
        if let Some((ws, first)) = inbox_parts(stem(&id)) {
            // (i) an inbox wake: the chat's own bound workspace, not working as far as the
            // machine was told, named after the smallest task it carries.
            prop_assert_eq!(self.bound.get(&key), Some(&ws), "inbox wake {} for a workspace this chat is not bound to", &id);
            prop_assert!(!self.truth_working_at_handed(&ws), "(i) {id} while a pane of {ws} is working");
            prop_assert_eq!(carried.iter().min(), Some(&first), "(i) {} is not named after its smallest task {:?}", &id, &carried);
        }
        if let Some((ws, seq)) = wake_parts(&id) {
            prop_assert_eq!(self.bound.get(&key), Some(&ws), "wake {} for a workspace this chat is not bound to", &id);
            // (a) P8: once confirmed, a settle is never delivered again.
            // Two wakes of one scope are separated by a working event of its workspace.
            if let Some((last_ws, last_seq)) = self.last_landed_wake.get(&key) {
                if *last_ws == ws {
                    let worked_between = self.log.iter().any(|p| {
                        p.event.workspace_id == ws && p.event.kind == PaneEventKind::Working && p.event.seq > *last_seq && p.event.seq < seq
                    });
                    prop_assert!(worked_between, "two wakes of {key} ({last_seq}, {seq}) without a working event of {ws} between them");
                }
            }
            // (b) P7/P8: a wake reports a settle of its workspace that left no pane working
            // (replayed history of an earlier runtime start counts: it is the durable record)…
            let produced = self.log.iter().find(|p| p.event.seq == seq);
            prop_assert!(!self.has_stale_working(&ws), "an old-source working event of {ws} reached the machine");
            // A settle lost to retention is recovered from the hello's agent snapshot and
            // named after the replay horizon: the workspace must have no working pane then.
            // Within a replay that lost events to retention the tracker cannot know the exact
            // settle event; what it must still hold is that no pane works when it wakes.
            let reconciled = ((self.agents_in_hello && self.hello_last_seq.is_some_and(|through| seq >= through)) || self.replay_gap)
                && !self.truth_working_at_handed(&ws);
            prop_assert!(
                reconciled || produced.is_some_and(|p| p.event.workspace_id == ws && !p.working_after),
                "(b) {id} is a partial settle of {ws}: {produced:?}"
            );
            // (g) P9: …produced by the generation that was speaking, never a stale one…
            prop_assert!(!self.stale_seqs.contains(&seq), "(g) {id} wakes on a stale-generation event");
            // …and never goes out while the machine has been told a pane works again.
            prop_assert!(!self.known_working_after(&ws, seq), "(b) {id} after {ws} went working again");
            prop_assert!(!self.truth_working_at_handed(&ws), "(b) {id} while a pane of {ws} is working (partial settle)");
            self.owed_wake.remove(&key);
        }
        self.delivered_since_mark.push((key.clone(), id.clone()));
        self.outstanding.insert(key, Outstanding { id, tab, tasks: carried, lost: false, landed: false, cannot_land: false });
        Ok(())
    }

    /// The stored queue texts of `conv`, in order.
    fn stored_queue(&self, conv: &str) -> Vec<String> {
        let book = ext_core::queue::QueueBook::parse(self.queue_store.as_deref()).expect("the machine writes only readable records");
        book.items(&scope_key(conv)).iter().map(|i| i.text.clone()).collect()
    }

    /// Q1, Q4: the page may empty its composer only once the text is durably stored, and
    /// the store then holds every queued text of the conversation, in order.
    fn queue_accepted(&mut self, tab: u32, text: &str) -> Result<(), TestCaseError> {
        let conv = conv_of_tab(tab);
        let typed = self.queue_typing.remove(&tab);
        prop_assert_eq!(typed.as_deref(), Some(text), "accepted a text the user did not queue");
        let stored = self.stored_queue(conv);
        prop_assert!(stored.iter().any(|t| t == text), "Q4: {} accepted but not stored: {:?}", text, stored);
        let model = self.queue_model.entry(scope_key(conv)).or_default();
        model.push(text.to_owned());
        if !self.queue_state_lost {
            let unlanded: Vec<&String> = stored.iter().filter(|t| !self.queue_landed.contains(*t)).collect();
            prop_assert_eq!(unlanded, model.iter().collect::<Vec<_>>(), "Q3: the stored queue is not what was queued, in order");
        }
        if let Some(page) = self.pages.get_mut(&tab) {
            page.draft = false;
            let report = page.report(conv);
            self.push(ContinuityInput::PageReported { tab, report })?;
        }
        Ok(())
    }

    /// Q2, Q3, Q5: a batch carries what is queued and not in the thread, in order, once.
    fn check_queue_delivery(&mut self, tab: u32, id: &str, text: &str) -> Result<(), TestCaseError> {
        let conv = conv_of_tab(tab);
        let body = text.strip_suffix(&format!("\n[herdr-continuity {id} ref={}]", session_ref(conv))).unwrap_or(text);
        let texts: Vec<String> = body.split("\n\n").map(str::to_owned).collect();
        if !self.queue_state_lost {
            for t in &texts {
                prop_assert!(!self.queue_landed.contains(t), "Q5: typed twice: {t} is already in the thread ({id})");
            }
            let model = self.queue_model.get(&scope_key(conv)).cloned().unwrap_or_default();
            prop_assert_eq!(&texts, &model, "Q3: batch {} is not the queue in order", id);
        }
        self.queue_sent.insert(id.to_owned(), (scope_key(conv), texts));
        Ok(())
    }

    /// Nothing queued is lost: every durably queued text is in the thread or still stored.
    fn check_queue_kept(&self) -> Result<(), TestCaseError> {
        for (key, texts) in &self.queue_model {
            let conv = key.trim_start_matches("chatgpt:");
            let stored = self.stored_queue(conv);
            for t in texts {
                prop_assert!(stored.contains(t) || self.queue_landed.contains(t), "Q4: {t} was lost");
            }
        }
        Ok(())
    }

    fn answer_request(&mut self, wire_id: String, call: RuntimeCall) -> Result<(), TestCaseError> {
        let answer = match call {
            RuntimeCall::Subscribe { after_seq, .. } => {
                self.inputs.push_back(WorkerInput::CallAnswered { wire_id, result: Ok(RuntimeAnswer::Subscribed) });
                // The runtime's agent snapshot: every known pane, settled or working.
                let agents = self.agents_in_hello.then(|| {
                    self.panes
                        .iter()
                        .flat_map(|(ws, panes)| {
                            panes.iter().map(move |(pane_id, working)| AgentSnapshot {
                                workspace_id: ws.clone(),
                                pane_id: pane_id.clone(),
                                settled: (!*working).then_some(SettledStatus::Idle),
                            })
                        })
                        .collect()
                });
                self.inputs.push_back(WorkerInput::Continuity(ContinuityInput::StreamHello {
                    boot_id: self.boot_id(),
                    last_seq: Some(self.log.iter().map(|p| p.event.seq).max().unwrap_or(0)),
                    agents,
                    log_id: Some("log-1".into()),
                    log_reset: false,
                }));
                // Without after_seq only live events follow; with it, the log after it.
                if let Some(after) = after_seq {
                    prop_assert!(after <= self.handed_high_water, "resumes after an unseen seq {after}");
                    // Retention overflow: only the newest events are still there to replay.
                    let kept = self.retention.map_or(0, |keep| self.log.len().saturating_sub(keep));
                    self.replay_gap |= self.log.iter().take(kept).any(|p| p.event.seq > after);
                    self.lost_seqs.extend(self.log.iter().take(kept).filter(|p| p.event.seq > after).map(|p| p.event.seq));
                    let replay: Vec<StreamEvent> =
                        self.log.iter().skip(kept).filter(|p| p.event.seq > after).map(|p| p.event.clone()).collect();
                    self.inputs.extend(replay.into_iter().map(|event| WorkerInput::Continuity(ContinuityInput::StreamEvent(event))));
                } else {
                    // Nothing was ever handed over, so nothing is lost by starting live.
                    prop_assert!(self.handed_high_water == 0 || self.hello_boot.is_none(), "subscribed from now after seeing events");
                }
                return Ok(());
            }
            RuntimeCall::Workspaces => RuntimeAnswer::Workspaces {
                workspaces: (0..3).map(|i| CatalogWorkspace { workspace_id: workspace(i), label: workspace(i) }).collect(),
            },
            RuntimeCall::InboxPending { session_ref: asked } => {
                prop_assert!(CHATS.iter().any(|(_, c)| session_ref(c) == asked), "inbox read for an unopened ref {asked}");
                let tasks = self
                    .inbox
                    .iter()
                    .filter(|(_, (owner, acked))| *owner == asked && !acked)
                    .map(|(task, _)| InboxTask {
                        task_id: task.clone(),
                        state: "completed".into(),
                        pane_id: "w1:p1".into(),
                        prompt_preview: "work".into(),
                        result: None,
                        guidance: None,
                    })
                    .collect();
                RuntimeAnswer::InboxPending { tasks, more: false }
            }
            RuntimeCall::InboxAck { session_ref: acking, task_ids } => {
                for task in &task_ids {
                    // (f) I4: only tasks of a confirmed delivery of the scope with this ref.
                    let confirmed_in = self.confirmed.values().find(|(_, tasks)| tasks.contains(task)).map(|(key, _)| key.clone());
                    prop_assert!(confirmed_in.is_some(), "(f) ack of {task} that no confirmed delivery carried");
                    let owner = self.inbox.get(task).map(|(o, _)| o.clone());
                    prop_assert_eq!(owner.as_deref(), Some(acking.as_str()), "(f) ack of {} under another ref", task);
                    prop_assert_eq!(
                        confirmed_in.map(|k| k.replace("chatgpt:", "chatgpt:conv:")),
                        Some(acking.clone()),
                        "(f) ack of {} for another scope",
                        task
                    );
                    if let Some(entry) = self.inbox.get_mut(task) {
                        entry.1 = true;
                    }
                }
                RuntimeAnswer::Counts { counts: self.counts_of(&acking) }
            }
            RuntimeCall::InboxCounts { session_ref: asked } => RuntimeAnswer::Counts { counts: self.counts_of(&asked) },
            RuntimeCall::ChatsReport { .. } => RuntimeAnswer::ChatsReported,
            RuntimeCall::ProfilesGet => RuntimeAnswer::Profiles(Default::default()),
            RuntimeCall::Panes { .. } => RuntimeAnswer::Panes { panes: Vec::new() },
            RuntimeCall::JournalAppend(_) => RuntimeAnswer::Appended { continuity_id: "hc-1".into() },
            RuntimeCall::PaneRead { pane_id, .. } => RuntimeAnswer::PaneText { pane_id, text: String::new() },
            // No goal is ever set in this world (Goal mode has its own tests).
            RuntimeCall::GoalSet { .. } | RuntimeCall::GoalEvidence { .. } => RuntimeAnswer::GoalEvidence(Default::default()),
            RuntimeCall::JudgeTurnEnd { assistant_text, conversation, .. } => {
                // Q2: the queue beats the judge: it is never asked while the user's turn waits.
                let conv = conversation.trim_start_matches("chatgpt:conv:");
                let queued = self.queue_model.get(&scope_key(conv)).is_some_and(|q| !q.is_empty());
                prop_assert!(!queued || self.queue_state_lost, "Q2: the judge was asked for {} while messages are queued", conv);
                let verdict = if assistant_text.contains("Next I will") { Verdict::Continue } else { Verdict::Done };
                RuntimeAnswer::Verdict(JudgeAnswer { verdict, source: "script".into(), reason: "the last line".into(), priors: Vec::new() })
            }
            // The model's chats are ChatGPT's, which has a real MCP connector (O2, M6).
            RuntimeCall::BridgeReply { .. }
            | RuntimeCall::BridgeDecide { .. }
            | RuntimeCall::BridgePrompt { .. }
            | RuntimeCall::BridgeDelivered { .. } => {
                return Err(TestCaseError::fail(format!("O2: a ChatGPT chat used the JSON bridge: {call:?}")));
            }
            // The model never presses Handoff (continuity_handoff has its own property test).
            RuntimeCall::ContinuityResolve { .. } | RuntimeCall::HandoffPrepare { .. } => {
                return Err(TestCaseError::fail(format!("X1: a handoff call without the HUD's Handoff: {call:?}")));
            }
        };
        self.inputs.push_back(WorkerInput::CallAnswered { wire_id, result: Ok(answer) });
        Ok(())
    }

    /// The runtime applies a pane change: logs the event and, when online, streams it.
    fn produce(&mut self, ws: u8, p: u8, kind: PaneEventKind) -> Result<(), TestCaseError> {
        let (ws, pane_id) = (workspace(ws), pane(ws, p));
        let panes = self.panes.entry(ws.clone()).or_default();
        let was = panes.get(&pane_id).copied();
        // Herdr only reports real transitions (agent_settled only on working → settled).
        match (kind, was) {
            (PaneEventKind::Working, Some(true)) | (PaneEventKind::Settled(_), None | Some(false)) | (PaneEventKind::PaneRemoved, None) => {
                return Ok(())
            }
            (PaneEventKind::Working, _) => {
                panes.insert(pane_id.clone(), true);
            }
            (PaneEventKind::Settled(_), _) => {
                panes.insert(pane_id.clone(), false);
            }
            (PaneEventKind::PaneRemoved, _) => {
                panes.remove(&pane_id);
            }
        }
        let working_after = panes.values().any(|w| *w);
        let event = StreamEvent { boot_id: self.boot_id(), seq: self.next_seq, workspace_id: ws, pane_id, kind, at: self.now };
        self.next_seq += 1;
        self.log.push(Produced { event: event.clone(), working_after });
        if self.link_up {
            self.feed(ContinuityInput::StreamEvent(event))?;
        }
        Ok(())
    }

    /// The companion goes away: the native port disconnects (the worker's link then tells
    /// continuity `LinkDown` and forgets the calls on the wire); it stays unreachable, so
    /// the link's retries fail, until `link_up`.
    fn link_down(&mut self) -> Result<(), TestCaseError> {
        if self.link_up {
            self.link_up = false;
            if let Some(port) = self.native.take() {
                self.feed_worker(WorkerInput::NativeClosed { port, error: Some("Native host has exited.".into()) })?;
            }
        }
        Ok(())
    }

    /// The companion is reachable again and the user presses Retry (the side panel's): the
    /// link opens a port and says hello (continuity hears `LinkUp` and resubscribes).
    fn link_up(&mut self) -> Result<(), TestCaseError> {
        if !self.link_up {
            self.link_up = true;
            self.feed_worker(WorkerInput::Page { port: PANEL_PORT, message: PageInput::RetryCompanion })?;
            prop_assert!(self.native.is_some(), "the link did not reconnect on Retry");
        }
        Ok(())
    }

    fn report_page(&mut self, tab: u32) -> Result<(), TestCaseError> {
        if let Some(page) = self.pages.get(&tab) {
            let report = page.report(conv_of_tab(tab));
            self.feed(ContinuityInput::PageReported { tab, report })?;
        }
        Ok(())
    }

    fn worker_restart(&mut self) -> Result<(), TestCaseError> {
        // The shell's path: written from the machine in place, by the hand-written writers.
        let text = self.machine().snapshot_json().map_err(|e| TestCaseError::fail(format!("snapshot: {e}")))?;
        // B7: in the very shape serde's derived `Serialize` writes (what every release so far
        // wrote and reads), every persisted field included.
        let written: serde_json::Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("snapshot text: {e}")))?;
        let serde_shape = serde_json::to_value(self.machine().snapshot()).map_err(|e| TestCaseError::fail(format!("serde: {e}")))?;
        prop_assert_eq!(written, serde_shape, "the hand-written writer differs from serde's shape");
        // The views the worker posts are written by hand too, in serde's shape (what the
        // page adapter and the side panel read).
        let tabs: Vec<Option<u32>> = self.pages.keys().copied().map(Some).chain([None]).collect();
        for tab in tabs {
            if let Some(tab) = tab {
                let view = self.machine().page_view(tab);
                prop_assert_eq!(view.write_json(), serde_json::to_value(&view).expect("page view"));
            }
            let panel = self.machine().panel_view(tab);
            prop_assert_eq!(panel.write_json(), serde_json::to_value(&panel).expect("panel view"));
        }
        let snapshot = Snapshot::parse(&text).map_err(|e| TestCaseError::fail(format!("restore: {e}")))?;
        // B7: the hand-written readers give back exactly what was written (write → read →
        // write is the same text, every persisted field included).
        let again = snapshot.to_json().map_err(|e| TestCaseError::fail(format!("snapshot again: {e}")))?;
        prop_assert_eq!(&again, &text, "the snapshot read back differs from the one written");
        self.check_start_view(&text)?;
        self.lives += 1;
        let continuity = Continuity::from_snapshot(snapshot, self.now, &format!("life{}", self.lives));
        self.worker = Worker::new(EXTENSION_VERSION, continuity, parse);
        self.inputs.clear();
        // The new worker reconnects (a fresh stream) and the pages connect and report again.
        self.start_worker()?;
        let tabs: Vec<u32> = self.pages.keys().copied().collect();
        for tab in tabs {
            self.report_page(tab)?;
        }
        Ok(())
    }

    /// Issue 28: every page the stored start view names is shown, while the wasm compiles,
    /// exactly the view a worker restored from `snapshot` posts at that page's connect (a
    /// worker started as the shell starts it: `Start`, then the page's port, before its timer).
    fn check_start_view(&self, snapshot: &str) -> Result<(), TestCaseError> {
        let Some(record) = &self.stored_start_view else { return Ok(()) };
        prop_assert_eq!(&record["version"], EXTENSION_VERSION);
        let pages = record["pages"].as_object().cloned().unwrap_or_default();
        prop_assert!(!pages.is_empty() && pages.len() <= ext_core::worker::START_VIEW_PAGES, "{}", record);
        for (url, stored) in pages {
            let restored = Snapshot::parse(snapshot).map_err(|e| TestCaseError::fail(format!("restore: {e}")))?;
            let mut worker = Worker::new(EXTENSION_VERSION, Continuity::from_snapshot(restored, self.now, "probe"), parse);
            worker.handle(self.now, WorkerInput::Start);
            worker.handle(self.now, WorkerInput::PortConnected { port: 999, tab: Some(1), panel: false, url: url.clone() });
            let posted = std::iter::from_fn(|| worker.poll())
                .find_map(|output| match output {
                    WorkerOutput::Post { message, .. } if message["type"] == "hud" => Some(message),
                    _ => None,
                })
                .ok_or_else(|| TestCaseError::fail("a restored worker posted no view at a page's connect"))?;
            let mut stored = stored.clone();
            prop_assert_eq!(stored.as_object_mut().and_then(|m| m.remove("provisional")), Some(Value::Bool(true)));
            prop_assert_eq!(stored, posted, "the start view of {} differs from the restored worker's first view", url);
        }
        Ok(())
    }

    /// The stored state is gone: a fresh machine (new epoch) that knows no binding.
    fn lose_state(&mut self) -> Result<(), TestCaseError> {
        self.lives += 1;
        self.stored_snapshot = None;
        self.queue_state_lost |= self.queue_model.values().any(|q| !q.is_empty()) || !self.queue_sent.is_empty();
        self.worker = Worker::new(EXTENSION_VERSION, Continuity::with_epoch(&format!("lost{}", self.lives)), parse);
        self.judge_run.clear();
        self.inputs.clear();
        let settings = format!(r#"{{"mode":"in_auto","max_continues":{JUDGE_MAX}}}"#);
        self.push(ContinuityInput::JudgeSettings { stored: Some(serde_json::from_str(&settings).map_err(|_| ())) })?;
        self.bound.clear();
        self.auto_on.clear();
        // The timeline's withheld mark went with the state.
        self.last_activity.clear();
        self.owed_wake.clear();
        self.last_landed_wake.clear();
        self.landed_since_loss.clear();
        self.orphans.extend(std::mem::take(&mut self.outstanding).into_values().filter(|o| !o.landed));
        // Confirmed tasks whose ack was lost with the state stay unacknowledged: the new
        // machine may rightly report them again.
        let inbox = &self.inbox;
        for (_, tasks) in self.confirmed.values_mut() {
            tasks.retain(|t| inbox.get(t).is_some_and(|(_, acked)| *acked));
        }
        // The new worker reconnects and the pages report again.
        self.hello_boot = None;
        self.handed_high_water = 0;
        self.start_worker()?;
        let tabs: Vec<u32> = self.pages.keys().copied().collect();
        for tab in tabs {
            self.report_page(tab)?;
        }
        Ok(())
    }

    fn advance(&mut self, by: Millis) -> Result<(), TestCaseError> {
        let until = self.now + by;
        let mut fired = 0;
        while let Some(deadline) = self.worker.next_deadline() {
            if deadline > until {
                break;
            }
            fired += 1;
            prop_assert!(fired < 1_000, "runaway deadlines");
            self.now = self.now.max(deadline);
            // The shell's timer for `next_deadline`.
            self.feed_worker(WorkerInput::Timer)?;
        }
        self.now = until;
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.now += 1;
        match *op {
            Op::Work { ws, pane } => self.produce(ws, pane, PaneEventKind::Working)?,
            Op::Settle { ws, pane, status } => self.produce(ws, pane, PaneEventKind::Settled(status))?,
            Op::RemovePane { ws, pane } => self.produce(ws, pane, PaneEventKind::PaneRemoved)?,
            Op::SeqGap(n) => self.next_seq += u64::from(n),
            Op::Duplicate(i) => {
                let handed: Vec<&Produced> = self.log.iter().filter(|p| p.event.seq <= self.handed_high_water).collect();
                if self.link_up && !handed.is_empty() {
                    let event = handed[i % handed.len()].event.clone();
                    self.feed(ContinuityInput::StreamEvent(event))?;
                }
            }
            Op::ReplayTail(n) => {
                let handed: Vec<StreamEvent> =
                    self.log.iter().filter(|p| p.event.seq <= self.handed_high_water).map(|p| p.event.clone()).collect();
                if self.link_up && !handed.is_empty() {
                    let from = handed.len() - 1 - n % handed.len();
                    for event in handed[from..].iter().cloned() {
                        self.feed(ContinuityInput::StreamEvent(event))?;
                    }
                }
            }
            Op::RuntimeRestart => {
                self.boot += 1;
                if self.link_up {
                    self.link_down()?;
                    self.link_up()?;
                }
            }
            Op::LinkDown => self.link_down()?,
            Op::LinkUp => self.link_up()?,
            Op::WorkerRestart => self.worker_restart()?,
            // Only a runtime whose hello carries the agent snapshot (ours) lets a fresh state
            // know which panes already work; an older one cannot, and nothing could.
            Op::LoseState if self.agents_in_hello => self.lose_state()?,
            Op::LoseState => {}
            Op::Page { chat, composer, draft, generating, permission_card, unresolved } => {
                let tab = CHATS[chat].0;
                if !self.pages.contains_key(&tab) {
                    self.open_page(tab);
                }
                let Some(page) = self.pages.get_mut(&tab) else { return Ok(()) };
                page.composer = composer;
                page.draft = draft;
                page.generating = generating;
                page.permission_card = permission_card;
                page.unresolved = unresolved;
                self.report_page(tab)?;
            }
            Op::PageGone { chat } => {
                let tab = CHATS[chat].0;
                if self.pages.remove(&tab).is_some() {
                    // The page's answers for deliveries in flight are lost with its port, and
                    // a message that had not reached the server never will.
                    for out in self.outstanding.values_mut().filter(|o| o.tab == tab) {
                        out.lost = true;
                        out.cannot_land |= !out.landed;
                    }
                    self.feed(ContinuityInput::PageGone { tab })?;
                }
            }
            Op::ReloadHalfRendered { chat } => {
                let tab = CHATS[chat].0;
                if self.pages.contains_key(&tab) {
                    // The old page's port closes: its answers are lost with it.
                    for out in self.outstanding.values_mut().filter(|o| o.tab == tab) {
                        out.lost = true;
                    }
                    self.feed(ContinuityInput::PageGone { tab })?;
                    // The new load (a message not on the server by now never will be).
                    self.open_page(tab);
                    if let Some(report) = self.pages.get(&tab).map(|p| p.half_rendered_report(conv_of_tab(tab))) {
                        self.feed(ContinuityInput::PageReported { tab, report })?;
                    }
                }
            }
            Op::SecondTab { chat } => {
                let tab = CHATS[chat].0;
                if self.pages.contains_key(&tab) {
                    let second = mirror_tab(tab);
                    self.loads += 1;
                    let markers = self.threads.get(conv_of_tab(tab)).cloned().unwrap_or_default();
                    let page = PageTruth { markers, load: self.loads, ..PageTruth::idle() };
                    let report = page.report(conv_of_tab(tab));
                    // An open page like any other while it is there (the queue may type into it).
                    self.pages.insert(second, page);
                    self.feed(ContinuityInput::PageReported { tab: second, report })?;
                    self.pages.remove(&second);
                    for out in self.outstanding.values_mut().filter(|o| o.tab == second) {
                        out.lost = true;
                        out.cannot_land |= !out.landed;
                    }
                    self.feed(ContinuityInput::PageGone { tab: second })?;
                }
            }
            Op::LandLate { chat } if self.orphans.iter().any(|o| o.tab == CHATS[chat].0 && !o.cannot_land) => {
                // A message of the lost machine lands now: its marker must confirm nothing.
                let tab = CHATS[chat].0;
                if let Some(index) = self.orphans.iter().position(|o| o.tab == tab && !o.cannot_land) {
                    let orphan = self.orphans.remove(index);
                    let conv = conv_of_tab(tab).to_owned();
                    self.threads.entry(conv).or_default().push(orphan.id.clone());
                    self.queue_batch_landed(&orphan.id);
                    if let Some(page) = self.pages.get_mut(&tab) {
                        page.markers.push(orphan.id);
                    }
                    self.report_page(tab)?;
                }
            }
            Op::LandLate { chat } => {
                let key = scope_key(CHATS[chat].1);
                let late = self.outstanding.get(&key).is_some_and(|o| o.lost && !o.landed && !o.cannot_land);
                if late {
                    self.land(&key)?;
                    self.report_page(CHATS[chat].0)?;
                }
            }
            Op::Answer { chat, how } => {
                let tab = CHATS[chat].0;
                let key = scope_key(CHATS[chat].1);
                let Some(out) = self.outstanding.get(&key).filter(|o| !o.lost && o.tab == tab).cloned() else { return Ok(()) };
                match how {
                    Answer::Confirmed => {
                        self.land(&key)?;
                        self.feed(ContinuityInput::DeliveryReport { tab, id: out.id, outcome: DeliveryOutcome::Submitted })?;
                        self.report_page(tab)?;
                    }
                    Answer::Failed => {
                        if let Some(o) = self.outstanding.get_mut(&key) {
                            o.cannot_land = true;
                        }
                        self.feed(ContinuityInput::DeliveryReport {
                            tab,
                            id: out.id,
                            outcome: DeliveryOutcome::NotSubmitted { reason: "send_button_missing".into() },
                        })?;
                    }
                    Answer::NeverAnswered { landed, left } => {
                        if landed {
                            self.land(&key)?;
                        }
                        if let Some(o) = self.outstanding.get_mut(&key) {
                            o.lost = true;
                            o.cannot_land |= left;
                        }
                        if left {
                            if let Some(page) = self.pages.get_mut(&tab) {
                                page.composer_marker = Some(out.id.clone());
                            }
                        }
                        self.report_page(tab)?;
                    }
                }
            }
            Op::TaskDone { owner } => {
                self.next_task += 1;
                let owner_conv = CHATS.get(owner).map_or(OTHER_CONV, |(_, c)| c);
                let task = format!("t{}-{}", self.next_task, owner);
                self.inbox.insert(task, (session_ref(owner_conv), false));
                if self.link_up {
                    let counts = self.counts_of(&session_ref(owner_conv));
                    self.feed(ContinuityInput::InboxChanged { session_ref: session_ref(owner_conv), counts })?;
                }
            }
            Op::ToggleAuto { chat } => {
                let (tab, conv) = CHATS[chat];
                if self.pages.contains_key(&tab) {
                    let on = self.auto_on.entry(scope_key(conv)).or_insert(false);
                    *on = !*on;
                    self.feed(ContinuityInput::ToggleAuto { tab })?;
                }
            }
            Op::Bind { chat, ws } => {
                let (tab, conv) = CHATS[chat];
                if self.pages.contains_key(&tab) {
                    let key = scope_key(conv);
                    self.bound.insert(key.clone(), workspace(ws));
                    // A new binding starts fresh: nothing is owed, the old delivery is
                    // forgotten by the machine (its answer is ignored), and the timeline
                    // records the binding's held-back wakes anew (the user changed it).
                    self.outstanding.remove(&key);
                    self.last_activity.remove(&key);
                    self.owed_wake.remove(&key);
                    self.feed(ContinuityInput::Bind {
                        tab,
                        workspace: CatalogWorkspace { workspace_id: workspace(ws), label: workspace(ws) },
                    })?;
                }
            }
            Op::Unbind { chat } => {
                let key = scope_key(CHATS[chat].1);
                if self.bound.remove(&key).is_some() {
                    self.outstanding.remove(&key);
                    self.owed_wake.remove(&key);
                    // The scope's state goes with its binding; a new binding starts anew.
                    self.last_activity.remove(&key);
                    self.feed(ContinuityInput::Unbind { scope_key: key })?;
                }
            }
            Op::Continue { chat } => {
                let tab = CHATS[chat].0;
                self.feed(ContinuityInput::Continue { tab })?;
            }
            Op::Advance(ms) => self.advance(ms)?,
            Op::Queue { chat } => {
                let tab = CHATS[chat].0;
                if let Some(page) = self.pages.get_mut(&tab) {
                    self.next_queue_text += 1;
                    let text = format!("queued message {}", self.next_queue_text);
                    // The user's text is in the composer until it is durably queued.
                    page.draft = true;
                    self.queue_typing.insert(tab, text.clone());
                    self.report_page(tab)?;
                    self.feed(ContinuityInput::QueueAdd { tab, text, whole_chars: None })?;
                }
            }
            Op::QueueReadFails => self.queue_read_fails = true,
            Op::QueueWriteFails => self.queue_write_fails = true,
            Op::ReplyEnds { chat, pending } => {
                let (tab, conv) = CHATS[chat];
                // The page reports first that it stopped generating (content-turns.js sends its
                // facts, then the ended turn): a queued batch may go out at once.
                if let Some(page) = self.pages.get_mut(&tab).filter(|p| p.generating) {
                    page.generating = false;
                    self.report_page(tab)?;
                }
                let Some(page) = self.pages.get(&tab) else { return Ok(()) };
                let user_marker = page.markers.last().filter(|t| is_ours(t)).cloned();
                if user_marker.as_deref().is_none_or(|m| m.starts_with("qb:")) {
                    self.judge_run.remove(conv);
                }
                self.next_reply += 1;
                let step = if pending { "Next I will run the integration tests." } else { "Everything is merged and green." };
                let assistant_text = format!("Reply {}: the parser handles nested lists now. {step}", self.next_reply);
                self.feed(ContinuityInput::TurnEnded {
                    tab,
                    user_text: String::new(),
                    assistant_text,
                    user_marker,
                    message_id: None,
                    user_message_id: None,
                    pressed: false,
                    user_stopped: false,
                })?;
            }
        }
        prop_assert_eq!(self.machine().page_view(CHATS[0].0).is_some(), self.pages.contains_key(&CHATS[0].0));
        self.check_queue_kept()
    }

    /// The page comes back idle, the link is up, lost answers are resolved by a worker
    /// restart, and time passes: every owed wake must then be delivered (SPEC I4: "a wake
    /// that could not be delivered is delivered once the page is idle again").
    fn heal_and_check_owed_wakes(&mut self) -> Result<(), TestCaseError> {
        self.link_up()?;
        for (tab, _) in CHATS {
            // A reload: a fresh page load whose composer comes back (a fresh retry budget).
            self.open_page(tab);
            if let Some(page) = self.pages.get_mut(&tab) {
                page.composer = false;
            }
        }
        self.worker_restart()?;
        for (tab, _) in CHATS {
            if let Some(page) = self.pages.get_mut(&tab) {
                page.composer = true;
            }
            self.report_page(tab)?;
        }
        let owed: Vec<(String, (String, String, u64))> = self
            .owed_wake
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .filter(|(key, (_, ws, seq))| {
                self.auto_on.get(key).copied().unwrap_or(false)
                    && self.bound.get(key) == Some(ws)
                    && !self.known_working_after(ws, *seq)
                    // The heal's hello carries the agent snapshot: a pane that works again
                    // (its event lost to retention) is known and holds the wake back.
                    && !(self.agents_in_hello && self.working_now(ws))
            })
            .collect();
        self.delivered_since_mark.clear();
        self.advance(5 * 60_000)?;
        for (key, (id, ws, seq)) in owed {
            let delivered_again = self
                .delivered_since_mark
                .iter()
                .any(|(k, d)| k == &key && wake_parts(d).is_some_and(|(dws, dseq)| dws == ws && dseq >= seq))
                || self.outstanding.get(&key).is_some_and(|o| o.id == id)
                || self.confirmed.contains_key(&format!("{key}|{id}"));
            prop_assert!(
                delivered_again,
                "owed wake {id} of {key} was not delivered after the page became idle again; machine in flight: {:?}",
                self.machine().in_flight(&key)
            );
        }
        // (j) P9, I2, I4: the pages confirm whatever arrives; then every terminal, unacked
        // task of a bound, Auto-on chat with an idle page and a settled workspace has been
        // delivered and acknowledged, whether or not its settle ever reached the machine.
        for _ in 0..6 {
            let answers: Vec<(String, Outstanding)> =
                self.outstanding.iter().filter(|(_, o)| !o.lost).map(|(k, o)| (k.clone(), o.clone())).collect();
            for (key, out) in answers {
                if out.cannot_land {
                    continue;
                }
                self.land(&key)?;
                self.feed(ContinuityInput::DeliveryReport { tab: out.tab, id: out.id, outcome: DeliveryOutcome::Submitted })?;
                self.report_page(out.tab)?;
            }
            self.advance(2 * 60_000)?;
        }
        for (tab, conv) in CHATS {
            let key = scope_key(conv);
            let Some(ws) = self.bound.get(&key).cloned() else { continue };
            let eligible = self.auto_on.get(&key).copied().unwrap_or(false)
                && !self.working_now(&ws)
                && self.pages.get(&tab).is_some_and(PageTruth::accepts_submission);
            if !eligible {
                continue;
            }
            let stranded: Vec<&String> =
                self.inbox.iter().filter(|(_, (owner, acked))| *owner == session_ref(conv) && !acked).map(|(t, _)| t).collect();
            prop_assert!(
                stranded.is_empty(),
                "(j) tasks {stranded:?} of {key} (bound to settled {ws}, Auto on, page idle) were never delivered; machine in flight: {:?}",
                self.machine().in_flight(&key)
            );
        }
        // Q2: on idle pages every queued text went out, unless its batch may have landed
        // unconfirmed (then the user is asked to retry, Q8) or the state was lost.
        for (tab, conv) in CHATS {
            let remaining = self.queue_model.get(&scope_key(conv)).cloned().unwrap_or_default();
            let state = self.machine().page_view(tab).and_then(|v| v.queue).map(|q| q.state);
            if !remaining.is_empty() && !self.queue_state_lost {
                prop_assert_eq!(state, Some("undelivered"), "Q2: {:?} of {} never sent on an idle page", remaining, conv);
            }
        }
        self.check_queue_kept()?;
        // Liveness: the pages stay idle and answer nothing more; every delivery then resolves
        // within the ledger's bound (typing deadline + give-up time), reload or not.
        let bound = TYPING_DEADLINE_MS.max(SUBMITTED_DEADLINE_MS) + UNCERTAIN_GIVE_UP_MS;
        self.advance(bound + 1_000)?;
        for (id, entries) in &self.wake_sent_entries {
            prop_assert!(self.wake_posted.contains(id), "(k) a sent wake entry {id} without its delivery");
            prop_assert_eq!(*entries, 1, "(k) wake {} typed into a page has {} sent entries", id, entries);
        }
        for delivery in self.machine().ledger().active() {
            prop_assert!(
                delivery.posted_at + bound >= self.now,
                "liveness: {} posted at {} is still unresolved at {} on an idle page",
                delivery.id,
                delivery.posted_at,
                self.now
            );
        }
        Ok(())
    }
}

/// 256 cases, or `PROPTEST_CASES` when set (e.g. 1000 for a deeper run).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

/// The runtime's retention (none, or a handful of events) and whether its hello carries
/// the agent snapshot. A runtime that drops events always sends the snapshot (ours does:
/// `hello.agents`); without it nothing could know a pane works whose event was dropped.
fn world_runtime() -> impl Strategy<Value = (Option<usize>, bool)> {
    prop_oneof![
        2 => any::<bool>().prop_map(|agents| (None, agents)),
        1 => (2usize..8).prop_map(|keep| (Some(keep), true)),
    ]
}

fn world_ops() -> impl Strategy<Value = Vec<Op>> {
    (1u8..=3, 1u8..=3).prop_flat_map(|(workspaces, panes)| {
        // Start with both chats bound and Auto on half of the time, so wakes happen.
        let setup = prop::collection::vec(
            prop_oneof![
                (0..CHATS.len(), 0..workspaces).prop_map(|(chat, ws)| Op::Bind { chat, ws }),
                (0..CHATS.len()).prop_map(|chat| Op::ToggleAuto { chat }),
            ],
            0..4,
        );
        (setup, prop::collection::vec(op_strategy(workspaces, panes), 1..60)).prop_map(|(mut setup, ops)| {
            setup.extend(ops);
            setup
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// P7, P8, P9, M1, M7, I3, I4, B7: random interleavings of status events with
    /// duplicates, reorders, reconnects and worker restarts never give two wakes for one
    /// settle, never a wake for a partial settle, nothing automatic with Auto off or on a
    /// busy page, one delivery in flight per scope, acks only after confirmation, and an
    /// undelivered wake is delivered once the page is idle again.
    #[test]
    fn the_continuity_loop_wakes_once_per_full_settle_and_only_when_allowed(ops in world_ops(), runtime in world_runtime()) {
        let (retention, agents_in_hello) = runtime;
        let mut world = World::new(retention, agents_in_hello)?;
        for op in &ops {
            world.apply(op)?;
        }
        world.heal_and_check_owed_wakes()?;
    }
}

/// Semantic Auto's world: chat 0 bound with Auto on; its replies end, mostly announcing a
/// next step, while the user sometimes queues a message, pages get busy, deliveries fail or
/// never answer, the worker restarts, and the workspace only rarely works.
fn semantic_ops() -> impl Strategy<Value = Vec<Op>> {
    let answer = prop_oneof![
        6 => Just(Answer::Confirmed),
        1 => Just(Answer::Failed),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(landed, left)| Answer::NeverAnswered { landed, left: left && !landed }),
    ];
    let op = prop_oneof![
        8 => prop::bool::weighted(0.9).prop_map(|pending| Op::ReplyEnds { chat: 0, pending }),
        8 => answer.prop_map(|how| Op::Answer { chat: 0, how }),
        2 => Just(Op::Queue { chat: 0 }),
        3 => (prop::bool::weighted(0.9), prop::bool::weighted(0.1), prop::bool::weighted(0.6))
            .prop_map(|(composer, draft, generating)| Op::Page { chat: 0, composer, draft, generating, permission_card: false, unresolved: false }),
        1 => Just(Op::WorkerRestart),
        1 => Just(Op::QueueReadFails),
        1 => (0u8..1, 0u8..2).prop_map(|(ws, pane)| Op::Work { ws, pane }),
        1 => (0u8..1, 0u8..2).prop_map(|(ws, pane)| Op::Settle { ws, pane, status: SettledStatus::Idle }),
        1 => Just(Op::ToggleAuto { chat: 0 }),
        2 => (1_000u64..200_000).prop_map(Op::Advance),
    ];
    prop::collection::vec(op, 1..80).prop_map(|ops| {
        let mut all = vec![Op::Bind { chat: 0, ws: 0 }, Op::ToggleAuto { chat: 0 }];
        all.extend(ops);
        all
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// J1, M7, Q2: Auto never continues more than `max_continues` times in a row without
    /// a human turn or an event of the bound workspace, never while Auto is off or the
    /// chat unbound, and the queue beats the judge (it is never asked, and nothing is
    /// continued, while the user's queued message waits) — checked by the world after
    /// every step, with every other invariant of the loop.
    #[test]
    fn semantic_auto_is_bounded_and_the_queue_beats_the_judge(ops in semantic_ops()) {
        let mut world = World::new(None, true)?;
        for op in &ops {
            world.apply(op)?;
        }
        world.heal_and_check_owed_wakes()?;
    }
}

// ---------------------------------------------------------------------------------------
// (h) P4, P6: progress summaries through the scope's scheduler.

#[derive(Debug, Clone)]
enum ProgressOp {
    Working,
    Settle(u64),
    Summary(u8),
    Page { composer: bool, generating: bool, draft: bool, resolved: bool },
    Auto(bool),
    Answer(bool),
    Restart,
    Advance(Millis),
}

fn progress_op() -> impl Strategy<Value = ProgressOp> {
    prop_oneof![
        2 => Just(ProgressOp::Working),
        1 => (1u64..1_000).prop_map(ProgressOp::Settle),
        3 => (0u8..4).prop_map(ProgressOp::Summary),
        2 => (prop::bool::weighted(0.8), any::<bool>(), prop::bool::weighted(0.2), prop::bool::weighted(0.85))
            .prop_map(|(composer, generating, draft, resolved)| ProgressOp::Page { composer, generating, draft, resolved }),
        1 => any::<bool>().prop_map(ProgressOp::Auto),
        4 => any::<bool>().prop_map(ProgressOp::Answer),
        1 => Just(ProgressOp::Restart),
        4 => (1_000u64..(10 * 60_000)).prop_map(ProgressOp::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// P4, P6: whatever the page, Auto, failures and worker restarts do, an unchanged
    /// progress summary is never delivered twice in a row, and nothing is offered while a
    /// delivery is unanswered (the scheduler owns the scope's progress push).
    #[test]
    fn an_unchanged_progress_summary_is_never_sent_twice(ops in prop::collection::vec(progress_op(), 1..60)) {
        let texts = ["", "compiling", "tests pass", "  compiling "];
        let mut scheduler = WakeScheduler::new(ProgressConfig { tick_ms: 60_000, fallback_ms: 600_000 }, Language::En);
        let mut now: Millis = 0;
        scheduler.handle(now, SchedulerInput::BindingChanged { workspace_id: Some("w1".into()), has_delivery_target: true });
        scheduler.handle(now, SchedulerInput::Page(PageFacts { composer_present: true, generating: false, permission_card: false, human_draft: false, facts_resolved: true, app_held: None, rate_limited: false, delivery_in_flight: false }));
        scheduler.handle(now, SchedulerInput::AutoChanged { auto: AutoState::On });
        let mut summary: Option<String> = None;
        let mut awaiting: Option<MessageKind> = None;
        let mut delivered: Vec<String> = Vec::new();
        // The page can take a message (issue 25: its needed facts resolve, too).
        let mut page_open = true;
        for op in ops {
            now += 1;
            match op {
                ProgressOp::Working => scheduler.handle(now, SchedulerInput::Settle(SettleOutput::ScopeWorking { workspace_id: "w1".into(), at: now })),
                ProgressOp::Settle(seq) => scheduler.handle(now, SchedulerInput::Settle(SettleOutput::ScopeSettled {
                    workspace_id: "w1".into(),
                    wake_id: WakeId { boot_id: "b1".into(), seq },
                    outcome: ext_core::settle_tracker::SettleOutcome::Idle,
                    at: now,
                })),
                ProgressOp::Summary(i) => summary = Some(texts[usize::from(i)].to_owned()),
                ProgressOp::Page { composer, generating, draft, resolved } => {
                    page_open = composer && !generating && !draft && resolved;
                    scheduler.handle(now, SchedulerInput::Page(PageFacts { composer_present: composer, generating, permission_card: false, human_draft: draft, facts_resolved: resolved, app_held: None, rate_limited: false, delivery_in_flight: awaiting.is_some() }));
                }
                ProgressOp::Auto(on) => scheduler.handle(now, SchedulerInput::AutoChanged { auto: if on { AutoState::On } else { AutoState::Off } }),
                ProgressOp::Answer(ok) => {
                    if let Some(kind) = awaiting.take() {
                        let message = Some(InFlight::of(&kind));
                        if ok {
                            if let MessageKind::Progress { summary } = kind {
                                prop_assert_ne!(delivered.last(), Some(&summary), "P4: unchanged summary delivered twice");
                                delivered.push(summary);
                            }
                            scheduler.handle(now, SchedulerInput::DeliveryConfirmed { message });
                        } else {
                            scheduler.handle(now, SchedulerInput::DeliveryFailed { message });
                        }
                    }
                }
                ProgressOp::Restart => {
                    let json = serde_json::to_string(&scheduler).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    scheduler = ext_core::json_read::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
                ProgressOp::Advance(ms) => {
                    let until = now + ms;
                    while let Some(deadline) = scheduler.next_deadline() {
                        if deadline > until { break; }
                        now = now.max(deadline);
                        scheduler.handle_timeout(now);
                        let mut outputs: Vec<SchedulerOutput> = Vec::new();
                        while let Some(out) = scheduler.poll() { outputs.push(out); }
                        for out in outputs {
                            if let SchedulerOutput::CheckSummary { .. } = out {
                                scheduler.handle(now, SchedulerInput::SummaryChecked { summary: summary.clone() });
                                while let Some(out) = scheduler.poll() { outputs_check(&out, &mut awaiting, page_open)?; }
                            } else {
                                outputs_check(&out, &mut awaiting, page_open)?;
                            }
                        }
                    }
                    now = until;
                }
            }
            let mut outputs: Vec<SchedulerOutput> = Vec::new();
            while let Some(out) = scheduler.poll() { outputs.push(out); }
            for out in outputs {
                if let SchedulerOutput::CheckSummary { .. } = out {
                    scheduler.handle(now, SchedulerInput::SummaryChecked { summary: summary.clone() });
                    while let Some(out) = scheduler.poll() { outputs_check(&out, &mut awaiting, page_open)?; }
                } else {
                    outputs_check(&out, &mut awaiting, page_open)?;
                }
            }
        }
    }
}

/// A `Deliver` is only offered when nothing else awaits an answer and the page can take it
/// (composer, idle, no draft, every needed fact resolved); progress text is never blank.
fn outputs_check(out: &SchedulerOutput, awaiting: &mut Option<MessageKind>, page_open: bool) -> Result<(), TestCaseError> {
    if let SchedulerOutput::Deliver { kind, .. } = out {
        prop_assert!(awaiting.is_none(), "offered {kind:?} while {awaiting:?} awaits an answer");
        prop_assert!(page_open, "offered {kind:?} to a page that cannot take it (a fact unresolved, busy or no composer)");
        if let MessageKind::Progress { summary } = kind {
            prop_assert!(!summary.trim().is_empty(), "P4: blank summary offered");
        }
        *awaiting = Some(kind.clone());
    }
    Ok(())
}
