//! The consents waiting at the gateway, offered to the Connectors window of the app that runs
//! it: each request as its page shows it (which client, which connector or all of them), and
//! Allow or Deny from the window. An answer there settles the request as the page's own would
//! (a code for the client, or `access_denied`), and the page, which asks each second, follows it
//! to the client. Answered on either side, it is gone from both.

use super::{lock, remember, settle, Answered, ConsentAnswer, CONSENT_LIFETIME};
use crate::server::GatewayState;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// A consent waiting for an answer, as the window lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ConsentRequest {
    /// Names the request to [`ConsentDesk::answer`]; random, the page's own.
    pub id: String,
    /// The client as its registration or metadata document names it (with the document's host).
    pub client_name: String,
    /// The one connector it asks for (it was given `/mcp/NAME`); `null`: every connector in use.
    pub connector: Option<String>,
    /// How long it has waited, in seconds.
    pub waiting_secs: u64,
}

/// Why an answer from the window was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ConsentDeskError {
    /// Answered on its page already, expired, or never there: nothing to do.
    #[error("this request was answered already or has expired")]
    Gone,
    /// The answer could not be settled (no random number, a redirect that is not a URL).
    #[error("{0}")]
    Failed(String),
}

/// A refused answer as the window receives it (`not_pending`: answered or expired already).
impl From<ConsentDeskError> for patchbay_core::IpcError {
    fn from(error: ConsentDeskError) -> patchbay_core::IpcError {
        let kind = match &error {
            ConsentDeskError::Gone => patchbay_core::ErrorKind::NotPending,
            ConsentDeskError::Failed(_) => patchbay_core::ErrorKind::Internal,
        };
        patchbay_core::IpcError::new(kind, error.to_string())
    }
}

/// The gateway's waiting consents, for the window ([`crate::Gateway::consent_desk`]).
#[derive(Clone)]
pub struct ConsentDesk {
    state: Arc<GatewayState>,
}

impl ConsentDesk {
    pub(crate) fn new(state: Arc<GatewayState>) -> ConsentDesk {
        ConsentDesk { state }
    }

    /// The requests waiting now, the oldest first.
    pub fn requests(&self) -> Vec<ConsentRequest> {
        let pending = lock(&self.state.authorization.pending);
        let mut waiting: Vec<(Instant, ConsentRequest)> = pending
            .iter()
            .filter(|(_, p)| p.at.elapsed() < CONSENT_LIFETIME)
            .map(|(id, p)| {
                let request = ConsentRequest {
                    id: id.clone(),
                    client_name: p.client.client_name.clone(),
                    connector: p.connector.clone(),
                    waiting_secs: p.at.elapsed().as_secs(),
                };
                (p.at, request)
            })
            .collect();
        waiting.sort_by_key(|(at, _)| *at);
        waiting.into_iter().map(|(_, r)| r).collect()
    }

    /// Answer request `id`: Allow gives it every connector in use (or the one it asked for);
    /// the page then sends the browser on to the client.
    pub fn answer(&self, id: &str, allow: bool) -> Result<(), ConsentDeskError> {
        let authorization = &self.state.authorization;
        let pending = lock(&authorization.pending)
            .remove(id)
            .filter(|p| p.at.elapsed() < CONSENT_LIFETIME)
            .ok_or(ConsentDeskError::Gone)?;
        let answer = match allow {
            true => ConsentAnswer::Allow { only: None },
            false => ConsentAnswer::Deny,
        };
        let client = pending.client.client_name.clone();
        let redirect = settle(&self.state, pending, answer).map_err(ConsentDeskError::Failed)?;
        tracing::info!(client, allow, "a consent was answered in the window");
        let answered = Answered {
            at: Instant::now(),
            redirect,
        };
        remember(&authorization.answered, id.to_owned(), answered, |a| a.at);
        Ok(())
    }

    /// Changes whenever a request starts or stops waiting.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.state.authorization.changes.subscribe()
    }
}

/// The desktop notices for requests that came since the last look: each request is said once,
/// however often the list is pushed again.
#[derive(Debug, Default)]
pub struct ConsentNotices {
    known: std::collections::BTreeSet<String>,
}

impl ConsentNotices {
    /// A notice for each of `requests` not seen before; `requests` is the list now.
    pub fn new_among(&mut self, requests: &[ConsentRequest]) -> Vec<patchbay_core::Notice> {
        let notices = requests
            .iter()
            .filter(|r| !self.known.contains(&r.id))
            .map(|r| patchbay_core::Notice {
                connector: r.connector.clone().unwrap_or_default(),
                title: format!("{} asks to use your connectors", r.client_name),
                body: "Allow or deny it in your browser or in the Connectors window.".into(),
            })
            .collect();
        self.known = requests.iter().map(|r| r.id.clone()).collect();
        notices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, client: &str) -> ConsentRequest {
        ConsentRequest {
            id: id.into(),
            client_name: client.into(),
            connector: None,
            waiting_secs: 0,
        }
    }

    #[test]
    fn each_request_is_said_once_and_an_answered_one_is_forgotten() {
        let mut notices = ConsentNotices::default();
        let said = notices.new_among(&[request("a", "Cursor")]);
        assert_eq!(said.len(), 1);
        assert_eq!(said[0].title, "Cursor asks to use your connectors");
        assert!(notices.new_among(&[request("a", "Cursor")]).is_empty());
        let said = notices.new_among(&[request("a", "Cursor"), request("b", "VS Code")]);
        assert_eq!(said.len(), 1);
        assert_eq!(said[0].title, "VS Code asks to use your connectors");
        assert!(notices.new_among(&[]).is_empty());
        // Gone, then back under the same id (a page reopened): said again.
        assert_eq!(notices.new_among(&[request("a", "Cursor")]).len(), 1);
    }
}
