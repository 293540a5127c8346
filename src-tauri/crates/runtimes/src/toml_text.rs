//! TOML files Patchbay reads (Codex's `config.toml`), parsed in one way and refused in one way:
//! the parsers' own error text quotes the offending line whole, which for a file of junk is the
//! whole file (50 MB in a status line), so errors are said as a line, a column and the
//! parser's message instead.

use std::ops::Range;

/// `text` parsed as a TOML table, or what is wrong and where.
pub fn parse_table(text: &str) -> Result<toml::Table, String> {
    toml::from_str(text).map_err(|e: toml::de::Error| describe(text, e.message(), e.span()))
}

/// `text` parsed as an editable TOML document, or what is wrong and where.
pub fn parse_document(text: &str) -> Result<toml_edit::DocumentMut, String> {
    text.parse::<toml_edit::DocumentMut>()
        .map_err(|e| describe(text, e.message(), e.span()))
}

/// Past this offset an error is placed by byte, not by line and column.
const LINE_COUNT_LIMIT: usize = 1 << 20;

/// "not valid TOML at line L, column C: MESSAGE".
fn describe(text: &str, message: &str, span: Option<Range<usize>>) -> String {
    let message = message.trim();
    let Some(at) = span.map(|s| s.start.min(text.len())) else {
        return format!("not valid TOML: {message}");
    };
    // Deep in a huge file (junk, most likely) a byte offset says as much, without a pass over it.
    if at > LINE_COUNT_LIMIT {
        return format!("not valid TOML at byte {at}: {message}");
    }
    let before = &text.as_bytes()[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    format!("not valid TOML at line {line}, column {column}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_where_without_quoting_the_file() {
        let junk = "x".repeat(100_000);
        let e = parse_table(&junk).unwrap_err();
        assert!(e.starts_with("not valid TOML at line 1, column "), "{e}");
        let e = parse_table(&"x".repeat(2 << 20)).unwrap_err();
        assert!(e.starts_with("not valid TOML at byte "), "{e}");
        assert!(e.len() < 300, "{e}");
        let e = parse_document("a = 1\nb = [\n").unwrap_err();
        assert!(e.contains("line 3") || e.contains("line 2"), "{e}");
        assert_eq!(parse_table("a = 1").unwrap()["a"].as_integer(), Some(1));
    }
}
