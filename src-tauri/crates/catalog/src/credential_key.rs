//! Claude Code's private credential-key function, reimplemented so our tokens land where it looks.
//!
//! `<serverName>|<first 16 hex of sha256(compact JSON {type,url,headers})>`; see
//! shared/reference/runtime-credential-stores.md. Canary tests pin the worked examples.

use indexmap::IndexMap;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The key a runtime files an OAuth credential under, e.g. `notion|3fad03f7abd02b9c`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct CredentialKey(pub String);

impl CredentialKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The server name part, before the `|`.
    pub fn server_name(&self) -> &str {
        self.0.split('|').next().unwrap_or("")
    }
}

impl std::fmt::Display for CredentialKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `runtime_type` is the transport as Claude Code spells it: `http` or `sse`.
/// `headers` are already expanded, in config order.
pub fn credential_key(
    server_name: &str,
    runtime_type: &str,
    url: &str,
    headers: &IndexMap<String, String>,
) -> CredentialKey {
    let digest = Sha256::digest(hashed_text(runtime_type, url, headers).as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    CredentialKey(format!("{server_name}|{hex}"))
}

/// The compact JSON `{"type":..,"url":..,"headers":{..}}` the runtime hashes.
fn hashed_text(runtime_type: &str, url: &str, headers: &IndexMap<String, String>) -> String {
    // Built by hand rather than from a map so the member order is fixed whatever serde_json's
    // features; each value goes through serde_json, whose escaping matches JSON.stringify's.
    format!(
        "{{\"type\":{},\"url\":{},\"headers\":{}}}",
        json(runtime_type),
        json(url),
        json(headers)
    )
}

fn json<T: Serialize + ?Sized>(value: &T) -> String {
    // Strings and string maps cannot fail to serialize.
    serde_json::to_string(value).expect("strings serialize")
}

impl crate::ServerEntry {
    /// The key this entry's OAuth credential is stored under, after expanding `${VAR}` in url and
    /// headers with `resolve`. `Ok(None)` for stdio entries; `Err(names)` when variables are missing.
    pub fn credential_key(
        &self,
        resolve: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<CredentialKey>, Vec<String>> {
        let (runtime_type, url, headers) = match &self.transport {
            crate::Transport::Stdio { .. } => return Ok(None),
            // Claude Code's own spelling of the transport, which is what it hashes.
            crate::Transport::StreamableHttp { url, headers } => ("http", url, headers),
            crate::Transport::Sse { url, headers } => ("sse", url, headers),
        };
        let mut missing: Vec<String> = Vec::new();
        let mut note = |names: Vec<String>| {
            for name in names {
                if !missing.contains(&name) {
                    missing.push(name);
                }
            }
        };
        let url = crate::expand(url, resolve).unwrap_or_else(|names| {
            note(names);
            String::new()
        });
        let headers: IndexMap<String, String> = headers
            .iter()
            .map(|(name, value)| {
                let value = crate::expand(value, resolve).unwrap_or_else(|names| {
                    note(names);
                    String::new()
                });
                (name.clone(), value)
            })
            .collect();
        if !missing.is_empty() {
            return Err(missing);
        }
        Ok(Some(credential_key(
            self.name.as_str(),
            runtime_type,
            &url,
            &headers,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ServerEntry, ServerName, Transport};

    fn remote(name: &str, sse: bool, url: &str, headers: &[(&str, &str)]) -> ServerEntry {
        let headers: IndexMap<String, String> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let url = url.to_string();
        ServerEntry {
            name: ServerName(name.into()),
            title: None,
            description: None,
            transport: if sse {
                Transport::Sse { url, headers }
            } else {
                Transport::StreamableHttp { url, headers }
            },
            oauth: None,
            unavailable: None,
            enabled: None,
            timeout_ms: None,
            retry: None,
            source: "test.json".into(),
        }
    }

    fn myvar(name: &str) -> Option<String> {
        (name == "MYVAR").then(|| "zzz".to_string())
    }

    // The three worked examples in runtime-credential-stores.md, checked against keys Claude Code
    // wrote itself. If one of these fails, our tokens land where no runtime looks.
    #[test]
    fn canary_fx() {
        let key = credential_key("fx", "http", "http://localhost:3100/mcp", &IndexMap::new());
        assert_eq!(key.as_str(), "fx|528e1818a7ba21cf");
        assert_eq!(key.server_name(), "fx");
    }

    #[test]
    fn canary_hx_expands_headers_in_config_order() {
        let entry = remote(
            "hx",
            false,
            "http://localhost:3100/mcp",
            &[("X-Api-Key", "abc"), ("X-Env", "${MYVAR}")],
        );
        let key = entry.credential_key(&myvar).unwrap().unwrap();
        assert_eq!(key.to_string(), "hx|f6b2f35d58f6f2e6");

        // Header order is part of the hash.
        let swapped = remote(
            "hx",
            false,
            "http://localhost:3100/mcp",
            &[("X-Env", "${MYVAR}"), ("X-Api-Key", "abc")],
        );
        assert_ne!(swapped.credential_key(&myvar).unwrap().unwrap(), key);
    }

    #[test]
    fn canary_notion() {
        let entry = remote("notion", false, "https://mcp.notion.com/v1/mcp", &[]);
        let key = entry.credential_key(&|_| None).unwrap().unwrap();
        assert_eq!(key.as_str(), "notion|3fad03f7abd02b9c");
    }

    #[test]
    fn trailing_slash_and_transport_change_the_key() {
        let base = credential_key("fx", "http", "http://localhost:3100/mcp", &IndexMap::new());
        let slash = credential_key("fx", "http", "http://localhost:3100/mcp/", &IndexMap::new());
        assert_ne!(base, slash);
        let sse = remote("fx", true, "http://localhost:3100/mcp", &[]);
        let sse_key = sse.credential_key(&|_| None).unwrap().unwrap();
        assert_eq!(
            sse_key,
            credential_key("fx", "sse", "http://localhost:3100/mcp", &IndexMap::new())
        );
        assert_ne!(sse_key, base);
    }

    #[test]
    fn url_placeholders_expand_and_missing_ones_are_reported() {
        let entry = remote(
            "fx",
            false,
            "http://localhost:${PORT:-3100}/mcp",
            &[("A", "${NOPE}"), ("B", "${ALSO_NOPE} ${NOPE}")],
        );
        assert_eq!(
            entry.credential_key(&|_| None),
            Err(vec!["NOPE".to_string(), "ALSO_NOPE".to_string()])
        );
        let plain = remote("fx", false, "http://localhost:${PORT:-3100}/mcp", &[]);
        assert_eq!(
            plain.credential_key(&|_| None).unwrap().unwrap().as_str(),
            "fx|528e1818a7ba21cf"
        );
    }

    #[test]
    fn stdio_has_no_key() {
        let mut entry = remote("fx", false, "http://x", &[]);
        entry.transport = Transport::Stdio {
            command: "npx".into(),
            args: vec![],
            env: IndexMap::new(),
        };
        assert_eq!(entry.credential_key(&|_| None), Ok(None));
    }

    #[test]
    fn hashed_text_is_compact_ordered_and_escapes_like_json_stringify() {
        assert_eq!(
            hashed_text("http", "http://localhost:3100/mcp", &IndexMap::new()),
            r#"{"type":"http","url":"http://localhost:3100/mcp","headers":{}}"#
        );
        let headers: IndexMap<String, String> = [("Z", "1"), ("A", "\"q\"")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // JSON.stringify escapes `"`, `\\` and control characters (lowercase \u00xx) and leaves `/`
        // and non-ASCII alone; member order is insertion order.
        assert_eq!(
            hashed_text("sse", "http://h/\\\u{1}\té", &headers),
            r#"{"type":"sse","url":"http://h/\\\u0001\té","headers":{"Z":"1","A":"\"q\""}}"#
        );
    }
}
