//! `herdr-companion install|uninstall`: the browser's Native Messaging host manifest
//! (SPEC N1, REFERENCE §4).
//!
//! The manifest's `path` points at a generated wrapper (`<home>/bin/dev.herdr.continuity-host`)
//! that execs `<this binary> host "$@"`, because the browser passes only the origin.
//!
//! Invariant: the manifest written always has `allowed_origins` equal to exactly
//! `[EXTENSION_ORIGIN]` and an absolute `path`.

use serde_json::Value;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use thiserror::Error;

use crate::paths::{user_home, CompanionHome, Os};
use crate::protocol::{EXTENSION_ORIGIN, HOST_NAME};

/// The manifest template (`manifest/native-host.json.in`).
const TEMPLATE: &str = include_str!("../../manifest/native-host.json.in");

/// A browser we know where to register with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Browser {
    /// Google Chrome (also Chrome for Testing).
    Chrome,
    /// Chromium.
    Chromium,
    /// Microsoft Edge.
    Edge,
    /// Brave.
    Brave,
}

impl Browser {
    /// Every browser, in the order the CLI lists them.
    pub const ALL: [Self; 4] = [Self::Chrome, Self::Chromium, Self::Edge, Self::Brave];

    /// Parses `chrome|chromium|edge|brave`.
    pub fn parse(name: &str) -> Result<Self, InstallError> {
        Self::ALL.into_iter().find(|b| b.cli_name() == name).ok_or_else(|| InstallError::UnknownBrowser(name.to_owned()))
    }

    /// The `--browser` value.
    pub const fn cli_name(self) -> &'static str {
        match self {
            Self::Chrome => "chrome",
            Self::Chromium => "chromium",
            Self::Edge => "edge",
            Self::Brave => "brave",
        }
    }

    /// The name a user knows the browser by.
    pub const fn display_name(self) -> &'static str {
        match self {
            Self::Chrome => "Google Chrome",
            Self::Chromium => "Chromium",
            Self::Edge => "Microsoft Edge",
            Self::Brave => "Brave",
        }
    }
}

/// Whose browser reads the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The current user's (no privileges needed).
    User,
    /// Every user of the machine (`--system`; needs root).
    System,
}

/// The `NativeMessagingHosts` directory `browser` reads on `os` for `scope`; `user_home`
/// is needed only for [`Scope::User`] (`None` there is [`InstallError::NoUserHome`]).
///
/// Sources, checked 2026-12:
/// - Chrome and Chromium: Chrome's "Native messaging" guide, section "Native messaging host
///   location" (developer.chrome.com/docs/extensions/develop/concepts/native-messaging):
///   Linux `/etc/opt/chrome/native-messaging-hosts`, `/etc/chromium/native-messaging-hosts`,
///   `~/.config/google-chrome/NativeMessagingHosts`, `~/.config/chromium/NativeMessagingHosts`;
///   macOS `/Library/Google/Chrome/NativeMessagingHosts`,
///   `/Library/Application Support/Chromium/NativeMessagingHosts`,
///   `~/Library/Application Support/Google/Chrome/NativeMessagingHosts`,
///   `~/Library/Application Support/Chromium/NativeMessagingHosts`.
/// - Edge: Microsoft's "Native messaging" guide for Edge extensions, step 3
///   (learn.microsoft.com/microsoft-edge/extensions/developer-guide/native-messaging):
///   macOS `/Library/Microsoft/Edge/NativeMessagingHosts` and
///   `~/Library/Application Support/Microsoft Edge/NativeMessagingHosts`; Linux
///   `/etc/opt/edge/native-messaging-hosts` and `~/.config/microsoft-edge/NativeMessagingHosts`.
/// - Brave documents no location. Its profile roots are `~/.config/BraveSoftware/Brave-Browser`
///   and `~/Library/Application Support/BraveSoftware/Brave-Browser`; the system directories
///   are the ones long-lived hosts install to for Brave (browserpass-native's Makefile,
///   targets `hosts-brave` and `hosts-brave-user`): `/etc/opt/brave/native-messaging-hosts`
///   and `/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts`.
pub fn native_hosts_dir(browser: Browser, os: Os, scope: Scope, user_home: Option<&Path>) -> Result<PathBuf, InstallError> {
    let user = |relative: &str| -> Result<PathBuf, InstallError> {
        let home = user_home.ok_or(InstallError::NoUserHome)?;
        Ok(home.join(relative).join("NativeMessagingHosts"))
    };
    match (os, scope) {
        (Os::Linux, Scope::User) => user(match browser {
            Browser::Chrome => ".config/google-chrome",
            Browser::Chromium => ".config/chromium",
            Browser::Edge => ".config/microsoft-edge",
            Browser::Brave => ".config/BraveSoftware/Brave-Browser",
        }),
        (Os::Linux, Scope::System) => Ok(PathBuf::from(match browser {
            Browser::Chrome => "/etc/opt/chrome/native-messaging-hosts",
            Browser::Chromium => "/etc/chromium/native-messaging-hosts",
            Browser::Edge => "/etc/opt/edge/native-messaging-hosts",
            Browser::Brave => "/etc/opt/brave/native-messaging-hosts",
        })),
        (Os::MacOs, Scope::User) => user(match browser {
            Browser::Chrome => "Library/Application Support/Google/Chrome",
            Browser::Chromium => "Library/Application Support/Chromium",
            Browser::Edge => "Library/Application Support/Microsoft Edge",
            Browser::Brave => "Library/Application Support/BraveSoftware/Brave-Browser",
        }),
        (Os::MacOs, Scope::System) => Ok(PathBuf::from(match browser {
            Browser::Chrome => "/Library/Google/Chrome/NativeMessagingHosts",
            Browser::Chromium => "/Library/Application Support/Chromium/NativeMessagingHosts",
            Browser::Edge => "/Library/Microsoft/Edge/NativeMessagingHosts",
            Browser::Brave => "/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
        })),
    }
}

/// Where to register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Which browser.
    pub browser: Browser,
    /// `--user-data-dir DIR`: the browser profile root (wins over `--system`).
    pub user_data_dir: Option<PathBuf>,
    /// `--system`: the machine-wide directory.
    pub system: bool,
}

impl Target {
    /// The scope the flags ask for (meaningless when `user_data_dir` is set).
    pub fn scope(&self) -> Scope {
        if self.system {
            Scope::System
        } else {
            Scope::User
        }
    }

    /// The `NativeMessagingHosts` directory for this target on `os`.
    pub fn hosts_dir_on(&self, os: Os, user_home: Option<&Path>) -> Result<PathBuf, InstallError> {
        match &self.user_data_dir {
            Some(dir) => Ok(dir.join("NativeMessagingHosts")),
            None => native_hosts_dir(self.browser, os, self.scope(), user_home),
        }
    }

    /// The `NativeMessagingHosts` directory for this target on this system.
    pub fn hosts_dir(&self) -> Result<PathBuf, InstallError> {
        self.hosts_dir_on(Os::current(), user_home().as_deref())
    }

    /// The manifest file path.
    pub fn manifest_path(&self) -> Result<PathBuf, InstallError> {
        Ok(self.hosts_dir()?.join(format!("{HOST_NAME}.json")))
    }

    /// The `install` flags that name this target (for messages that say what to run).
    pub fn flags(&self) -> String {
        let mut flags = format!("--browser {}", self.browser.cli_name());
        if let Some(dir) = &self.user_data_dir {
            flags.push_str(&format!(" --user-data-dir {}", dir.display()));
        } else if self.system {
            flags.push_str(" --system");
        }
        flags
    }
}

/// Why installing failed.
#[derive(Debug, Error)]
pub enum InstallError {
    /// Unsupported browser name.
    #[error("unknown browser `{0}`; use --browser chrome, chromium, edge or brave")]
    UnknownBrowser(String),
    /// `$HOME` is unset.
    #[error("HOME is not set, so the browser's profile directory is unknown; pass --user-data-dir DIR")]
    NoUserHome,
    /// The home could not be found.
    #[error(transparent)]
    NoHome(#[from] crate::paths::NoHome),
    /// A file could not be written or removed.
    #[error("cannot {action} {path}: {source}; check its permissions (--system needs root: rerun with sudo)")]
    Fs {
        /// What was attempted.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn fs_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> InstallError {
    let path = path.to_path_buf();
    move |source| InstallError::Fs { action, path, source }
}

/// Renders the manifest JSON for a host wrapper at `host_path`.
pub fn render_manifest(host_path: &Path) -> String {
    let path_json = Value::String(host_path.display().to_string()).to_string();
    TEMPLATE.replace("@HOST_PATH_JSON@", &path_json)
}

/// Renders the wrapper script that runs `exe host "$@"` with the same companion home.
pub fn render_wrapper(exe: &Path, home: &CompanionHome) -> String {
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    format!(
        "#!/bin/sh\n# Generated by `herdr-companion install`: the browser runs this as the Native Messaging host.\nif [ -z \"${{HERDR_CONTINUITY_HOME:-}}\" ]; then HERDR_CONTINUITY_HOME={home}; fi\nexport HERDR_CONTINUITY_HOME\nexec {exe} host \"$@\"\n",
        home = quote(home.root()),
        exe = quote(exe),
    )
}

/// What `install` wrote.
#[derive(Debug)]
pub struct Installed {
    /// The manifest file.
    pub manifest: PathBuf,
    /// The wrapper it points at.
    pub wrapper: PathBuf,
}

/// Writes the wrapper and the manifest.
pub fn install(target: &Target, home: &CompanionHome) -> Result<Installed, InstallError> {
    let exe = std::env::current_exe().map_err(fs_err("locate", Path::new("this executable")))?;
    let wrapper = home.host_wrapper_path();
    let bin = home.bin_dir();
    fs::create_dir_all(&bin).map_err(fs_err("create", &bin))?;
    fs::write(&wrapper, render_wrapper(&exe, home)).map_err(fs_err("write", &wrapper))?;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).map_err(fs_err("make executable", &wrapper))?;
    let dir = target.hosts_dir()?;
    fs::create_dir_all(&dir).map_err(fs_err("create", &dir))?;
    let manifest = target.manifest_path()?;
    fs::write(&manifest, render_manifest(&wrapper)).map_err(fs_err("write", &manifest))?;
    fs::set_permissions(&manifest, fs::Permissions::from_mode(0o644)).map_err(fs_err("set permissions on", &manifest))?;
    Ok(Installed { manifest, wrapper })
}

/// Removes the manifest; returns its path, or `None` if there was none.
pub fn uninstall(target: &Target) -> Result<Option<PathBuf>, InstallError> {
    let manifest = target.manifest_path()?;
    match fs::remove_file(&manifest) {
        Ok(()) => Ok(Some(manifest)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(fs_err("remove", &manifest)(e)),
    }
}

/// Problems found in an installed manifest (empty when it is correct).
pub fn check_manifest(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return vec!["the manifest is not valid JSON".to_owned()];
    };
    if value.get("name").and_then(Value::as_str) != Some(HOST_NAME) {
        problems.push(format!("`name` is not {HOST_NAME}"));
    }
    if value.get("type").and_then(Value::as_str) != Some("stdio") {
        problems.push("`type` is not \"stdio\"".to_owned());
    }
    let origins = value.get("allowed_origins").and_then(Value::as_array);
    if origins.map(|o| o.as_slice()) != Some(&[Value::String(EXTENSION_ORIGIN.to_owned())]) {
        problems.push(format!("`allowed_origins` is not exactly [\"{EXTENSION_ORIGIN}\"]"));
    }
    match value.get("path").and_then(Value::as_str) {
        Some(path) if Path::new(path).is_absolute() => {
            if !crate::host::is_executable(Path::new(path)) {
                problems.push(format!("`path` {path} is not an executable file"));
            }
        }
        _ => problems.push("`path` is missing or not absolute".to_owned()),
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_manifest_has_the_exact_origin_and_an_escaped_path() {
        let text = render_manifest(Path::new("/home/a \"b\"/bin/dev.herdr.continuity-host"));
        let value: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(value["name"], HOST_NAME);
        assert_eq!(value["type"], "stdio");
        assert_eq!(value["path"], "/home/a \"b\"/bin/dev.herdr.continuity-host");
        assert_eq!(value["allowed_origins"], serde_json::json!([EXTENSION_ORIGIN]));
    }

    /// Every browser × {Linux, macOS} × {user, system}, as the browsers' docs name them.
    #[test]
    fn every_browsers_directory_on_linux_and_macos() {
        let home = Path::new("/home/ada");
        let mut table = String::new();
        for os in [Os::Linux, Os::MacOs] {
            for scope in [Scope::User, Scope::System] {
                for browser in Browser::ALL {
                    let dir = native_hosts_dir(browser, os, scope, Some(home)).expect("dir");
                    table.push_str(&format!(
                        "{:<5} {:<6} {:<8} {}\n",
                        os.display_name(),
                        format!("{scope:?}"),
                        browser.cli_name(),
                        dir.display()
                    ));
                }
            }
        }
        expect_test::expect![[r#"
            Linux User   chrome   /home/ada/.config/google-chrome/NativeMessagingHosts
            Linux User   chromium /home/ada/.config/chromium/NativeMessagingHosts
            Linux User   edge     /home/ada/.config/microsoft-edge/NativeMessagingHosts
            Linux User   brave    /home/ada/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts
            Linux System chrome   /etc/opt/chrome/native-messaging-hosts
            Linux System chromium /etc/chromium/native-messaging-hosts
            Linux System edge     /etc/opt/edge/native-messaging-hosts
            Linux System brave    /etc/opt/brave/native-messaging-hosts
            macOS User   chrome   /home/ada/Library/Application Support/Google/Chrome/NativeMessagingHosts
            macOS User   chromium /home/ada/Library/Application Support/Chromium/NativeMessagingHosts
            macOS User   edge     /home/ada/Library/Application Support/Microsoft Edge/NativeMessagingHosts
            macOS User   brave    /home/ada/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts
            macOS System chrome   /Library/Google/Chrome/NativeMessagingHosts
            macOS System chromium /Library/Application Support/Chromium/NativeMessagingHosts
            macOS System edge     /Library/Microsoft/Edge/NativeMessagingHosts
            macOS System brave    /Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts
        "#]]
        .assert_eq(&table);
    }

    #[test]
    fn a_user_data_dir_wins_on_every_system_and_a_user_dir_needs_a_home() {
        let target = Target { browser: Browser::Chromium, user_data_dir: Some(PathBuf::from("/p")), system: true };
        for os in [Os::Linux, Os::MacOs] {
            assert_eq!(target.hosts_dir_on(os, None).expect("dir"), Path::new("/p/NativeMessagingHosts"));
        }
        let err = native_hosts_dir(Browser::Brave, Os::MacOs, Scope::User, None).expect_err("no home");
        assert!(err.to_string().contains("pass --user-data-dir DIR"), "{err}");
        // The system directories need no home.
        assert!(native_hosts_dir(Browser::Edge, Os::MacOs, Scope::System, None).is_ok());
    }

    #[test]
    fn browser_names_round_trip_and_an_unknown_one_is_explained() {
        for browser in Browser::ALL {
            assert_eq!(Browser::parse(browser.cli_name()).expect("known"), browser);
        }
        let err = Browser::parse("firefox").expect_err("unknown");
        assert!(err.to_string().contains("use --browser chrome, chromium, edge or brave"), "{err}");
    }
}
