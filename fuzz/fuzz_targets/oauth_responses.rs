//! What token and registration endpoints answer: dynamic registration (RFC 7591) and token
//! responses (RFC 6749 §5.1, Slack's `authed_user`), as parsed JSON; and the scrubbing of a
//! refresh answer's body before it is kept in the renewal history (no secret may survive it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_oauth::client::parse_registration;
use patchbay_oauth::refresh::scrub;
use patchbay_oauth::token::parse_token_response;
use patchbay_vault::Secret;
use serde_json::Value;

/// A refresh token and a client secret as servers mint them (base64 alphabet: `/` and `+`).
const SECRETS: [&str; 2] = ["rt/3fA+9x_Q", "cs-7Hk/2w=="];

fuzz_target!(|data: &[u8]| {
    let body = patchbay_fuzz::text(data);
    let secrets: Vec<Secret> = SECRETS.iter().map(|s| Secret::new(*s)).collect();
    let scrubbed = scrub(&body, &secrets.iter().collect::<Vec<_>>());
    for secret in SECRETS {
        assert!(
            !scrubbed.contains(secret),
            "{secret} survived scrubbing: {scrubbed:?}"
        );
    }
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(tokens) = parse_token_response(&v) {
        assert!(!tokens.access_token.expose().is_empty());
    }
    let methods = vec!["client_secret_post".to_string()];
    for listed in [None, Some(methods.as_slice())] {
        if let Ok(registered) = parse_registration("https://auth.example/register", &v, listed) {
            assert!(!registered.client_id.is_empty());
            // A secret is only kept with a method that sends it.
            if registered.client_secret.is_some() {
                assert_ne!(registered.token_auth_method, "none");
            }
        }
    }
});
