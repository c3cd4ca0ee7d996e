//! The longer fuzz run behind `npm run bench` (`BENCH_ONLY=fuzz`): for `--seconds N`
//! (default 30) it feeds seeded hostile input to the Native Messaging framing, the socket's
//! line reader, the request decoder, the conversation URL reader, every method of a real
//! router and the JSON bridge's replies and decisions (`companion::fuzz`), and prints one
//! JSON line: executions, executions per second and crashes per target. A crash is a panic in a case or an `internal` answer; the exit
//! status is 1 when there was one.
//!
//!   cargo run --release -p companion --example fuzz -- --seconds 30 [--seed 1]

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use companion::fuzz::{self, Rng};
use futures::FutureExt;
use serde_json::json;

#[derive(Default)]
struct Tally {
    execs: u64,
    crashes: u64,
    first: Option<String>,
}

impl Tally {
    fn record(&mut self, outcome: Result<(), String>) {
        self.execs += 1;
        if let Err(why) = outcome {
            self.crashes += 1;
            self.first.get_or_insert(why);
        }
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default()
}

fn arg(name: &str) -> Option<u64> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|at| args.get(at + 1)).and_then(|v| v.parse().ok())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let seconds = arg("--seconds").unwrap_or(30);
    let seed = arg("--seed").unwrap_or(1);
    // Panics are counted, not printed one by one.
    std::panic::set_hook(Box::new(|_| {}));
    let home = tempfile::tempdir().expect("a temporary home");
    let router = fuzz::open_router(home.path()).await;
    let client = fuzz::drained_client();
    let log = companion::log::RuntimeLog::open(&home.path().join("fuzz.log"));
    let names = ["framing", "lines", "decoder", "conversation_url", "router", "bridge"];
    let mut tallies: Vec<Tally> = names.iter().map(|_| Tally::default()).collect();
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    // Each target gets an equal share of the time, one after the other, so its rate is
    // its own (the router's requests are far slower than a framing case).
    let slice = Duration::from_secs(seconds).div_f64(names.len() as f64);
    for (target, tally) in tallies.iter_mut().enumerate() {
        let slice_end = Instant::now() + slice;
        while Instant::now() < slice_end {
            let case_seed = rng.next_u64();
            let mut case = Rng::new(case_seed);
            let outcome = match target {
                0 => std::panic::catch_unwind(AssertUnwindSafe(|| fuzz::framing_case(&mut case).map(drop)))
                    .unwrap_or_else(|p| Err(panic_text(&*p))),
                1 => AssertUnwindSafe(fuzz::lines_case(&mut case))
                    .catch_unwind()
                    .await
                    .map_or_else(|p| Err(panic_text(&*p)), |r| r.map(drop)),
                2 => std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let line = fuzz::hostile_line(&mut case);
                    let _ = companion::protocol::parse_request(&line);
                }))
                .map_err(|p| panic_text(&*p)),
                3 => std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let _ = companion::journal::ConversationUrl::parse(&fuzz::hostile_string(&mut case));
                }))
                .map_err(|p| panic_text(&*p)),
                5 => AssertUnwindSafe(fuzz::bridge_case(&router, &client, &mut case, &log))
                    .catch_unwind()
                    .await
                    .map_or_else(|p| Err(panic_text(&*p)), |r| r.map(drop)),
                _ => {
                    let line = fuzz::hostile_line(&mut case);
                    AssertUnwindSafe(fuzz::request_case(&router, &client, &line, &log))
                        .catch_unwind()
                        .await
                        .map_or_else(|p| Err(panic_text(&*p)), |r| r.map(drop))
                }
            };
            tally.record(outcome.map_err(|why| format!("seed {case_seed}: {why}")));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let execs: u64 = tallies.iter().map(|t| t.execs).sum();
    let crashes: u64 = tallies.iter().map(|t| t.crashes).sum();
    let targets: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .zip(&tallies)
        .map(|(name, t)| {
            let value = json!({"execs": t.execs, "execs_per_second": (t.execs as f64 / slice.as_secs_f64()).round(), "crashes": t.crashes, "first_crash": t.first});
            ((*name).to_owned(), value)
        })
        .collect();
    let report = json!({"seconds": (elapsed * 10.0).round() / 10.0, "seed": seed, "execs": execs, "execs_per_second": (execs as f64 / elapsed).round(), "crashes": crashes, "targets": targets});
    println!("{report}");
    if crashes > 0 {
        std::process::exit(1);
    }
}
