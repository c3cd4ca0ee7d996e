//! The JSON bridge for z.ai and DeepSeek (SPEC O2, O3): chats without an MCP connector
//! reach the planner tools by writing `{"tool": …, "args": {…}}` lines; the extension sends
//! each finished reply here (`bridge.reply`), and the results go back to the chat as one
//! message through the extension's delivery ledger.
//!
//! - [`machine`]: detection, the batch (caps, parallelism), the results message (sans-IO).
//! - [`store`]: the claimed calls and the written results messages in `state.db`.
//!
//! [`BridgeService`] drives the machine: it answers a replayed reply from the stored
//! results message, refuses a batch over the round limit, asks the registry whether the
//! chat may make each call at all ([`ToolRunner::refusal`]), asks the user for every call
//! that is mutating or that Auto does not cover (`approval`, decided by
//! [`BridgeService::decide`]), claims each approved call durably before it runs it through
//! the tool registry (the caller's [`ToolRunner`], the same code path as `tools.call`, with
//! the chat as the caller), runs at most [`machine::MAX_IN_FLIGHT`] at once, and stores the
//! message — and counts the round — before answering.
//!
//! Invariants: a call is never run twice (claimed before it runs, also across runtime
//! restarts); a mutating call never runs without a stored `run` decision, a read-only one
//! only with that or with the chat's Auto on; while any call of a batch waits for the user
//! nothing of it runs; at most [`MAX_ROUNDS_PER_HUMAN_TURN`] batches reach their results
//! message per (conversation, human turn), counted in `state.db`; replies and decisions are
//! handled one at a time per chat (a replay that arrives while its first delivery still
//! runs waits for it and gets the same message; another chat's do not wait); every store
//! access runs on the blocking pool
//! (`crate::db::off_worker`).

pub mod machine;
pub mod store;

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use continuity_protocol::limits::MAX_ROUNDS_PER_HUMAN_TURN;
use continuity_protocol::{BridgeDecision, BridgeRounds, BridgeState, PendingCall};
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value};

use crate::db::{off_worker, DbError};
use machine::{classify, detect, message_key, Batch, BatchOutput, CallOutcome, Detection};
use store::{AskedBatch, BridgeStore, StoredResults};

/// Who makes a bridge call: the chat (its `browser_session_ref`) and the workspace it is
/// bound to. The registry confines every call to them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeCaller {
    /// The chat's `browser_session_ref` (`bridge.reply`'s `conversation`).
    pub session_ref: String,
    /// The workspace the chat is bound to.
    pub workspace_id: String,
}

/// Runs one planner tool for a bridge chat (the api layer's registry; a trait so this
/// service does not name the layer above it).
pub trait ToolRunner: Sync {
    /// Why `caller` may not make this call (`None`: it may). Asked before the user is:
    /// a refused call is answered `refused` and never offered for approval.
    fn refusal(&self, caller: BridgeCaller, tool: String, args: Map<String, Value>) -> impl Future<Output = Option<String>> + Send + '_;
    /// Runs `tool` with `args` for `caller` and says how it ended.
    fn run_tool(&self, caller: BridgeCaller, tool: String, args: Map<String, Value>) -> impl Future<Output = CallOutcome> + Send + '_;
}

/// One `bridge.reply`, as the service reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyRequest {
    /// The chat (its `browser_session_ref`).
    pub conversation: String,
    /// The reply's message id (`""`: its text stands in).
    pub message_id: String,
    /// The reply's text.
    pub text: String,
    /// Whether the page finished writing it.
    pub finished: bool,
    /// The workspace the chat is bound to.
    pub workspace_id: String,
    /// The chat's Auto (read-only calls run without a click only when it is on).
    pub auto: bool,
    /// The chat's newest human turn (rounds are counted per it).
    pub human_turn: String,
}

/// What `bridge.reply` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyAnswer {
    /// What the reply held.
    pub state: BridgeState,
    /// How many call lines.
    pub calls: u64,
    /// The batch id, when `state` is `approval`.
    pub batch_id: Option<String>,
    /// The results message, when `state` is `results`.
    pub results: Option<StoredResults>,
    /// The calls waiting for the user, when `state` is `approval`.
    pub pending: Vec<PendingCall>,
    /// The rounds of (conversation, human turn).
    pub rounds: BridgeRounds,
}

/// Why `bridge.decide` was not taken (its message names what is wrong and what to do).
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// The request cannot be taken.
    #[error("{0}")]
    Refused(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] DbError),
}

/// The bridge service.
#[derive(Debug)]
pub struct BridgeService {
    /// The bridge's rows in `state.db`.
    store: Arc<Mutex<BridgeStore>>,
    /// One reply (or decision) of a chat at a time, per chat (its `browser_session_ref`): a
    /// replay waits for its first delivery, and a chat whose tools run long holds up no other.
    gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A fresh nonce for the results' data fence: 12 hex characters of `/dev/urandom`. When the
/// kernel's randomness cannot be read there is no nonce (no public stand-in): the reply is
/// refused with that error.
fn fence_nonce() -> Result<continuity_protocol::fence::Nonce, DbError> {
    let hex = crate::db::random_hex_128().map_err(DbError::Random)?;
    let nonce = hex.get(..continuity_protocol::fence::NONCE_CHARS).and_then(continuity_protocol::fence::Nonce::parse);
    nonce.ok_or_else(|| DbError::Random(std::io::Error::other("/dev/urandom gave no hex nonce")))
}

fn lock(store: &Mutex<BridgeStore>) -> MutexGuard<'_, BridgeStore> {
    store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn rounds(used: u64) -> BridgeRounds {
    BridgeRounds { used, limit: MAX_ROUNDS_PER_HUMAN_TURN }
}

impl ReplyAnswer {
    fn bare(state: BridgeState, calls: u64, used: u64) -> Self {
        Self { state, calls, batch_id: None, results: None, pending: Vec::new(), rounds: rounds(used) }
    }
}

impl BridgeService {
    /// Opens the bridge's tables in `state.db` at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        Ok(Self { store: Arc::new(Mutex::new(BridgeStore::open(path)?)), gates: Mutex::default() })
    }

    /// Waits for `conversation`'s turn: held until the guard drops. Gates no one holds or
    /// waits for leave the map, so it stays as small as the chats in a call right now.
    async fn one_at_a_time(&self, conversation: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            gates.retain(|_, gate| Arc::strong_count(gate) > 1);
            Arc::clone(gates.entry(conversation.to_owned()).or_default())
        };
        gate.lock_owned().await
    }

    async fn with_store<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut BridgeStore) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        let store = self.store.clone();
        off_worker(move || work(&mut lock(&store))).await
    }

    async fn rounds_used(&self, conversation: &str, human_turn: &str) -> Result<u64, DbError> {
        let (conversation, human_turn) = (conversation.to_owned(), human_turn.to_owned());
        self.with_store(move |s| s.rounds_used(&conversation, &human_turn)).await
    }

    /// The answer to one reply: nothing, still streaming, over the round limit, waiting for
    /// the user, or its results message (run now for approved calls never claimed, from the
    /// record for the others). `now` is Unix ms.
    pub async fn reply<R: ToolRunner>(&self, runner: &R, request: &ReplyRequest, now: i64) -> Result<ReplyAnswer, DbError> {
        let ReplyRequest { conversation, message_id, text, finished, workspace_id, auto, human_turn } = request;
        let calls = match detect(text, *finished) {
            Detection::Nothing => return Ok(ReplyAnswer::bare(BridgeState::Nothing, 0, self.rounds_used(conversation, human_turn).await?)),
            Detection::Streaming => {
                return Ok(ReplyAnswer::bare(BridgeState::Streaming, 0, self.rounds_used(conversation, human_turn).await?))
            }
            Detection::Calls(calls) => calls,
        };
        let count = calls.len() as u64;
        let message = message_key(message_id, text);
        let mut batch = Batch::new(conversation, &message, calls, fence_nonce()?);
        let _one_at_a_time = self.one_at_a_time(conversation).await;
        let id = batch.delivery_id().to_owned();
        let lookup = id.clone();
        if let Some(stored) = self.with_store(move |s| s.results(&lookup)).await? {
            let used = self.rounds_used(conversation, human_turn).await?;
            return Ok(ReplyAnswer { results: Some(stored), ..ReplyAnswer::bare(BridgeState::Results, count, used) });
        }
        let used = self.rounds_used(conversation, human_turn).await?;
        if used >= MAX_ROUNDS_PER_HUMAN_TURN {
            return Ok(ReplyAnswer::bare(BridgeState::RoundLimit, count, used));
        }
        let keys = batch.keys();
        let records =
            self.with_store(move |s| keys.into_iter().map(|k| Ok((k.index, s.recorded(&k)?))).collect::<Result<Vec<_>, DbError>>()).await?;
        for (index, record) in records {
            batch.recorded(index, record);
        }
        // Approval: refused calls are answered at once; the others run only when decided
        // `run`, or when they only read and the chat's Auto is on.
        let caller = BridgeCaller { session_ref: conversation.clone(), workspace_id: workspace_id.clone() };
        let mut pending = Vec::new();
        for (index, tool, args) in batch.ready() {
            if let Some(why) = runner.refusal(caller.clone(), tool.clone(), args.clone()).await {
                batch.refuse(index, why);
                continue;
            }
            let lookup = id.clone();
            match self.with_store(move |s| s.decision(&lookup, index)).await? {
                Some(BridgeDecision::Run) => {}
                Some(BridgeDecision::Skip) => batch.skip(index),
                None => {
                    let class = classify(&tool, &args);
                    if class.mutating || !*auto {
                        pending.push(PendingCall {
                            call: index as u64 + 1,
                            tool,
                            method: class.method,
                            target: class.target,
                            args_preview: class.args_preview,
                            mutating: class.mutating,
                            detail: class.detail,
                            detail_more: class.detail_more,
                        });
                    }
                }
            }
        }
        if !pending.is_empty() {
            let asked = AskedBatch {
                conversation: conversation.clone(),
                message: message.clone(),
                calls: count,
                decidable: batch.decidable(),
                pending: pending.iter().map(|p| (p.call - 1) as usize).collect(),
                // Only calls within the batch cap can be decided (`decidable`).
                hashes: (0..batch.len().min(machine::MAX_CALLS_PER_BATCH)).filter_map(|i| batch.key_of(i)).map(|k| k.hash).collect(),
            };
            let batch_id = id.clone();
            self.with_store(move |s| s.ask(&batch_id, &asked, now)).await?;
            return Ok(ReplyAnswer { batch_id: Some(id), pending, ..ReplyAnswer::bare(BridgeState::Approval, count, used) });
        }
        let mut running = FuturesUnordered::new();
        loop {
            while let Some(output) = batch.poll() {
                match output {
                    BatchOutput::Run { index, key, tool, args } => {
                        let (claim_key, claim_tool) = (key.clone(), tool.clone());
                        if self.with_store(move |s| s.claim(&claim_key, &claim_tool, now)).await? {
                            let caller = caller.clone();
                            running.push(async move { (index, key, runner.run_tool(caller, tool, args).await) });
                        } else {
                            // Claimed by an earlier request that did not finish: never again.
                            batch.finished(index, CallOutcome::Interrupted);
                        }
                    }
                    BatchOutput::Done { delivery_id, text } => {
                        let results = StoredResults { delivery_id, text, calls: count, delivered: false };
                        let (stored, conversation, message, turn) =
                            (results.clone(), conversation.clone(), message.clone(), human_turn.clone());
                        let used =
                            self.with_store(move |s| s.store_results_and_round(&conversation, &message, &turn, &stored, now)).await?;
                        return Ok(ReplyAnswer { results: Some(results), ..ReplyAnswer::bare(BridgeState::Results, count, used) });
                    }
                }
            }
            let Some((index, key, outcome)) = running.next().await else {
                // Nothing runs and nothing can start: only a call whose record was never
                // read can stall a batch (the keys above cover them all); fail closed.
                batch.forget_unknown();
                continue;
            };
            let recorded = outcome.clone();
            self.with_store(move |s| s.finish(&key, &recorded)).await?;
            batch.finished(index, outcome);
        }
    }

    /// The user's decision for call `call` (1-based) of `batch_id` in `conversation`;
    /// answers how many calls of the batch still wait. The same decision again changes
    /// nothing; anything the bridge cannot take is [`DecideError::Refused`] with why.
    pub async fn decide(
        &self,
        conversation: &str,
        batch_id: &str,
        call: u64,
        decision: BridgeDecision,
        now: i64,
    ) -> Result<u64, DecideError> {
        let _one_at_a_time = self.one_at_a_time(conversation).await;
        let (conversation, batch_id) = (conversation.to_owned(), batch_id.to_owned());
        let outcome = self
            .with_store(move |s| {
                let unknown = || format!("bridge.decide: chat {conversation} has no batch {batch_id} waiting for approval; send the delivery_id of this chat's bridge_reply whose state is approval");
                let Some(asked) = s.asked(&batch_id)? else { return Ok(Err(unknown())) };
                if asked.conversation != conversation {
                    return Ok(Err(unknown()));
                }
                if call == 0 || call > asked.calls {
                    return Ok(Err(format!("bridge.decide: call {call} is out of range; batch {batch_id} has calls 1 to {}", asked.calls)));
                }
                let index = (call - 1) as usize;
                if !asked.decidable.contains(&index) {
                    return Ok(Err(format!("bridge.decide: call {call} of batch {batch_id} needs no decision (it is malformed or past the batch cap, and never runs)")));
                }
                let pending = |s: &BridgeStore| -> Result<u64, DbError> {
                    let mut left = 0;
                    for i in &asked.pending {
                        if s.decision(&batch_id, *i)?.is_none() {
                            left += 1;
                        }
                    }
                    Ok(left)
                };
                match s.decision(&batch_id, index)? {
                    Some(same) if same == decision => return Ok(Ok(pending(s)?)),
                    Some(other) => {
                        return Ok(Err(format!("bridge.decide: call {call} of batch {batch_id} was already decided `{other}`; a decision is not changed")));
                    }
                    None => {}
                }
                let key = machine::CallKey { conversation: asked.conversation.clone(), message: asked.message.clone(), index, hash: asked.hashes.get(index).cloned().unwrap_or_default() };
                let ran = !matches!(s.recorded(&key)?, machine::Recorded::New);
                if ran || s.results(&batch_id)?.is_some() {
                    return Ok(match decision {
                        BridgeDecision::Run if ran => Ok(pending(s)?),
                        _ => Err(format!("bridge.decide: call {call} of batch {batch_id} already ran or was answered; it cannot be {}", if decision == BridgeDecision::Skip { "skipped" } else { "run" })),
                    });
                }
                if !s.decide(&batch_id, index, decision, now)? {
                    return Ok(Err(unknown()));
                }
                Ok(Ok(pending(s)?))
            })
            .await?;
        outcome.map_err(DecideError::Refused)
    }

    /// Marks a results message delivered; `false` for an id the bridge never wrote.
    pub async fn delivered(&self, delivery_id: &str, now: i64) -> Result<bool, DbError> {
        let id = delivery_id.to_owned();
        self.with_store(move |s| s.delivered(&id, now)).await
    }

    /// How many calls were ever claimed.
    pub async fn claimed_calls(&self) -> Result<u64, DbError> {
        self.with_store(|s| s.claimed_calls()).await
    }
}
