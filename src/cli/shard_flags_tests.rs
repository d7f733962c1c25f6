//! Tests of the sharding flags.

use super::*;

fn at(s: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs_f64(s)
}

fn flags(shard: Option<&str>, shards: Option<u32>) -> ShardFlags {
    ShardFlags { shard: shard.map(|s| s.parse().unwrap()), shards, ..ShardFlags::default() }
}

fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
}

#[test]
fn shard_is_taken_as_given_and_shards_reads_the_job_index_first() {
    let now = at(1e9);
    let got = flags(Some("1/3"), None).resolve(env(&[]), now).unwrap();
    assert_eq!(got.shard, Some(ShardSpec::new(1, 3).unwrap()));
    let both = [("JOB_COMPLETION_INDEX", "2"), ("SLURM_PROCID", "0")];
    let got = flags(None, Some(4)).resolve(env(&both), now).unwrap();
    assert_eq!(got.shard, Some(ShardSpec::new(2, 4).unwrap()));
    let got = flags(None, Some(4)).resolve(env(&[("SLURM_PROCID", "3")]), now).unwrap();
    assert_eq!(got.shard, Some(ShardSpec::new(3, 4).unwrap()));
    assert_eq!(flags(None, None).resolve(env(&both), now).unwrap().shard, None);
}

/// Environment variables of a case, as (name, value).
type Vars<'a> = &'a [(&'a str, &'a str)];

#[test]
fn bad_shard_settings_are_one_line_each() {
    let now = at(1e9);
    let cases: [(ShardFlags, Vars, &str); 5] = [
        (flags(Some("0/2"), Some(2)), &[], "not both"),
        (flags(None, Some(2)), &[], "neither JOB_COMPLETION_INDEX nor SLURM_PROCID"),
        (flags(None, Some(2)), &[("JOB_COMPLETION_INDEX", "2")], "JOB_COMPLETION_INDEX=2 is not below 2"),
        (flags(None, Some(2)), &[("SLURM_PROCID", "x")], "SLURM_PROCID=\"x\" is not a shard index"),
        (flags(None, Some(0)), &[("SLURM_PROCID", "0")], "at least 1"),
    ];
    for (f, vars, want) in cases {
        let e = f.resolve(env(vars), now).unwrap_err();
        assert!(e.contains(want) && !e.contains('\n'), "{e}");
    }
}

#[test]
fn start_at_takes_unix_seconds_or_rfc3339_within_a_day_ahead_and_seconds_behind() {
    assert_eq!(parse_start_at("1700000000.5").unwrap(), at(1_700_000_000.5));
    assert_eq!(parse_start_at("2023-11-14T22:13:20Z").unwrap(), at(1_700_000_000.0));
    // A numeric offset is the same instant as its UTC form.
    assert_eq!(parse_start_at("2023-11-15T03:43:20+05:30").unwrap(), at(1_700_000_000.0));
    assert_eq!(parse_start_at("2023-11-14T17:13:20-05:00").unwrap(), at(1_700_000_000.0));
    assert_eq!(parse_start_at("2023-11-14T22:13:20+00:00").unwrap(), at(1_700_000_000.0));
    assert!(parse_start_at("2023-11-14T22:13:20+25:00").is_err());
    assert!(parse_start_at("tomorrow").unwrap_err().contains("neither unix seconds nor an RFC 3339"));
    assert!(parse_start_at("-5").is_err() && parse_start_at("inf").is_err());
    let now = at(1_700_000_000.0);
    let with = |t: f64| ShardFlags { start_at: Some(at(t)), ..ShardFlags::default() }.resolve(env(&[]), now);
    assert!(with(1_700_000_060.0).is_ok());
    assert!(with(1_699_999_997.0).is_ok(), "a few seconds late still runs");
    assert!(with(1_699_999_990.0).unwrap_err().contains("passed 10.0 s ago"));
    assert!(with(1_700_000_000.0 + 25.0 * 3600.0).unwrap_err().contains("at most 24 h ahead"));
}

#[test]
fn session_ids_are_checked_and_derived_alike_from_the_same_settings() {
    let now = at(1e9);
    let id = |s: &str| ShardFlags { session_id: Some(s.into()), ..ShardFlags::default() }.resolve(env(&[]), now);
    assert_eq!(id("run-27.a_b").unwrap().session_id.as_deref(), Some("run-27.a_b"));
    assert!(id("a b").unwrap_err().contains("--session-id"));
    assert!(id("").is_err() && id(&"x".repeat(65)).is_err());
    let mut s: BTreeMap<String, String> = [("conc", "8"), ("window", "30s")].map(|(k, v)| (k.into(), v.into())).into();
    let a = derived_session_id(&s, Some(at(1e9)));
    assert_eq!(a, derived_session_id(&s, Some(at(1e9))));
    assert!(a.starts_with("s-") && a.len() == 14, "{a}");
    assert_ne!(a, derived_session_id(&s, Some(at(1e9 + 1.0))), "another start is another session");
    s.insert("seed".into(), "5".into());
    s.insert("shard".into(), "1/2".into());
    assert_eq!(a, derived_session_id(&s, Some(at(1e9))), "the seed and the shard are not part of it");
    s.insert("conc".into(), "16".into());
    assert_ne!(a, derived_session_id(&s, Some(at(1e9))));
    assert_eq!(derived_seed(&a), derived_seed(&a));
    assert!(derived_seed(&a) < 1 << 32);
}
