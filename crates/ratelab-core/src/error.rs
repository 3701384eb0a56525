//! Errors that reach the user. Every error names the field (dotted path) that is wrong, so the
//! front end can print one line: `error: <file>: <field>: <what is wrong>`.

use thiserror::Error;

#[derive(Debug, Clone, Error, PartialEq)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
pub struct ConfigError {
    /// Dotted path of the offending field, e.g. `flows[0].start_s` (may be empty).
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { field: field.into(), message: message.into() }
    }
    /// Put `prefix` in front of the field path (`params` + `beta` -> `params.beta`).
    pub fn prefixed(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() { prefix.to_string() } else if self.field.starts_with('[') { format!("{prefix}{}", self.field) } else { format!("{prefix}.{}", self.field) };
        self
    }
}
