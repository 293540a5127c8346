//! The health board: one row per catalog connector, checked or not, read from the health store
//! (streak, backoff, stats and the tools it last offered), as the Connectors window draws it.

use super::Checker;
use crate::CoreError;
use chrono::{DateTime, Utc};
use patchbay_catalog::CatalogItem;
use patchbay_check::health::{rfc3339, rfc3339_opt};
use patchbay_check::{Degraded, HealthStats, KnownTools};
use serde::Serialize;

/// One row of the health board.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BoardRow {
    /// Also in `stats`, which the JSON flattens: serialized once, from there.
    #[serde(skip)]
    pub connector: String,
    pub transport: String,
    #[serde(flatten)]
    pub stats: HealthStats,
    pub degraded: Option<Degraded>,
    pub consecutive_failures: u32,
    /// When a failing connector's next check counts (the backoff); `null` when healthy.
    #[serde(serialize_with = "rfc3339_opt")]
    pub next_check_at: Option<DateTime<Utc>>,
    /// The tools it offered at its last successful check.
    pub tools: Option<KnownTools>,
}

/// The health board: every catalog connector, checked or not, by name.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HealthBoard {
    #[serde(serialize_with = "rfc3339")]
    pub generated_at: DateTime<Utc>,
    pub connectors: Vec<BoardRow>,
}

impl Checker {
    /// The health board for every catalog connector, by name.
    pub fn board(&self) -> Result<HealthBoard, CoreError> {
        let catalog = self.patchbay.catalog();
        let mut connectors = Vec::new();
        for item in &catalog.items {
            let name = item.name().as_str();
            let streak = self.health.streak(name)?;
            connectors.push(BoardRow {
                connector: name.to_owned(),
                transport: match item {
                    CatalogItem::Server(e) => e.transport.display_name().to_owned(),
                    CatalogItem::Invalid(_) => "unknown".to_owned(),
                },
                stats: self.health.stats(name)?,
                degraded: streak.degraded,
                consecutive_failures: streak.failures,
                next_check_at: streak.next_strike_at,
                tools: self.health.tools(name)?,
            });
        }
        Ok(HealthBoard {
            generated_at: self.patchbay.now(),
            connectors,
        })
    }
}
