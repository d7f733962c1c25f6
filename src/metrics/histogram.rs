//! Cumulative-bucket histograms read from `_bucket{le}`, `_sum`, `_count` samples.
//!
//! Bucket bounds come from the `le` labels, never from assumptions (docs/protocol.md §0.4):
//! label sets with different bounds are never merged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::exposition::parse_value;
use super::types::Sample;

/// A cumulative histogram, possibly summed over several label sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// `(le upper bound, cumulative count)`, ascending by bound, in the metric's unit
    /// (seconds for latency histograms). The last bound is `+Inf` when the page had one.
    /// Serialised as `[{"le": "0.1", "count": 3.0}, {"le": "+Inf", ...}]`.
    #[serde(with = "bucket_serde")]
    pub buckets: Vec<(f64, f64)>,
    /// Sum of all observations, in the metric's unit; `None` when `_sum` was not exposed.
    pub sum: Option<f64>,
    /// Number of observations: `_count` if exposed, else the `+Inf` bucket, else the
    /// highest bucket (then a lower bound of the true count).
    pub count: f64,
}

/// Why a histogram could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    /// No `<name>_bucket` sample (after filtering).
    #[error("histogram {name}: no buckets")]
    NotFound {
        /// Family name.
        name: String,
    },
    /// Label sets have different `le` bounds, so they cannot be summed.
    #[error("histogram {name}: label sets have different bucket bounds")]
    MixedBounds {
        /// Family name.
        name: String,
    },
    /// A bucket had no `le` label or an unparsable one.
    #[error("histogram {name}: bad le bound {le:?}")]
    BadBound {
        /// Family name.
        name: String,
        /// The offending `le` text (empty when missing).
        le: String,
    },
}

impl Histogram {
    /// True if both have exactly the same bucket bounds.
    pub fn same_bounds(&self, other: &Histogram) -> bool {
        self.buckets.len() == other.buckets.len() && self.buckets.iter().zip(&other.buckets).all(|(a, b)| a.0 == b.0)
    }

    /// Element-wise sum; `None` if the bounds differ.
    pub fn add(&self, other: &Histogram) -> Option<Histogram> {
        if !self.same_bounds(other) {
            return None;
        }
        let buckets = self.buckets.iter().zip(&other.buckets).map(|(a, b)| (a.0, a.1 + b.1)).collect();
        let sum = self.sum.zip(other.sum).map(|(a, b)| a + b);
        let count = self.count + other.count;
        Some(Histogram { buckets, sum, count })
    }

    /// True if `self` cannot follow `earlier` without a restart: its count or a bucket went down.
    pub fn is_reset_since(&self, earlier: &Histogram) -> bool {
        self.count < earlier.count || self.buckets.iter().zip(&earlier.buckets).any(|(a, b)| a.1 < b.1)
    }

    /// Observations between `earlier` and `self`. `None` if the bounds differ. After a
    /// restart ([`Histogram::is_reset_since`]) the later histogram itself is the delta.
    pub fn delta(&self, earlier: &Histogram) -> Option<Histogram> {
        if !self.same_bounds(earlier) {
            return None;
        }
        if self.is_reset_since(earlier) {
            return Some(self.clone());
        }
        let buckets = self.buckets.iter().zip(&earlier.buckets).map(|(a, b)| (a.0, a.1 - b.1)).collect();
        let sum = self.sum.zip(earlier.sum).map(|(a, b)| a - b);
        let count = self.count - earlier.count;
        Some(Histogram { buckets, sum, count })
    }

    /// Mean observation (`sum / count`), in the metric's unit; `None` without `_sum` or data.
    pub fn mean(&self) -> Option<f64> {
        self.sum.filter(|_| self.count > 0.0).map(|s| s / self.count)
    }

    /// Approximate `q`-quantile (0 ≤ q ≤ 1) by linear interpolation inside the bucket holding
    /// the rank, as Prometheus `histogram_quantile` does: the first bucket starts at 0 (if its
    /// bound is positive), and a rank in the `+Inf` bucket (or above the highest bucket, for
    /// pages without `+Inf`) yields the highest finite bound. `None` without observations.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if !(0.0..=1.0).contains(&q) || self.buckets.is_empty() {
            return None;
        }
        let mut cum = Vec::with_capacity(self.buckets.len());
        let mut running = 0.0_f64;
        for &(_, c) in &self.buckets {
            running = running.max(c);
            cum.push(running);
        }
        let (last_bound, last_cum) = (self.buckets[cum.len() - 1].0, running);
        let total = if last_bound.is_infinite() { last_cum } else { self.count.max(last_cum) };
        if total.is_nan() || total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let highest_finite = self.buckets.iter().rev().map(|b| b.0).find(|b| b.is_finite());
        let i = match cum.iter().position(|&c| c >= rank) {
            Some(i) if self.buckets[i].0.is_finite() => i,
            _ => return highest_finite,
        };
        let upper = self.buckets[i].0;
        let (lower, prev) = match i {
            0 if upper <= 0.0 => return Some(upper),
            0 => (0.0, 0.0),
            _ => (self.buckets[i - 1].0, cum[i - 1]),
        };
        let in_bucket = cum[i] - prev;
        if in_bucket <= 0.0 {
            return Some(lower);
        }
        let fraction = (rank - prev) / in_bucket;
        Some((lower + (upper - lower) * fraction).clamp(lower, upper))
    }
}

/// Builds the histogram of family `name` from its samples, summing the label sets (without
/// `le`) that `keep` accepts.
pub(crate) fn assemble<'a>(
    name: &str,
    buckets: impl Iterator<Item = &'a Sample>,
    sums: impl Iterator<Item = &'a Sample>,
    counts: impl Iterator<Item = &'a Sample>,
    keep: impl Fn(&BTreeMap<String, String>) -> bool,
) -> Result<Histogram, HistogramError> {
    let mut groups: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
    for s in buckets {
        let mut labels = s.labels.clone();
        let le = labels.remove("le").unwrap_or_default();
        if !keep(&labels) {
            continue;
        }
        let bound = parse_value(&le).filter(|b| !b.is_nan());
        let bound = bound.ok_or_else(|| HistogramError::BadBound { name: name.to_string(), le: le.clone() })?;
        groups.entry(labels).or_default().push((bound, s.value));
    }
    let (sums, counts) = (by_labels(sums), by_labels(counts));
    let mut total: Option<Histogram> = None;
    for (labels, mut buckets) in groups {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        buckets.dedup_by(|a, b| a.0 == b.0);
        let fallback = buckets.last().map_or(0.0, |b| b.1);
        let count = counts.get(&labels).copied().unwrap_or(fallback);
        let sum = sums.get(&labels).copied();
        let h = Histogram { buckets, sum, count };
        total = match total {
            None => Some(h),
            Some(t) => Some(t.add(&h).ok_or_else(|| HistogramError::MixedBounds { name: name.to_string() })?),
        };
    }
    total.ok_or_else(|| HistogramError::NotFound { name: name.to_string() })
}

fn by_labels<'a>(samples: impl Iterator<Item = &'a Sample>) -> BTreeMap<BTreeMap<String, String>, f64> {
    samples.map(|s| (s.labels.clone(), s.value)).collect()
}

/// Serialises bucket bounds as strings so `+Inf` survives JSON.
mod bucket_serde {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::parse_value;

    #[derive(Serialize, Deserialize)]
    struct Bucket {
        le: String,
        count: f64,
    }

    pub(super) fn serialize<S: Serializer>(v: &[(f64, f64)], s: S) -> Result<S::Ok, S::Error> {
        let out: Vec<Bucket> = v
            .iter()
            .map(|&(le, count)| Bucket {
                le: if le == f64::INFINITY { "+Inf".to_string() } else { le.to_string() },
                count,
            })
            .collect();
        out.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, f64)>, D::Error> {
        Vec::<Bucket>::deserialize(d)?
            .into_iter()
            .map(|b| {
                let le = parse_value(&b.le).ok_or_else(|| D::Error::custom("bad le bound"))?;
                Ok((le, b.count))
            })
            .collect()
    }
}
