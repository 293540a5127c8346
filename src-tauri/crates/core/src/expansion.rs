//! A connector's `${VAR}`s expanded the one way every caller uses (the connection check, the
//! gateway, the stdio bridge): each text through [`patchbay_catalog::expand`] with
//! [`Patchbay::resolve_variable`], every missing name collected once, in order, and the values
//! put in kept (as [`Secret`]s) for a caller that must keep them out of what it prints.

use crate::Patchbay;
use patchbay_vault::Secret;

/// One entry's expansion in progress. No `Debug`: it holds the values it put in.
pub struct Expansion<'a> {
    patchbay: &'a Patchbay,
    missing: Vec<String>,
    used: Vec<Secret>,
}

impl<'a> Expansion<'a> {
    pub fn new(patchbay: &'a Patchbay) -> Expansion<'a> {
        Expansion {
            patchbay,
            missing: Vec::new(),
            used: Vec::new(),
        }
    }

    /// `text` with its `${VAR}`s replaced; empty when one has no value (it is noted in
    /// [`Self::missing`], and the caller does not go on).
    pub fn expand(&mut self, text: &str) -> String {
        let resolve = |name: &str| self.patchbay.resolve_variable(name);
        for placeholder in patchbay_catalog::placeholders(text) {
            if let Some(value) = resolve(&placeholder.name) {
                self.used.push(Secret::new(value));
            }
        }
        match patchbay_catalog::expand(text, &resolve) {
            Ok(expanded) => expanded,
            Err(names) => {
                for name in names {
                    if !self.missing.contains(&name) {
                        self.missing.push(name);
                    }
                }
                String::new()
            }
        }
    }

    /// The variables with no value so far, each once, in the order met.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// The values put in so far.
    pub fn into_used(self) -> Vec<Secret> {
        self.used
    }
}
