//! `herdr-companion oauth …`: the workstation side of consent. Sign-in requests wait in
//! `oauth.db` until the user approves or denies their short code here; clients and their
//! grants are listed and revoked here.

use std::io::Write;

use thiserror::Error;

use super::now_secs;
use super::store::{OAuthError, OAuthStore, StoreError};
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
            if waiting.is_empty() {
                writeln!(out, "no sign-in request is waiting")?;
                return Ok(());
            }
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
            writeln!(out, "approve one that you started with `herdr-companion oauth approve CODE`, or `deny CODE`")?;
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
