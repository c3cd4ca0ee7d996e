//! A needed page fact that does not resolve (`page_facts.unresolved` / `unresolved_why`):
//! its name and why, read from the page's flat pair; while one is named nothing is typed
//! or clicked on that page (fail closed).

use crate::json_read::{ReadJson, WriteJson};
use serde::Serialize;

/// Why a needed page fact does not resolve (`page_facts.unresolved_why`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum UnresolvedWhy {
    /// No probe of the fact's chain found it.
    Missing,
    /// The winning probe found more than one element.
    Ambiguous,
}

/// A needed page fact that does not resolve (`page_facts.unresolved` + `unresolved_why`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct Unresolved {
    /// A fact name (`crate::sites::FACT_NAMES`) or `profile` (the page has no profile).
    pub fact: String,
    /// Missing or ambiguous.
    pub why: UnresolvedWhy,
}

impl Unresolved {
    /// The page has no site profile (or did not say whether its facts resolve).
    pub fn no_profile() -> Self {
        Unresolved { fact: "profile".to_owned(), why: UnresolvedWhy::Missing }
    }

    /// Reads the flat pair `unresolved` / `unresolved_why` of a `page_facts` message.
    /// `unresolved: null` with `unresolved_why: null` (or absent) is `Ok(None)`: every
    /// needed fact resolves. Both absent — a page that did not say (the url-only
    /// `page_facts`) — is [`Unresolved::no_profile`] (fail closed). Otherwise `unresolved`
    /// must be a fact name ([`crate::sites::FACT_NAMES`]) or `profile`, at most
    /// [`crate::limits::MAX_FACT_NAME_CHARS`] characters, and `unresolved_why` `missing`
    /// or `ambiguous`; anything else is an error naming the problem (the whole message is
    /// rejected).
    pub fn read_page_facts(value: &serde_json::Value) -> Result<Option<Self>, String> {
        use serde_json::Value;
        let (fact, why) = (value.get("unresolved"), value.get("unresolved_why"));
        let fact = match (fact, why) {
            (None, None | Some(Value::Null)) => return Ok(Some(Self::no_profile())),
            (Some(Value::Null), None | Some(Value::Null)) => return Ok(None),
            (Some(Value::Null) | None, Some(_)) => return Err("`unresolved_why` is set but `unresolved` is not".to_owned()),
            (Some(Value::String(fact)), _) => fact,
            (Some(_), _) => return Err("`unresolved` is not a string or null".to_owned()),
        };
        if !crate::limits::within(fact, crate::limits::MAX_FACT_NAME_CHARS) {
            return Err(format!("`unresolved` is longer than {} characters", crate::limits::MAX_FACT_NAME_CHARS));
        }
        if fact != "profile" && !crate::sites::FACT_NAMES.contains(&fact.as_str()) {
            return Err(format!("`unresolved` is not a fact name or \"profile\": `{fact}`"));
        }
        let why = match why.and_then(serde_json::Value::as_str) {
            Some("missing") => UnresolvedWhy::Missing,
            Some("ambiguous") => UnresolvedWhy::Ambiguous,
            _ => return Err("`unresolved_why` is not \"missing\" or \"ambiguous\"".to_owned()),
        };
        Ok(Some(Unresolved { fact: fact.clone(), why }))
    }
}
