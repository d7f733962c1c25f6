//! Report types of the load knob and of open-loop decode cells: the load levels an attempt
//! walked through (each with its own sub-window and figures) and a rate as JSON (a number of
//! requests/s, or the string `inf`).

use crate::load::rate::Rate;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// One load level of an attempt: the planned load first, then one per knob step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadLevel {
    /// The load of the level.
    pub load: LevelLoad,
    /// When the level began, seconds since the session start.
    pub started_s: f64,
    /// When it ended (the next step, or the window's end), seconds since the session start.
    pub ended_s: f64,
    /// What started it: `planned`, `operator +`, `operator -`.
    pub action: String,
    /// Output tokens inside the level's sub-window / its length, tok/s.
    pub tok_s: f64,
    /// TTFT of first tokens inside the sub-window, ms.
    pub ttft_ms: Option<Summary>,
    /// Per-stream ITL inside the sub-window, ms.
    pub itl_ms: Option<Summary>,
    /// Mean running requests over the sub-window (Prometheus, summed over replicas).
    pub running_mean: Option<f64>,
    /// Mean waiting requests over the sub-window.
    pub waiting_mean: Option<f64>,
    /// Requests that received a token or ended inside the sub-window.
    pub requests: u64,
}

/// The load of a level: streams (closed loop) or the arrival rate (open loop).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct LevelLoad {
    /// Closed-loop streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conc: Option<u32>,
    /// Open-loop arrival rate.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "rate_opt")]
    pub rate: Option<Rate>,
}

impl LevelLoad {
    /// `8` streams or `4/s` (`inf`), as the live panel names the level.
    pub fn label(&self) -> String {
        match (self.rate, self.conc) {
            (Some(Rate::Inf), _) => "inf".into(),
            (Some(r), _) => format!("{}/s", trim(r.per_second())),
            (None, Some(c)) => c.to_string(),
            (None, None) => "?".into(),
        }
    }
}

/// A rate with at most two decimals, without trailing zeros (`5`, `6.25`, `7.81`).
pub(crate) fn trim(r: f64) -> String {
    let s = format!("{r:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The label of a decode matrix column: `8` (closed loop), `4/s` or `inf` (open loop, one
/// concurrency), `8@4/s` when rates and concurrencies are both swept (`many_conc`).
pub(crate) fn column_label(conc: u32, rate: Option<Rate>, many_conc: bool) -> String {
    match rate {
        None => conc.to_string(),
        Some(r) => {
            let r = if r.is_finite() { format!("{r}/s") } else { r.to_string() };
            if many_conc { format!("{conc}@{r}") } else { r }
        }
    }
}

/// `Option<Rate>` as JSON: a number of requests/s, `"inf"`, or absent.
pub(crate) mod rate_opt {
    use crate::load::rate::Rate;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes a finite rate as a number, `inf` as the string.
    pub(crate) fn serialize<S: Serializer>(r: &Option<Rate>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(Rate::PerSecond(v)) => s.serialize_f64(*v),
            Some(Rate::Inf) => s.serialize_str("inf"),
            None => s.serialize_none(),
        }
    }

    /// Reads a number or `"inf"` back.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Rate>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Text(String),
        }
        Ok(match Option::<Raw>::deserialize(d)? {
            None => None,
            Some(Raw::Num(v)) => Some(Rate::PerSecond(v)),
            Some(Raw::Text(t)) => Some(t.parse().map_err(serde::de::Error::custom)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_trip_as_numbers_or_inf() {
        let l = LevelLoad { conc: Some(8), rate: Some(Rate::PerSecond(4.5)) };
        let j = serde_json::to_string(&l).unwrap();
        assert_eq!(j, r#"{"conc":8,"rate":4.5}"#);
        assert_eq!(serde_json::from_str::<LevelLoad>(&j).unwrap(), l);
        let inf = LevelLoad { conc: None, rate: Some(Rate::Inf) };
        assert_eq!(serde_json::to_string(&inf).unwrap(), r#"{"rate":"inf"}"#);
        assert_eq!(serde_json::from_str::<LevelLoad>(r#"{"rate":"inf"}"#).unwrap(), inf);
        assert_eq!(serde_json::from_str::<LevelLoad>("{}").unwrap(), LevelLoad::default());
    }

    #[test]
    fn labels_name_the_load() {
        assert_eq!(LevelLoad { conc: Some(10), rate: None }.label(), "10");
        assert_eq!(LevelLoad { conc: Some(8), rate: Some(Rate::PerSecond(6.25)) }.label(), "6.25/s");
        assert_eq!(LevelLoad { conc: Some(8), rate: Some(Rate::PerSecond(5.0)) }.label(), "5/s");
    }
}
