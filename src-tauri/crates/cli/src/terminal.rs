//! Keeping data off the terminal raw. Server names, titles, catalog text and whatever a server
//! answers can carry control characters; printed raw, ESC sequences and BEL would recolour,
//! retitle or scramble the user's terminal. Two layers:
//!
//! - [`Terminal`] wraps stdout and stderr: every control character (C0, DEL, C1 as UTF-8) except
//!   the line feeds the CLI itself writes is escaped as `\u{1b}` on the way out, so nothing raw
//!   gets through even from a value no one thought to clean.
//! - [`one_line`] escapes line breaks too, for a data value inside a line of ours (a name in a
//!   table, a server's error message), so data cannot fake lines of output.
//!
//! JSON output goes through [`json`]: serde_json escapes C0 already; DEL and C1 are escaped as
//! `\u007f` / `\u009b` there, which reads back as the same string.

use std::io::{self, Write};

/// A control character that must not reach a terminal raw.
fn is_control(c: char) -> bool {
    c.is_control()
}

/// `text` with every control character, line breaks included, written as `\u{..}` (or `\n`,
/// `\r`, `\t` as Rust writes them): for one data value inside a line of output.
pub fn one_line(text: &str) -> String {
    if !text.chars().any(is_control) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.extend(c.escape_debug()),
            c if is_control(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// `offered` with every name, title and reason escaped with [`one_line`], for its markdown.
pub fn offered_for_terminal(mut offered: patchbay_status::Offered) -> patchbay_status::Offered {
    for s in &mut offered.servers {
        s.name = one_line(&s.name);
        s.title = one_line(&s.title);
    }
    for l in &mut offered.unavailable {
        l.name = one_line(&l.name);
        l.reason = one_line(&l.reason);
    }
    offered.vault = offered.vault.as_deref().map(one_line);
    offered
}

/// JSON `text` plus a line feed, with DEL and C1 characters (which serde_json leaves raw inside
/// strings) written as `\u00XX`. Outside strings JSON has no such characters, so the document
/// means the same.
pub fn json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.push('\n');
    out
}

/// Write `value` as pretty JSON through [`json`]: `write_json!(out, &value)?`. A macro because
/// this crate names no `serde::Serialize` of its own.
macro_rules! write_json {
    ($out:expr, $value:expr) => {
        std::io::Write::write_all(
            $out,
            $crate::terminal::json(&serde_json::to_string_pretty($value)?).as_bytes(),
        )
    };
}

/// A writer that escapes every control character but `\n` on the way to the terminal.
pub struct Terminal<W: Write> {
    inner: W,
    /// A 0xC2 lead byte held back from the end of the last write: whether it starts a C1
    /// character depends on the next byte.
    held_c2: bool,
}

impl<W: Write> Terminal<W> {
    pub fn new(inner: W) -> Terminal<W> {
        Terminal {
            inner,
            held_c2: false,
        }
    }

    fn escape(&mut self, code: u32) -> io::Result<()> {
        write!(self.inner, "\\u{{{code:x}}}")
    }
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        let mut i = 0;
        if self.held_c2 {
            self.held_c2 = false;
            match buf.first() {
                Some(&b @ 0x80..=0x9f) => {
                    self.escape(u32::from(b))?;
                    start = 1;
                    i = 1;
                }
                Some(_) => self.inner.write_all(&[0xc2])?,
                None => {
                    self.held_c2 = true;
                    return Ok(0);
                }
            }
        }
        while i < buf.len() {
            let b = buf[i];
            let c1 = b == 0xc2 && buf.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n));
            let raw_control = (b < 0x20 && b != b'\n') || b == 0x7f;
            if c1 || raw_control {
                self.inner.write_all(&buf[start..i])?;
                if c1 {
                    self.escape(u32::from(buf[i + 1]))?;
                    i += 2;
                } else {
                    self.escape(u32::from(b))?;
                    i += 1;
                }
                start = i;
            } else if b == 0xc2 && i + 1 == buf.len() {
                self.inner.write_all(&buf[start..i])?;
                self.held_c2 = true;
                i += 1;
                start = i;
            } else {
                i += 1;
            }
        }
        self.inner.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.held_c2) {
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Terminal<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(pieces: &[&[u8]]) -> String {
        let mut out = Vec::new();
        {
            let mut t = Terminal::new(&mut out);
            for p in pieces {
                t.write_all(p).unwrap();
            }
            t.flush().unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn controls_are_escaped_and_line_feeds_and_text_kept() {
        let text = "a\x1b[31mred\x07\tx\r\x7f \u{9b}31m é ü 日本\n";
        assert_eq!(
            through(&[text.as_bytes()]),
            "a\\u{1b}[31mred\\u{7}\\u{9}x\\u{d}\\u{7f} \\u{9b}31m é ü 日本\n"
        );
    }

    #[test]
    fn a_c1_character_split_across_writes_is_still_escaped() {
        let c1 = "\u{9b}".as_bytes();
        assert_eq!(through(&[b"x", &c1[..1], &c1[1..], b"y"]), "x\\u{9b}y");
        // A 0xC2 that starts a printable character is passed on whole.
        let nbsp = "\u{a0}".as_bytes();
        assert_eq!(through(&[&nbsp[..1], &nbsp[1..]]), "\u{a0}");
    }

    #[test]
    fn one_line_escapes_line_breaks_too() {
        assert_eq!(one_line("a\nb\x1b"), "a\\nb\\u{1b}");
        assert_eq!(one_line("plain"), "plain");
    }

    #[test]
    fn json_escapes_del_and_c1_and_stays_the_same_value() {
        let value = serde_json::json!({ "name": "a\u{7f}b\u{9b}c\x1b" });
        let text = json(&serde_json::to_string_pretty(&value).unwrap());
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }
}
