//! A client's server entry in AIR catalog form (docs/catalog.md, catalog/mcp.schema.json), for
//! "Manage with Patchbay": every literal secret is replaced by a `${VAR}` placeholder and handed
//! back separately, wrapped, for the caller to put in the vault; the client's own placeholder
//! syntaxes are translated to AIR's.
//!
//! What counts as a literal secret: the value of a header [`patchbay_catalog::is_credential_header`]
//! flags, of an env var [`super::is_credential_name`] flags, of a URL query parameter or a
//! `--flag=value` / `--flag value` argument with such a name, and of an mcp-remote `--header`
//! argument with a credential header name; but only when the value holds no placeholder already.
//! An `Authorization`-style value keeps its scheme: `Bearer sk-1` becomes `Bearer ${GITHUB_TOKEN}`
//! and the vault gets `sk-1`.
//!
//! Placeholders: `${VAR}` and `${VAR:-default}` (Claude Code, AIR) stay; `${env:VAR}` (Cursor,
//! VS Code, Windsurf) becomes `${VAR}`; Gemini CLI's bare `$VAR` becomes `${VAR}`; anything else
//! AIR cannot express (VS Code's `${input:id}`, Windsurf's `${file:path}`, the editors'
//! `${workspaceFolder}`/`${userHome}`) becomes a generated `${VAR}` listed in
//! [`AirEntry::needs`]: its value is not in the file, so the caller must ask for it.
//!
//! Variable names: `<SERVER>_<NAME>` upper-cased with `_` for anything not a letter or digit
//! (`github` + `Authorization` → `GITHUB_TOKEN`; `+ X-Api-Key` → `GITHUB_X_API_KEY`); an env var
//! whose name already starts with the server's name or its first word keeps its own name
//! (`GITHUB_PERSONAL_ACCESS_TOKEN`, `BRAVE_API_KEY` for `brave-search`). Stable: the same entry
//! always yields the same names; two names that collide within an entry get `_2`, `_3`.
//! The caller decides what to do when the vault already holds a different value under a name.

use super::{is_credential_name, Client, ClientServer, ClientTransport};
use indexmap::IndexMap;
use patchbay_vault::Secret;
use serde_json::{json, Map, Value};

/// A literal secret taken out of a client's entry.
#[derive(Debug, Clone)]
pub struct ExtractedSecret {
    /// The `${VAR}` it was replaced by, without `${}`.
    pub variable: String,
    pub value: Secret,
    /// Where it was: `env GITHUB_TOKEN`, `header Authorization`, `args[3]`, `url query api_key`.
    pub source: String,
}

/// A variable the entry now needs whose value the client's file does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeededVariable {
    pub variable: String,
    /// What the client had, e.g. `${input:github-token}`.
    pub original: String,
}

/// A client's entry in AIR form.
#[derive(Debug, Clone)]
pub struct AirEntry {
    /// A catalog name for it: the client's name with characters AIR does not allow as `-`.
    pub name: String,
    /// The entry object (`type`, `url`, `headers` or `command`, `args`, `env`), placeholders only.
    pub entry: Value,
    pub secrets: Vec<ExtractedSecret>,
    pub needs: Vec<NeededVariable>,
}

/// The AIR catalog form of `server` (see the module docs).
pub fn to_air(server: &ClientServer) -> AirEntry {
    let mut conversion = Conversion {
        client: server.client,
        server: var_part(&server.name),
        used: Vec::new(),
        secrets: Vec::new(),
        needs: Vec::new(),
    };
    let mut entry = Map::new();
    entry.insert("type".into(), json!(server.transport.kind()));
    match &server.transport {
        ClientTransport::Stdio { command, args, env } => {
            entry.insert("command".into(), json!(conversion.translate(command)));
            let args = conversion.args(args);
            if !args.is_empty() {
                entry.insert("args".into(), json!(args));
            }
            let mut out = Map::new();
            for (name, value) in env {
                let value = conversion.translate(value.expose());
                let value =
                    if is_credential_name(name) && !value.is_empty() && !has_placeholder(&value) {
                        let var = conversion.env_var(name);
                        conversion.extract(&var, value, format!("env {name}"))
                    } else {
                        value
                    };
                out.insert(name.clone(), json!(value));
            }
            if !out.is_empty() {
                entry.insert("env".into(), Value::Object(out));
            }
        }
        ClientTransport::Sse { url, headers }
        | ClientTransport::StreamableHttp { url, headers } => {
            let url = conversion.url(url);
            entry.insert("url".into(), json!(url));
            let mut out = Map::new();
            for (name, value) in headers {
                let value = conversion.translate(value.expose());
                let value = conversion.header_value(name, value);
                out.insert(name.clone(), json!(value));
            }
            if !out.is_empty() {
                entry.insert("headers".into(), Value::Object(out));
            }
        }
    }
    AirEntry {
        name: catalog_name(&server.name),
        entry: Value::Object(entry),
        secrets: conversion.secrets,
        needs: conversion.needs,
    }
}

/// A name AIR accepts (`^[$a-zA-Z0-9_\[\]-]+$`): other characters become `-`; empty → `server`.
pub fn catalog_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '[' | ']' | '$') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "server".into()
    } else {
        cleaned
    }
}

struct Conversion {
    client: Client,
    server: String,
    used: Vec<String>,
    secrets: Vec<ExtractedSecret>,
    needs: Vec<NeededVariable>,
}

/// Upper-case, `_` for runs of anything but letters and digits, no leading digit: the part of a
/// `${VAR}` name made from a server's or a value's name (also the custom connector's, in core).
pub fn var_part(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_').to_string();
    match out.chars().next() {
        None => "SERVER".into(),
        Some(c) if c.is_ascii_digit() => format!("_{out}"),
        Some(_) => out,
    }
}

/// Whether `value` holds an AIR placeholder (after [`Conversion::translate`]).
fn has_placeholder(value: &str) -> bool {
    !patchbay_catalog::placeholders(value).is_empty()
}

/// The editors' predefined variables: valid AIR syntax, but not environment variables.
const EDITOR_VARIABLES: &[&str] = &[
    "workspaceFolder",
    "workspaceFolderBasename",
    "userHome",
    "cwd",
    "pathSeparator",
    "/",
];

impl Conversion {
    /// A fresh variable name (`_2`, `_3` on a collision within this entry).
    fn fresh(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut n = 2;
        while self.used.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.used.push(name.clone());
        name
    }

    fn named(&mut self, what: &str) -> String {
        let base = format!("{}_{}", self.server, var_part(what));
        self.fresh(base)
    }

    fn env_var(&mut self, env: &str) -> String {
        let own = var_part(env);
        let first = self.server.split('_').next().unwrap_or("").to_string();
        let keeps = own.starts_with(&format!("{}_", self.server))
            || (first.len() >= 3 && own.starts_with(&format!("{first}_")));
        if keeps {
            self.fresh(own)
        } else {
            self.named(env)
        }
    }

    /// Record `value` as the secret behind `${var}` and return the placeholder.
    fn extract(&mut self, var: &str, value: String, source: String) -> String {
        self.secrets.push(ExtractedSecret {
            variable: var.to_string(),
            value: Secret::new(value),
            source,
        });
        format!("${{{var}}}")
    }

    /// A credential header's value: `Scheme ${VAR}` for `Bearer`/`Basic`/`Token`/`Bot` values.
    fn header_value(&mut self, name: &str, value: String) -> String {
        if !patchbay_catalog::is_credential_header(name)
            || has_placeholder(&value)
            || value.is_empty()
        {
            return value;
        }
        let what = if name.eq_ignore_ascii_case("authorization") {
            "TOKEN"
        } else {
            name
        };
        let var = self.named(what);
        let source = format!("header {name}");
        match value.split_once(' ') {
            Some((scheme, rest))
                if ["bearer", "basic", "token", "bot"]
                    .contains(&scheme.to_ascii_lowercase().as_str())
                    && !rest.trim().is_empty() =>
            {
                let placeholder = self.extract(&var, rest.trim().to_string(), source);
                format!("{scheme} {placeholder}")
            }
            _ => self.extract(&var, value, source),
        }
    }

    /// A URL with literal credential query parameters replaced.
    fn url(&mut self, url: &str) -> String {
        let url = self.translate(url);
        let Some((base, query)) = url.split_once('?') else {
            return url;
        };
        let (query, fragment) = match query.split_once('#') {
            Some((q, f)) => (q.to_string(), Some(f.to_string())),
            None => (query.to_string(), None),
        };
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, value))
                    if is_credential_name(key) && !value.is_empty() && !has_placeholder(value) =>
                {
                    let var = self.named(key);
                    let placeholder =
                        self.extract(&var, value.to_string(), format!("url query {key}"));
                    format!("{key}={placeholder}")
                }
                _ => pair.to_string(),
            })
            .collect();
        let mut out = format!("{base}?{}", pairs.join("&"));
        if let Some(fragment) = fragment {
            out.push('#');
            out.push_str(&fragment);
        }
        out
    }

    fn args(&mut self, args: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            let arg = self.translate(arg);
            let previous = if i > 0 { args[i - 1].as_str() } else { "" };
            let converted = if matches!(previous, "--header" | "-H") {
                // mcp-remote's `Name: value` (and curl-like `-H`).
                match arg.split_once(':') {
                    Some((name, value)) if patchbay_catalog::is_credential_header(name.trim()) => {
                        let value = self.header_value(name.trim(), value.trim_start().to_string());
                        format!("{name}: {value}")
                    }
                    _ => arg,
                }
            } else if let Some((flag, value)) =
                arg.split_once('=').filter(|(f, _)| f.starts_with('-'))
            {
                let key = flag.trim_start_matches('-');
                if is_credential_name(key) && !value.is_empty() && !has_placeholder(value) {
                    let var = self.named(key);
                    let placeholder = self.extract(&var, value.to_string(), format!("args[{i}]"));
                    format!("{flag}={placeholder}")
                } else {
                    arg
                }
            } else if previous.starts_with("--")
                && !previous.contains('=')
                && is_credential_name(previous.trim_start_matches('-'))
                && !arg.starts_with('-')
                && !has_placeholder(&arg)
            {
                let var = self.named(previous.trim_start_matches('-'));
                self.extract(&var, arg, format!("args[{i}]"))
            } else {
                arg
            };
            out.push(converted);
        }
        out
    }

    /// The client's placeholder syntax in AIR's (see the module docs).
    fn translate(&mut self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find('$') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            if let Some(inner_and_more) = after.strip_prefix('{') {
                let Some(end) = inner_and_more.find('}') else {
                    out.push_str(&rest[start..]);
                    return out; // unclosed: left for the catalog's validation to name
                };
                let inner = &inner_and_more[..end];
                let original = &rest[start..start + 2 + end + 1];
                out.push_str(&self.placeholder(inner, original));
                rest = &inner_and_more[end + 1..];
            } else if self.client == Client::GeminiCli {
                // Gemini CLI's bare `$VAR`.
                let len = after
                    .char_indices()
                    .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
                    .map(|(i, _)| i)
                    .unwrap_or(after.len());
                let name = &after[..len];
                if patchbay_catalog::is_variable_name(name) {
                    out.push_str(&format!("${{{name}}}"));
                } else {
                    out.push('$');
                    out.push_str(name);
                }
                rest = &after[len..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        out
    }

    fn placeholder(&mut self, inner: &str, original: &str) -> String {
        if let Some(name) = inner
            .strip_prefix("env:")
            .filter(|n| patchbay_catalog::is_variable_name(n))
        {
            return format!("${{{name}}}");
        }
        let editor = matches!(
            self.client,
            Client::Cursor | Client::VsCode | Client::Windsurf
        );
        let name = inner.split(":-").next().unwrap_or(inner);
        if patchbay_catalog::is_variable_name(name)
            && !(editor && EDITOR_VARIABLES.contains(&inner))
        {
            return original.to_string();
        }
        // `${input:id}`, `${file:path}`, `${workspaceFolder}`: a value only the client knows.
        if let Some(known) = self.needs.iter().find(|n| n.original == original) {
            return format!("${{{}}}", known.variable);
        }
        let what = inner
            .split_once(':')
            .map(|(_, id)| id)
            .unwrap_or(inner)
            .to_string();
        let var = self.named(&what);
        self.needs.push(NeededVariable {
            variable: var.clone(),
            original: original.to_string(),
        });
        format!("${{{var}}}")
    }
}

/// For tests and callers that want the header map of an entry as plain strings.
pub fn entry_headers(entry: &Value) -> IndexMap<String, String> {
    entry
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::ClientScope;

    fn server(client: Client, name: &str, transport: ClientTransport) -> ClientServer {
        ClientServer {
            client,
            scope: ClientScope::User,
            file: "f".into(),
            name: name.into(),
            transport,
            enabled: true,
        }
    }

    fn secrets(pairs: &[(&str, &str)]) -> IndexMap<String, Secret> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Secret::new(*v)))
            .collect()
    }

    #[test]
    fn a_literal_authorization_header_goes_to_the_vault() {
        let s = server(
            Client::Cursor,
            "github",
            ClientTransport::StreamableHttp {
                url: "https://api.githubcopilot.com/mcp/".into(),
                headers: secrets(&[
                    ("Authorization", "Bearer ghp_literal"),
                    ("X-Api-Key", "${env:GH_KEY}"),
                    ("X-Trace", "on"),
                ]),
            },
        );
        let air = to_air(&s);
        assert_eq!(air.entry["type"], "streamable-http");
        assert_eq!(
            air.entry["headers"]["Authorization"],
            "Bearer ${GITHUB_TOKEN}"
        );
        assert_eq!(air.entry["headers"]["X-Api-Key"], "${GH_KEY}");
        assert_eq!(air.entry["headers"]["X-Trace"], "on");
        assert_eq!(air.secrets.len(), 1);
        assert_eq!(air.secrets[0].variable, "GITHUB_TOKEN");
        assert_eq!(air.secrets[0].value.expose(), "ghp_literal");
        assert!(!air.entry.to_string().contains("ghp_literal"));
        assert!(!format!("{air:?}").contains("ghp_literal"));
    }

    #[test]
    fn env_keys_args_and_url_queries() {
        let s = server(
            Client::ClaudeDesktop,
            "brave-search",
            ClientTransport::Stdio {
                command: "npx".into(),
                args: vec![
                    "-y".into(),
                    "@brave/brave-search-mcp-server".into(),
                    "--token=abc".into(),
                    "--api-key".into(),
                    "def".into(),
                    "--port".into(),
                    "8080".into(),
                ],
                env: secrets(&[
                    ("BRAVE_API_KEY", "BSA-literal"),
                    ("OTHER_TOKEN", "${OTHER_TOKEN}"),
                    ("LOG_LEVEL", "debug"),
                    ("API_KEY", "xyz"),
                ]),
            },
        );
        let air = to_air(&s);
        assert_eq!(air.entry["env"]["BRAVE_API_KEY"], "${BRAVE_API_KEY}");
        assert_eq!(air.entry["env"]["OTHER_TOKEN"], "${OTHER_TOKEN}");
        assert_eq!(air.entry["env"]["LOG_LEVEL"], "debug");
        assert_eq!(air.entry["env"]["API_KEY"], "${BRAVE_SEARCH_API_KEY_2}");
        assert_eq!(
            air.entry["args"],
            json!([
                "-y",
                "@brave/brave-search-mcp-server",
                "--token=${BRAVE_SEARCH_TOKEN}",
                "--api-key",
                "${BRAVE_SEARCH_API_KEY}",
                "--port",
                "8080"
            ])
        );
        let names: Vec<&str> = air.secrets.iter().map(|s| s.variable.as_str()).collect();
        assert_eq!(
            names,
            [
                "BRAVE_SEARCH_TOKEN",
                "BRAVE_SEARCH_API_KEY",
                "BRAVE_API_KEY",
                "BRAVE_SEARCH_API_KEY_2"
            ]
        );
        let remote = server(
            Client::Windsurf,
            "zap",
            ClientTransport::Sse {
                url: "https://z.example/sse?api_key=k1&x=1".into(),
                headers: IndexMap::new(),
            },
        );
        let air = to_air(&remote);
        assert_eq!(
            air.entry["url"],
            "https://z.example/sse?api_key=${ZAP_API_KEY}&x=1"
        );
        assert_eq!(air.secrets[0].value.expose(), "k1");
    }

    #[test]
    fn client_placeholders_become_air_ones() {
        let s = server(
            Client::VsCode,
            "gw",
            ClientTransport::StreamableHttp {
                url: "https://gw.example/mcp".into(),
                headers: secrets(&[
                    ("Authorization", "Bearer ${input:gw-token}"),
                    ("X-Again", "${input:gw-token}"),
                ]),
            },
        );
        let air = to_air(&s);
        assert_eq!(
            air.entry["headers"]["Authorization"],
            "Bearer ${GW_GW_TOKEN}"
        );
        assert_eq!(air.entry["headers"]["X-Again"], "${GW_GW_TOKEN}");
        assert!(air.secrets.is_empty());
        assert_eq!(
            air.needs,
            vec![NeededVariable {
                variable: "GW_GW_TOKEN".into(),
                original: "${input:gw-token}".into()
            }]
        );

        let gemini = server(
            Client::GeminiCli,
            "tools",
            ClientTransport::Stdio {
                command: "python".into(),
                args: vec!["${workspaceFolder}/s.py".into()],
                env: secrets(&[("API_KEY", "$MY_API_TOKEN"), ("COST", "5$")]),
            },
        );
        let air = to_air(&gemini);
        assert_eq!(air.entry["env"]["API_KEY"], "${MY_API_TOKEN}");
        assert_eq!(air.entry["env"]["COST"], "5$");
        // Not an editor: `${workspaceFolder}` is an environment variable to Gemini CLI.
        assert_eq!(air.entry["args"][0], "${workspaceFolder}/s.py");
        assert!(air.secrets.is_empty() && air.needs.is_empty());

        let cursor = server(
            Client::Cursor,
            "fs",
            ClientTransport::Stdio {
                command: "npx".into(),
                args: vec!["${workspaceFolder}".into()],
                env: IndexMap::new(),
            },
        );
        let air = to_air(&cursor);
        assert_eq!(air.entry["args"][0], "${FS_WORKSPACEFOLDER}");
        assert_eq!(air.needs[0].original, "${workspaceFolder}");
    }

    #[test]
    fn mcp_remote_header_args_are_cleaned() {
        let s = server(
            Client::ClaudeDesktop,
            "Linear (work)",
            ClientTransport::Stdio {
                command: "npx".into(),
                args: vec![
                    "mcp-remote".into(),
                    "https://mcp.linear.app/sse".into(),
                    "--header".into(),
                    "Authorization: Bearer lin_api_literal".into(),
                ],
                env: IndexMap::new(),
            },
        );
        let air = to_air(&s);
        assert_eq!(air.name, "Linear--work-");
        assert_eq!(
            air.entry["args"][3],
            "Authorization: Bearer ${LINEAR_WORK_TOKEN}"
        );
        assert_eq!(air.secrets[0].value.expose(), "lin_api_literal");
    }
}
