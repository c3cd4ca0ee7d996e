//! The JSON bridge for z.ai and DeepSeek (SPEC O2, O3): chats without an MCP connector
//! reach the planner tools by writing `{"tool": …, "args": {…}}` lines; the extension sends
//! each finished reply here (`bridge.reply`), and the results go back to the chat as one
//! message through the extension's delivery ledger.
//!
//! - [`machine`]: detection, the batch (caps, parallelism), the results message (sans-IO).
//! - [`store`]: the claimed calls and the written results messages in `state.db`.
//!
//! [`BridgeService`] drives the machine: it answers a replayed reply from the stored
//! results message, claims each new call durably before it runs it through the tool
//! registry (the caller's [`ToolRunner`], the same code path as `tools.call`), runs at most
//! [`machine::MAX_IN_FLIGHT`] at once, and stores the message before answering.
//!
//! Invariants: a call is never run twice (claimed before it runs, also across runtime
//! restarts); replies are handled one at a time (a replay that arrives while its first
//! delivery still runs waits for it and gets the same message); every store access runs
//! on the blocking pool (`crate::db::off_worker`).

pub mod machine;
pub mod store;

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use continuity_protocol::BridgeState;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value};

use crate::db::{off_worker, DbError};
use machine::{detect, message_key, Batch, BatchOutput, CallOutcome, Detection};
use store::{BridgeStore, StoredResults};

/// Runs one planner tool (the api layer's registry; a trait so this service does not
/// name the layer above it).
pub trait ToolRunner: Sync {
    /// Runs `tool` with `args` and says how it ended.
    fn run_tool(&self, tool: String, args: Map<String, Value>) -> impl Future<Output = CallOutcome> + Send + '_;
}

/// What `bridge.reply` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyAnswer {
    /// What the reply held.
    pub state: BridgeState,
    /// How many call lines.
    pub calls: u64,
    /// The results message, when `state` is `results`.
    pub results: Option<StoredResults>,
}

/// The bridge service.
#[derive(Debug)]
pub struct BridgeService {
    /// The bridge's rows in `state.db`.
    store: Arc<Mutex<BridgeStore>>,
    /// One reply at a time.
    gate: tokio::sync::Mutex<()>,
}

fn lock(store: &Mutex<BridgeStore>) -> MutexGuard<'_, BridgeStore> {
    store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl BridgeService {
    /// Opens the bridge's tables in `state.db` at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        Ok(Self { store: Arc::new(Mutex::new(BridgeStore::open(path)?)), gate: tokio::sync::Mutex::new(()) })
    }

    async fn with_store<T: Send + 'static>(&self, work: impl FnOnce(&mut BridgeStore) -> Result<T, DbError> + Send + 'static) -> Result<T, DbError> {
        let store = self.store.clone();
        off_worker(move || work(&mut lock(&store))).await
    }

    /// The answer to one reply: nothing, still streaming, or its results message (run now
    /// for calls never claimed, from the record for the others). `now` is Unix ms.
    pub async fn reply<R: ToolRunner>(&self, runner: &R, conversation: &str, message_id: &str, text: &str, finished: bool, now: i64) -> Result<ReplyAnswer, DbError> {
        let calls = match detect(text, finished) {
            Detection::Nothing => return Ok(ReplyAnswer { state: BridgeState::Nothing, calls: 0, results: None }),
            Detection::Streaming => return Ok(ReplyAnswer { state: BridgeState::Streaming, calls: 0, results: None }),
            Detection::Calls(calls) => calls,
        };
        let count = calls.len() as u64;
        let message = message_key(message_id, text);
        let mut batch = Batch::new(conversation, &message, calls);
        let _one_at_a_time = self.gate.lock().await;
        let id = batch.delivery_id().to_owned();
        if let Some(stored) = self.with_store(move |s| s.results(&id)).await? {
            return Ok(ReplyAnswer { state: BridgeState::Results, calls: count, results: Some(stored) });
        }
        let keys = batch.keys();
        let records = self.with_store(move |s| keys.into_iter().map(|k| Ok((k.index, s.recorded(&k)?))).collect::<Result<Vec<_>, DbError>>()).await?;
        for (index, record) in records {
            batch.recorded(index, record);
        }
        let mut running = FuturesUnordered::new();
        loop {
            while let Some(output) = batch.poll() {
                match output {
                    BatchOutput::Run { index, key, tool, args } => {
                        let (claim_key, claim_tool) = (key.clone(), tool.clone());
                        if self.with_store(move |s| s.claim(&claim_key, &claim_tool, now)).await? {
                            running.push(async move { (index, key, runner.run_tool(tool, args).await) });
                        } else {
                            // Claimed by an earlier request that did not finish: never again.
                            batch.finished(index, CallOutcome::Interrupted);
                        }
                    }
                    BatchOutput::Done { delivery_id, text } => {
                        let results = StoredResults { delivery_id, text, calls: count, delivered: false };
                        let (stored, conversation, message) = (results.clone(), conversation.to_owned(), message.clone());
                        self.with_store(move |s| s.store_results(&conversation, &message, &stored, now)).await?;
                        return Ok(ReplyAnswer { state: BridgeState::Results, calls: count, results: Some(results) });
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
