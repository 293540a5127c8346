//! Plain-text rendering of the status for terminals: a headline, then a table sorted by severity.
//! A degraded connector (its connection checks keep failing) is marked `!!` and says so in its
//! STATE cell, whatever its state. Every value from data is escaped ([`one_line`]).

use crate::terminal::one_line;
use chrono::{DateTime, Utc};
use patchbay_status::{Action, ConnectorState, ConnectorStatus, StatusReport};
use std::fmt::Write;

/// A mark that survives a terminal without colour.
fn mark(row: &ConnectorStatus) -> &'static str {
    if row.degraded.is_some() {
        return "!!";
    }
    let state = row.state;
    match state {
        ConnectorState::Ready | ConnectorState::NoCredentialRequired => "ok",
        ConnectorState::TokenExpired => "..",
        _ if row.needs_attention => "!!",
        _ => "  ",
    }
}

pub fn status(report: &StatusReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", report.headline());
    for source in &report.catalog.sources {
        if let Some(error) = &source.error {
            let _ = writeln!(out, "catalog error: {}", one_line(error));
        }
    }
    if let Some(message) = &report.secret_store.message {
        let _ = writeln!(out, "secret store: {}", one_line(message));
    }
    for error in &report.client_errors {
        let _ = writeln!(out, "client config: {}", one_line(error));
    }
    if report.connectors.is_empty() {
        return out;
    }
    let _ = writeln!(out);
    let rows: Vec<[String; 4]> = report.connectors.iter().map(cells).collect();
    let name_w = width(rows.iter().map(|r| r[0].chars().count()), "CONNECTOR");
    let state_w = width(rows.iter().map(|r| r[1].chars().count()), "STATE");
    let transport_w = width(rows.iter().map(|r| r[2].chars().count()), "TRANSPORT");
    let _ = writeln!(
        out,
        "   {:name_w$}  {:state_w$}  {:transport_w$}  WHAT TO DO",
        "CONNECTOR", "STATE", "TRANSPORT"
    );
    for (c, [name, state, transport, detail]) in report.connectors.iter().zip(rows) {
        let _ = writeln!(
            out,
            "{} {name:name_w$}  {state:state_w$}  {transport:transport_w$}  {detail}",
            mark(c),
        );
        if let Some(note) = &c.one_shot_note {
            let _ = writeln!(out, "   {:name_w$}  one-shot: {}", "", one_line(note));
        }
    }
    if !report.unclaimed.is_empty() {
        let _ = writeln!(out);
        out.push_str(&unclaimed(report));
    }
    out
}

/// A row's CONNECTOR, STATE, TRANSPORT and WHAT TO DO cells, escaped.
fn cells(c: &ConnectorStatus) -> [String; 4] {
    let (state, detail) = match &c.degraded {
        Some(d) => (
            format!("{}, degraded", c.label),
            format!(
                "Its connection checks keep failing since {} ({}); agents are told it is unavailable until a check passes. {}",
                when(d.since),
                d.error,
                c.detail
            ),
        ),
        None => (c.label.clone(), c.detail.clone()),
    };
    let detail = match command_for(c) {
        Some(command) => format!("{detail} Run `{command}`."),
        None => detail,
    };
    [
        one_line(&c.name),
        one_line(&state),
        one_line(&c.transport),
        one_line(&detail),
    ]
}

/// The command that mends a row, when its detail does not already say one: authorizing (a
/// missing variable's detail names `patchbay secret set`).
fn command_for(c: &ConnectorStatus) -> Option<String> {
    match c.action? {
        Action::Authorize | Action::Reauthorize => {
            Some(format!("patchbay authorize {}", shell_word(&c.name)))
        }
        Action::SetVariable | Action::EditCatalog => None,
    }
}

/// `word` as one shell word: as it is when it has nothing a shell reads (a name may hold `$` and
/// brackets), else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = |ch: char| ch.is_ascii_alphanumeric() || "-_.".contains(ch);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

pub fn unclaimed(report: &StatusReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Unclaimed credentials ({}); delete with `patchbay unclaimed delete KEY`:",
        report.unclaimed.len()
    );
    for u in &report.unclaimed {
        let _ = writeln!(
            out,
            "   {}  (updated {}) {}",
            one_line(&u.credential_key),
            when(u.updated_at),
            one_line(&u.why)
        );
    }
    out
}

fn width(lens: impl Iterator<Item = usize>, header: &str) -> usize {
    lens.max().unwrap_or(0).max(header.len())
}

pub fn when(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}
