//! The one HTTP client every outbound request of the flow goes through: a bound on every request
//! (30 s unless a test injects a shorter one), redirects followed only within the same origin,
//! and a cap on the size of what is read back.

use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::Value;

use crate::OAuthError;

/// Every outbound request's bound in production.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most read from any answer (metadata, registration, token).
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::Client,
    timeout: Duration,
    limit: usize,
}

/// An answer read whole (up to the cap).
#[derive(Debug)]
pub struct Answer {
    pub url: String,
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Result<Value, OAuthError> {
        serde_json::from_slice(&self.body).map_err(|e| OAuthError::BadDocument {
            url: self.url.clone(),
            message: format!("not JSON ({e})"),
        })
    }
}

impl Default for Http {
    fn default() -> Self {
        Http::new(DEFAULT_TIMEOUT)
    }
}

impl Http {
    pub fn new(timeout: Duration) -> Http {
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let first = attempt.previous().first().map(|u| u.origin());
            if attempt.previous().len() > 5 {
                attempt.error("too many redirects")
            } else if first.is_some_and(|o| o != attempt.url().origin()) {
                let location = attempt.url().to_string();
                attempt.error(CrossOrigin(location))
            } else {
                attempt.follow()
            }
        });
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(policy)
            .user_agent(concat!("Patchbay/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("a reqwest client with rustls builds");
        Http {
            client,
            timeout,
            limit: MAX_RESPONSE_BYTES,
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub async fn get(&self, url: &str) -> Result<Answer, OAuthError> {
        let request = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        self.send(url, request).await
    }

    /// Sends and reads the whole answer, up to the cap, within the timeout.
    pub async fn send(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, OAuthError> {
        let response = request.send().await.map_err(|e| self.map(url, e))?;
        self.read(url, response).await
    }

    async fn read(&self, url: &str, mut response: Response) -> Result<Answer, OAuthError> {
        let status = response.status();
        let headers = response.headers().clone();
        let final_url = response.url().to_string();
        if response
            .content_length()
            .is_some_and(|n| n > self.limit as u64)
        {
            return Err(OAuthError::TooLarge {
                url: final_url,
                limit: self.limit,
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.map(url, e))? {
            if body.len() + chunk.len() > self.limit {
                return Err(OAuthError::TooLarge {
                    url: final_url,
                    limit: self.limit,
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            url: final_url,
            status,
            headers,
            body,
        })
    }

    fn map(&self, url: &str, e: reqwest::Error) -> OAuthError {
        let url = e
            .url()
            .map(|u| u.to_string())
            .unwrap_or_else(|| url.to_string());
        if e.is_redirect() {
            if let Some(cross) = find_source::<CrossOrigin>(&e) {
                return OAuthError::CrossOriginRedirect {
                    url,
                    location: cross.0.clone(),
                };
            }
        }
        if e.is_connect() {
            return OAuthError::Connect {
                url,
                message: root_cause(&e),
            };
        }
        if e.is_timeout() {
            return OAuthError::Timeout {
                url,
                after: self.timeout,
            };
        }
        OAuthError::Http {
            url,
            message: root_cause(&e),
        }
    }
}

#[derive(Debug)]
struct CrossOrigin(String);

impl std::fmt::Display for CrossOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cross-origin redirect to {}", self.0)
    }
}

impl std::error::Error for CrossOrigin {}

fn find_source<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(found) = err.downcast_ref::<T>() {
            return Some(found);
        }
        current = err.source();
    }
    None
}

/// The innermost cause's message (reqwest's own Display repeats the URL).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}
