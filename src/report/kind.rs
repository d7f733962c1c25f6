//! The kinds of experiment a session runs, as one type: every place that treats cells or
//! report sections by kind matches it exhaustively, so a new kind does not compile until each
//! of them handles it (README "Architecture" lists them).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The experiment that owns a cell and the report section it lands in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExperimentKind {
    /// Sustained decode: a ctx x conc (or x rate) matrix (`decode` section).
    Decode,
    /// Bursts of simultaneous requests after the decode matrix (`burst` section).
    Burst,
    /// Prefix-cache routing phases: round x scenario x route (`phases`, `routing`).
    Routing,
    /// `vllm bench serve`'s workload: input len x max concurrency x rate (`serve` section).
    Serve,
}

impl ExperimentKind {
    /// Every kind, in the order sections appear in the reports.
    pub const ALL: [Self; 4] = [Self::Decode, Self::Burst, Self::Routing, Self::Serve];

    /// Its name in the plan and the reports (`decode`, `burst`, `routing`, `serve`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decode => "decode",
            Self::Burst => "burst",
            Self::Routing => "routing",
            Self::Serve => "serve",
        }
    }
}

impl fmt::Display for ExperimentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_report_names_and_round_trip() {
        let names: Vec<&str> = ExperimentKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, ["decode", "burst", "routing", "serve"]);
        for k in ExperimentKind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{k}\""));
            assert_eq!(serde_json::from_str::<ExperimentKind>(&json).unwrap(), k);
        }
    }
}
