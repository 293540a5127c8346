//! Tool names on the aggregate endpoint: `<connector>__<tool>`, valid for every client and model
//! API the evidence covers (docs/tool-names.md), and the way back from such a name to the
//! connector and its own tool name.
//!
//! The rule ([`aggregate_tool_name`]):
//! - the two parts joined by [`SEPARATOR`] (`__`);
//! - every character outside `[A-Za-z0-9_-]` becomes `_` (Anthropic's and OpenAI's tool-name
//!   pattern is `^[a-zA-Z0-9_-]{1,64}$`; MCP allows `.` and connector names `[`, `]`, `$`);
//! - at most [`MAX_LEN`] characters: Claude Code and Codex put `mcp__<server>__` before it and
//!   the whole must stay within 64, Cursor warns past 60 for server + tool;
//! - when characters were replaced, the name was too long, or the connector's name would make
//!   the first `__` ambiguous (it holds `__` or ends in `_`), it ends in `_` and 8 hex digits of
//!   the SHA-256 of the original pair (the rest truncated to fit), so two tools never share a
//!   name because of the rewriting. A name that needed none of this is left as it is, readable,
//!   and splits back at its first `__`.
//!
//! The way back is a lookup over the tools listed ([`ToolNames`]), never a split: a hashed name
//! cannot be parsed back.

use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Between the connector's name and the tool's.
pub const SEPARATOR: &str = "__";

/// The longest aggregate name: 64 (the model APIs' limit) minus `mcp__` and `__` (the clients'
/// prefix) and a 9-character server name for the aggregate entry (`patchbay` and one more).
pub const MAX_LEN: usize = 64 - 5 - 2 - 9;

/// Hex digits of the hash suffix.
const HASH_HEX: usize = 8;

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The aggregate endpoint's name for `connector`'s tool `tool` (see the module docs).
pub fn aggregate_tool_name(connector: &str, tool: &str) -> String {
    let joined = format!("{connector}{SEPARATOR}{tool}");
    let clean: String = joined
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    // A plain name splits back at its first `__` only when the connector's name has no `__`
    // and does not end in `_` (`a_` + `_b` and `a` + `__b` would read alike).
    let splits_back =
        !connector.is_empty() && !connector.contains(SEPARATOR) && !connector.ends_with('_');
    if clean == joined && splits_back && clean.len() <= MAX_LEN {
        return clean;
    }
    // The pair, not the joined text, is hashed: `a__b` + `c` and `a` + `b__c` differ.
    let mut hasher = Sha256::new();
    hasher.update(connector.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    let digest = hasher.finalize();
    let hash: String = digest
        .iter()
        .take(HASH_HEX / 2)
        .map(|b| format!("{b:02x}"))
        .collect();
    // `clean` is ASCII: byte length is character count.
    let keep = MAX_LEN - 1 - HASH_HEX;
    let head = &clean[..clean.len().min(keep)];
    format!("{head}_{hash}")
}

/// The aggregate names of a set of tools, and back.
#[derive(Debug, Default, Clone)]
pub struct ToolNames {
    by_name: HashMap<String, (String, String)>,
}

impl ToolNames {
    /// From every (connector, tool) pair offered. A pair listed twice is kept once; two pairs
    /// that map to one name (a hash collision) keep the first.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> ToolNames {
        let mut by_name = HashMap::new();
        for (connector, tool) in pairs {
            by_name
                .entry(aggregate_tool_name(connector, tool))
                .or_insert_with(|| (connector.to_owned(), tool.to_owned()));
        }
        ToolNames { by_name }
    }

    /// The connector and its own tool name behind an aggregate name.
    pub fn resolve(&self, aggregate: &str) -> Option<(&str, &str)> {
        self.by_name
            .get(aggregate)
            .map(|(c, t)| (c.as_str(), t.as_str()))
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Anthropic's and OpenAI's documented pattern, `^[a-zA-Z0-9_-]{1,64}$`, after the clients'
    /// `mcp__patchbay__` prefix.
    fn valid_for_the_model_apis(name: &str) -> bool {
        let full = format!("mcp__patchbay__{name}");
        (1..=64).contains(&full.len()) && full.chars().all(allowed)
    }

    #[test]
    fn plain_names_stay_readable() {
        assert_eq!(
            aggregate_tool_name("github", "create_issue"),
            "github__create_issue"
        );
        assert_eq!(
            aggregate_tool_name("my-db", "run-query"),
            "my-db__run-query"
        );
    }

    #[test]
    fn other_characters_are_replaced_and_the_pair_hashed() {
        let dotted = aggregate_tool_name("linear", "issues.create");
        assert!(dotted.starts_with("linear__issues_create_"), "{dotted}");
        assert_eq!(dotted.len(), "linear__issues_create_".len() + HASH_HEX);
        // Names must not change between versions (clients remember them): pinned to the value
        // computed outside this code, `sha256(b"linear\0issues.create")[:8]` in Python.
        assert_eq!(dotted, "linear__issues_create_d729a645");
        // The tool that really is `issues_create` keeps its plain name: no clash.
        assert_ne!(dotted, aggregate_tool_name("linear", "issues_create"));
        let bracketed = aggregate_tool_name("api[prod]", "get");
        assert!(bracketed.starts_with("api_prod___get_"), "{bracketed}");
        for name in [&dotted, &bracketed] {
            assert!(valid_for_the_model_apis(name), "{name}");
        }
        // Non-ASCII (MCP does not forbid it) is replaced per character.
        let unicode = aggregate_tool_name("wiki", "suche_ü");
        assert!(
            unicode.is_ascii() && valid_for_the_model_apis(&unicode),
            "{unicode}"
        );
    }

    #[test]
    fn long_names_are_truncated_with_a_hash() {
        let tool = "gr2_abidlabs_easyghiblis_condition_generate_image";
        let name = aggregate_tool_name("huggingface", tool);
        assert_eq!(name.len(), MAX_LEN);
        assert!(name.starts_with("huggingface__gr2_abidlabs_"), "{name}");
        assert!(valid_for_the_model_apis(&name), "{name}");
        // Same prefix, different tail: different names.
        let other = aggregate_tool_name("huggingface", &format!("{tool}_v2"));
        assert_ne!(name, other);
        assert_eq!(
            name,
            aggregate_tool_name("huggingface", tool),
            "deterministic"
        );
        // Exactly at the limit: untouched.
        let fits = "t".repeat(MAX_LEN - "c__".len());
        assert_eq!(aggregate_tool_name("c", &fits), format!("c__{fits}"));
        let over = "t".repeat(MAX_LEN - "c__".len() + 1);
        assert_eq!(aggregate_tool_name("c", &over).len(), MAX_LEN);
    }

    #[test]
    fn the_separator_inside_a_connector_name_is_hashed_apart() {
        let names = ToolNames::new([
            ("a__b", "c"),
            ("a", "b__c"),
            ("a", "b__c"),
            ("a_", "_b"),
            ("a", "__b"),
        ]);
        assert_eq!(names.len(), 4);
        assert_eq!(
            aggregate_tool_name("a", "b__c"),
            "a__b__c",
            "the first `__` is the separator"
        );
        assert_eq!(aggregate_tool_name("a", "__b"), "a____b");
        let hashed = aggregate_tool_name("a__b", "c");
        assert!(hashed.starts_with("a__b__c_") && hashed.len() == "a__b__c_".len() + HASH_HEX);
        assert_eq!(names.resolve(&hashed), Some(("a__b", "c")));
        assert_eq!(names.resolve("a__b__c"), Some(("a", "b__c")));
        assert_ne!(aggregate_tool_name("a_", "_b"), "a____b");
    }

    #[test]
    fn every_name_resolves_back_to_its_pair() {
        let pairs = [
            ("github", "create_issue"),
            ("linear", "issues.create"),
            ("linear", "issues_create"),
            (
                "huggingface",
                "gr2_abidlabs_easyghiblis_condition_generate_image",
            ),
            ("api[prod]", "get/items"),
        ];
        let names = ToolNames::new(pairs);
        assert_eq!(names.len(), pairs.len());
        for (connector, tool) in pairs {
            let name = aggregate_tool_name(connector, tool);
            assert!(valid_for_the_model_apis(&name), "{name}");
            assert_eq!(names.resolve(&name), Some((connector, tool)));
        }
        assert_eq!(names.resolve("github__delete_repo"), None);
        assert!(ToolNames::default().is_empty());
    }
}
