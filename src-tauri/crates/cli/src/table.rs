//! Plain-text rendering of the status for terminals: a headline, then a table sorted by severity.

use chrono::{DateTime, Utc};
use patchbay_status::{ConnectorState, StatusReport};
use std::fmt::Write;

/// A mark that survives a terminal without colour.
fn mark(state: ConnectorState) -> &'static str {
    match state {
        ConnectorState::Ready | ConnectorState::NoCredentialRequired => "ok",
        ConnectorState::TokenExpired => "..",
        _ if state.needs_attention() => "!!",
        _ => "  ",
    }
}

pub fn status(report: &StatusReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", report.headline());
    for source in &report.catalog.sources {
        if let Some(error) = &source.error {
            let _ = writeln!(out, "catalog error: {error}");
        }
    }
    if let Some(message) = &report.secret_store.message {
        let _ = writeln!(out, "secret store: {message}");
    }
    if report.connectors.is_empty() {
        return out;
    }
    let _ = writeln!(out);
    let name_w = width(report.connectors.iter().map(|c| c.name.len()), "CONNECTOR");
    let state_w = width(report.connectors.iter().map(|c| c.label.len()), "STATE");
    let transport_w = width(
        report.connectors.iter().map(|c| c.transport.len()),
        "TRANSPORT",
    );
    let _ = writeln!(
        out,
        "   {:name_w$}  {:state_w$}  {:transport_w$}  WHAT TO DO",
        "CONNECTOR", "STATE", "TRANSPORT"
    );
    for c in &report.connectors {
        let _ = writeln!(
            out,
            "{} {:name_w$}  {:state_w$}  {:transport_w$}  {}",
            mark(c.state),
            c.name,
            c.label,
            c.transport,
            c.detail
        );
        if let Some(note) = &c.one_shot_note {
            let _ = writeln!(out, "   {:name_w$}  one-shot: {note}", "");
        }
    }
    if !report.unclaimed.is_empty() {
        let _ = writeln!(out);
        out.push_str(&unclaimed(report));
    }
    out
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
            u.credential_key,
            when(u.updated_at),
            u.why
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
