//! Command-line entry point of `herdr-companion`; parsing only, the work is in the library.
//!
//! Exit status: 0 success; 1 the command failed (for `doctor`: a check failed), with a
//! message on stderr that says what to do; 2 the command line is wrong (clap's message
//! names the mistake and the usage). `runtime` exits 70 when a stop was forced.

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

use companion::doctor;
use companion::install::{self, Browser, Target};
use companion::judge::Stages;
use companion::mcp::oauth::cli::OAuthCommand;
use companion::mcp::McpOptions;
use companion::paths::{CompanionHome, HOME_ENV};
use companion::runtime::{self, RuntimeOptions};

/// The prefix of the origin a Chromium browser passes as argv[1] to a host it starts.
const ORIGIN_PREFIX: &str = "chrome-extension://";

#[derive(Debug, Parser)]
#[command(
    name = "herdr-companion",
    version,
    about = "The native side of herdr-continuity: brings Herdr coding-agent events back into web AI chats.",
    after_help = "Start with `herdr-companion install --browser chrome`, then `herdr-companion doctor`.\n\
                  The companion home (socket, state.db, runtime.log) is --home, else $HERDR_CONTINUITY_HOME, \
                  else ~/.local/state/herdr-continuity on Linux and ~/Library/Application Support/herdr-continuity on macOS."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Native Messaging host: relays the browser's frames to the runtime (the browser runs
    /// this through the wrapper `install` writes; you do not run it yourself).
    Host {
        /// The calling extension's origin, `chrome-extension://<id>/`; anything else is refused.
        origin: Option<String>,
        /// Further arguments the browser may pass (e.g. `--parent-window=N` on Windows); ignored.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        ignored: Vec<OsString>,
    },
    /// The long-lived runtime daemon: owns the socket, state.db and the Herdr connection
    /// (the host starts it when needed).
    Runtime {
        #[command(flatten)]
        home: HomeArg,
        #[command(flatten)]
        herdr: HerdrSessionArg,
    },
    /// Registers the host with a browser: writes its Native Messaging host manifest and the
    /// wrapper script the manifest points at.
    Install(TargetArgs),
    /// Removes the host manifest `install` wrote for a browser.
    Uninstall(TargetArgs),
    /// Checks every link (manifest, home, socket, runtime, Herdr) and says how to fix each
    /// broken one; exits 1 when any check failed.
    Doctor {
        /// The browser whose manifest to check.
        #[arg(long, value_enum, default_value = "chrome")]
        browser: Browser,
        #[command(flatten)]
        location: LocationArgs,
        #[command(flatten)]
        home: HomeArg,
        #[command(flatten)]
        herdr: HerdrSessionArg,
    },
    /// Parent-inbox tasks through the runtime socket (stands in for the MCP downlink's
    /// `herdr_prompt` in tests and the demo).
    #[command(subcommand)]
    Task(TaskCommand),
    /// The turn-end judge (the same chain as the runtime's `judge.turn_end`).
    #[command(subcommand)]
    Judge(JudgeCommand),
    /// The planner tools (herdr_prompt, herdr_call, herdr_methods, herdr_inspect) as an MCP
    /// server: stdio by default, streamable HTTP on a loopback address with --http.
    Mcp {
        #[command(flatten)]
        home: HomeArg,
        /// Serve streamable HTTP at http://ADDR/mcp instead of stdio; ADDR must be loopback
        /// (127.0.0.1:PORT or [::1]:PORT). Requests need `Authorization: Bearer <mcp.token>`
        /// from config.json in the companion home (created 0600 when missing).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// The public https:// address an HTTPS tunnel you run (cloudflared, Tailscale Funnel,
        /// …) serves --http at, e.g. https://herdr.example.com; turns on the OAuth 2.1 sign-in
        /// ChatGPT uses, with consent given here (`herdr-companion oauth approve CODE`). The
        /// static bearer keeps working. Plain http:// only for a loopback proxy.
        #[arg(long, value_name = "URL", requires = "http")]
        public_url: Option<String>,
    },
    /// The OAuth sign-ins of `mcp --http --public-url`: approve or deny a waiting request by
    /// the code its page shows, list and revoke clients.
    Oauth {
        #[command(subcommand)]
        command: OauthSubcommand,
        /// The companion home directory (default: $HERDR_CONTINUITY_HOME, else the system's default).
        #[arg(long, value_name = "DIR", global = true)]
        home: Option<PathBuf>,
    },
    /// The project roots the workstation tools (herdr_fs_*, herdr_git, herdr_exec…) may
    /// touch, besides the working directories of the bound workspace's Herdr panes.
    #[command(subcommand)]
    Roots(RootsCommand),
    /// Prints the version (same as --version).
    Version,
    /// Bench only (`npm run bench`): writes TURNS synthetic turns into the Continuity
    /// Journal of the home's state.db in batched transactions and prints a JSON summary.
    #[command(hide = true)]
    JournalFill {
        #[command(flatten)]
        home: HomeArg,
        /// How many turns to write.
        #[arg(long, value_name = "TURNS")]
        turns: u64,
        /// Also one chain of this many turns (`hc-bench-long`, the resume paging bench).
        #[arg(long, value_name = "TURNS", default_value_t = 0)]
        long_chain: u64,
    },
}

#[derive(Debug, Subcommand)]
enum OauthSubcommand {
    /// Lists the sign-in requests waiting for a decision (code, client, redirect host, age).
    Pending,
    /// Approves the waiting request with this code (only one you started yourself).
    Approve {
        /// The code its sign-in page shows, e.g. K7QX-M2PA.
        code: String,
    },
    /// Denies the waiting request with this code, or with --all every waiting request.
    Deny {
        /// The code its sign-in page shows.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        code: Option<String>,
        /// Deny every waiting request (when strangers who found your tunnel URL filled the
        /// list); your own client then signs in again.
        #[arg(long)]
        all: bool,
    },
    /// Lists the registered clients with their grants.
    Clients,
    /// Revokes every token of a client (it must sign in and be approved again).
    Revoke {
        /// The client id, as `oauth clients` lists it.
        client_id: String,
    },
}

#[derive(Debug, Subcommand)]
enum RootsCommand {
    /// Registers the directory PATH as a project root (symlinks resolved; kept in state.db).
    Add {
        /// The project directory.
        path: PathBuf,
        #[command(flatten)]
        home: HomeArg,
    },
    /// Lists the registered project roots, one a line.
    List {
        #[command(flatten)]
        home: HomeArg,
    },
    /// Removes the registered project root PATH.
    Remove {
        /// The root, as `roots list` prints it (or a path that resolves to it).
        path: PathBuf,
        #[command(flatten)]
        home: HomeArg,
    },
}

#[derive(Debug, Subcommand)]
enum JudgeCommand {
    /// Judges replies read as JSON lines on stdin, `{"id": …, "text": "<assistant reply>"}`
    /// (optionally "user_text"), and writes one `{"id", "verdict", "source", "reason"}`
    /// line per input; a line that cannot be judged gets `{"line", "id", "error"}`.
    /// Exits 1 when any line was refused or config.json is refused.
    #[command(after_help = "Providers come from config.json in the companion home (mode 0600); see the README's \"Turn-end judge\".\n\
                            Example: echo '{\"id\":\"1\",\"text\":\"Tests pass. Next I will update the docs.\"}' | herdr-companion judge classify --script-only")]
    Classify {
        /// Only the safety gate and the mechanical script; config.json is not read.
        #[arg(long)]
        script_only: bool,
        #[command(flatten)]
        home: HomeArg,
    },
}

#[derive(Debug, Subcommand)]
enum TaskCommand {
    /// Dispatches TEXT to a Herdr pane for a chat session (`task.dispatch`); prints the result as JSON.
    Dispatch {
        /// The browser session ref the result is reported back to.
        #[arg(long, value_name = "R")]
        session_ref: String,
        /// The Herdr workspace id.
        #[arg(long, value_name = "W")]
        workspace: String,
        /// The Herdr pane id.
        #[arg(long, value_name = "P")]
        pane: String,
        /// The chat turn the task came from.
        #[arg(long, value_name = "T")]
        turn: Option<String>,
        #[command(flatten)]
        home: HomeArg,
        /// The prompt (quote it as one argument).
        text: String,
    },
    /// Lists a chat session's tasks (`task.list`); prints the result as JSON.
    List {
        /// The browser session ref.
        #[arg(long, value_name = "R")]
        session_ref: String,
        #[command(flatten)]
        home: HomeArg,
    },
}

#[derive(Debug, Args)]
struct HomeArg {
    /// The companion home directory (default: $HERDR_CONTINUITY_HOME, else the system's default).
    #[arg(long, value_name = "DIR")]
    home: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct HerdrSessionArg {
    /// The Herdr session whose socket to use (default: $HERDR_SESSION, else Herdr's default).
    #[arg(long, value_name = "NAME")]
    herdr_session: Option<String>,
}

#[derive(Debug, Args)]
struct TargetArgs {
    /// The browser to register with.
    #[arg(long, value_enum)]
    browser: Browser,
    #[command(flatten)]
    location: LocationArgs,
}

#[derive(Debug, Args)]
struct LocationArgs {
    /// A browser profile root (`--user-data-dir` of the browser): the manifest goes into its
    /// `NativeMessagingHosts/`. Wins over --system.
    #[arg(long, value_name = "DIR")]
    user_data_dir: Option<PathBuf>,
    /// The machine-wide directory instead of the current user's (needs root: use sudo).
    #[arg(long)]
    system: bool,
}

impl LocationArgs {
    fn target(self, browser: Browser) -> Target {
        Target { browser, user_data_dir: self.user_data_dir, system: self.system }
    }
}

fn main() {
    let cli = match Cli::try_parse_from(host_compatible_args(std::env::args_os())) {
        Ok(cli) => cli,
        // --help and --version print and exit 0; a wrong command line exits 2.
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("herdr-companion: {e:#}");
            std::process::exit(1);
        }
    }
}

/// A browser started with a manifest whose `path` is this binary itself (not the wrapper)
/// passes the origin as argv[1]: run the host for it as if `host` had been given.
fn host_compatible_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let origin_first = args.get(1).and_then(|a| a.to_str()).is_some_and(|a| a.starts_with(ORIGIN_PREFIX));
    if origin_first {
        args.insert(1, OsString::from("host"));
    }
    args
}

fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Version => {
            println!("herdr-companion {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Command::Host { origin, ignored: _ } => {
            companion::host::run(origin)?;
            Ok(0)
        }
        Command::Runtime { home, herdr } => {
            runtime::run_until_stopped(RuntimeOptions { home: home.home, herdr_session: herdr.herdr_session })?;
            Ok(0)
        }
        Command::Install(args) => {
            let target = args.location.target(args.browser);
            let home = CompanionHome::resolve(None)?;
            let installed = install::install(&target, &home)?;
            println!("wrote host manifest {}", installed.manifest.display());
            println!("wrote host wrapper  {}", installed.wrapper.display());
            println!("companion home      {} (set {HOME_ENV} before install to choose another)", home.root().display());
            Ok(0)
        }
        Command::Uninstall(args) => {
            let target = args.location.target(args.browser);
            match install::uninstall(&target)? {
                Some(path) => println!("removed host manifest {}", path.display()),
                None => println!("no host manifest at {}; nothing to remove", target.manifest_path()?.display()),
            }
            Ok(0)
        }
        Command::Doctor { browser, location, home, herdr } => {
            let target = location.target(browser);
            let home = CompanionHome::resolve(home.home)?;
            let checks = doctor::run_checks(&target, &home, herdr.herdr_session);
            print!("{}", doctor::render(&checks));
            print!("{}", doctor::page_diagnostics(&home));
            let exe = std::env::current_exe().unwrap_or_else(|_| "herdr-companion".into());
            print!("{}", doctor::connecting_chatgpt(&home, &exe, std::env::var_os("PATH").as_deref()));
            Ok(if checks.iter().all(|c| c.fix.is_none()) { 0 } else { 1 })
        }
        Command::Task(task) => Ok(companion::inbox::cli::run(&task_args(task))?),
        Command::Judge(JudgeCommand::Classify { script_only, home }) => {
            let home = CompanionHome::resolve(home.home)?;
            let stages = if script_only { Stages::ScriptOnly } else { Stages::All };
            let stdin = std::io::stdin().lock();
            let stdout = std::io::stdout().lock();
            let done = companion::judge::cli::run(home.root().to_path_buf(), stages, stdin, stdout)?;
            if done.refused > 0 {
                eprintln!(
                    "herdr-companion: judge classify: {} line(s) judged, {} refused (see their \"error\")",
                    done.judged, done.refused
                );
                return Ok(1);
            }
            Ok(0)
        }
        Command::Mcp { home, http, public_url } => {
            companion::mcp::run(McpOptions { home: home.home, http, public_url })?;
            Ok(0)
        }
        Command::Oauth { command, home } => {
            let home = CompanionHome::resolve(home)?;
            let command = match command {
                OauthSubcommand::Pending => OAuthCommand::Pending,
                OauthSubcommand::Approve { code } => OAuthCommand::Approve(code),
                OauthSubcommand::Deny { code: Some(code), .. } => OAuthCommand::Deny(code),
                OauthSubcommand::Deny { code: None, .. } => OAuthCommand::DenyAll,
                OauthSubcommand::Clients => OAuthCommand::Clients,
                OauthSubcommand::Revoke { client_id } => OAuthCommand::Revoke(client_id),
            };
            companion::mcp::oauth::cli::run(&home, &command, &mut std::io::stdout().lock())?;
            Ok(0)
        }
        Command::Roots(command) => roots(command),
        Command::JournalFill { home, turns, long_chain } => {
            let home = CompanionHome::resolve(home.home)?;
            home.ensure_private_dirs()?;
            let summary = companion::journal::bench::fill(&home.root().join("state.db"), turns, long_chain)?;
            println!("{summary}");
            Ok(0)
        }
    }
}

/// `herdr-companion roots add|list|remove`, on the home's state.db (the runtime reads the
/// table at every tool call, so a change applies to the next call).
fn roots(command: RootsCommand) -> Result<i32> {
    use companion::tools::roots::RootStore;
    let (RootsCommand::Add { home, .. } | RootsCommand::List { home } | RootsCommand::Remove { home, .. }) = &command;
    let home = CompanionHome::resolve(home.home.clone())?;
    home.ensure_private_dirs()?;
    let store = RootStore::open(&home.root().join("state.db"))?;
    match command {
        RootsCommand::Add { path, .. } => {
            let now = i64::try_from(companion::clock::unix_millis()).unwrap_or(i64::MAX);
            let added = store.add(&path, now)?;
            println!(
                "project root {} registered; the workstation tools may read (and, with approval, change) files under it",
                added.display()
            );
        }
        RootsCommand::List { .. } => {
            let roots = store.list()?;
            if roots.is_empty() {
                eprintln!("no registered project roots (`herdr-companion roots add PATH`); the working directories of the bound workspace's Herdr panes are roots too");
            }
            for root in roots {
                println!("{}", root.display());
            }
        }
        RootsCommand::Remove { path, .. } => {
            let removed = store.remove(&path)?;
            println!("project root {} removed", removed.display());
        }
    }
    Ok(0)
}

/// The argument list `inbox::cli` parses, rebuilt from the checked clap arguments.
fn task_args(task: TaskCommand) -> Vec<String> {
    let home = |args: &mut Vec<String>, home: HomeArg| {
        if let Some(dir) = home.home {
            args.extend(["--home".to_owned(), dir.display().to_string()]);
        }
    };
    match task {
        TaskCommand::Dispatch { session_ref, workspace, pane, turn, home: dir, text } => {
            let mut args = vec![
                "dispatch".to_owned(),
                "--session-ref".to_owned(),
                session_ref,
                "--workspace".to_owned(),
                workspace,
                "--pane".to_owned(),
                pane,
            ];
            if let Some(turn) = turn {
                args.extend(["--turn".to_owned(), turn]);
            }
            home(&mut args, dir);
            args.push(text);
            args
        }
        TaskCommand::List { session_ref, home: dir } => {
            let mut args = vec!["list".to_owned(), "--session-ref".to_owned(), session_ref];
            home(&mut args, dir);
            args
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn an_origin_as_first_argument_runs_the_host() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        let origin = "chrome-extension://gencedhnagpaccnkbgpcipafjlankiop/";
        let cli = Cli::try_parse_from(host_compatible_args(args(&["herdr-companion", origin, "--parent-window=0"]))).expect("parses");
        match cli.command {
            Command::Host { origin: Some(o), ignored } => {
                assert_eq!(o, origin);
                assert_eq!(ignored, args(&["--parent-window=0"]));
            }
            other => panic!("not the host: {other:?}"),
        }
        assert_eq!(host_compatible_args(args(&["herdr-companion", "doctor"])), args(&["herdr-companion", "doctor"]));
    }

    #[test]
    fn task_arguments_reach_the_inbox_cli_unchanged() {
        // Words split at spaces; TEXT stands for the one argument "do it".
        let words = |line: &'static str| line.split(' ').map(|w| if w == "TEXT" { "do it" } else { w }).collect::<Vec<_>>();
        let cli =
            Cli::try_parse_from(words("herdr-companion task dispatch --session-ref R --workspace w1 --pane w1:p1 TEXT --turn t --home /h"))
                .expect("parses");
        let Command::Task(task) = cli.command else { panic!("not task") };
        assert_eq!(task_args(task), words("dispatch --session-ref R --workspace w1 --pane w1:p1 --turn t --home /h TEXT"));
    }
}
