//! An owned, queryable model of one parsed Prometheus text exposition.
//!
//! Samples are kept flat, under their exposed names (`vllm:prompt_tokens_total`,
//! `..._bucket`, `..._created`), with the `# TYPE` of each family alongside. Queries match
//! names exactly, never by prefix (docs/protocol.md §0.2). Timestamps are ignored: engines
//! and routers don't emit them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::exposition::{self, Line};
use super::histogram::{self, Histogram, HistogramError};
pub use super::types::{MetricType, Sample, SampleRole};

/// Most parse issues a [`Scrape`] keeps in detail; the rest are only counted.
const MAX_ISSUES: usize = 16;

/// A line that [`Scrape::parse`] skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseIssue {
    /// 1-based line number.
    pub line: usize,
    /// Why the line was skipped.
    pub reason: String,
}

/// Why a text could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromError {
    /// [`Scrape::parse_strict`] met a malformed line.
    #[error("line {line}: {reason}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The text has non-blank lines but not one sample, `# HELP` or `# TYPE` line
    /// (an HTML error page, JSON, ...).
    #[error("not a Prometheus exposition ({lines} lines, first: {first:?})")]
    NotExposition {
        /// Number of lines in the text.
        lines: usize,
        /// The first non-blank line, cut to 80 characters.
        first: String,
    },
}

/// A parsed exposition.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    samples: Vec<Sample>,
    types: BTreeMap<String, MetricType>,
    help: BTreeMap<String, String>,
    index: HashMap<String, Vec<usize>>,
    issues: Vec<ParseIssue>,
    skipped: usize,
}

impl Scrape {
    /// Parses leniently: malformed lines are skipped and recorded ([`Scrape::issues`]).
    /// Fails only when nothing in a non-blank text looks like an exposition. Never panics.
    pub fn parse(text: &str) -> Result<Scrape, PromError> {
        Self::parse_inner(text, false)
    }

    /// Parses strictly: the first malformed line is an error.
    pub fn parse_strict(text: &str) -> Result<Scrape, PromError> {
        Self::parse_inner(text, true)
    }

    fn parse_inner(text: &str, strict: bool) -> Result<Scrape, PromError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut scrape = Scrape::default();
        let (mut recognised, mut first, mut lines) = (false, None, 0);
        for (i, raw) in text.split('\n').enumerate() {
            lines = i + 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            match exposition::parse_line(raw) {
                Ok(Line::Blank) => continue,
                Ok(Line::Comment) => {}
                Ok(Line::Help { name, text }) => {
                    recognised = true;
                    scrape.help.insert(name, text);
                }
                Ok(Line::Type { name, kind }) => {
                    recognised = true;
                    scrape.types.insert(name, kind);
                }
                Ok(Line::Sample(s)) => {
                    recognised = true;
                    scrape.push(s);
                }
                Err(reason) if strict => {
                    let reason = reason.to_string();
                    return Err(PromError::Malformed { line: i + 1, reason });
                }
                Err(reason) => scrape.note_issue(i + 1, reason),
            }
            first.get_or_insert(raw);
        }
        match first {
            Some(first) if !recognised => {
                Err(PromError::NotExposition { lines, first: first.trim().chars().take(80).collect() })
            }
            _ => Ok(scrape),
        }
    }

    /// Builds a scrape from samples and family types (for tests and synthetic pages).
    pub fn from_parts(samples: Vec<Sample>, types: BTreeMap<String, MetricType>) -> Scrape {
        let mut scrape = Scrape { types, ..Scrape::default() };
        samples.into_iter().for_each(|s| scrape.push(s));
        scrape
    }

    fn push(&mut self, sample: Sample) {
        let at = self.samples.len();
        self.index.entry(sample.name.clone()).or_default().push(at);
        self.samples.push(sample);
    }

    fn note_issue(&mut self, line: usize, reason: &str) {
        self.skipped += 1;
        if self.issues.len() < MAX_ISSUES {
            let reason = reason.to_string();
            self.issues.push(ParseIssue { line, reason });
        }
    }

    /// Every sample, in page order.
    pub fn all(&self) -> &[Sample] {
        &self.samples
    }

    /// Declared family types (`# TYPE` lines), by family name.
    pub fn types(&self) -> &BTreeMap<String, MetricType> {
        &self.types
    }

    /// The `# HELP` text of a family.
    pub fn help(&self, family: &str) -> Option<&str> {
        self.help.get(family).map(String::as_str)
    }

    /// The first skipped lines (at most 16).
    pub fn issues(&self) -> &[ParseIssue] {
        &self.issues
    }

    /// How many lines were skipped in total.
    pub fn skipped_lines(&self) -> usize {
        self.skipped
    }

    /// Distinct sample names present.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.index.keys().map(String::as_str)
    }

    /// Samples with exactly this name.
    pub fn samples<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Sample> + use<'a> {
        let idx = self.index.get(name).map_or(&[][..], Vec::as_slice);
        idx.iter().map(move |&i| &self.samples[i])
    }

    /// True if at least one sample has exactly this name.
    pub fn has(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Sum over all label sets of exactly this sample name; NaN values are skipped.
    /// `None` if there is no (non-NaN) sample.
    pub fn sum(&self, name: &str) -> Option<f64> {
        sum_values(self.samples(name).map(|s| s.value))
    }

    /// Mean over all label sets (NaN values skipped); `None` if there is none.
    pub fn avg(&self, name: &str) -> Option<f64> {
        let values: Vec<f64> = self.samples(name).map(|s| s.value).filter(|v| !v.is_nan()).collect();
        let n = values.len();
        (n > 0).then(|| values.iter().sum::<f64>() / n as f64)
    }

    /// Like [`Scrape::sum`], over the samples whose `label` equals `value`.
    pub fn sum_where(&self, name: &str, label: &str, value: &str) -> Option<f64> {
        let matching = self.samples(name).filter(|s| label_is(s, label, value));
        sum_values(matching.map(|s| s.value))
    }

    /// Sums per value of `label` (NaN skipped); samples without the label are left out.
    pub fn sum_by(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.samples(name).filter(|s| !s.value.is_nan()) {
            if let Some(v) = s.labels.get(label) {
                *out.entry(v.clone()).or_insert(0.0) += s.value;
            }
        }
        out
    }

    /// Distinct values of `label` among the samples of `name`, sorted.
    pub fn label_values(&self, name: &str, label: &str) -> Vec<String> {
        let set: BTreeSet<&String> = self.samples(name).filter_map(|s| s.labels.get(label)).collect();
        set.into_iter().cloned().collect()
    }

    /// The family type and role of a sample name: an exact `# TYPE` match first, then the
    /// family suffixes (`_bucket`, `_sum`, `_count`, `_gsum`, `_gcount`, `_total`,
    /// `_created`, `_info`) of a declared family of a fitting type; else untyped.
    pub fn resolve(&self, sample_name: &str) -> (MetricType, SampleRole) {
        use MetricType as T;
        use SampleRole as R;
        if let Some(t) = self.types.get(sample_name) {
            return (*t, R::Value);
        }
        const SUFFIXES: &[(&str, SampleRole, &[MetricType])] = &[
            ("_bucket", R::Bucket, &[T::Histogram, T::GaugeHistogram]),
            ("_sum", R::Sum, &[T::Histogram, T::Summary]),
            ("_count", R::Count, &[T::Histogram, T::Summary]),
            ("_gsum", R::Sum, &[T::GaugeHistogram]),
            ("_gcount", R::Count, &[T::GaugeHistogram]),
            ("_total", R::Value, &[T::Counter]),
            ("_created", R::Created, &[T::Counter, T::Histogram, T::Summary]),
            ("_info", R::Value, &[T::Info]),
        ];
        for (suffix, role, fits) in SUFFIXES {
            let family = sample_name.strip_suffix(suffix);
            if let Some(t) = family.and_then(|f| self.types.get(f))
                && fits.contains(t)
            {
                return (*t, *role);
            }
        }
        (T::Untyped, R::Value)
    }

    /// The type of the family a sample name belongs to.
    pub fn sample_type(&self, sample_name: &str) -> MetricType {
        self.resolve(sample_name).0
    }

    /// True if samples of this name are counter values: typed counter (never its
    /// `_created`), or untyped with a `_total` suffix.
    pub fn is_counter_value(&self, sample_name: &str) -> bool {
        match self.resolve(sample_name) {
            (MetricType::Counter, SampleRole::Value) => true,
            (MetricType::Untyped, SampleRole::Value) => sample_name.ends_with("_total"),
            _ => false,
        }
    }

    /// The histogram family `name` (without `_bucket`) summed over all its label sets;
    /// `None` if absent or if label sets have different bucket bounds.
    pub fn histogram(&self, name: &str) -> Option<Histogram> {
        self.try_histogram(name).ok()
    }

    /// Like [`Scrape::histogram`], with the reason on failure.
    pub fn try_histogram(&self, name: &str) -> Result<Histogram, HistogramError> {
        self.try_histogram_where(name, |_| true)
    }

    /// The histogram family `name` summed over the label sets that `keep` accepts
    /// (`keep` sees the labels without `le`).
    pub fn try_histogram_where(
        &self,
        name: &str,
        keep: impl Fn(&BTreeMap<String, String>) -> bool,
    ) -> Result<Histogram, HistogramError> {
        let buckets = self.samples(&format!("{name}_bucket"));
        let sums = self.samples(&format!("{name}_sum"));
        let counts = self.samples(&format!("{name}_count"));
        histogram::assemble(name, buckets, sums, counts, keep)
    }
}

fn label_is(s: &Sample, label: &str, value: &str) -> bool {
    s.labels.get(label).is_some_and(|v| v == value)
}

fn sum_values(values: impl Iterator<Item = f64>) -> Option<f64> {
    values.filter(|v| !v.is_nan()).fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}
