//! Settings of the conversation experiment (`run --plan conversation`, issue 24): how many
//! sessions a cell runs, how many turns each, what history a turn sends, the think time
//! between turns and the session-affinity header.

use rand::Rng;
use rand_distr::{Distribution, Exp};
use std::fmt;
use std::time::Duration;

/// What history each turn sends before its new user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum History {
    /// The conversation's own earlier turns, as the dataset (or the generated default) has
    /// them: the next turn's prompt does not depend on what the model answered.
    #[default]
    Dataset,
    /// The model's actual answers: each turn sends back what the server streamed.
    Model,
}

impl History {
    /// Its name, as the flag and the report write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dataset => "dataset",
            Self::Model => "model",
        }
    }
}

/// The pause of a user between an answer and the next message (`--think-time`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum ThinkTime {
    /// No pause: the next turn is sent as soon as the answer ends.
    #[default]
    None,
    /// Always this long (`2s`).
    Fixed(Duration),
    /// Exponential with this mean (`exp:2s`).
    Exponential(Duration),
    /// Uniform between the two (`uniform:1s..3s`).
    Uniform(Duration, Duration),
}

impl ThinkTime {
    /// Parses `0`, `2s`, `exp:2s` or `uniform:1s..3s` (durations as `humantime` reads them).
    pub fn parse(s: &str) -> Result<Self, String> {
        const FORMS: &str =
            "a think time is 0, a duration (2s), exp:MEAN (exp:2s) or uniform:LOW..HIGH (uniform:1s..3s)";
        let d = |v: &str| {
            humantime::parse_duration(v.trim()).map_err(|_| format!("`{}` is not a duration: {FORMS}", v.trim()))
        };
        let s = s.trim();
        if s == "0" {
            return Ok(Self::None);
        }
        let t = match s.split_once(':') {
            Some(("exp", mean)) => Self::Exponential(d(mean)?),
            Some(("uniform", range)) => {
                let (a, b) = range.split_once("..").ok_or_else(|| format!("`{s}`: {FORMS}"))?;
                let (a, b) = (d(a)?, d(b)?);
                if a > b {
                    return Err(format!("`{s}`: the low end is above the high end"));
                }
                Self::Uniform(a, b)
            }
            Some((kind, _)) => return Err(format!("`{kind}` is not exp or uniform: {FORMS}")),
            None => Self::Fixed(d(s)?),
        };
        Ok(match t {
            Self::Fixed(x) | Self::Exponential(x) if x.is_zero() => Self::None,
            Self::Uniform(a, b) if b.is_zero() && a.is_zero() => Self::None,
            t => t,
        })
    }

    /// One pause drawn from it.
    pub fn draw(&self, rng: &mut impl Rng) -> Duration {
        match *self {
            Self::None => Duration::ZERO,
            Self::Fixed(d) => d,
            Self::Exponential(mean) => {
                let exp = Exp::new(1.0).expect("rate 1 is valid");
                Duration::from_secs_f64(mean.as_secs_f64() * exp.sample(rng))
            }
            Self::Uniform(a, b) if a == b => a,
            Self::Uniform(a, b) => Duration::from_secs_f64(rng.random_range(a.as_secs_f64()..=b.as_secs_f64())),
        }
    }

    /// Its mean, for the session's ETA.
    pub fn mean(&self) -> Duration {
        match *self {
            Self::None => Duration::ZERO,
            Self::Fixed(d) | Self::Exponential(d) => d,
            Self::Uniform(a, b) => (a + b) / 2,
        }
    }
}

impl fmt::Display for ThinkTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = |d: Duration| humantime::format_duration(d).to_string();
        match *self {
            Self::None => f.write_str("0"),
            Self::Fixed(d) => f.write_str(&h(d)),
            Self::Exponential(d) => write!(f, "exp:{}", h(d)),
            Self::Uniform(a, b) => write!(f, "uniform:{}..{}", h(a), h(b)),
        }
    }
}

/// What every conversation cell runs, besides its concurrency and session arrival rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationConfig {
    /// Sessions each cell runs (`--num-conversations`).
    pub conversations: u32,
    /// Most turns a session sends (`--turns`); a dataset conversation with fewer sends its own.
    pub turns: u32,
    /// Tokens of each user message of a generated conversation (`--turn-input-len`).
    pub user_tokens: u64,
    /// The history each turn sends (`--history`).
    pub history: History,
    /// The pause before every turn after the first (`--think-time`).
    pub think: ThinkTime,
    /// A header carrying the session's id on each of its requests (`--session-header`).
    pub session_header: Option<String>,
    /// The ShareGPT file the conversations come from (`--dataset-name sharegpt`); None: each
    /// cell generates its own.
    pub dataset: Option<super::dataset::DatasetSource>,
}

impl Default for ConversationConfig {
    fn default() -> Self {
        Self {
            conversations: 16,
            turns: 4,
            user_tokens: 128,
            history: History::Dataset,
            think: ThinkTime::None,
            session_header: None,
            dataset: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn think_times_parse_draw_and_print_back() {
        assert_eq!(ThinkTime::parse("0"), Ok(ThinkTime::None));
        assert_eq!(ThinkTime::parse("0s"), Ok(ThinkTime::None));
        assert_eq!(ThinkTime::parse("2s"), Ok(ThinkTime::Fixed(Duration::from_secs(2))));
        let exp = ThinkTime::parse("exp:500ms").unwrap();
        assert_eq!(exp, ThinkTime::Exponential(Duration::from_millis(500)));
        let uni = ThinkTime::parse("uniform:1s..3s").unwrap();
        assert_eq!(uni.to_string(), "uniform:1s..3s");
        assert_eq!(exp.to_string(), "exp:500ms");
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let draws: Vec<f64> = (0..4000).map(|_| exp.draw(&mut rng).as_secs_f64()).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.05, "exponential mean {mean}");
        let u: Vec<Duration> = (0..200).map(|_| uni.draw(&mut rng)).collect();
        assert!(u.iter().all(|d| (Duration::from_secs(1)..=Duration::from_secs(3)).contains(d)));
        assert_eq!(uni.mean(), Duration::from_secs(2));
        for bad in ["uniform:3s..1s", "uniform:1s", "gamma:1s", "fast", "exp:x"] {
            let e = ThinkTime::parse(bad).unwrap_err();
            assert!(e.starts_with('`') && !e.contains("--think-time") && !e.contains('\n'), "{bad}: {e}");
        }
        assert!(ThinkTime::parse("fast").unwrap_err().contains("exp:MEAN (exp:2s)"));
    }
}
