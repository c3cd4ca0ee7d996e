//! The bench's journal fill (`herdr-companion journal-fill`, hidden; `npm run bench` runs
//! it through e2e/bench/journal.mjs): a large synthetic journal written fast, in batched
//! transactions through the same insert code as `continuity.append`.
//!
//! Shape: turns of 100 per chain, 2 conversations per chain, 10 chains per Project, 200
//! workspaces; each text is 24 words drawn uniformly from a 4 096-word vocabulary
//! ([`word`]). Everything comes from a fixed seed, so two fills are identical.

use std::path::Path;
use std::time::Instant;

use continuity_protocol::journal::ContinuityAppendParams;
use continuity_protocol::TurnRole;
use serde_json::{json, Value};

use super::store::{JournalError, JournalStore};

/// Turns per chain.
const TURNS_PER_CHAIN: u64 = 100;
/// Chains per Project.
const CHAINS_PER_PROJECT: u64 = 10;
/// Workspaces the chains are spread over.
const WORKSPACES: u64 = 200;
/// Words per turn text.
const WORDS_PER_TURN: u64 = 24;
/// Vocabulary size (16 × 16 × 16 syllable triples).
pub const VOCABULARY: u64 = 4096;
/// Turns per transaction.
const BATCH: u64 = 50_000;
/// The fill's page cache (its indexes outgrow SQLite's default 2 MiB early).
const FILL_CACHE_KIB: u32 = 256 * 1024;

const SYLLABLES: [&str; 16] = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fu", "gi", "ho", "ju", "pe", "zo"];

/// Word `n` of the vocabulary (three syllables).
pub fn word(n: u64) -> String {
    let n = n % VOCABULARY;
    [n / 256, (n / 16) % 16, n % 16].iter().map(|i| SYLLABLES[*i as usize]).collect()
}

/// A small deterministic generator (splitmix64).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn project(chain: u64) -> String {
    format!("g-p-{:032x}", chain / CHAINS_PER_PROJECT)
}

/// Turn `n` of the fill.
fn fill_turn(n: u64, mix: &mut Mix) -> ContinuityAppendParams {
    let chain = n / TURNS_PER_CHAIN;
    let conversation = format!("bench-{chain}-{}", (n % TURNS_PER_CHAIN) / (TURNS_PER_CHAIN / 2));
    let text: Vec<String> = (0..WORDS_PER_TURN).map(|_| word(mix.next())).collect();
    ContinuityAppendParams {
        continuity_id: Some(format!("hc-bench-{chain}")),
        conversation_url: Some(format!("https://chatgpt.com/g/{}/c/{conversation}", project(chain))),
        conversation_id: conversation,
        message_id: format!("m-{n}"),
        role: if n.is_multiple_of(2) { TurnRole::User } else { TurnRole::Assistant },
        text: text.join(" "),
        observed_at: 1_764_547_200_000 + n,
        project_id: Some(project(chain)),
        workspace_id: Some(format!("w{}", chain % WORKSPACES)),
        title: Some(format!("Bench chain {chain}")),
    }
}

/// The long chain's id (`--long-chain`).
pub const LONG_CHAIN: &str = "hc-bench-long";

/// Turn `n` of the long chain: one conversation, alternating roles, turn 0 the goal.
fn long_turn(n: u64, mix: &mut Mix) -> ContinuityAppendParams {
    let text: Vec<String> = (0..WORDS_PER_TURN).map(|_| word(mix.next())).collect();
    ContinuityAppendParams {
        continuity_id: Some(LONG_CHAIN.to_owned()),
        conversation_url: None,
        conversation_id: "bench-long".to_owned(),
        message_id: format!("l-{n}"),
        role: if n.is_multiple_of(2) { TurnRole::User } else { TurnRole::Assistant },
        text: text.join(" "),
        observed_at: 1_764_547_200_000 + n,
        project_id: None,
        workspace_id: Some("w-long".to_owned()),
        title: Some("Bench long chain".to_owned()),
    }
}

/// Writes `turns` turns into the journal of `db_path` (and a chain of `long_chain` turns,
/// [`LONG_CHAIN`], when not 0) and answers what the bench needs: the counts, the time
/// taken, and identities it can search by.
pub fn fill(db_path: &Path, turns: u64, long_chain: u64) -> Result<Value, JournalError> {
    let mut store = JournalStore::open(db_path)?;
    store.set_cache_kib(FILL_CACHE_KIB)?;
    let mut mix = Mix(0x5eed);
    let started = Instant::now();
    let mut written = 0;
    while written < turns {
        let end = (written + BATCH).min(turns);
        let batch: Vec<ContinuityAppendParams> = (written..end).map(|n| fill_turn(n, &mut mix)).collect();
        store.append_batch(batch, 1_764_547_200_000 + end as i64)?;
        written = end;
    }
    let mut long = 0;
    while long < long_chain {
        let end = (long + BATCH).min(long_chain);
        let batch: Vec<ContinuityAppendParams> = (long..end).map(|n| long_turn(n, &mut mix)).collect();
        store.append_batch(batch, 1_764_547_200_000 + end as i64)?;
        long = end;
    }
    let seconds = started.elapsed().as_secs_f64();
    let chains = turns.div_ceil(TURNS_PER_CHAIN);
    Ok(json!({
        "turns": store.turn_count()?,
        "long_chain": if long_chain > 0 { Value::from(LONG_CHAIN) } else { Value::Null },
        "chains": chains,
        "seconds": seconds,
        "vocabulary": VOCABULARY,
        "projects": (0..chains.min(50)).step_by(CHAINS_PER_PROJECT as usize).map(project).collect::<Vec<_>>(),
        "workspaces": (0..WORKSPACES.min(chains)).map(|w| format!("w{w}")).collect::<Vec<_>>(),
        "conversations": (0..chains.min(50)).map(|c| format!("bench-{c}-0")).collect::<Vec<_>>(),
        "words": (0..64).map(|i| word(i * 61)).collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_fill_is_searchable_by_its_words_and_identities() {
        let dir = tempfile::tempdir().expect("tempdir");
        let summary = fill(&dir.path().join("state.db"), 250, 70).expect("fill");
        assert_eq!((summary["turns"].as_u64(), summary["chains"].as_u64()), (Some(320), Some(3)));
        assert_eq!(summary["long_chain"], LONG_CHAIN);
        let store = JournalStore::open(&dir.path().join("state.db")).expect("open");
        let chain = store.chain_of_conversation("bench-2-0").expect("read").expect("journaled");
        assert_eq!(chain.continuity_id, "hc-bench-2");
        assert_eq!(word(0), "kakaka");
        assert_eq!(word(VOCABULARY - 1), "zozozo");
    }
}
