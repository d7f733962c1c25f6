//! The kinds of experiment a session runs, as one type: every place that treats cells or
//! report sections by kind matches it exhaustively, so a new built-in kind does not compile
//! until each of them handles it (README "Architecture" lists them). A kind registered from
//! outside the built-in set is an [`ExperimentKind::Extension`], which each of those places
//! handles through its generic section ([`super::extension`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Mutex;

/// The experiment that owns a cell and the report section it lands in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExperimentKind {
    /// Sustained decode: a ctx x conc (or x rate) matrix (`decode` section).
    Decode,
    /// Bursts of simultaneous requests after the decode matrix (`burst` section).
    Burst,
    /// Prefix-cache routing phases: round x scenario x route (`phases`, `routing`).
    Routing,
    /// `vllm bench serve`'s workload: input len x max concurrency x rate (`serve` section).
    Serve,
    /// A kind from outside the built-in registry (`session::plan::start_with_setups`): grid
    /// cells, and one of the report's `extensions` sections.
    Extension(ExtensionName),
}

impl ExperimentKind {
    /// Every built-in kind, in the order sections appear in the reports (extensions follow).
    pub const BUILT_IN: [Self; 4] = [Self::Decode, Self::Burst, Self::Routing, Self::Serve];

    /// Its name in the plan and the reports (`decode`, `burst`, `routing`, `serve`, or the
    /// extension's own).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decode => "decode",
            Self::Burst => "burst",
            Self::Routing => "routing",
            Self::Serve => "serve",
            Self::Extension(name) => name.0,
        }
    }

    /// The kind named `name`: a built-in one, else an extension (when the name is one).
    pub fn named(name: &str) -> Result<Self, String> {
        match Self::BUILT_IN.into_iter().find(|k| k.as_str() == name) {
            Some(k) => Ok(k),
            None => ExtensionName::new(name).map(Self::Extension),
        }
    }
}

/// The name of an extension kind: 1 to [`ExtensionName::MAX_LEN`] of `a-z 0-9 _ -`, not a
/// built-in name. Names are interned (at most [`ExtensionName::MAX_KINDS`] per process), so the
/// kind stays `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExtensionName(&'static str);

/// The names interned so far.
static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

impl ExtensionName {
    /// Longest name, bytes.
    pub const MAX_LEN: usize = 32;
    /// Most distinct names one process holds (a report naming more is refused).
    pub const MAX_KINDS: usize = 64;

    /// The name `name`, if it is one.
    pub fn new(name: &str) -> Result<Self, String> {
        let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
        if name.is_empty() || name.len() > Self::MAX_LEN || !name.chars().all(ok) {
            return Err(format!("experiment kind `{}` is not 1-{} of a-z 0-9 _ -", name.escape_debug(), Self::MAX_LEN));
        }
        if ExperimentKind::BUILT_IN.iter().any(|k| k.as_str() == name) {
            return Err(format!("experiment kind `{name}` is a built-in kind"));
        }
        let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = names.iter().find(|n| **n == name) {
            return Ok(Self(n));
        }
        if names.len() >= Self::MAX_KINDS {
            return Err(format!("more than {} experiment kinds", Self::MAX_KINDS));
        }
        let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.push(leaked);
        Ok(Self(leaked))
    }
}

impl ExtensionName {
    /// The name.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for ExtensionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Display for ExperimentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ExperimentKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ExperimentKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::named(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_report_names_and_round_trip() {
        let names: Vec<&str> = ExperimentKind::BUILT_IN.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, ["decode", "burst", "routing", "serve"]);
        let ext = ExperimentKind::named("echo-test").unwrap();
        for k in ExperimentKind::BUILT_IN.into_iter().chain([ext]) {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{k}\""));
            assert_eq!(serde_json::from_str::<ExperimentKind>(&json).unwrap(), k);
        }
        assert_eq!(ExperimentKind::named("echo-test").unwrap(), ext, "one name, one kind");
    }

    #[test]
    fn extension_names_are_checked() {
        for bad in ["", "Decode!", "a b", "x\n", &"a".repeat(33), "decode", "serve"] {
            assert!(ExtensionName::new(bad).is_err(), "{bad:?}");
            assert!(
                serde_json::from_str::<ExperimentKind>(&format!("{bad:?}")).is_ok()
                    == (bad == "decode" || bad == "serve")
            );
        }
        assert!(ExtensionName::new("a_1-b").is_ok());
    }
}
