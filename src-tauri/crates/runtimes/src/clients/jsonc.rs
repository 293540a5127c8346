//! JSON with comments and trailing commas (JSONC), as VS Code's `mcp.json` allows and Gemini CLI's
//! `settings.json` (read through `strip-json-comments`) accepts: comments and trailing commas are
//! blanked out byte for byte, so serde_json's line and column in an error still point into the
//! file as written.

/// The first byte of `text` that is not whitespace or inside a comment; `None` when there is
/// none. Tells at once whether a file can be a JSON object at all.
pub fn first_significant_byte(text: &str) -> Option<u8> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b' ' | b'\t' | b'\n' | b'\r', _) => i += 1,
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            (b, _) => return Some(b),
        }
    }
    None
}

/// `text` with `//` and `/* */` comments outside strings, and commas right before `}` or `]`,
/// replaced by spaces (newlines kept). An unclosed block comment blanks to the end; serde_json
/// then reports what is missing.
pub fn blank_comments_and_trailing_commas(text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'"', _) => in_string = true,
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    bytes[i] = b' ';
                    i += 1;
                }
                continue;
            }
            (b'/', Some(b'*')) => {
                let start = i;
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                let end = (i + 2).min(bytes.len());
                for byte in &mut bytes[start..end] {
                    if *byte != b'\n' && *byte != b'\r' {
                        *byte = b' ';
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // Second pass, on the comment-free text: a comma followed (after whitespace) by a closer.
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b',' {
            let next = bytes[i + 1..]
                .iter()
                .find(|c| !c.is_ascii_whitespace())
                .copied();
            if matches!(next, Some(b'}') | Some(b']')) {
                bytes[i] = b' ';
            }
        }
        i += 1;
    }
    // Only whole ASCII bytes or whole comment spans were replaced by ASCII spaces.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text = "{\n  // a comment with \"quotes\"\n  \"a\": \"http://x//y\", /* block\n é */ \"b\": [1, 2,],\n  \"c\": \"/* not */\",\n}";
        assert_eq!(first_significant_byte("  // a\n /* b */ {}"), Some(b'{'));
        assert_eq!(first_significant_byte("xx"), Some(b'x'));
        assert_eq!(first_significant_byte(" // only\n/* */ "), None);
        let cleaned = blank_comments_and_trailing_commas(text);
        assert_eq!(cleaned.len(), text.len());
        let value: serde_json::Value = serde_json::from_str(&cleaned).unwrap();
        assert_eq!(value["a"], "http://x//y");
        assert_eq!(value["b"], serde_json::json!([1, 2]));
        assert_eq!(value["c"], "/* not */");
        // Lines are kept: an error after a comment still names the right line.
        let broken = blank_comments_and_trailing_commas("{\n// x\n\"a\": }\n");
        let err = serde_json::from_str::<serde_json::Value>(&broken).unwrap_err();
        assert_eq!(err.line(), 3);
    }

    #[test]
    fn escaped_quotes_do_not_end_a_string() {
        let cleaned = blank_comments_and_trailing_commas(r#"{"a": "x\" // y", }"#);
        let value: serde_json::Value = serde_json::from_str(&cleaned).unwrap();
        assert_eq!(value["a"], "x\" // y");
    }
}
