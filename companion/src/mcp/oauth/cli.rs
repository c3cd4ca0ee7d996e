//! `herdr-companion oauth …`: the workstation side of consent. Sign-in requests wait in
//! `oauth.db` until the user approves or denies their short code here; clients and their
//! grants are listed and revoked here.

use std::io::Write;

use thiserror::Error;

use super::store::{OAuthError, OAuthStore, StoreError};
use super::{now_secs, MAX_PENDING};
use crate::paths::CompanionHome;

/// One `oauth` subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthCommand {
    /// `oauth pending`: the waiting sign-in requests.
    Pending,
    /// `oauth approve CODE`.
    Approve(String),
    /// `oauth deny CODE`.
    Deny(String),
    /// `oauth deny --all`: every waiting request.
    DenyAll,
    /// `oauth clients`: registered clients and their grants.
    Clients,
    /// `oauth revoke CLIENT_ID`: every token of the client.
    Revoke(String),
}

/// Why an `oauth` command failed.
#[derive(Debug, Error)]
pub enum OAuthCliError {
    /// `oauth.db` cannot be used.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store refused (unknown code, unknown client, …).
    #[error("{}", .0.description)]
    Refused(OAuthError),
    /// Writing the answer failed.
    #[error("cannot write the answer: {0}")]
    Output(#[from] std::io::Error),
}

/// A duration as `42s`, `5m` or `3h`.
fn age(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s => format!("{}h", s / 3600),
    }
}

/// The host a redirect URI sends the user to.
fn host_of(uri: &str) -> String {
    url::Url::parse(uri).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| uri.to_owned())
}

/// Runs `command` on `home`'s `oauth.db`, writing its answer to `out`.
pub fn run(home: &CompanionHome, command: &OAuthCommand, out: &mut impl Write) -> Result<(), OAuthCliError> {
    let mut store = OAuthStore::open(home)?;
    let now = now_secs();
    match command {
        OAuthCommand::Pending => {
            let waiting = store.pending(now).map_err(OAuthCliError::Refused)?;
            let strangers = store.strangers_note(now).map_err(OAuthCliError::Refused)?;
            if waiting.is_empty() {
                writeln!(out, "no sign-in request is waiting")?;
                if let Some(note) = strangers {
                    writeln!(out, "{note}")?;
                }
                return Ok(());
            }
            let full = waiting.len() as i64 >= MAX_PENDING;
            for request in waiting {
                writeln!(
                    out,
                    "{code}  {name}  (client {id})  returns to {host}  {age} ago",
                    code = request.user_code,
                    name = request.client_name,
                    id = request.client_id,
                    host = host_of(&request.redirect_uri),
                    age = age(request.age_secs),
                )?;
            }
            writeln!(
                out,
                "approve one that you started with `herdr-companion oauth approve CODE`, or `deny CODE` (`deny --all` for every one)"
            )?;
            if full {
                writeln!(
                    out,
                    "the list is full ({MAX_PENDING}): each new sign-in request pushes out the oldest. If you did not start most of these, someone else knows your tunnel URL: approve only the code your own sign-in page shows, compared in full (a stranger's request may be the newest: approving it gives them this computer's tools), and a new tunnel URL stops them"
                )?;
            }
            if let Some(note) = strangers {
                writeln!(out, "{note}")?;
            }
        }
        OAuthCommand::Approve(code) | OAuthCommand::Deny(code) => {
            let approve = matches!(command, OAuthCommand::Approve(_));
            let request = store.decide(code, approve, now).map_err(OAuthCliError::Refused)?;
            let verb = if approve { "approved" } else { "denied" };
            writeln!(
                out,
                "{verb} {code} for {name} (client {id}); its sign-in page returns to {host} within a few seconds",
                code = request.user_code,
                name = request.client_name,
                id = request.client_id,
                host = host_of(&request.redirect_uri),
            )?;
        }
        OAuthCommand::DenyAll => {
            let denied = store.deny_all(now).map_err(OAuthCliError::Refused)?;
            if denied.is_empty() {
                writeln!(out, "no sign-in request is waiting")?;
                return Ok(());
            }
            for request in &denied {
                writeln!(
                    out,
                    "denied {code}  {name}  (client {id})  returns to {host}",
                    code = request.user_code,
                    name = request.client_name,
                    id = request.client_id,
                    host = host_of(&request.redirect_uri),
                )?;
            }
            writeln!(out, "denied {} waiting sign-in request(s); start your own sign-in again and approve its code", denied.len())?;
        }
        OAuthCommand::Clients => {
            let clients = store.clients(now).map_err(OAuthCliError::Refused)?;
            if clients.is_empty() {
                writeln!(out, "no client is registered")?;
            }
            for client in clients {
                let used = client.last_used.map_or_else(|| "never".to_owned(), |t| format!("{} ago", age(now - t)));
                let hosts: Vec<String> = client.redirect_uris.iter().map(|u| host_of(u)).collect();
                writeln!(
                    out,
                    "{id}  {name}  grants: {grants}  last token: {used}  registered {registered} ago  returns to {hosts}",
                    id = client.client_id,
                    name = client.name,
                    grants = client.grants,
                    registered = age(now - client.created_at),
                    hosts = hosts.join(", "),
                )?;
            }
        }
        OAuthCommand::Revoke(client_id) => {
            let grants = store.revoke_client(client_id).map_err(OAuthCliError::Refused)?;
            writeln!(out, "revoked every token of {client_id} ({grants} grant(s)); it must sign in and be approved again")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::oauth::store::{AuthorizeParams, NewClient, PollAnswer};
    use crate::mcp::oauth::AuthMethod;

    const RESOURCE: &str = "https://herdr.example.com/mcp";
    const ISSUER: &str = "https://herdr.example.com";
    const REDIRECT: &str = "https://chatgpt.com/connector_platform_oauth_redirect";

    /// A sign-in request of `client_id` as ChatGPT's connector makes it.
    fn params(client_id: &str) -> AuthorizeParams {
        AuthorizeParams {
            client_id: Some(client_id.into()),
            redirect_uri: Some(REDIRECT.into()),
            response_type: Some("code".into()),
            code_challenge: Some(crate::mcp::oauth::base64url(&[7u8; 32])),
            code_challenge_method: Some("S256".into()),
            state: None,
            resource: Some(RESOURCE.into()),
        }
    }

    /// Review of issue 24: `oauth deny --all` clears every waiting sign-in (strangers'
    /// requests that filled the list), each page goes back with `access_denied`, and the
    /// user's own sign-in gets in again.
    #[test]
    fn deny_all_clears_every_waiting_sign_in() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CompanionHome::at(dir.path().join("home"));
        let mut store = OAuthStore::open(&home).expect("open");
        let now = now_secs();
        let mut pages = Vec::new();
        for _ in 0..super::super::MAX_PENDING / 2 {
            let new = NewClient { name: "Stranger".into(), redirect_uris: vec![REDIRECT.into()], auth_method: AuthMethod::None };
            let id = store.register(new, now).expect("register").client_id;
            for _ in 0..2 {
                pages.push(store.begin(&params(&id), RESOURCE, ISSUER, now).expect("begin").request_id);
            }
        }
        let new = NewClient { name: "ChatGPT".into(), redirect_uris: vec![REDIRECT.into()], auth_method: AuthMethod::None };
        let mine = store.register(new, now).expect("register").client_id;
        let mut listed = Vec::new();
        run(&home, &OAuthCommand::Pending, &mut listed).expect("pending");
        let listed = String::from_utf8(listed).expect("utf-8");
        assert!(listed.contains("the list is full (20)") && listed.contains("pushes out the oldest"), "{listed}");
        // Final review of stop 42: "the newest is listed last" steered a hurried user to a
        // stranger's request (under a flood the newest is theirs); the code is compared.
        assert!(listed.contains("compared in full") && !listed.contains("newest is listed last"), "{listed}");

        let mut out = Vec::new();
        run(&home, &OAuthCommand::DenyAll, &mut out).expect("deny --all");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.contains("denied 20 waiting sign-in request(s)") && text.matches("Stranger").count() == 20, "{text}");
        for page in &pages {
            let PollAnswer::Refused(to) = store.poll(page, ISSUER, now).expect("poll") else { panic!("refused") };
            assert!(to.contains("error=access_denied"), "{to}");
        }
        assert!(store.pending(now).expect("pending").is_empty());
        store.begin(&params(&mine), RESOURCE, ISSUER, now).expect("the user's sign-in gets in");

        let mut again = Vec::new();
        run(&home, &OAuthCommand::DenyAll, &mut again).expect("deny --all");
        assert!(String::from_utf8(again).expect("utf-8").contains("denied 1 waiting"));
        let mut none = Vec::new();
        run(&home, &OAuthCommand::DenyAll, &mut none).expect("deny --all");
        assert_eq!(String::from_utf8(none).expect("utf-8"), "no sign-in request is waiting\n");
    }

    /// Review 42: strangers' activity is visible on the workstation. Once requests were
    /// pushed out, `oauth pending` says how many in the last 10 minutes and that someone
    /// else may know the tunnel URL (pointing to the README's way to a new one), also when
    /// none waits; `oauth approve` of a pushed-out code says the same.
    #[test]
    fn pending_and_approve_say_how_many_requests_were_pushed_out_and_what_that_means() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CompanionHome::at(dir.path().join("home"));
        let mut store = OAuthStore::open(&home).expect("open");
        let now = now_secs();
        let mut first = None;
        for n in 0..MAX_PENDING + 3 {
            let new = NewClient { name: "Stranger".into(), redirect_uris: vec![REDIRECT.into()], auth_method: AuthMethod::None };
            let id = store.register(new, now - 500 + 20 * n).expect("register").client_id;
            let begun = store.begin(&params(&id), RESOURCE, ISSUER, now - 500 + 20 * n).expect("begin");
            first.get_or_insert(begun.user_code);
        }
        let text = |command: &OAuthCommand| {
            let mut out = Vec::new();
            let result = run(&home, command, &mut out);
            (result.map_err(|e| e.to_string()), String::from_utf8(out).expect("utf-8"))
        };
        let (listed, out) = text(&OAuthCommand::Pending);
        listed.expect("pending");
        assert!(
            out.contains("3 sign-in requests were pushed out in the last 10 minutes")
                && out.contains("someone else may know your tunnel URL")
                && out.contains("new tunnel URL"),
            "{out}"
        );
        let (approved, _) = text(&OAuthCommand::Approve(first.expect("a first code")));
        let refused = approved.expect_err("pushed out");
        assert!(
            refused.contains("pushed out") && refused.contains("3 sign-in requests were pushed out in the last 10 minutes"),
            "{refused}"
        );
        let (denied, _) = text(&OAuthCommand::DenyAll);
        denied.expect("deny --all");
        let (listed, out) = text(&OAuthCommand::Pending);
        listed.expect("pending");
        assert!(out.contains("no sign-in request is waiting") && out.contains("3 sign-in requests were pushed out"), "{out}");
    }
}
