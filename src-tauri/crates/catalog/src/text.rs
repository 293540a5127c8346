//! Keeping catalog text safe for a terminal: control characters (C0, DEL, C1, which include ESC
//! and so terminal escape sequences) and Unicode bidirectional controls never leave this crate raw.

/// Characters that can change what a terminal shows beyond their own glyph.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{2028}' | '\u{2029}'
        )
}

/// `text` with each unsafe character written as its Rust escape (`\u{1b}`, `\n`, `\t`), every
/// other character as it is. Used for names, keys and messages, where the exact text matters.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(is_unsafe_char) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe_char(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// `\n`, `\t`, `\r` as Rust writes them; anything else as `\u{..}` (escape_debug would leave
/// some format characters raw).
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' | '\t' | '\r' => out.extend(c.escape_debug()),
        _ => out.extend(c.escape_unicode()),
    }
}

/// Display text (a title, a description, an `unavailable` reason) made safe: line breaks and
/// tabs become a space, other unsafe characters are escaped so tampering stays visible.
pub fn display_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\t' | '\n' | '\r' | '\u{2028}' | '\u{2029}') {
            out.push(' ');
        } else if is_unsafe_char(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_c0_c1_del_and_bidi_only() {
        assert_eq!(escape_controls("plain \"x\" é"), "plain \"x\" é");
        assert_eq!(
            escape_controls("a\u{1b}[31mb\u{7f}\u{9b}\u{202e}"),
            "a\\u{1b}[31mb\\u{7f}\\u{9b}\\u{202e}"
        );
        assert_eq!(escape_controls("x\ny"), "x\\ny");
    }

    #[test]
    fn display_text_turns_breaks_into_spaces() {
        assert_eq!(
            display_text("Line\none\tand\u{1b}]0;title\u{7}"),
            "Line one and\\u{1b}]0;title\\u{7}"
        );
        assert_eq!(display_text("Café ✓"), "Café ✓");
    }
}
