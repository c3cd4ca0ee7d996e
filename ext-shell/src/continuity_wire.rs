//! JSON ⇄ `ext_core::continuity` types: stream events and inbox/catalog answers from the
//! native port, page facts and panel commands from the internal ports (docs/PROTOCOL.md
//! "Event stream", "Parent inbox", "Continuity loop on the internal ports").
//!
//! Only conversions: a message without the documented shape is `None` / a `CallError`
//! with code `bad_answer`, never guessed at. Runtime text is bounded on the way in
//! (`ext_core::limits`): ids longer than `MAX_ID_CHARS` make their item or event unusable
//! (an id is never cut), text is clipped (tails and results to `MAX_RUNTIME_TEXT_CHARS`,
//! labels to `MAX_LABEL_CHARS`, other strings to `MAX_RUNTIME_SHORT_CHARS`) and lists keep
//! their first `MAX_RUNTIME_LIST_ITEMS`. Page facts over a cap are rejected whole.

use continuity_protocol::{ErrorCode, EventName, Method};
use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{
    AppAttachFailure, AppMention, BridgeDecision, BridgeOutcome, BridgeResults, BridgeRounds, CallError, ContinuityInput, DeliveryOutcome,
    InboxTask, JudgeAnswer, PageRecoveryReport, PageReport, PaneInfo, PendingCall, ProbeAnswer, ProbeNode, RuntimeAnswer, RuntimeCall,
    TaskCounts, Unresolved,
};
use ext_core::json_object;
use ext_core::limits::{
    self, MAX_APP_MENTIONS, MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_MARKERS, MAX_RUNTIME_LIST_ITEMS, MAX_RUNTIME_SHORT_CHARS,
    MAX_RUNTIME_TEXT_CHARS, MAX_URL_CHARS,
};
use ext_core::request_pacer::CooldownSource;
use ext_core::semantic_auto::Verdict;
use ext_core::settle_tracker::{AgentSnapshot, PaneEventKind, SettledStatus, StreamEvent};
use ext_core::stale_view::ServerRole;
use serde_json::Value;

pub use ext_core::worker::{PortCommand, CALL_ID_PREFIX};

/// The JSON request for a call.
pub fn call_json(wire_id: &str, call: &RuntimeCall) -> Value {
    let (method, params) = match call {
        RuntimeCall::Subscribe { after_seq, log_id } => (
            Method::EventsSubscribe,
            match (after_seq, log_id) {
                (Some(seq), Some(log)) => json_object!("after_seq": seq, "log_id": log),
                (Some(seq), None) => json_object!("after_seq": seq),
                (None, Some(log)) => json_object!("log_id": log),
                (None, None) => json_object!(),
            },
        ),
        RuntimeCall::Workspaces => (Method::HerdrWorkspaces, json_object!()),
        RuntimeCall::InboxPending { session_ref } => (Method::InboxPending, json_object!("browser_session_ref": session_ref)),
        RuntimeCall::InboxAck { session_ref, task_ids } => {
            (Method::InboxAck, json_object!("browser_session_ref": session_ref, "task_ids": task_ids))
        }
        RuntimeCall::InboxCounts { session_ref } => (Method::InboxCounts, json_object!("browser_session_ref": session_ref)),
        RuntimeCall::Panes { workspace_id } => (Method::HerdrPanes, json_object!("workspace_id": workspace_id)),
        RuntimeCall::PaneRead { pane_id, lines } => (Method::HerdrPaneRead, json_object!("pane_id": pane_id, "lines": lines)),
        RuntimeCall::GoalSet { session_ref, goal } => (Method::GoalSet, json_object!("browser_session_ref": session_ref, "goal": goal)),
        RuntimeCall::GoalEvidence { session_ref, workspace_id } => {
            (Method::GoalEvidence, json_object!("browser_session_ref": session_ref, "workspace_id": workspace_id))
        }
        RuntimeCall::JudgeTurnEnd { user_text, assistant_text, conversation } => {
            (Method::JudgeTurnEnd, json_object!("user_text": user_text, "assistant_text": assistant_text, "conversation": conversation))
        }
        RuntimeCall::BridgeReply { conversation, message_id, text, workspace_id, auto, human_turn } => (
            Method::BridgeReply,
            json_object!(
                "conversation": conversation, "message_id": message_id, "text": text, "finished": true,
                "workspace_id": workspace_id, "auto": auto, "human_turn": human_turn
            ),
        ),
        RuntimeCall::BridgeDecide { conversation, batch_id, index, decision } => (
            Method::BridgeDecide,
            json_object!("conversation": conversation, "batch_id": batch_id, "call": index, "decision": decision.as_str()),
        ),
        RuntimeCall::BridgePrompt { session_ref } => (Method::BridgePrompt, json_object!("browser_session_ref": session_ref)),
        RuntimeCall::BridgeDelivered { delivery_id } => (Method::BridgeDelivered, json_object!("delivery_id": delivery_id)),
        RuntimeCall::JournalAppend(entry) => (Method::ContinuityAppend, ext_core::json_read::WriteJson::write_json(entry)),
        RuntimeCall::ContinuityResolve { conversation_id } => (Method::ContinuityResolve, json_object!("conversation_id": conversation_id)),
        RuntimeCall::HandoffPrepare(ext_core::continuity::PrepareCall {
            continuity_id,
            source_url,
            workspace_id,
            browser_session_ref,
            queue,
        }) => (
            Method::BrowserHandoffPrepare,
            json_object!(
                "continuity_id": continuity_id, "source_url": source_url, "workspace_id": workspace_id,
                "browser_session_ref": browser_session_ref, "queue": queue
            ),
        ),
        RuntimeCall::ProfilesGet => (Method::ProfilesGet, json_object!()),
        RuntimeCall::ChatsReport { reporter, chats } => {
            let chats: Vec<Value> =
                chats.iter().map(|c| json_object!("browser_session_ref": c.session_ref, "generating": c.generating)).collect();
            (Method::ChatsReport, json_object!("reporter": reporter, "chats": chats))
        }
    };
    json_object!("id": wire_id, "method": method.as_str(), "params": params)
}

fn str_of(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// An id: `None` when missing or longer than [`MAX_ID_CHARS`] (never cut).
fn id_of(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).filter(|s| limits::within(s, MAX_ID_CHARS)).map(str::to_owned)
}

/// A runtime string clipped to `max_chars`.
fn clipped_of(value: &Value, key: &str, max_chars: usize) -> Option<String> {
    str_of(value, key).map(|text| limits::clip(text, max_chars))
}

/// A runtime short string (states, previews, error texts) clipped.
fn short_of(value: &Value, key: &str) -> Option<String> {
    clipped_of(value, key, MAX_RUNTIME_SHORT_CHARS)
}

/// The first [`MAX_RUNTIME_LIST_ITEMS`] items of a runtime list.
fn list_of<'a>(value: &'a Value, key: &str) -> Option<impl Iterator<Item = &'a Value>> {
    Some(value.get(key)?.as_array()?.iter().take(MAX_RUNTIME_LIST_ITEMS))
}

fn counts_of(value: &Value) -> Option<TaskCounts> {
    let n = |key: &str| value.get(key).and_then(Value::as_u64);
    Some(TaskCounts { running: n("running")?, unacked: n("unacked")?, acked: n("acked")? })
}

/// A task's `result` JSON as `InboxTask::result`: a one-line status (a string, or an
/// object's `summary` / `status` / `text`), then — for an object with a `tail` — the pane's
/// output tail on the following lines (the core bounds it for the wake).
fn result_summary(result: &Value) -> Option<String> {
    let one_line = ext_core::text::one_line;
    let (status, tail) = match result {
        Value::Null => return None,
        Value::String(s) => (one_line(s), None),
        Value::Object(map) => (
            ["summary", "status", "text"].iter().find_map(|key| map.get(*key).and_then(Value::as_str).map(one_line)).unwrap_or_default(),
            map.get("tail").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty()),
        ),
        other => (one_line(&crate::js::stringify(other)), None),
    };
    let status = limits::clip(status, MAX_RUNTIME_SHORT_CHARS);
    match tail {
        // Output keeps its newest lines: the start of the tail is what gets cut.
        Some(tail) => {
            let room = MAX_RUNTIME_TEXT_CHARS.saturating_sub(ext_core::text::char_count(&status) + 1);
            Some(format!("{status}\n{}", limits::clip_tail(tail.to_owned(), room)))
        }
        None => (!status.is_empty()).then_some(status),
    }
}

fn bad_answer(what: &str) -> CallError {
    CallError {
        code: ErrorCode::BadAnswer,
        message: format!(
            "the companion answered {what} in an unexpected shape; update the companion or the extension so both speak herdr-continuity/1"
        ),
    }
}

/// Reads the response to `call` (its `result` object, or the error `wire::inbound` read).
pub fn answer(call: &RuntimeCall, outcome: Result<&Value, CallError>) -> Result<RuntimeAnswer, CallError> {
    let result = outcome?;
    match call {
        RuntimeCall::Subscribe { .. } => Ok(RuntimeAnswer::Subscribed),
        RuntimeCall::Workspaces => {
            let list = list_of(result, "workspaces").ok_or_else(|| bad_answer(Method::HerdrWorkspaces.as_str()))?;
            let workspaces = list
                .filter_map(|w| {
                    Some(CatalogWorkspace {
                        workspace_id: id_of(w, "workspace_id")?,
                        label: clipped_of(w, "label", MAX_LABEL_CHARS).unwrap_or_default(),
                    })
                })
                .collect();
            Ok(RuntimeAnswer::Workspaces { workspaces })
        }
        RuntimeCall::InboxPending { .. } => {
            let items = list_of(result, "items").ok_or_else(|| bad_answer(Method::InboxPending.as_str()))?;
            let tasks = items
                .filter_map(|item| {
                    Some(InboxTask {
                        task_id: id_of(item, "task_id")?,
                        state: short_of(item, "state").unwrap_or_default(),
                        pane_id: id_of(item, "pane_id").unwrap_or_default(),
                        prompt_preview: short_of(item, "prompt_preview").unwrap_or_default(),
                        result: item.get("result").and_then(result_summary),
                        guidance: item.get("guidance").and_then(ext_core::continuity::TaskGuidance::from_wire),
                    })
                })
                .collect();
            Ok(RuntimeAnswer::InboxPending { tasks, more: result.get("more").and_then(Value::as_bool).unwrap_or(false) })
        }
        RuntimeCall::InboxAck { .. } | RuntimeCall::InboxCounts { .. } => result
            .get("counts")
            .and_then(counts_of)
            .map(|counts| RuntimeAnswer::Counts { counts })
            .ok_or_else(|| bad_answer("inbox counts")),
        RuntimeCall::Panes { .. } => {
            let list = list_of(result, "panes").ok_or_else(|| bad_answer(Method::HerdrPanes.as_str()))?;
            let panes = list
                .filter_map(|p| {
                    Some(PaneInfo {
                        pane_id: id_of(p, "pane_id")?,
                        agent: short_of(p, "agent"),
                        agent_status: short_of(p, "agent_status").unwrap_or_default(),
                    })
                })
                .collect();
            Ok(RuntimeAnswer::Panes { panes })
        }
        RuntimeCall::PaneRead { pane_id, .. } => Ok(RuntimeAnswer::PaneText {
            pane_id: id_of(result, "pane_id").unwrap_or_else(|| pane_id.clone()),
            // Terminal output: keep the newest lines, cut from the start.
            text: str_of(result, "text")
                .map(|text| limits::clip_tail(text, MAX_RUNTIME_TEXT_CHARS))
                .ok_or_else(|| bad_answer(Method::HerdrPaneRead.as_str()))?,
        }),
        RuntimeCall::JudgeTurnEnd { .. } => judge_verdict(result).ok_or_else(|| bad_answer(Method::JudgeTurnEnd.as_str())),
        RuntimeCall::GoalSet { .. } | RuntimeCall::GoalEvidence { .. } => {
            goal_evidence(result).ok_or_else(|| bad_answer(Method::GoalEvidence.as_str()))
        }
        RuntimeCall::BridgeReply { .. } => bridge_reply(result).ok_or_else(|| bad_answer(Method::BridgeReply.as_str())),
        RuntimeCall::BridgeDecide { .. } => result
            .get("pending")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .map(|pending| RuntimeAnswer::BridgeDecided { pending })
            .ok_or_else(|| bad_answer(Method::BridgeDecide.as_str())),
        RuntimeCall::BridgeDelivered { .. } => Ok(RuntimeAnswer::BridgeDelivered),
        RuntimeCall::BridgePrompt { .. } => str_of(result, "text")
            .filter(|text| limits::within(text, limits::MAX_BRIDGE_PROMPT_CHARS))
            .map(|text| RuntimeAnswer::BridgePrompt { text })
            .ok_or_else(|| bad_answer(Method::BridgePrompt.as_str())),
        RuntimeCall::JournalAppend(_) => id_of(result, "continuity_id")
            .map(|continuity_id| RuntimeAnswer::Appended { continuity_id })
            .ok_or_else(|| bad_answer(Method::ContinuityAppend.as_str())),
        RuntimeCall::ContinuityResolve { .. } => id_of(result, "continuity_id")
            .map(|continuity_id| RuntimeAnswer::Resolved { continuity_id })
            .ok_or_else(|| bad_answer(Method::ContinuityResolve.as_str())),
        RuntimeCall::ChatsReport { .. } => Ok(RuntimeAnswer::ChatsReported),
        RuntimeCall::ProfilesGet => profile_files(result).ok_or_else(|| bad_answer(Method::ProfilesGet.as_str())),
        RuntimeCall::HandoffPrepare { .. } => crate::handoff_wire::package(result)
            .map(RuntimeAnswer::Prepared)
            .ok_or_else(|| bad_answer(Method::BrowserHandoffPrepare.as_str())),
    }
}

/// A `profiles` result: per file its site and text, or the runtime's problem with it
/// (clipped); a text over the file cap is refused here too. An entry without a site, or
/// with neither text nor problem, is skipped.
fn profile_files(result: &Value) -> Option<RuntimeAnswer> {
    use ext_core::sites::file::MAX_PROFILE_BYTES;
    use ext_core::sites::overrides::{CompanionFiles, CompanionProfile};
    let files = list_of(result, "profiles")?
        .filter_map(|file| {
            let site = id_of(file, "site")?;
            let text = match (str_of(file, "text"), short_of(file, "problem")) {
                (Some(text), _) if text.len() > MAX_PROFILE_BYTES => {
                    Err(format!("profiles/{site}.json has more than {MAX_PROFILE_BYTES} bytes: keep only the selector and label tables"))
                }
                (Some(text), _) => Ok(text),
                (None, Some(problem)) => Err(problem),
                (None, None) => return None,
            };
            let modified_ms = file.get("modified_ms").and_then(Value::as_u64).unwrap_or(0);
            Some(CompanionProfile { site, text, modified_ms })
        })
        .collect();
    Some(RuntimeAnswer::Profiles(CompanionFiles { files }))
}

/// How many characters of a pending call's arguments the HUD shows (the runtime sends 160).
const ARGS_PREVIEW_CHARS: usize = 200;
/// How many characters of a pending call's decoded text the HUD shows (the runtime sends
/// at most 2 000).
const DETAIL_CHARS: usize = 2_000;

/// A `bridge_reply` result: `results` carries the message, `approval` the batch and its
/// pending calls (a call without its position or tool is not shown: an approval with none
/// left is unusable, so a bad answer), `round_limit` nothing more; every other state
/// (`nothing`, `streaming`, one this extension does not know) sends nothing.
fn bridge_reply(result: &Value) -> Option<RuntimeAnswer> {
    let rounds = result.get("rounds").and_then(|r| {
        let n = |key: &str| r.get(key).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
        Some(BridgeRounds { used: n("used")?, limit: n("limit")? })
    });
    let outcome = match result.get("state").and_then(Value::as_str) {
        Some("results") => BridgeOutcome::Results(BridgeResults {
            delivery_id: id_of(result, "delivery_id")?,
            text: str_of(result, "text")?,
            delivered: result.get("delivered").and_then(Value::as_bool).unwrap_or(false),
        }),
        Some("approval") => {
            let pending: Vec<PendingCall> = list_of(result, "pending")?
                .filter_map(|p| {
                    Some(PendingCall {
                        call: p.get("call").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0)?,
                        tool: clipped_of(p, "tool", MAX_LABEL_CHARS)?,
                        method: clipped_of(p, "method", MAX_LABEL_CHARS),
                        target: clipped_of(p, "target", MAX_LABEL_CHARS),
                        args_preview: clipped_of(p, "args_preview", ARGS_PREVIEW_CHARS).unwrap_or_default(),
                        // Unknown reads as mutating: the card never calls a write harmless.
                        mutating: p.get("mutating").and_then(Value::as_bool).unwrap_or(true),
                        detail: clipped_of(p, "detail", DETAIL_CHARS),
                        // Past our own cap, what was cut here counts as left out too.
                        detail_more: {
                            let sent = p.get("detail").and_then(Value::as_str).map_or(0, ext_core::text::char_count);
                            let more = p.get("detail_more").and_then(Value::as_u64).unwrap_or(0);
                            u32::try_from(more.saturating_add(sent.saturating_sub(DETAIL_CHARS) as u64)).unwrap_or(u32::MAX)
                        },
                    })
                })
                .collect();
            if pending.is_empty() {
                return None;
            }
            BridgeOutcome::Approval { batch_id: id_of(result, "delivery_id")?, pending }
        }
        Some("round_limit") => BridgeOutcome::RoundLimit,
        // An older runtime sends no state: `results` is known by its message.
        None if result.get("text").is_some_and(Value::is_string) => BridgeOutcome::Results(BridgeResults {
            delivery_id: id_of(result, "delivery_id")?,
            text: str_of(result, "text")?,
            delivered: result.get("delivered").and_then(Value::as_bool).unwrap_or(false),
        }),
        _ => BridgeOutcome::Nothing,
    };
    Some(RuntimeAnswer::Bridge { outcome, rounds })
}

/// A `judge_verdict` result: verdict, source, reason and the J7 priors present (whole
/// percents); `None` when it is not that shape.
fn judge_verdict(result: &Value) -> Option<RuntimeAnswer> {
    let verdict = match result.get("verdict")?.as_str()? {
        "continue" => Verdict::Continue,
        "done" => Verdict::Done,
        "uncertain" => Verdict::Uncertain,
        _ => return None,
    };
    let source = short_of(result, "source")?;
    let priors = result
        .get("priors")
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(name, p)| Some((limits::clip(name.clone(), 32), (p.as_f64()?.clamp(0.0, 1.0) * 100.0).round() as u8)))
                .take(5)
                .collect()
        })
        .unwrap_or_default();
    Some(RuntimeAnswer::Verdict(JudgeAnswer { verdict, source, reason: short_of(result, "reason").unwrap_or_default(), priors }))
}

/// A `goal_evidence` answer (J7): every count present and a number, the workspace one of
/// the four states; anything else is no evidence (Goal mode stops, fail closed).
fn goal_evidence(result: &Value) -> Option<RuntimeAnswer> {
    use ext_core::goal_supervisor::{Evidence, WorkspaceState, GOAL_MAX_CHARS};
    let count = |key: &str| result.get(key).and_then(Value::as_u64).map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    let goal = match result.get("goal")? {
        Value::Null => None,
        Value::String(goal) => Some(limits::clip(goal.clone(), GOAL_MAX_CHARS)),
        _ => return None,
    };
    let workspace = match result.get("workspace")?.as_str()? {
        "working" => WorkspaceState::Working,
        "idle" => WorkspaceState::Idle,
        "blocked" => WorkspaceState::Blocked,
        "unknown" => WorkspaceState::Unknown,
        _ => return None,
    };
    Some(RuntimeAnswer::GoalEvidence(Evidence {
        goal,
        todo_open: count("todos_open")?,
        todo_done: count("todos_done")?,
        open_tasks: count("open_tasks")?,
        workspace,
    }))
}

/// A stream or inbox event for the continuity machine (`name` `None`: a name the protocol
/// does not list); `None` for events it does not use.
pub fn event_input(name: Option<EventName>, data: &Value) -> Option<ContinuityInput> {
    let kind = match name {
        Some(EventName::Hello) => {
            // The stream's hello names its protocol; the link's handshake is a response.
            return Some(ContinuityInput::StreamHello {
                boot_id: id_of(data, "boot_id")?,
                last_seq: data.get("last_seq").and_then(Value::as_u64),
                agents: agent_snapshot(data),
                log_id: id_of(data, "log_id"),
                log_reset: data.get("log_reset").and_then(Value::as_bool).unwrap_or(false),
            });
        }
        Some(EventName::InboxChanged) => {
            return Some(ContinuityInput::InboxChanged {
                session_ref: id_of(data, "browser_session_ref")?,
                counts: counts_of(data.get("counts")?)?,
            });
        }
        Some(EventName::AgentWorking) => PaneEventKind::Working,
        Some(EventName::AgentSettled) => PaneEventKind::Settled(match data.get("status")?.as_str()? {
            "idle" => SettledStatus::Idle,
            "done" => SettledStatus::Done,
            "blocked" => SettledStatus::Blocked,
            _ => return None,
        }),
        Some(EventName::PaneRemoved) => PaneEventKind::PaneRemoved,
        // Stored events nothing uses still mark how far the stream (and its replay) got.
        Some(EventName::AgentOutput) => {
            return Some(ContinuityInput::AgentOutput {
                workspace_id: id_of(data, "workspace_id")?,
                pane_id: id_of(data, "pane_id")?,
                agent: short_of(data, "agent"),
                tail: clipped_of(data, "tail", MAX_RUNTIME_TEXT_CHARS)?,
                seq: data.get("seq").and_then(Value::as_u64).unwrap_or(0),
                stale: data.get("stale").and_then(Value::as_bool).unwrap_or(false),
            });
        }
        // The link's own events (not stored, no seq).
        Some(EventName::HerdrState | EventName::HostError) => return None,
        // The runtime's catalog changed: re-read it (the side panel shows it live).
        Some(EventName::WorkspaceUpsert | EventName::WorkspaceRemoved) => {
            return data.get("seq").and_then(Value::as_u64).map(|seq| ContinuityInput::CatalogChanged { seq });
        }
        // Stored events nothing reads still mark how far the stream (and its replay) got.
        _ => return data.get("seq").and_then(Value::as_u64).map(|seq| ContinuityInput::StreamPosition { seq }),
    };
    Some(ContinuityInput::StreamEvent(StreamEvent {
        boot_id: id_of(data, "boot_id")?,
        seq: data.get("seq")?.as_u64()?,
        workspace_id: id_of(data, "workspace_id")?,
        pane_id: id_of(data, "pane_id")?,
        kind,
        at: data.get("at").and_then(Value::as_u64).unwrap_or(0),
    }))
}

/// `hello.agents` as the tracker's snapshot; `None` when the runtime sent no list or the
/// list is cut (over [`MAX_RUNTIME_LIST_ITEMS`]: a missing pane could look settled, so no
/// snapshot rather than a partial one). An agent without usable ids makes the whole
/// snapshot unusable for the same reason. Statuses other than idle | done | blocked count
/// as not settled.
fn agent_snapshot(data: &Value) -> Option<Vec<AgentSnapshot>> {
    let list = data.get("agents")?.as_array()?;
    if list.len() > MAX_RUNTIME_LIST_ITEMS {
        return None;
    }
    list.iter()
        .map(|agent| {
            Some(AgentSnapshot {
                workspace_id: id_of(agent, "workspace_id")?,
                pane_id: id_of(agent, "pane_id")?,
                settled: match agent.get("status").and_then(Value::as_str) {
                    Some("idle") => Some(SettledStatus::Idle),
                    Some("done") => Some(SettledStatus::Done),
                    Some("blocked") => Some(SettledStatus::Blocked),
                    _ => None,
                },
            })
        })
        .collect()
}

/// The facts of a `page_facts` message; fields a page did not send are "unknown" (false;
/// no `unresolved` at all: the page did not say its facts resolve, so they do not).
/// The driver has already rejected messages over the caps (`wire::check_page_message`);
/// a URL over [`MAX_URL_CHARS`] or a bad `unresolved` is still refused here so this never
/// stores one.
pub fn page_report(value: &Value) -> Option<PageReport> {
    let flag = |key: &str| value.get(key).and_then(Value::as_bool).unwrap_or(false);
    Some(PageReport {
        url: str_of(value, "url").filter(|url| limits::within(url, MAX_URL_CHARS))?,
        composer: flag("composer"),
        draft: flag("draft"),
        generating: flag("generating"),
        permission_card: flag("permission_card"),
        user_turns: value.get("user_turns").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
        last_user_turn_id: str_of(value, "last_user_turn_id"),
        last_human_turn_id: id_of(value, "last_human_turn_id"),
        markers: value
            .get("markers")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(|m| m.as_str().map(str::to_owned)).take(MAX_MARKERS).collect())
            .unwrap_or_default(),
        delivering: str_of(value, "delivering"),
        generation: str_of(value, "generation"),
        unresolved: Unresolved::read_page_facts(value).ok()?,
        composer_marker: str_of(value, "composer_marker"),
        page_load: str_of(value, "page_load").unwrap_or_default(),
        human_apps: human_apps(value)?,
        account: page_account(value).ok()?,
    })
}

/// `page_facts.account`: absent or `null` is none (the account `default`); otherwise an id
/// [`ext_core::request_pacer::valid_account`] accepts, else why not (the report is refused).
pub fn page_account(value: &Value) -> Result<Option<String>, String> {
    match value.get("account") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(account)) => ext_core::request_pacer::valid_account(account)
            .map(|()| Some(account.clone()))
            .map_err(|why| format!("page_facts.account: {why}")),
        Some(_) => Err("page_facts.account: not a string or null".to_owned()),
    }
}

/// A `retry_after_ms` field: absent or `null` is none; otherwise a whole number of
/// milliseconds (the pacer caps it at an hour), else why not.
pub fn retry_after_ms(value: &Value) -> Result<Option<u64>, String> {
    match value.get("retry_after_ms") {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n.as_u64().map(Some).ok_or_else(|| "retry_after_ms: not a whole number of milliseconds ≥ 0 or null".to_owned()),
    }
}

/// A page's `rate_limited {page_load, source, retry_after_ms}`, checked: `page_load` a
/// non-empty id, `source` `resource_timing` or `page_notice`, `retry_after_ms` as
/// [`retry_after_ms`] reads it; otherwise why not.
pub fn rate_limited(value: &Value) -> Result<PortCommand, String> {
    let page_load = str_of(value, "page_load").filter(|id| !id.is_empty() && limits::within(id, ext_core::limits::MAX_ID_CHARS));
    let page_load = page_load.ok_or_else(|| "rate_limited.page_load: missing, empty or too long".to_owned())?;
    let source = match value.get("source").and_then(Value::as_str) {
        Some("resource_timing") => CooldownSource::ResourceTiming,
        Some("page_notice") => CooldownSource::PageNotice,
        _ => return Err("rate_limited.source: must be \"resource_timing\" or \"page_notice\"".to_owned()),
    };
    let retry_after_ms = retry_after_ms(value).map_err(|why| format!("rate_limited.{why}"))?;
    Ok(PortCommand::RateLimited { page_load, source, retry_after_ms })
}

/// `page_facts.human_apps`: absent or `null` is none; otherwise at most
/// [`MAX_APP_MENTIONS`] objects of exactly `keyword`, `name`, `path` strings of at most
/// [`MAX_ID_CHARS`] each. Anything else refuses the whole report (`None`): a list read in
/// part could make two Apps look like one (fail closed).
pub fn human_apps(value: &Value) -> Option<Vec<AppMention>> {
    let list = match value.get("human_apps") {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(list) => list.as_array()?,
    };
    if list.len() > MAX_APP_MENTIONS {
        return None;
    }
    list.iter()
        .map(|item| {
            let fields = item.as_object().filter(|o| o.len() == 3)?;
            let field = |key: &str| fields.get(key).and_then(Value::as_str).filter(|s| limits::within(s, MAX_ID_CHARS)).map(str::to_owned);
            Some(AppMention { keyword: field("keyword")?, name: field("name")?, path: field("path")? })
        })
        .collect()
}

/// Parses a continuity command; `None` when the message is not one.
pub fn port_command(value: &Value) -> Option<PortCommand> {
    let tab_of = |v: &Value| v.get("tab_id").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    match value.get("type")?.as_str()? {
        "delivery_report" => Some(PortCommand::DeliveryReport {
            id: str_of(value, "id")?,
            outcome: match value.get("outcome")?.as_str()? {
                "submitted" => DeliveryOutcome::Submitted,
                "unconfirmed" => DeliveryOutcome::Unconfirmed,
                // The App could not be attached: held, never sent without it (an unknown or
                // missing detail is still that, `unknown`).
                "not_submitted" if value.get("reason").and_then(Value::as_str) == Some("app_not_attached") => {
                    DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::parse(value.get("detail").and_then(Value::as_str)) }
                }
                "not_submitted" => {
                    DeliveryOutcome::NotSubmitted { reason: str_of(value, "reason").unwrap_or_else(|| "unknown".to_owned()) }
                }
                _ => return None,
            },
        }),
        "bridge_decide" => Some(PortCommand::BridgeDecide {
            batch_id: id_of(value, "batch_id")?,
            call: value.get("call")?.as_u64().and_then(|n| u32::try_from(n).ok())?,
            decision: match value.get("decision")?.as_str()? {
                "run" => BridgeDecision::Run,
                "skip" => BridgeDecision::Skip,
                _ => return None,
            },
        }),
        "action" => {
            let action = match value.get("action")?.as_str()? {
                "bridge_prompt" => "bridge_prompt",
                "toggle_auto" => "toggle_auto",
                "continue" => "continue",
                "check_herdr" => "check_herdr",
                "handoff" => "handoff",
                "handoff_resume" => "handoff_resume",
                "forget_app" => "forget_app",
                "journal_opt_in" => "journal_opt_in",
                "journal_opt_out" => "journal_opt_out",
                "goal_set" => return Some(PortCommand::GoalSet { text: str_of(value, "text").unwrap_or_default() }),
                "llm_judge" => {
                    let text = |key| str_of(value, key).unwrap_or_default();
                    return Some(PortCommand::LlmJudge { user_text: text("user_text"), assistant_text: text("assistant_text") });
                }
                _ => return None,
            };
            Some(PortCommand::HudAction(action))
        }
        "turn_ended" => Some(PortCommand::TurnEnded {
            user_text: str_of(value, "user_text")?,
            assistant_text: str_of(value, "assistant_text")?,
            user_marker: str_of(value, "user_marker"),
            message_id: id_of(value, "message_id"),
            user_message_id: id_of(value, "user_message_id"),
            pressed: value.get("pressed").and_then(Value::as_bool).unwrap_or(false),
            user_stopped: value.get("user_stopped").and_then(Value::as_bool).unwrap_or(false),
        }),
        "panel_hello" => Some(PortCommand::PanelHello { tab_id: tab_of(value) }),
        "panel_refresh" => Some(PortCommand::PanelRefresh),
        "queue_add" => Some(PortCommand::QueueAdd {
            text: value.get("text")?.as_str()?.to_owned(),
            // Present only with a cut text; anything but a count refuses the message.
            whole_chars: match value.get("whole_chars") {
                None | Some(Value::Null) => None,
                Some(count) => Some(usize::try_from(count.as_u64()?).ok()?),
            },
        }),
        "queue_clear" => Some(PortCommand::QueueClear { question: id_of(value, "question") }),
        "bind" => Some(PortCommand::Bind {
            tab_id: tab_of(value)?,
            workspace: CatalogWorkspace { workspace_id: str_of(value, "workspace_id")?, label: str_of(value, "label").unwrap_or_default() },
        }),
        "unbind" => Some(PortCommand::Unbind { scope_key: str_of(value, "scope_key")? }),
        "recovery_facts" => Some(PortCommand::RecoveryFacts(recovery_facts(value))),
        "health_sample" => health_sample(value),
        "user_stop" => Some(PortCommand::UserStop {
            page_load: str_of(value, "page_load").filter(|id| !id.is_empty() && limits::within(id, ext_core::limits::MAX_ID_CHARS))?,
        }),
        "thread_facts" => ext_core::json_read::ReadJson::read_json(value).ok().map(PortCommand::ThreadFacts),
        "permission_cards" => ext_core::permission_card::PageCards::read(value).ok().map(PortCommand::PermissionCards),
        "card_result" => {
            Some(PortCommand::CardResult { key: str_of(value, "key")?, clicked: value.get("outcome")?.as_str()? == "clicked" })
        }
        "snapshot_result" => Some(PortCommand::SnapshotResult {
            page_load: str_of(value, "page_load")?,
            answer: probe_answer(value),
            retry_after_ms: retry_after_ms(value).ok()?,
        }),
        "rate_limited" => rate_limited(value).ok(),
        // Read as sent: the worker checks the method, id and params and answers a refusal.
        "companion_call" => Some(PortCommand::CompanionCall {
            id: str_of(value, "id").unwrap_or_default(),
            method: str_of(value, "method").unwrap_or_default(),
            params: value.get("params").cloned(),
        }),
        "companion_watch" => Some(PortCommand::CompanionWatch),
        "queue_aside_remove" => Some(PortCommand::QueueAsideRemove { id: id_of(value, "id")?, question: id_of(value, "question") }),
        _ => None,
    }
}

fn count_of(value: &Value, key: &str) -> u32 {
    value.get(key).and_then(Value::as_u64).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// A `health_sample`: every count a whole number within its cap, the heap figures absent
/// or within theirs, the page load a short id; anything else refuses the whole sample.
fn health_sample(value: &Value) -> Option<PortCommand> {
    use ext_core::limits::{MAX_HEALTH_COUNT, MAX_HEALTH_HEAP_BYTES, MAX_ID_CHARS};
    let count = |key: &str| value.get(key).and_then(Value::as_u64).filter(|n| *n <= MAX_HEALTH_COUNT);
    let heap = |key: &str| match value.get(key) {
        None | Some(Value::Null) => Some(None),
        Some(v) => v.as_u64().filter(|n| *n <= MAX_HEALTH_HEAP_BYTES).map(Some),
    };
    let page_load = str_of(value, "page_load").filter(|id| !id.is_empty() && ext_core::limits::within(id, MAX_ID_CHARS))?;
    let sample = ext_core::health::HealthSample {
        callbacks: count("callbacks")?,
        drift_ms: count("drift_ms")?,
        long_task_ms: count("long_task_ms")?,
        long_tasks: count("long_tasks")?,
        heap_used: heap("heap_used")?,
        heap_limit: heap("heap_limit")?,
    };
    Some(PortCommand::HealthSample { page_load, sample })
}

/// The facts of a `recovery_facts` message; fields a page did not send are "not seen".
fn recovery_facts(value: &Value) -> PageRecoveryReport {
    let flag = |key: &str| value.get(key).and_then(Value::as_bool).unwrap_or(false);
    PageRecoveryReport {
        page_load: str_of(value, "page_load").unwrap_or_default(),
        assistant: flag("assistant"),
        assistant_id: str_of(value, "assistant_id"),
        assistant_len: count_of(value, "assistant_len"),
        assistant_streaming: flag("assistant_streaming"),
        signature: str_of(value, "signature").unwrap_or_default(),
        user_waiting: flag("user_waiting"),
        send_timeout: flag("send_timeout"),
        retry_offered: flag("retry_offered"),
        rate_limited: flag("rate_limited"),
        reasoning: flag("reasoning"),
        // A delivery id as the page read it from the marker line (ids are at most 256).
        waiting_marker: str_of(value, "waiting_marker").filter(|id| !id.is_empty() && id.chars().count() <= 256),
    }
}

/// A `snapshot_result`'s summary: a node with an id and a known role, else the page's
/// failure kind (`odd_shape` when it sent neither).
fn probe_answer(value: &Value) -> ProbeAnswer {
    let node = str_of(value, "node_id").filter(|id| !id.is_empty()).map(|id| ProbeNode {
        id,
        role: match value.get("role").and_then(Value::as_str) {
            Some("user") => ServerRole::User,
            Some("assistant") => ServerRole::Assistant,
            _ => ServerRole::Other,
        },
        text_len: count_of(value, "text_len"),
        finished: value.get("finished").and_then(Value::as_bool).unwrap_or(false),
        update_time_ms: value.get("update_time").and_then(Value::as_f64).and_then(ext_core::stale_view::update_time_ms),
    });
    match node {
        Some(node) => ProbeAnswer::Node(node),
        None => ProbeAnswer::Failed(str_of(value, "failure").unwrap_or_else(|| "odd_shape".to_owned())),
    }
}

#[cfg(test)]
mod pacer_wire_tests {
    //! The request pacer's wire (issue 26): `page_facts.account`, `rate_limited`,
    //! `snapshot_result.retry_after_ms` — read when well-formed, refused with a reason
    //! otherwise.
    use super::*;
    use serde_json::json;

    #[test]
    fn account_is_read_or_refused_with_its_reason() {
        assert_eq!(page_account(&json!({})), Ok(None));
        assert_eq!(page_account(&json!({"account": null})), Ok(None));
        assert_eq!(page_account(&json!({"account": "user-AbC_1"})), Ok(Some("user-AbC_1".to_owned())));
        for bad in [json!(""), json!("a b"), json!("x".repeat(65)), json!(7)] {
            let why = page_account(&json!({"account": bad})).expect_err("refused");
            assert!(why.starts_with("page_facts.account: "), "{why}");
        }
        let report = page_report(&json!({"url": "https://chatgpt.com/c/x", "account": "user-1", "unresolved": null}));
        assert_eq!(report.and_then(|r| r.account).as_deref(), Some("user-1"));
        assert!(page_report(&json!({"url": "https://chatgpt.com/c/x", "account": "bad id"})).is_none());
    }

    #[test]
    fn rate_limited_is_read_or_refused_with_its_reason() {
        let ok = rate_limited(&json!({"type": "rate_limited", "page_load": "p1", "source": "resource_timing", "retry_after_ms": null}));
        assert!(matches!(ok, Ok(PortCommand::RateLimited { source: CooldownSource::ResourceTiming, retry_after_ms: None, .. })), "{ok:?}");
        let notice = port_command(&json!({"type": "rate_limited", "page_load": "p1", "source": "page_notice", "retry_after_ms": 516000}));
        assert!(
            matches!(notice, Some(PortCommand::RateLimited { source: CooldownSource::PageNotice, retry_after_ms: Some(516_000), .. })),
            "{notice:?}"
        );
        for (bad, named) in [
            (json!({"page_load": "p1", "source": "retry_after"}), "rate_limited.source"),
            (json!({"page_load": "", "source": "page_notice"}), "rate_limited.page_load"),
            (json!({"page_load": "p1", "source": "page_notice", "retry_after_ms": -5}), "rate_limited.retry_after_ms"),
            (json!({"page_load": "p1", "source": "page_notice", "retry_after_ms": 1.5}), "rate_limited.retry_after_ms"),
            (json!({"page_load": "p1", "source": "page_notice", "retry_after_ms": "60"}), "rate_limited.retry_after_ms"),
        ] {
            let why = rate_limited(&bad).expect_err("refused");
            assert!(why.starts_with(named), "{why}");
        }
    }

    #[test]
    fn a_429_answer_carries_its_retry_after() {
        let answer = port_command(&json!({"type": "snapshot_result", "page_load": "p1", "failure": "http_429", "retry_after_ms": 516000}));
        match answer {
            Some(PortCommand::SnapshotResult { answer: ProbeAnswer::Failed(why), retry_after_ms, .. }) => {
                assert_eq!((why.as_str(), retry_after_ms), ("http_429", Some(516_000)));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            port_command(&json!({"type": "snapshot_result", "page_load": "p1", "failure": "http_429", "retry_after_ms": "soon"})).is_none()
        );
    }
}

#[cfg(test)]
mod queue_wire_tests {
    //! The page's Clear names the question it confirmed (clearfix31); a cut text carries
    //! its whole length.
    use super::*;
    use serde_json::json;

    #[test]
    fn a_queued_text_carries_its_whole_length_only_as_a_count() {
        let add = |message: Value| match port_command(&message) {
            Some(PortCommand::QueueAdd { text, whole_chars }) => Some((text, whole_chars)),
            None => None,
            other => panic!("{message}: {other:?}"),
        };
        assert_eq!(add(json!({"type": "queue_add", "text": "next"})), Some(("next".to_owned(), None)));
        assert_eq!(add(json!({"type": "queue_add", "text": "next", "whole_chars": null})), Some(("next".to_owned(), None)));
        assert_eq!(add(json!({"type": "queue_add", "text": "x", "whole_chars": 90000})), Some(("x".to_owned(), Some(90_000))));
        for bad in [json!(-1), json!(1.5), json!("90000"), json!([1])] {
            assert_eq!(add(json!({"type": "queue_add", "text": "x", "whole_chars": bad})), None, "{bad}");
        }
    }

    #[test]
    fn a_clear_carries_the_question_it_confirmed_and_none_when_the_page_sent_none() {
        let clear = |message: Value| match port_command(&message) {
            Some(PortCommand::QueueClear { question }) => question,
            other => panic!("{message}: {other:?}"),
        };
        assert_eq!(clear(json!({"type": "queue_clear", "question": "queueClearAsideFailed"})).as_deref(), Some("queueClearAsideFailed"));
        // An older page, a view-less question, anything that is not a key: no question.
        for message in [
            json!({"type": "queue_clear"}),
            json!({"type": "queue_clear", "question": null}),
            json!({"type": "queue_clear", "question": 1}),
            json!({"type": "queue_clear", "question": "q".repeat(MAX_ID_CHARS + 1)}),
        ] {
            assert_eq!(clear(message.clone()), None, "{message}");
        }
    }

    #[test]
    fn a_removal_of_a_record_kept_aside_carries_its_id_and_the_question_confirmed() {
        let removal = json!({"type": "queue_aside_remove", "id": "qa:0123456789abcdef", "question": "panelAsideConfirm"});
        assert_eq!(
            port_command(&removal),
            Some(PortCommand::QueueAsideRemove { id: "qa:0123456789abcdef".into(), question: Some("panelAsideConfirm".into()) })
        );
        let unconfirmed = json!({"type": "queue_aside_remove", "id": "qa:1", "question": null});
        assert_eq!(port_command(&unconfirmed), Some(PortCommand::QueueAsideRemove { id: "qa:1".into(), question: None }));
        // No id, or one too long to be ours: not a removal.
        assert_eq!(port_command(&json!({"type": "queue_aside_remove", "question": "panelAsideConfirm"})), None);
        assert_eq!(port_command(&json!({"type": "queue_aside_remove", "id": "q".repeat(MAX_ID_CHARS + 1)})), None);
    }
}
