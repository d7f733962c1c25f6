//! Builds filler prompts of an exact server-side token count by letting the server count probes.
//!
//! The text for a seed is always a whole-word prefix of [`filler`](crate::load::filler)'s stream,
//! so "tokens as a function of length" is one fixed, nearly linear, increasing function; every
//! count ever made for the seed is a point on it and is kept. Each step models that function
//! near the target with a line and probes the whole-word prefix the line says hits the target:
//!
//! * nothing counted yet: assume 4 chars/token from the empty prompt (which costs
//!   `overhead_tokens`); a large target first probes an ~2k-token sample, never a guess at
//!   full size, so a wrong guess costs little and cannot overrun the counter's limit;
//! * all points below the target: extrapolate from the longest point along the secant to an
//!   earlier point at most 2/3 as long (the empty prompt if none), which follows a drifting ratio;
//! * points on both sides: secant through the two points nearest the target, kept strictly inside
//!   the bracket, else the bracket's chord.
//!
//! A count is accepted when within `max(tolerance × target, 1)` tokens. When the counter fails
//! (e.g. text over `max_model_len`), lengths from there up are not probed again: for the rest of
//! the seed after [`CountError::TooLong`], for the current target after any other error seen twice
//! in a row at one length. If the target needs more, the text is extrapolated from the counted
//! points and flagged. A target at or below
//! the overhead gets the empty text without any count.

use crate::load::filler::FillerBuffer;

/// Largest text ever built, in bytes (about 16M tokens of English); longer estimates are clamped.
pub(crate) const MAX_TEXT_CHARS: usize = 64 << 20;
/// Chars per token assumed before anything was counted: typical of English with BPE vocabularies.
const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;
/// Length of the first probe for large targets, in bytes (about 2k tokens).
const SAMPLE_CHARS: usize = 8192;
/// An extrapolation slope is taken to an earlier point at most this fraction of the longest one's length.
const SLOPE_SPREAD: f64 = 0.67;

#[path = "calibrate_types.rs"]
mod types;
pub(crate) use types::{CalibrateError, CalibrateOptions, Calibrated, CountError, TokenCounter};

/// Builds a filler prompt (stream of `seed`) whose total count is within tolerance of `target_tokens`.
///
/// Errors only when no count at all succeeded; otherwise the best text found is returned, with
/// `converged` and `extrapolated` telling how it was obtained.
#[cfg(test)]
pub(crate) async fn calibrate<C: TokenCounter>(
    counter: &C,
    target_tokens: u64,
    seed: u64,
    opts: &CalibrateOptions,
) -> Result<Calibrated, CalibrateError> {
    Calibrator::new(counter, seed, opts).run(target_tokens).await
}

/// Calibrates several targets on one seed, in ascending order, sharing every count: each later
/// target starts from the ratio measured at the earlier ones and usually needs one or two probes.
/// Results come back in the order of `targets`.
pub(crate) async fn calibrate_many<C: TokenCounter>(
    counter: &C,
    targets: &[u64],
    seed: u64,
    opts: &CalibrateOptions,
) -> Vec<Result<Calibrated, CalibrateError>> {
    let mut order: Vec<(usize, u64)> = targets.iter().copied().enumerate().collect();
    order.sort_by_key(|&(_, target)| target);
    let mut calibrator = Calibrator::new(counter, seed, opts);
    let mut results = Vec::with_capacity(order.len());
    for (i, target) in order {
        results.push((i, calibrator.run(target).await));
    }
    results.sort_by_key(|&(i, _)| i);
    results.into_iter().map(|(_, result)| result).collect()
}

/// One count: the first `chars` bytes of the stream make `tokens` in total.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    chars: usize,
    tokens: u64,
}

/// Local model: `tokens = t + slope × (chars - c)`.
#[derive(Debug, Clone, Copy)]
struct Line {
    c: f64,
    t: f64,
    /// Tokens per char; finite and positive.
    slope: f64,
}

impl Line {
    /// The line through `a` and `b`, anchored at `b`, if it rises.
    fn through(a: Point, b: Point) -> Option<Line> {
        let slope = (b.tokens as f64 - a.tokens as f64) / (b.chars as f64 - a.chars as f64);
        (slope.is_finite() && slope > 0.0).then_some(Line { c: b.chars as f64, t: b.tokens as f64, slope })
    }

    fn chars_for(&self, tokens: f64) -> f64 {
        self.c + (tokens - self.t) / self.slope
    }

    fn tokens_at(&self, chars: f64) -> f64 {
        self.t + self.slope * (chars - self.c)
    }
}

/// What to do next for a target.
enum Step {
    /// Count the first `chars` bytes.
    Probe(usize),
    /// The counter cannot reach the target: return the first `chars` bytes with an estimated count.
    Extrapolate(usize, u64),
    /// No uncounted whole-word length is left between the bracketing counts.
    Stuck,
}

/// Calibration state for one seed, shared by successive targets.
struct Calibrator<'a, C> {
    counter: &'a C,
    tolerance: f64,
    max_probes: u32,
    overhead: u64,
    source: FillerBuffer,
    /// Successful counts, sorted by `chars`, one per length.
    points: Vec<Point>,
    /// Shortest length refused as [`CountError::TooLong`], in bytes; never probed at or above again.
    ceiling: Option<usize>,
    /// Shortest length that failed otherwise twice in a row for the current target, in bytes: treated
    /// like `ceiling`, but forgotten at the next target so a transient failure does not stunt a sweep.
    soft_ceiling: Option<usize>,
    last_error: Option<CountError>,
    /// Why a count went unanswered, once one did: no more counts are made.
    unanswered: Option<String>,
}

impl<'a, C: TokenCounter> Calibrator<'a, C> {
    fn new(counter: &'a C, seed: u64, opts: &CalibrateOptions) -> Self {
        let tolerance = if opts.tolerance.is_finite() { opts.tolerance.max(0.0) } else { 0.0 };
        Self {
            counter,
            tolerance,
            max_probes: opts.max_probes,
            overhead: opts.overhead_tokens,
            source: FillerBuffer::new(seed),
            points: Vec::new(),
            ceiling: None,
            soft_ceiling: None,
            last_error: None,
            unanswered: None,
        }
    }

    async fn run(&mut self, target: u64) -> Result<Calibrated, CalibrateError> {
        if target <= self.overhead {
            let note = "empty text: target at or below the overhead".to_owned();
            let point = Point { chars: 0, tokens: self.overhead };
            return Ok(self.result(target, point, 0, true, note));
        }
        if let Some(why) = &self.unanswered {
            return Err(CalibrateError::NoAnswer(why.clone()));
        }
        self.soft_ceiling = None;
        let (mut probes, mut failed_once) = (0, None);
        loop {
            if let Some(p) = self.nearest(target).filter(|p| self.within(p.tokens, target)) {
                let cpt = p.chars as f64 / (p.tokens.saturating_sub(self.overhead).max(1)) as f64;
                let note = format!("counted: {probes} probe(s) for this target, {cpt:.2} chars/token");
                return Ok(self.result(target, p, probes, true, note));
            }
            let chars = match self.plan(target, self.max_probes.saturating_sub(probes)) {
                Step::Probe(chars) if probes < self.max_probes => chars,
                Step::Probe(_) => return self.best_effort(target, probes, "probe budget exhausted"),
                Step::Stuck => return self.best_effort(target, probes, "no whole-word length left to try"),
                Step::Extrapolate(chars, tokens) => return Ok(self.extrapolated(target, chars, tokens, probes)),
            };
            probes += 1;
            match self.counter.count(self.source.prefix(chars)).await {
                Ok(tokens) => self.insert(Point { chars, tokens }),
                Err(CountError::NoAnswer(why)) => {
                    self.unanswered = Some(why.clone());
                    return Err(CalibrateError::NoAnswer(why));
                }
                Err(e) => self.failed(chars, e, &mut failed_once),
            }
        }
    }

    /// Records a failed count at `chars`: a refusal as too long bounds every later probe, any other
    /// error is retried once at the same length and then bounds the current target's probes.
    fn failed(&mut self, chars: usize, error: CountError, failed_once: &mut Option<usize>) {
        let slot = match error {
            CountError::TooLong(_) => &mut self.ceiling,
            CountError::Failed(_) if *failed_once != Some(chars) => {
                *failed_once = Some(chars);
                self.last_error = Some(error);
                return;
            }
            CountError::Failed(_) | CountError::NoAnswer(_) => &mut self.soft_ceiling,
        };
        *slot = Some(slot.map_or(chars, |c| c.min(chars)));
        self.last_error = Some(error);
    }

    /// Chooses the next length to count, or how to finish.
    fn plan(&mut self, target: u64, budget: u32) -> Step {
        let (lo, hi) = self.bracket(target);
        let line = match hi {
            Some(hi) => self.interpolation(target, lo, hi),
            None => self.extrapolation(lo),
        };
        let desired = line.chars_for(target as f64);
        if self.points.is_empty() {
            return self.first_probe(desired, budget);
        }
        if hi.is_none() && self.limit().is_some_and(|c| desired >= c as f64) {
            let chars = snap(&mut self.source, desired);
            let tokens = line.tokens_at(chars as f64).round().max(self.overhead as f64) as u64;
            return Step::Extrapolate(chars, tokens);
        }
        let chars = snap(&mut self.source, desired);
        let chars = match self.limit() {
            Some(c) if chars >= c => self.source.boundary_before(c),
            _ => Some(chars),
        };
        chars.and_then(|chars| self.untried(chars, target)).map_or(Step::Stuck, Step::Probe)
    }

    /// First count for a seed: a sample when the target is large, shrinking after failures.
    fn first_probe(&mut self, desired: f64, budget: u32) -> Step {
        let mut want = desired;
        if want > (2 * SAMPLE_CHARS) as f64 && budget >= 2 {
            want = SAMPLE_CHARS as f64;
        }
        if let Some(c) = self.limit()
            && want >= c as f64
        {
            want = (c / 4) as f64;
        }
        let chars = snap(&mut self.source, want);
        match self.limit() {
            Some(c) if chars >= c => self.source.boundary_before(c).map_or(Step::Stuck, Step::Probe),
            _ => Step::Probe(chars),
        }
    }

    /// Between two counts: the secant through the two counts nearest the target if it falls strictly
    /// inside the bracket, else the bracket's chord.
    fn interpolation(&self, target: u64, lo: Point, hi: Point) -> Line {
        let mut near: Vec<Point> = self.points.clone();
        near.sort_by_key(|p| p.tokens.abs_diff(target));
        if let [a, b, ..] = near[..] {
            let (a, b) = if a.chars < b.chars { (a, b) } else { (b, a) };
            if let Some(line) = Line::through(a, b) {
                let x = line.chars_for(target as f64);
                if x > lo.chars as f64 && x < hi.chars as f64 {
                    return line;
                }
            }
        }
        Line::through(lo, hi).unwrap_or_else(|| self.extrapolation(lo))
    }

    /// Beyond the longest count below the target: the secant to an earlier, clearly shorter point.
    fn extrapolation(&self, lo: Point) -> Line {
        let anchor = self.anchor();
        let default = Line { c: lo.chars as f64, t: lo.tokens as f64, slope: 1.0 / DEFAULT_CHARS_PER_TOKEN };
        if lo.chars == 0 {
            return default;
        }
        let limit = lo.chars as f64 * SLOPE_SPREAD;
        let earlier = self.points.iter().rev().find(|p| p.chars as f64 <= limit).copied().unwrap_or(anchor);
        Line::through(earlier, lo).or_else(|| Line::through(anchor, lo)).unwrap_or(default)
    }

    /// Longest point (or the empty prompt) below the target, and the shortest point above it after that.
    fn bracket(&self, target: u64) -> (Point, Option<Point>) {
        let lo = self.points.iter().rev().find(|p| p.tokens < target).copied().unwrap_or(self.anchor());
        let hi = self.points.iter().find(|p| p.chars > lo.chars && p.tokens > target).copied();
        (lo, hi)
    }

    /// `chars` if not counted yet, else its whole-word neighbour towards the target if that is untried.
    fn untried(&mut self, chars: usize, target: u64) -> Option<usize> {
        let Some(p) = self.points.iter().find(|p| p.chars == chars).copied() else {
            return Some(chars);
        };
        let next =
            if p.tokens < target { self.source.boundary_after(chars) } else { self.source.boundary_before(chars) }?;
        let tried = self.points.iter().any(|p| p.chars == next) || self.limit().is_some_and(|c| next >= c);
        (!tried).then_some(next)
    }

    /// Best available answer when counting cannot continue.
    fn best_effort(&self, target: u64, probes: u32, why: &str) -> Result<Calibrated, CalibrateError> {
        let Some(p) = self.nearest(target) else {
            let reason = self.last_error.as_ref().map_or_else(|| why.to_owned(), ToString::to_string);
            return Err(CalibrateError::NoCount { target, probes, reason });
        };
        let note = format!("best effort after {probes} probe(s): {why}; off by {} tokens", p.tokens.abs_diff(target));
        Ok(self.result(target, p, probes, false, note))
    }

    fn extrapolated(&self, target: u64, chars: usize, tokens: u64, probes: u32) -> Calibrated {
        let error = self.last_error.as_ref().map_or_else(String::new, ToString::to_string);
        let note = format!(
            "extrapolated to {chars} chars from {} count(s): counter failed at {} chars ({error})",
            self.points.len(),
            self.limit().unwrap_or(0),
        );
        let mut result = self.result(target, Point { chars, tokens }, probes, false, note);
        result.extrapolated = true;
        result
    }

    fn result(&self, target: u64, p: Point, probes: u32, converged: bool, note: String) -> Calibrated {
        let text = self.source.prefix(p.chars).to_owned();
        Calibrated { target_tokens: target, text, tokens: p.tokens, probes, converged, extrapolated: false, note }
    }

    /// The counted point nearest the target, the shorter one on ties.
    fn nearest(&self, target: u64) -> Option<Point> {
        self.points.iter().min_by_key(|p| (p.tokens.abs_diff(target), p.chars)).copied()
    }

    fn within(&self, tokens: u64, target: u64) -> bool {
        tokens.abs_diff(target) as f64 <= (self.tolerance * target as f64).max(1.0)
    }

    /// Length from which texts are not probed, in bytes.
    fn limit(&self) -> Option<usize> {
        match (self.ceiling, self.soft_ceiling) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The empty prompt: costs exactly the overhead.
    fn anchor(&self) -> Point {
        Point { chars: 0, tokens: self.overhead }
    }

    fn insert(&mut self, p: Point) {
        match self.points.binary_search_by_key(&p.chars, |q| q.chars) {
            Ok(i) => {
                if let Some(q) = self.points.get_mut(i) {
                    *q = p;
                }
            }
            Err(i) => self.points.insert(i, p),
        }
    }
}

/// The non-empty whole-word length of `source` nearest `desired` bytes, at most about [`MAX_TEXT_CHARS`].
fn snap(source: &mut FillerBuffer, desired: f64) -> usize {
    let desired = if desired.is_finite() { desired } else { MAX_TEXT_CHARS as f64 };
    source.nearest_boundary(desired.clamp(1.0, MAX_TEXT_CHARS as f64) as usize)
}

#[cfg(test)]
#[path = "calibrate_tests.rs"]
mod tests;
