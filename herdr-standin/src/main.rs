//! `herdr-standin`: a local stand-in for a headless Herdr 0.8.2 server, for tests and the
//! demo. It speaks Herdr's socket protocol as recorded in `../shared/herdr/transcript.md`.
//!
//! Usage: `herdr-standin --socket PATH [--protocol N] [--seed FILE]`; prints
//! `ready <socket>` on stdout once listening.
//!
//! Invariants:
//! - One request per connection: the server answers one line and closes, except for
//!   `events.subscribe`, which stays open and streams one event per line after the ack.
//! - The session model (`model.rs`) is sans-IO; this file only moves lines.
//! - Stand-in only method: `standin.inject_lines {lines, oversized_bytes?}` writes raw
//!   lines (and optionally one line of that many bytes) to every open subscription, so
//!   tests can feed junk to a client.

mod model;
mod wire;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use model::{Seed, Session, SubscriptionFilter};

/// Longest request line accepted (Herdr has no documented cap; 1 MiB is plenty).
const MAX_REQUEST_BYTES: u64 = 1 << 20;

/// A live `events.subscribe` connection.
struct Subscriber {
    /// What it asked for.
    filter: SubscriptionFilter,
    /// Lines to write to it.
    lines: mpsc::UnboundedSender<String>,
}

/// State shared by all connections.
struct Shared {
    /// The session.
    session: Session,
    /// Open subscriptions.
    subscribers: Vec<Subscriber>,
}

/// Parsed command line.
struct Options {
    /// Socket path.
    socket: PathBuf,
    /// Protocol reported by `ping`.
    protocol: u32,
    /// Optional seed file.
    seed: Option<PathBuf>,
}

fn parse_options() -> anyhow::Result<Options> {
    let mut args = std::env::args().skip(1);
    let mut socket = None;
    let mut protocol = 20;
    let mut seed = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--socket" => socket = args.next().map(PathBuf::from),
            "--protocol" => {
                protocol = args
                    .next()
                    .context("--protocol needs a number, e.g. --protocol 20")?
                    .parse()
                    .context("--protocol needs a number, e.g. --protocol 20")?
            }
            "--seed" => seed = args.next().map(PathBuf::from),
            "--help" | "-h" => {
                println!("usage: herdr-standin --socket PATH [--protocol N] [--seed FILE]");
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}`; usage: herdr-standin --socket PATH [--protocol N] [--seed FILE]"),
        }
    }
    let Some(socket) = socket else { bail!("missing --socket PATH; usage: herdr-standin --socket PATH [--protocol N] [--seed FILE]") };
    Ok(Options { socket, protocol, seed })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = parse_options()?;
    let mut session = Session::new(options.protocol);
    if let Some(seed_path) = &options.seed {
        let text = std::fs::read_to_string(seed_path).with_context(|| format!("cannot read seed file {}", seed_path.display()))?;
        let seed: Seed = serde_json::from_str(&text).with_context(|| format!("seed file {} is not a valid seed", seed_path.display()))?;
        session.apply_seed(&seed).map_err(anyhow::Error::msg)?;
    }
    if options.socket.exists() {
        std::fs::remove_file(&options.socket).with_context(|| format!("cannot remove old socket {}", options.socket.display()))?;
    }
    let listener = UnixListener::bind(&options.socket).with_context(|| format!("cannot listen on {}", options.socket.display()))?;
    println!("ready {}", options.socket.display());
    let shared = Arc::new(Mutex::new(Shared { session, subscribers: Vec::new() }));
    loop {
        let (stream, _) = listener.accept().await.context("accept failed")?;
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            if let Err(error) = serve(stream, shared).await {
                eprintln!("herdr-standin: connection ended: {error:#}");
            }
        });
    }
}

async fn serve(stream: UnixStream, shared: Arc<Mutex<Shared>>) -> anyhow::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read.take(MAX_REQUEST_BYTES));
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Ok(());
    }
    let line = line.trim_end_matches(['\n', '\r']);
    // The change, its events and the subscriber registration happen under one lock, and
    // the events are queued before the response is written: a client that got the answer
    // to request A and then sends request B always sees A's events before B's (as with
    // Herdr, which publishes a change before answering the request that caused it).
    let (reply, receiver) = {
        let mut guard = shared.lock().map_err(|_| anyhow::anyhow!("state lock poisoned"))?;
        let reply = guard.session.handle_line(line);
        let receiver = reply.subscribe.clone().map(|filter| {
            let (sender, receiver) = mpsc::unbounded_channel();
            for event in &reply.initial_events {
                let _ = sender.send(event.to_line());
            }
            guard.subscribers.push(Subscriber { filter, lines: sender.clone() });
            receiver
        });
        guard.subscribers.retain(|s| !s.lines.is_closed());
        for event in &reply.events {
            let line = event.to_line();
            for subscriber in &guard.subscribers {
                if subscriber.filter.wants(event) {
                    let _ = subscriber.lines.send(line.clone());
                }
            }
        }
        for raw in &reply.inject_lines {
            for subscriber in &guard.subscribers {
                let _ = subscriber.lines.send(raw.clone());
            }
        }
        (reply, receiver)
    };
    write.write_all(format!("{}\n", reply.response).as_bytes()).await?;
    let Some(mut receiver) = receiver else {
        write.shutdown().await?;
        return Ok(());
    };
    // Stream until the client goes away (its read side closes or a write fails).
    let mut probe = [0u8; 64];
    let mut reader = reader.into_inner().into_inner();
    loop {
        tokio::select! {
            next = receiver.recv() => {
                let Some(line) = next else { return Ok(()) };
                write.write_all(format!("{line}\n").as_bytes()).await?;
            }
            read = tokio::io::AsyncReadExt::read(&mut reader, &mut probe) => {
                if read? == 0 { return Ok(()); }
            }
        }
    }
}
