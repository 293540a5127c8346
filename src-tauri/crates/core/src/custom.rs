//! "Add custom connector": a server the catalog lacks, from a URL (remote) or a command (stdio),
//! written into the user catalog in use, its secret values into the vault under the `${VAR}`s the
//! entry holds. The window's form and `patchbay add-custom` both land here; whether a remote
//! server wants OAuth is found with one request ([`probe_remote`]), made only when asked.

use crate::{CoreError, Patchbay};
use patchbay_vault::Secret;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// How long the OAuth probe waits for the server.
const PROBE_TIMEOUT: Duration = Duration::from_secs(8);

/// A header (remote) or an environment variable (stdio) of a custom connector.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CustomValue {
    pub name: String,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub value: Secret,
    /// Kept in the vault (the entry holds `${VAR}`), not written into the catalog.
    pub secret: bool,
}

/// How a custom connector is reached.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum CustomServer {
    /// A remote server: streamable HTTP at `url`.
    Remote {
        url: String,
        #[serde(default)]
        headers: Vec<CustomValue>,
    },
    /// A local server Patchbay's clients start: `command args...` with `env`.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: Vec<CustomValue>,
    },
}

/// What the user filled in.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CustomConnector {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    pub server: CustomServer,
}

/// What the OAuth probe found at a remote URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum RemoteAuth {
    /// It answered 401 asking for a bearer token: Authorize next.
    #[serde(rename = "oauth")]
    OAuth,
    /// It answered without asking for a credential.
    Open,
    /// It could not be reached, or answered something else; `detail` says what.
    Unknown { detail: String },
}

/// What adding did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CustomAdded {
    pub name: String,
    /// The `${VAR}`s whose values went into the vault.
    pub secrets: Vec<String>,
}

/// Why a field is not acceptable: `field` names it as the form does (`name`, `url`, `command`,
/// `headers[0].name`, `env[1].name`).
fn invalid(field: &str, why: impl std::fmt::Display) -> CoreError {
    CoreError::InvalidField {
        field: field.to_owned(),
        why: why.to_string(),
    }
}

/// A connector name: letters, digits, `-` and `_` (AIR's names, less `$` and brackets).
fn check_name(name: &str) -> Result<(), CoreError> {
    if name.is_empty() {
        return Err(invalid("name", "give the connector a name"));
    }
    if name.len() > 64 {
        return Err(invalid("name", "at most 64 characters"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(invalid(
            "name",
            format!("{bad:?} is not allowed; use letters, digits, - and _"),
        ));
    }
    Ok(())
}

/// A remote URL: http(s) with a host; plain http only to this machine (the MCP spec's rule for
/// authorization endpoints, and a token must not cross a network in clear).
pub fn check_remote_url(text: &str) -> Result<url::Url, CoreError> {
    let url = url::Url::parse(text.trim()).map_err(|e| {
        invalid(
            "url",
            format!("not a URL ({e}); e.g. https://mcp.example.com/mcp"),
        )
    })?;
    if url.host().is_none() {
        return Err(invalid("url", "it has no host"));
    }
    // The same loopback names the gateway and the receiver answer.
    let loopback = patchbay_catalog::own_gateway::is_loopback_host(url.host());
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err(invalid(
            "url",
            "use https:// (plain http only for localhost)",
        )),
        other => Err(invalid("url", format!("{other}: is not http or https"))),
    }
}

/// `NAME_KEY` in the placeholder grammar, as "Manage with Patchbay" names the variables it makes.
fn variable_for(connector: &str, key: &str) -> String {
    use patchbay_runtimes::clients::air::var_part;
    format!("{}_{}", var_part(connector), var_part(key))
}

/// The entry's members for `values` (headers or env): literal or `${VAR}`, and the secrets to
/// store. Names must be unique and non-empty.
fn values_member(
    connector: &str,
    field: &str,
    values: &[CustomValue],
    is_header: bool,
    secrets: &mut Vec<(String, Secret)>,
) -> Result<Map<String, Value>, CoreError> {
    let mut out = Map::new();
    for (i, v) in values.iter().enumerate() {
        let at = format!("{field}[{i}].name");
        let name = v.name.trim();
        if name.is_empty() {
            return Err(invalid(&at, "give it a name"));
        }
        let valid = match is_header {
            // RFC 9110 token characters.
            true => name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)),
            false => patchbay_catalog::is_variable_name(name),
        };
        if !valid {
            return Err(invalid(
                &at,
                match is_header {
                    true => format!("{name:?} is not a header name"),
                    false => format!("{name:?} is not a variable name (letters, digits, _)"),
                },
            ));
        }
        if out.contains_key(name) {
            return Err(invalid(&at, format!("{name} is given twice")));
        }
        // A pasted key often carries a newline.
        let value = match v.secret {
            true => v.value.expose().trim(),
            false => v.value.expose(),
        };
        let written = if v.secret && !value.is_empty() {
            let var = variable_for(connector, name);
            // A bearer token typed whole keeps its scheme in the entry.
            let (prefix, token) = match value.strip_prefix("Bearer ") {
                Some(token) if is_header => ("Bearer ", token),
                _ => ("", value),
            };
            secrets.push((var.clone(), Secret::new(token.to_owned())));
            format!("{prefix}${{{var}}}")
        } else {
            value.to_owned()
        };
        out.insert(name.to_owned(), Value::String(written));
    }
    Ok(out)
}

/// The AIR entry for `spec`, and the secrets it moves into the vault.
pub fn custom_entry(spec: &CustomConnector) -> Result<(Value, Vec<(String, Secret)>), CoreError> {
    check_name(&spec.name)?;
    let mut entry = Map::new();
    if let Some(title) = spec
        .title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        entry.insert("title".into(), json!(title));
    }
    let mut secrets = Vec::new();
    match &spec.server {
        CustomServer::Remote { url, headers } => {
            let url = check_remote_url(url)?;
            entry.insert("type".into(), json!("streamable-http"));
            entry.insert("url".into(), json!(url.as_str()));
            let headers = values_member(&spec.name, "headers", headers, true, &mut secrets)?;
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Object(headers));
            }
        }
        CustomServer::Stdio { command, args, env } => {
            let command = command.trim();
            if command.is_empty() {
                return Err(invalid(
                    "command",
                    "give the command that starts the server",
                ));
            }
            entry.insert("type".into(), json!("stdio"));
            entry.insert("command".into(), json!(command));
            if !args.is_empty() {
                entry.insert("args".into(), json!(args));
            }
            let env = values_member(&spec.name, "env", env, false, &mut secrets)?;
            if !env.is_empty() {
                entry.insert("env".into(), Value::Object(env));
            }
        }
    }
    entry.insert("enabled".into(), json!(true));
    Ok((Value::Object(entry), secrets))
}

impl Patchbay {
    /// Adds `spec` to the catalog Patchbay writes, in use. Refused when any catalog or client
    /// already has a connector of that name. Secrets are stored first, so the new row never
    /// reads as missing a value that was typed.
    pub fn add_custom_connector(&self, spec: &CustomConnector) -> Result<CustomAdded, CoreError> {
        let (entry, secrets) = custom_entry(spec)?;
        if self.catalog().get(&spec.name).is_some() {
            return Err(invalid(
                "name",
                format!(
                    "a connector named \"{}\" exists; choose another name",
                    spec.name
                ),
            ));
        }
        for (variable, value) in &secrets {
            self.set_secret(variable, value)?;
        }
        crate::user_catalog::edit_entry(
            &self.writable_catalog(),
            &spec.name,
            || Ok(entry),
            |_| {},
            |written| match written.enabled {
                Some(true) => Ok(()),
                _ => Err("the entry did not come out as written".into()),
            },
        )?;
        Ok(CustomAdded {
            name: spec.name.clone(),
            secrets: secrets.into_iter().map(|(v, _)| v).collect(),
        })
    }
}

/// One MCP request to `url` (an `initialize`, as a client's first would be) to learn whether the
/// server wants OAuth: a 401 with a `Bearer` challenge does.
pub async fn probe_remote(url: &str) -> Result<RemoteAuth, CoreError> {
    let url = check_remote_url(url)?;
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .map_err(|e| CoreError::InvalidInput(format!("cannot make an HTTP client: {e}")))?;
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "patchbay", "version": env!("CARGO_PKG_VERSION")}}
    });
    let answer = client
        .post(url.clone())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await;
    let response = match answer {
        Ok(response) => response,
        Err(e) => {
            let why = match (e.is_timeout(), e.is_connect()) {
                (true, _) => format!("{url} did not answer within {} s", PROBE_TIMEOUT.as_secs()),
                (_, true) => format!("nothing answers at {url}"),
                _ => format!("the request to {url} failed"),
            };
            return Ok(RemoteAuth::Unknown { detail: why });
        }
    };
    let status = response.status();
    let bearer = response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| patchbay_oauth::discovery::parse_www_authenticate(v).is_some());
    Ok(match status.as_u16() {
        401 if bearer => RemoteAuth::OAuth,
        401 => RemoteAuth::Unknown {
            detail: "it answered 401 without a Bearer challenge: it may want an API key header"
                .into(),
        },
        200..=299 => RemoteAuth::Open,
        code => RemoteAuth::Unknown {
            detail: format!("it answered HTTP {code}"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(name: &str, url: &str, headers: Vec<CustomValue>) -> CustomConnector {
        CustomConnector {
            name: name.into(),
            title: None,
            server: CustomServer::Remote {
                url: url.into(),
                headers,
            },
        }
    }

    fn value(name: &str, value: &str, secret: bool) -> CustomValue {
        CustomValue {
            name: name.into(),
            value: Secret::new(value.to_owned()),
            secret,
        }
    }

    #[test]
    fn a_remote_entry_keeps_its_secret_header_in_the_vault() {
        let spec = remote(
            "acme",
            "https://mcp.acme.test/mcp",
            vec![
                value("Authorization", "Bearer tok-123456", true),
                value("X-Region", "eu", false),
            ],
        );
        let (entry, secrets) = custom_entry(&spec).unwrap();
        assert_eq!(
            entry,
            json!({"type": "streamable-http", "url": "https://mcp.acme.test/mcp",
                   "headers": {"Authorization": "Bearer ${ACME_AUTHORIZATION}", "X-Region": "eu"},
                   "enabled": true})
        );
        assert_eq!(secrets.len(), 1);
        assert_eq!(secrets[0].0, "ACME_AUTHORIZATION");
        assert_eq!(secrets[0].1.expose(), "tok-123456");
        assert!(!entry.to_string().contains("tok-123456"));
    }

    #[test]
    fn a_stdio_entry_has_its_command_args_and_env() {
        let spec = CustomConnector {
            name: "my-pg".into(),
            title: Some(" Postgres ".into()),
            server: CustomServer::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "@modelcontextprotocol/server-postgres".into()],
                env: vec![
                    value("PG_URL", "postgres://u:pw@db/x", true),
                    value("LOG", "info", false),
                ],
            },
        };
        let (entry, secrets) = custom_entry(&spec).unwrap();
        assert_eq!(
            entry,
            json!({"title": "Postgres", "type": "stdio", "command": "npx",
                   "args": ["-y", "@modelcontextprotocol/server-postgres"],
                   "env": {"PG_URL": "${MY_PG_PG_URL}", "LOG": "info"}, "enabled": true})
        );
        assert_eq!(secrets[0].0, "MY_PG_PG_URL");
    }

    #[test]
    fn bad_input_names_the_field_and_what_is_wrong() {
        let cases = [
            (remote("", "https://a.test", vec![]), "name: give"),
            (
                remote("a b", "https://a.test", vec![]),
                "name: ' ' is not allowed",
            ),
            (
                remote("a", "http://a.test/mcp", vec![]),
                "url: use https://",
            ),
            (remote("a", "ftp://a.test/", vec![]), "url: ftp: is not"),
            (remote("a", "mcp.example.com", vec![]), "url: not a URL"),
            (
                remote("a", "https://a.test", vec![value("", "x", true)]),
                "headers[0].name: give it a name",
            ),
            (
                remote(
                    "a",
                    "https://a.test",
                    vec![value("A", "1", false), value("A", "2", false)],
                ),
                "headers[1].name: A is given twice",
            ),
        ];
        for (spec, want) in cases {
            let err = custom_entry(&spec).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
        let env = CustomConnector {
            name: "a".into(),
            title: None,
            server: CustomServer::Stdio {
                command: " ".into(),
                args: vec![],
                env: vec![],
            },
        };
        assert!(custom_entry(&env)
            .unwrap_err()
            .to_string()
            .contains("command: give"));
        // Plain http to this machine is fine.
        for url in [
            "http://127.0.0.1:3000/mcp",
            "http://localhost/mcp",
            "http://[::1]:9/mcp",
        ] {
            custom_entry(&remote("a", url, vec![])).unwrap();
        }
    }

    #[test]
    fn a_secret_value_never_shows_in_debug() {
        let spec = remote(
            "a",
            "https://a.test",
            vec![value("Authorization", "Bearer sekrit-999", true)],
        );
        assert!(!format!("{spec:?}").contains("sekrit-999"));
    }
}
