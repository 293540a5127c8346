//! Setting one member of a JSON (or JSONC) document by editing its text: `root[section][name] =
//! value`, with every other byte of the file (comments, trailing commas, order, indentation)
//! left as it was. The inserted value is indented like its neighbours.

use serde_json::Value;

/// A byte range of the text.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

#[derive(Debug)]
struct Member {
    key: String,
    key_start: usize,
    value: Span,
    /// The comma after the value, when there is one.
    comma: Option<usize>,
}

#[derive(Debug)]
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

/// A JSONC reader that records where things are. Errors are messages with a byte offset.
struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn error(&self, what: &str) -> String {
        let line = self.text[..self.at.min(self.text.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        format!("{what} (line {line})")
    }

    /// Skip whitespace and comments.
    fn skip(&mut self) {
        loop {
            while self.at < self.text.len() && self.text[self.at].is_ascii_whitespace() {
                self.at += 1;
            }
            match (self.text.get(self.at), self.text.get(self.at + 1)) {
                (Some(b'/'), Some(b'/')) => {
                    while self.at < self.text.len() && self.text[self.at] != b'\n' {
                        self.at += 1;
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    self.at += 2;
                    while self.at < self.text.len()
                        && !(self.text[self.at] == b'*'
                            && self.text.get(self.at + 1) == Some(&b'/'))
                    {
                        self.at += 1;
                    }
                    self.at = (self.at + 2).min(self.text.len());
                }
                _ => return,
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn string(&mut self) -> Result<Span, String> {
        let start = self.at;
        self.at += 1;
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => {
                    return Ok(Span {
                        start,
                        end: self.at,
                    })
                }
                _ => {}
            }
        }
        Err(self.error("unterminated string"))
    }

    fn value(&mut self) -> Result<Span, String> {
        self.skip();
        let start = self.at;
        match self.peek() {
            Some(b'{') => self.object().map(|o| Span {
                start: o.open,
                end: o.close + 1,
            }),
            Some(b'[') => {
                self.at += 1;
                loop {
                    self.skip();
                    match self.peek() {
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Span {
                                start,
                                end: self.at,
                            });
                        }
                        Some(b',') => self.at += 1,
                        Some(_) => {
                            self.value()?;
                        }
                        None => return Err(self.error("unterminated array")),
                    }
                }
            }
            Some(b'"') => self.string(),
            Some(_) => {
                // A number, true, false or null: up to the next delimiter.
                while let Some(b) = self.peek() {
                    if b.is_ascii_whitespace() || matches!(b, b',' | b'}' | b']' | b'/') {
                        break;
                    }
                    self.at += 1;
                }
                if self.at == start {
                    return Err(self.error("expected a value"));
                }
                Ok(Span {
                    start,
                    end: self.at,
                })
            }
            None => Err(self.error("expected a value, found the end of the file")),
        }
    }

    /// At `{`: the object's members and where it ends.
    fn object(&mut self) -> Result<Object, String> {
        let open = self.at;
        self.at += 1;
        let mut members: Vec<Member> = Vec::new();
        loop {
            self.skip();
            match self.peek() {
                Some(b'}') => {
                    let close = self.at;
                    self.at += 1;
                    return Ok(Object {
                        open,
                        close,
                        members,
                    });
                }
                Some(b',') => {
                    if let Some(last) = members.last_mut() {
                        last.comma.get_or_insert(self.at);
                    }
                    self.at += 1;
                }
                Some(b'"') => {
                    let key_span = self.string()?;
                    let raw = std::str::from_utf8(&self.text[key_span.start..key_span.end])
                        .map_err(|_| self.error("a key is not UTF-8"))?;
                    let key: String = serde_json::from_str(raw)
                        .map_err(|e| self.error(&format!("a key is not a JSON string: {e}")))?;
                    self.skip();
                    if self.peek() != Some(b':') {
                        return Err(self.error("expected ':' after a key"));
                    }
                    self.at += 1;
                    let value = self.value()?;
                    members.push(Member {
                        key,
                        key_start: key_span.start,
                        value,
                        comma: None,
                    });
                }
                Some(_) => return Err(self.error("expected a key or '}'")),
                None => return Err(self.error("unterminated object")),
            }
        }
    }
}

/// The text with `root[section][name]` set to `value`. A missing `section` (or a `null` one)
/// becomes an object holding just that member; empty text becomes a new document.
pub fn set_member(text: &str, section: &str, name: &str, value: &Value) -> Result<String, String> {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let unit = indent_unit(text);
    let body_start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut scanner = Scanner {
        text: text.as_bytes(),
        at: body_start,
    };
    scanner.skip();
    if scanner.peek().is_none() {
        let doc = serde_json::json!({ section: { name: value } });
        return Ok(format!(
            "{}{}{newline}",
            &text[..body_start],
            render(&doc, &unit, "", newline)
        ));
    }
    if scanner.peek() != Some(b'{') {
        return Err("expected a JSON object at the top".into());
    }
    let root = scanner.object()?;
    scanner.skip();
    if scanner.peek().is_some() {
        return Err(scanner.error("unexpected text after the top-level object"));
    }
    match root.members.iter().rev().find(|m| m.key == section) {
        Some(member) if &text[member.value.start..member.value.end] == "null" => {
            let indent = line_indent(text, member.key_start);
            let new = serde_json::json!({ name: value });
            Ok(splice(
                text,
                member.value.start,
                member.value.end,
                &render(&new, &unit, &indent, newline),
            ))
        }
        Some(member) => {
            let mut inner = Scanner {
                text: text.as_bytes(),
                at: member.value.start,
            };
            if inner.peek() != Some(b'{') {
                return Err(format!("\"{section}\" is not an object"));
            }
            let object = inner.object()?;
            let parent_indent = line_indent(text, member.key_start);
            match object.members.iter().rev().find(|m| m.key == name) {
                Some(existing) => {
                    let indent = line_indent(text, existing.key_start);
                    Ok(splice(
                        text,
                        existing.value.start,
                        existing.value.end,
                        &render(value, &unit, &indent, newline),
                    ))
                }
                None => Ok(insert_member(
                    text,
                    &object,
                    name,
                    value,
                    &parent_indent,
                    &unit,
                    newline,
                )),
            }
        }
        None => {
            let new = serde_json::json!({ name: value });
            Ok(insert_member(
                text, &root, section, &new, "", &unit, newline,
            ))
        }
    }
}

/// Insert `"key": value` as the last member of `object`, whose own line is indented by
/// `parent_indent`; a trailing comma, if the object has one, stays trailing.
fn insert_member(
    text: &str,
    object: &Object,
    key: &str,
    value: &Value,
    parent_indent: &str,
    unit: &str,
    newline: &str,
) -> String {
    let key_json = Value::String(key.to_string()).to_string();
    match object.members.last() {
        None => {
            let indent = format!("{parent_indent}{unit}");
            let member = format!(
                "{newline}{indent}{key_json}: {}{newline}{parent_indent}",
                render(value, unit, &indent, newline)
            );
            splice(text, object.open + 1, object.open + 1, &member)
        }
        Some(last) => {
            let indent = line_indent(text, last.key_start);
            let rendered = render(value, unit, &indent, newline);
            match last.comma {
                Some(comma) => splice(
                    text,
                    comma + 1,
                    comma + 1,
                    &format!("{newline}{indent}{key_json}: {rendered},"),
                ),
                None => splice(
                    text,
                    last.value.end,
                    last.value.end,
                    &format!(",{newline}{indent}{key_json}: {rendered}"),
                ),
            }
        }
    }
}

fn splice(text: &str, start: usize, end: usize, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..start]);
    out.push_str(with);
    out.push_str(&text[end..]);
    out
}

/// The whitespace that starts the line `at` is on (empty when something else precedes `at`
/// on that line).
fn line_indent(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let prefix = &text[line_start..at];
    if prefix.chars().all(|c| c == ' ' || c == '\t') {
        prefix.to_string()
    } else {
        String::new()
    }
}

/// One level of indentation as the file uses it: the first indented line's leading
/// whitespace (a tab, or 2 or 4 spaces, ...), else two spaces.
fn indent_unit(text: &str) -> String {
    for line in text.lines().skip(1) {
        let ws: String = line
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        if !ws.is_empty() && ws.len() < line.len() {
            return if ws.starts_with('\t') {
                "\t".into()
            } else {
                ws
            };
        }
    }
    "  ".into()
}

/// `value` pretty-printed with `unit` per level, every line after the first prefixed by
/// `indent` (the indentation of the line it starts on).
fn render(value: &Value, unit: &str, indent: &str, newline: &str) -> String {
    use serde::Serialize;
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    value
        .serialize(&mut serializer)
        .expect("JSON values serialize");
    let pretty = String::from_utf8(bytes).expect("serde_json writes UTF-8");
    pretty
        .split('\n')
        .enumerate()
        .map(|(i, line)| {
            if i == 0 {
                line.to_string()
            } else {
                format!("{indent}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join(newline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(&crate::clients::jsonc::blank_comments_and_trailing_commas(
            text.trim_start_matches('\u{feff}'),
        ))
        .unwrap()
    }

    #[test]
    fn inserts_after_the_last_member_keeping_comments_and_trailing_commas() {
        let text = "{\n\t// top\n\t\"servers\": {\n\t\t\"a\": { \"url\": \"x\" }, // a\n\t},\n\t\"inputs\": [],\n}\n";
        let out = set_member(
            text,
            "servers",
            "b",
            &json!({"type": "stdio", "command": "c"}),
        )
        .unwrap();
        assert!(out.contains("// top") && out.contains("// a"), "{out}");
        assert!(
            out.contains("\n\t\t\"b\": {\n\t\t\t\"type\": \"stdio\","),
            "{out}"
        );
        let v = parse(&out);
        assert_eq!(v["servers"]["b"]["command"], "c");
        assert_eq!(v["servers"]["a"]["url"], "x");
        assert_eq!(v["inputs"], json!([]));
    }

    #[test]
    fn adds_a_comma_when_there_is_none() {
        let text = "{\n  \"mcpServers\": {\n    \"a\": {}\n  }\n}";
        let out = set_member(text, "mcpServers", "b", &json!({"command": "c"})).unwrap();
        assert_eq!(
            out,
            "{\n  \"mcpServers\": {\n    \"a\": {},\n    \"b\": {\n      \"command\": \"c\"\n    }\n  }\n}"
        );
    }

    #[test]
    fn replaces_an_existing_value_in_place() {
        let text = "{\"mcpServers\": {\"a\": {\"command\": \"old\"}, \"z\": 1}, \"k\": true}";
        let out = set_member(text, "mcpServers", "a", &json!({"command": "new"})).unwrap();
        let v = parse(&out);
        assert_eq!(v["mcpServers"]["a"], json!({"command": "new"}));
        assert_eq!(v["mcpServers"]["z"], 1);
        assert!(out.ends_with(", \"z\": 1}, \"k\": true}"), "{out}");
    }

    #[test]
    fn creates_the_section_or_the_document() {
        let out = set_member("{\"theme\": 1}", "mcpServers", "a", &json!({"url": "u"})).unwrap();
        assert_eq!(
            parse(&out),
            json!({"theme": 1, "mcpServers": {"a": {"url": "u"}}})
        );
        let out = set_member("{}", "servers", "a", &json!({})).unwrap();
        assert_eq!(parse(&out), json!({"servers": {"a": {}}}));
        let out = set_member("  \n", "servers", "a", &json!({})).unwrap();
        assert_eq!(parse(&out), json!({"servers": {"a": {}}}));
        let out = set_member("{\"servers\": null}", "servers", "a", &json!({})).unwrap();
        assert_eq!(parse(&out), json!({"servers": {"a": {}}}));
        let out = set_member("\u{feff}{\r\n  \"x\": 1\r\n}", "servers", "a", &json!({})).unwrap();
        assert!(out.starts_with('\u{feff}') && !out.replace("\r\n", "").contains('\n'));
        assert_eq!(parse(&out), json!({"x": 1, "servers": {"a": {}}}));
    }

    #[test]
    fn refuses_what_it_cannot_edit() {
        assert!(set_member("[1]", "s", "a", &json!(1)).is_err());
        assert!(set_member("{\"s\": [1]}", "s", "a", &json!(1)).is_err());
        assert!(set_member("{\"s\": {\"a\": 1}", "s", "a", &json!(1)).is_err());
        assert!(set_member("{} {}", "s", "a", &json!(1)).is_err());
    }
}
