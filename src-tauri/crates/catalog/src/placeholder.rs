//! The `${VAR}` and `${VAR:-default}` placeholder language used in url, headers, env, args and oauth.
//!
//! `VAR` is `[A-Za-z_][A-Za-z0-9_]*`. The default runs to the first `}` and is literal text (no
//! nesting); it may be empty (`${VAR:-}`). A `$` not followed by `{` is plain text.
//!
//! Any other `${` (unclosed `${TOKEN`, `${}`, `${1BAD}`, `${A-b}`, a default holding `${`) is
//! malformed: [`check`] finds it, and loading makes such an entry invalid, because the literal text
//! would otherwise be sent as a value (a credential, even). [`placeholders`] and [`expand`] alone
//! leave malformed text as written.

use std::ops::Range;

/// One `${...}` occurrence in a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub name: String,
    /// The text after `:-`, when given (may be empty: `${VAR:-}`).
    pub default: Option<String>,
    /// Byte range of the whole `${...}` in the source string.
    pub span: Range<usize>,
}

/// Where an entry uses a variable, so a status can say which field needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableUse {
    pub name: String,
    pub has_default: bool,
    /// The field as a user reads it: `url`, `headers.Authorization`, `env.GITHUB_TOKEN`, `args[2]`, `oauth.clientSecret`.
    pub field: String,
}

/// Every placeholder in `text`, in order. Text that is not a well-formed placeholder is left alone.
pub fn placeholders(text: &str) -> Vec<Placeholder> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find("${") {
        let start = from + offset;
        match parse_at(text, start) {
            Some(p) => {
                from = p.span.end;
                found.push(p);
            }
            // Malformed: skip only the `$`, so a well-formed placeholder right after it is found.
            None => from = start + 1,
        }
    }
    found
}

/// A `${` that does not start a well-formed placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedPlaceholder {
    /// The offending text from its `${`, short and with control characters escaped.
    pub fragment: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl std::fmt::Display for MalformedPlaceholder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "malformed placeholder `{}`: {}; write ${{NAME}} or ${{NAME:-default}}",
            self.fragment, self.problem
        )
    }
}

/// The longest fragment quoted in a [`MalformedPlaceholder`], in characters.
const FRAGMENT_MAX_CHARS: usize = 40;

/// The first malformed `${` in `text`, if any.
pub fn check(text: &str) -> Result<(), MalformedPlaceholder> {
    let mut from = 0;
    while let Some(offset) = text[from..].find("${") {
        let start = from + offset;
        match parse_at(text, start) {
            Some(p) if p.default.as_deref().is_some_and(|d| d.contains("${")) => {
                return Err(malformed(
                    text,
                    start,
                    "a default cannot hold another placeholder (no nesting)",
                ))
            }
            Some(p) => from = p.span.end,
            None => return Err(malformed(text, start, problem_at(text, start))),
        }
    }
    Ok(())
}

/// Why the `${` at `start` is not a placeholder ([`parse_at`] said it is not).
fn problem_at(text: &str, start: usize) -> &'static str {
    let body = &text[start + 2..];
    let Some(close) = body.find('}') else {
        return "it is not closed with `}`";
    };
    match body.chars().next() {
        Some('}') => "it names no variable",
        Some(c) if c.is_ascii_digit() => "a variable name cannot start with a digit",
        _ if body[..close].contains(":-") => "a variable name uses only letters, digits and `_`",
        _ => "after the name comes `}` or `:-default}`; names use only letters, digits and `_`",
    }
}

fn malformed(text: &str, start: usize, problem: &'static str) -> MalformedPlaceholder {
    let body = &text[start + 2..];
    // Up to the closing brace; when there is none, only the name-like part, so text after an
    // unclosed `${` (which may be a literal secret) is never quoted.
    let end = match body.find('}') {
        Some(close) => close + 1,
        None => body
            .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
            .unwrap_or(body.len()),
    };
    let mut fragment: String = format!("${{{}", &body[..end])
        .chars()
        .take(FRAGMENT_MAX_CHARS)
        .collect();
    if body[..end].chars().count() + 2 > FRAGMENT_MAX_CHARS {
        fragment.push('…');
    }
    MalformedPlaceholder {
        fragment: crate::text::escape_controls(&fragment),
        problem,
    }
}

/// Whether `name` is a variable name (`[A-Za-z_][A-Za-z0-9_]*`): the one grammar every
/// reader of `${VAR}` (and of Gemini CLI's bare `$VAR`) uses.
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && name_len(name) == name.len()
}

/// The length in bytes of the variable name `text` starts with (0: none).
fn name_len(text: &str) -> usize {
    text.char_indices()
        .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
        .map_or(text.len(), |(i, _)| i)
}

/// Parse the placeholder whose `${` starts at byte `start`.
fn parse_at(text: &str, start: usize) -> Option<Placeholder> {
    let body = &text[start + 2..];
    let name_len = name_len(body);
    if name_len == 0 {
        return None;
    }
    let name = &body[..name_len];
    let rest = &body[name_len..];
    let (default, consumed) = if rest.starts_with('}') {
        (None, name_len + 1)
    } else if let Some(after) = rest.strip_prefix(":-") {
        let close = after.find('}')?;
        (Some(after[..close].to_string()), name_len + 2 + close + 1)
    } else {
        return None;
    };
    Some(Placeholder {
        name: name.to_string(),
        default,
        span: start..start + 2 + consumed,
    })
}

/// Replace every placeholder in `text` using `resolve`; a placeholder with no value uses its default.
/// Returns the names that resolved to nothing and had no default, in order, without duplicates.
///
/// `resolve` returning `Some("")` is a value (the empty string), not an absence: unlike the shell's
/// `:-`, the default applies only when the resolver has nothing. Whether an empty secret counts as
/// set is the resolver's decision, not the placeholder language's.
pub fn expand(text: &str, resolve: &dyn Fn(&str) -> Option<String>) -> Result<String, Vec<String>> {
    let mut out = String::with_capacity(text.len());
    let mut missing: Vec<String> = Vec::new();
    let mut copied = 0;
    for p in placeholders(text) {
        out.push_str(&text[copied..p.span.start]);
        copied = p.span.end;
        match resolve(&p.name).or(p.default) {
            Some(value) => out.push_str(&value),
            None => {
                if !missing.contains(&p.name) {
                    missing.push(p.name);
                }
            }
        }
    }
    out.push_str(&text[copied..]);
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(missing)
    }
}

pub(crate) fn variable_uses(entry: &crate::ServerEntry) -> Vec<VariableUse> {
    use crate::Transport;

    let mut fields: Vec<(String, &str)> = Vec::new();
    match &entry.transport {
        Transport::Stdio { command, args, env } => {
            fields.push(("command".into(), command));
            for (i, arg) in args.iter().enumerate() {
                fields.push((format!("args[{i}]"), arg));
            }
            for (name, value) in env {
                fields.push((format!("env.{name}"), value));
            }
        }
        Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers } => {
            fields.push(("url".into(), url));
            for (name, value) in headers {
                fields.push((format!("headers.{name}"), value));
            }
        }
    }
    if let Some(oauth) = &entry.oauth {
        let members = [
            ("oauth.clientId", &oauth.client_id),
            ("oauth.clientSecret", &oauth.client_secret),
            ("oauth.redirectUri", &oauth.redirect_uri),
            (
                "oauth.authServerMetadataUrl",
                &oauth.auth_server_metadata_url,
            ),
        ];
        for (field, value) in members {
            if let Some(value) = value {
                fields.push((field.into(), value));
            }
        }
    }

    let mut uses: Vec<VariableUse> = Vec::new();
    for (field, text) in fields {
        for p in placeholders(text) {
            let use_ = VariableUse {
                name: p.name,
                has_default: p.default.is_some(),
                field: field.clone(),
            };
            // The same variable twice in one field is one use.
            if !uses.contains(&use_) {
                uses.push(use_);
            }
        }
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn finds_plain_and_defaulted_placeholders_with_spans() {
        let text = "a${FOO}b${BAR_2:-x y}c";
        let found = placeholders(text);
        assert_eq!(
            found,
            vec![
                Placeholder {
                    name: "FOO".into(),
                    default: None,
                    span: 1..7
                },
                Placeholder {
                    name: "BAR_2".into(),
                    default: Some("x y".into()),
                    span: 8..21
                },
            ]
        );
        assert_eq!(&text[found[1].span.clone()], "${BAR_2:-x y}");
    }

    #[test]
    fn malformed_placeholders_are_left_alone() {
        for text in [
            "${", "${}", "${1A}", "${A", "${A-b}", "${A:b}", "$A", "${A B}", "${A:-x", "$ {A}",
        ] {
            assert!(placeholders(text).is_empty(), "{text:?}");
            assert_eq!(expand(text, &|_| None).unwrap(), text, "{text:?}");
        }
    }

    #[test]
    fn a_malformed_start_does_not_hide_the_next_placeholder() {
        let found = placeholders("${A ${B}");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "B");
        assert_eq!(found[0].span, 4..8);
        assert_eq!(expand("$${X}", &env(&[("X", "1")])).unwrap(), "$1");
    }

    #[test]
    fn empty_default_and_underscore_names() {
        let found = placeholders("${_x:-}");
        assert_eq!(found[0].name, "_x");
        assert_eq!(found[0].default.as_deref(), Some(""));
        assert_eq!(expand("[${_x:-}]", &|_| None).unwrap(), "[]");
    }

    #[test]
    fn expand_prefers_value_then_default() {
        let r = env(&[("A", "1"), ("EMPTY", "")]);
        assert_eq!(expand("${A:-d}/${B:-d}", &r).unwrap(), "1/d");
        // An empty value is a value: the default does not apply.
        assert_eq!(expand("<${EMPTY:-d}>", &r).unwrap(), "<>");
        assert_eq!(expand("no placeholders", &r).unwrap(), "no placeholders");
        assert_eq!(expand("é${A}ü", &r).unwrap(), "é1ü");
    }

    #[test]
    fn expand_reports_missing_names_in_order_without_duplicates() {
        let r = env(&[("A", "1")]);
        assert_eq!(
            expand("${Z}${A}${Y}${Z}${W:-ok}", &r),
            Err(vec!["Z".to_string(), "Y".to_string()])
        );
    }

    #[test]
    fn check_accepts_well_formed_text() {
        for text in [
            "",
            "plain",
            "$A and $ {B} and $",
            "${A}",
            "Bearer ${TOKEN}",
            "${A:-}",
            "${_x1:-a b:c-d}${B}",
            "https://${HOST:-localhost}:${PORT:-80}/mcp",
            "cost: 5$",
        ] {
            assert_eq!(check(text), Ok(()), "{text:?}");
        }
    }

    #[test]
    fn check_names_the_malformed_fragment_and_problem() {
        let cases: &[(&str, &str, &str)] = &[
            ("Bearer ${TOKEN", "${TOKEN", "it is not closed with `}`"),
            ("${", "${", "it is not closed with `}`"),
            ("${A:-x", "${A", "it is not closed with `}`"),
            ("x${}", "${}", "it names no variable"),
            (
                "${1BAD}",
                "${1BAD}",
                "a variable name cannot start with a digit",
            ),
            (
                "${A-b}",
                "${A-b}",
                "after the name comes `}` or `:-default}`; names use only letters, digits and `_`",
            ),
            (
                "${A B}",
                "${A B}",
                "after the name comes `}` or `:-default}`; names use only letters, digits and `_`",
            ),
            (
                "${A.B:-x}",
                "${A.B:-x}",
                "a variable name uses only letters, digits and `_`",
            ),
            (
                "${A:-${B}}",
                "${A:-${B}",
                "a default cannot hold another placeholder (no nesting)",
            ),
            // A good placeholder before the bad one is skipped over.
            ("${OK} ${A", "${A", "it is not closed with `}`"),
        ];
        for (text, fragment, problem) in cases {
            let err = check(text).unwrap_err();
            assert_eq!(
                (err.fragment.as_str(), err.problem),
                (*fragment, *problem),
                "{text:?}"
            );
        }
        let shown = check("${TOKEN").unwrap_err().to_string();
        assert_eq!(
            shown,
            "malformed placeholder `${TOKEN`: it is not closed with `}`; write ${NAME} or ${NAME:-default}"
        );
    }

    #[test]
    fn check_never_quotes_text_after_an_unclosed_brace_and_keeps_fragments_short() {
        let err = check("${TOKEN sk-live-123").unwrap_err();
        assert_eq!(err.fragment, "${TOKEN");
        let long = format!("${{{}-x}}", "A".repeat(60));
        let err = check(&long).unwrap_err();
        assert_eq!(err.fragment, format!("${{{}…", "A".repeat(38)));
        let err = check("${\u{1b}[31m}").unwrap_err();
        assert!(!err.fragment.contains('\u{1b}'));
    }

    #[test]
    fn default_runs_to_first_brace_and_is_literal() {
        let found = placeholders("${A:-${B}}");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].default.as_deref(), Some("${B"));
        assert_eq!(expand("${A:-${B}}", &|_| None).unwrap(), "${B}");
    }
}

#[cfg(test)]
mod grammar_tests {
    use super::is_variable_name;

    #[test]
    fn one_variable_grammar() {
        for good in ["A", "_", "LINEAR_API_KEY", "a1", "_1"] {
            assert!(is_variable_name(good), "{good}");
        }
        for bad in ["", "1A", "A-B", "A B", "Ä", "A}"] {
            assert!(!is_variable_name(bad), "{bad}");
        }
    }
}
