//! What a cell keeps: its attempts, one typed record per experiment kind. This enum and its
//! dispatch below are where an experiment registers its record.

use crate::cell::headline::{ErrorReason, Headline};
use crate::cell::spec::{CellSpec, CellStatus};
use crate::load::sample::ErrorKind;
use crate::report::extension::ExtensionAttempt;
use crate::report::json::{BurstAttempt, DecodeAttempt};
use crate::report::phase::RoutingPhase;
use crate::report::serve::ServeAttempt;
use crate::report::status::AttemptStatus;
use std::collections::BTreeMap;

/// One attempt's report entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// A decode attempt.
    Decode(Box<DecodeAttempt>),
    /// A burst attempt.
    Burst(Box<BurstAttempt>),
    /// A routing phase (`tests/fixtures/seed_002.json` layout).
    Routing(Box<RoutingPhase>),
    /// A serve attempt.
    Serve(Box<ServeAttempt>),
    /// An attempt of an experiment from outside the built-in set.
    Extension(Box<ExtensionAttempt>),
}

impl Attempt {
    /// How the attempt ended.
    pub fn status(&self) -> AttemptStatus {
        match self {
            Self::Decode(d) => d.status,
            Self::Burst(b) => b.status,
            Self::Routing(p) => p.status,
            Self::Serve(s) => s.status,
            Self::Extension(e) => e.status,
        }
    }

    /// Records how the attempt ended (the runner's verdict on an interrupted attempt).
    pub fn set_status(&mut self, status: AttemptStatus) {
        match self {
            Self::Decode(d) => d.status = status,
            Self::Burst(b) => b.status = status,
            Self::Routing(p) => p.status = status,
            Self::Serve(s) => s.status = status,
            Self::Extension(e) => e.status = status,
        }
    }

    /// Failed requests by kind.
    pub fn errors(&self) -> &BTreeMap<ErrorKind, u64> {
        match self {
            Self::Decode(d) => &d.errors,
            Self::Burst(b) => &b.errors,
            Self::Routing(p) => &p.errors_by_kind,
            Self::Serve(s) => &s.errors,
            Self::Extension(e) => &e.errors,
        }
    }

    /// One example message per error kind (the first seen).
    pub fn error_examples(&self) -> &BTreeMap<ErrorKind, String> {
        match self {
            Self::Decode(d) => &d.error_examples,
            Self::Burst(b) => &b.error_examples,
            Self::Routing(p) => &p.error_examples,
            Self::Serve(s) => &s.error_examples,
            Self::Extension(e) => &e.error_examples,
        }
    }

    /// Every error kind of the attempt with its count and example reason, most frequent first.
    pub fn error_reasons(&self) -> Vec<ErrorReason> {
        ErrorReason::list(self.errors(), self.error_examples())
    }

    /// The one error kind every request of an errored attempt failed with, and an example
    /// message when the attempt keeps one (None: it is not errored, or failed several ways).
    pub fn sole_failure(&self) -> Option<(ErrorKind, Option<&str>)> {
        if self.status() != AttemptStatus::Errored {
            return None;
        }
        let mut kinds = self.errors().iter().filter(|(_, n)| **n > 0).map(|(k, _)| *k);
        let kind = kinds.next().filter(|_| kinds.next().is_none())?;
        Some((kind, self.error_examples().get(&kind).map(String::as_str)))
    }

    /// The decode attempt, if it is one.
    pub fn as_decode(&self) -> Option<&DecodeAttempt> {
        if let Self::Decode(d) = self { Some(d) } else { None }
    }

    /// The serve attempt, if it is one.
    pub fn as_serve(&self) -> Option<&ServeAttempt> {
        if let Self::Serve(s) = self { Some(s) } else { None }
    }

    /// Its headline figures, with every error kind and its reason.
    pub fn headline(&self) -> Headline {
        let figures = match self {
            Self::Decode(d) => super::decode::headline::headline(d),
            Self::Burst(b) => super::burst::headline::headline(b),
            Self::Routing(p) => super::routing::headline::headline(p),
            Self::Serve(s) => super::serve::headline::headline(s),
            Self::Extension(e) => super::extension::headline(e),
        };
        Headline { error_reasons: self.error_reasons(), ..figures }
    }
}

/// A cell of the plan with its history.
#[derive(Debug, Clone)]
pub struct CellEntry {
    /// What it measures.
    pub spec: CellSpec,
    /// Display label.
    pub label: String,
    /// Current status.
    pub status: CellStatus,
    /// Every attempt, oldest first (shared with the monitor's snapshots).
    pub attempts: Vec<std::sync::Arc<Attempt>>,
    /// Runs a round of the cell plans (`--num-runs`; 1: no repetitions). Each run is an
    /// attempt; `experiment::runs` reads the rounds.
    pub runs: u32,
}
