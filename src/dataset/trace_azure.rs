//! The Azure LLM inference trace's CSV: a header naming `TIMESTAMP`, `ContextTokens` and
//! `GeneratedTokens` in any order (other columns ignored), then one request per line, its
//! `TIMESTAMP` a date-time (`2023-11-16 18:15:46.6805900`, UTC, any number of fractional
//! digits) or a number of seconds.

use super::trace::{TraceRequest, checked};

/// Where the three columns are, once the header was read.
#[derive(Debug, Default)]
pub(super) struct Columns {
    at: Option<[usize; 3]>,
}

impl Columns {
    /// The request of one line, None for the header.
    pub(super) fn line(&mut self, line: &str) -> Result<Option<TraceRequest>, String> {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let Some([t, c, g]) = self.at else {
            let find = |name: &str| fields.iter().position(|f| f.eq_ignore_ascii_case(name));
            let (Some(t), Some(c), Some(g)) = (find("TIMESTAMP"), find("ContextTokens"), find("GeneratedTokens"))
            else {
                return Err(format!("header {line:?}: needs the columns TIMESTAMP, ContextTokens and GeneratedTokens"));
            };
            self.at = Some([t, c, g]);
            return Ok(None);
        };
        let field = |i: usize, name: &str| fields.get(i).copied().ok_or_else(|| format!("no {name} field"));
        let count = |i: usize, name: &str| -> Result<u64, String> {
            let f = field(i, name)?;
            f.parse().map_err(|_| format!("{name} {f:?}: not a whole number of tokens"))
        };
        // Absolute ms: read_trace sorts the requests and shifts them to start at 0.
        let at_ms = seconds(field(t, "TIMESTAMP")?)? * 1e3;
        checked(at_ms, count(c, "ContextTokens")?, count(g, "GeneratedTokens")?, Vec::new()).map(Some)
    }
}

/// Seconds of a `TIMESTAMP`: a number, or `YYYY-MM-DD HH:MM:SS[.fraction]` since 1970 (UTC).
fn seconds(s: &str) -> Result<f64, String> {
    if let Ok(n) = s.parse::<f64>() {
        return Ok(n);
    }
    let bad = || format!("TIMESTAMP {s:?}: not a date-time such as 2023-11-16 18:15:46.6805900");
    let (date, time) = s.split_once([' ', 'T']).ok_or_else(bad)?;
    let time = time.trim_end_matches('Z');
    let num = |p: Option<&str>| p.and_then(|p| p.parse::<i64>().ok()).ok_or_else(bad);
    let mut d = date.split('-');
    let (y, mo, da) = (num(d.next())?, num(d.next())?, num(d.next())?);
    let mut t = time.split(':');
    let (h, mi) = (num(t.next())?, num(t.next())?);
    let sec: f64 = t.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || !(0..24).contains(&h) || !(0..60).contains(&mi) {
        return Err(bad());
    }
    Ok((days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60) as f64 + sec)
}

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d` (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_times_and_numbers_are_seconds() {
        assert_eq!(seconds("1970-01-01 00:00:00").unwrap(), 0.0);
        assert_eq!(seconds("2000-03-01 00:00:00").unwrap(), 951_868_800.0);
        let a = seconds("2023-11-16 18:15:46.6805900").unwrap();
        let b = seconds("2023-11-16T18:15:47.1805900Z").unwrap();
        assert!((b - a - 0.5).abs() < 1e-6, "{a} {b}");
        assert!(
            (seconds("2023-11-17 00:00:00").unwrap() - seconds("2023-11-16 23:59:59.5").unwrap() - 0.5).abs() < 1e-9
        );
        assert_eq!(seconds("12.5").unwrap(), 12.5);
        assert!(seconds("yesterday").unwrap_err().contains("not a date-time"));
        assert!(seconds("2023-13-01 00:00:00").is_err());
    }

    #[test]
    fn the_header_names_the_columns_in_any_order() {
        let mut c = Columns::default();
        assert_eq!(c.line("ContextTokens,TIMESTAMP,GeneratedTokens").unwrap(), None);
        let a = c.line("4808,2023-11-16 18:15:46.6805900,10").unwrap().unwrap();
        assert_eq!((a.input_len, a.output_len), (4808, 10));
        let b = c.line("3180,2023-11-16 18:15:50.9951690,0").unwrap().unwrap();
        assert!((b.at_ms - a.at_ms - 4314.579).abs() < 1e-3 && b.output_len == 1, "{b:?}");
        assert!(c.line("x,2023-11-16 18:15:50,1").unwrap_err().contains("ContextTokens \"x\""));
        assert!(Columns::default().line("a,b").unwrap_err().starts_with("header \"a,b\": needs"));
    }
}
