//! Which header names carry a static credential (the seed's CREDENTIAL_HEADER_PATTERN).

/// Words that make a header a credential when they are a whole `-`/`_`-delimited part.
const CREDENTIAL_WORDS: &[&str] = &[
    "authorization",
    "auth",
    "token",
    "secret",
    "password",
    "credential",
    "credentials",
    "apikey",
];

/// True when a whole `-`/`_`-delimited part of `name` is a credential word: authorization, auth,
/// token, secret, password, credential(s), or the pair api-key / the word apikey.
/// `X-API-Key` and `PRIVATE-TOKEN` are credentials; `Idempotency-Key` and `X-Author` are not.
pub fn is_credential_header(name: &str) -> bool {
    let parts: Vec<String> = name.split(['-', '_']).map(str::to_lowercase).collect();
    // Whole parts only: `X-Author` and `X-Tokenizer` are routine headers, and reading one as a
    // credential would hide the Authorize button on a server that needs it.
    parts.iter().any(|p| CREDENTIAL_WORDS.contains(&p.as_str()))
        // `key` counts only right after `api`, so `Idempotency-Key` stays routine.
        || parts.windows(2).any(|w| w[0] == "api" && w[1] == "key")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers() {
        for name in [
            "X-API-Key",
            "X-Goog-Api-Key",
            "X-Figma-Token",
            "PRIVATE-TOKEN",
            "Authorization",
            "authorization",
            "X_Auth_Token",
            "apikey",
            "X-Apikey",
            "api_key",
            "CONTEXT7_API_KEY",
            "X-Client-Secret",
            "X-Password",
            "X-Credentials",
            "Proxy-Authorization",
        ] {
            assert!(is_credential_header(name), "{name} should be a credential");
        }
    }

    #[test]
    fn routine_headers() {
        for name in [
            "Idempotency-Key",
            "X-Author",
            "X-Tokenizer",
            "Content-Type",
            "X-Request-Id",
            "Keyboard",
            "X-Key-Api",
            "X-Api-Version",
            "Key",
            "",
            "X-Authentication-Mode",
        ] {
            assert!(
                !is_credential_header(name),
                "{name} should not be a credential"
            );
        }
    }
}
