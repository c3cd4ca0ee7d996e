//! Command-line entry point of `herdr-companion`; parsing only, the work is in the library.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;

use companion::doctor;
use companion::install::{self, Browser, Target};
use companion::paths::CompanionHome;
use companion::runtime::{self, RuntimeOptions};

const USAGE: &str = "usage:
  herdr-companion host ORIGIN          Native Messaging host (the browser runs this)
  herdr-companion runtime [--home DIR] [--herdr-session NAME]
  herdr-companion install --browser chrome|chromium|edge|brave [--user-data-dir DIR] [--system]
  herdr-companion uninstall --browser … [--user-data-dir DIR] [--system]
  herdr-companion doctor [--browser …] [--user-data-dir DIR] [--system] [--herdr-session NAME]
  herdr-companion task dispatch --session-ref R --workspace W --pane P [--turn T] [--home DIR] TEXT
  herdr-companion task list --session-ref R [--home DIR]
  herdr-companion --version";

/// Flags shared by the subcommands, parsed leniently per subcommand.
#[derive(Default)]
struct Flags {
    home: Option<PathBuf>,
    herdr_session: Option<String>,
    browser: Option<String>,
    user_data_dir: Option<PathBuf>,
    system: bool,
}

fn parse_flags(args: &[String], allowed: &[&str]) -> Result<Flags> {
    let mut flags = Flags::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if !allowed.contains(&arg.as_str()) {
            bail!("unexpected argument `{arg}`\n{USAGE}");
        }
        let mut value = || {
            iter.next()
                .cloned()
                .with_context(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--home" => flags.home = Some(PathBuf::from(value()?)),
            "--herdr-session" => flags.herdr_session = Some(value()?),
            "--browser" => flags.browser = Some(value()?),
            "--user-data-dir" => flags.user_data_dir = Some(PathBuf::from(value()?)),
            "--system" => flags.system = true,
            _ => bail!("unexpected argument `{arg}`\n{USAGE}"),
        }
    }
    Ok(flags)
}

fn target(flags: &Flags, default_browser: Option<&str>) -> Result<Target> {
    let browser = flags
        .browser
        .as_deref()
        .or(default_browser)
        .with_context(|| format!("--browser is required\n{USAGE}"))?;
    Ok(Target {
        browser: Browser::parse(browser)?,
        user_data_dir: flags.user_data_dir.clone(),
        system: flags.system,
    })
}

fn main() {
    match run() {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("herdr-companion: {e:#}");
            std::process::exit(1);
        }
    }
}

fn run() -> Result<i32> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        bail!("no command given\n{USAGE}");
    };
    match command.as_str() {
        "--version" | "-V" | "version" => {
            println!("herdr-companion {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        "--help" | "-h" | "help" => {
            println!("{USAGE}");
            Ok(0)
        }
        "host" => {
            // Chrome passes the origin first; anything after it (e.g. --parent-window on
            // other platforms) is ignored.
            companion::host::run(rest.first().cloned())?;
            Ok(0)
        }
        "runtime" => {
            let flags = parse_flags(rest, &["--home", "--herdr-session"])?;
            runtime::run_until_stopped(RuntimeOptions {
                home: flags.home,
                herdr_session: flags.herdr_session,
            })?;
            Ok(0)
        }
        "install" => {
            let flags = parse_flags(rest, &["--browser", "--user-data-dir", "--system"])?;
            let target = target(&flags, None)?;
            let home = CompanionHome::resolve(None)?;
            let installed = install::install(&target, &home)?;
            println!("wrote host manifest {}", installed.manifest.display());
            println!("wrote host wrapper  {}", installed.wrapper.display());
            Ok(0)
        }
        "uninstall" => {
            let flags = parse_flags(rest, &["--browser", "--user-data-dir", "--system"])?;
            let target = target(&flags, None)?;
            match install::uninstall(&target)? {
                Some(path) => println!("removed host manifest {}", path.display()),
                None => println!(
                    "no host manifest at {}; nothing to remove",
                    target.manifest_path()?.display()
                ),
            }
            Ok(0)
        }
        "doctor" => {
            let flags = parse_flags(
                rest,
                &[
                    "--browser",
                    "--user-data-dir",
                    "--system",
                    "--herdr-session",
                    "--home",
                ],
            )?;
            let target = target(&flags, Some("chrome"))?;
            let home = CompanionHome::resolve(flags.home)?;
            let checks = doctor::run_checks(&target, &home, flags.herdr_session);
            print!("{}", doctor::render(&checks));
            Ok(if checks.iter().all(|c| c.fix.is_none()) {
                0
            } else {
                1
            })
        }
        "task" => Ok(companion::inbox::cli::run(rest)?),
        other => bail!("unknown command `{other}`\n{USAGE}"),
    }
}
