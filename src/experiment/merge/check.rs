//! What `report merge` refuses before merging anything: a file that is no shard report, shards
//! of another session or shard count, a shard given twice, and shards whose plans differ in
//! anything but the keys each shard sets for itself ([`SHARD_OWN_KEYS`]).

use super::ShardInput;
use crate::report::json::SessionReport;
use crate::report::shard::ShardSection;

/// Settings (`plan.settings`) that differ between the shards of one session by design: the
/// shard's own slice, the session's id and start instant, and its source addresses (each load
/// machine has its own).
pub const SHARD_OWN_KEYS: [&str; 6] = ["shard", "shards", "session-id", "start-at", "source-addrs", "metrics-listen"];

/// Most shards a merged session may have: a merged report lists every shard, given or not.
pub const MAX_SHARDS: u32 = 65_536;

/// The session the inputs share: its id and shard count; an error (one line naming the file
/// and the difference) when they are not shards of one session, or hold what the merge
/// cannot merge yet.
pub(crate) fn session(inputs: &[ShardInput]) -> Result<(String, u32), String> {
    let first = inputs.first().ok_or("report merge needs at least one shard report")?;
    let head = shard_of(first)?;
    if head.count == 0 || head.count > MAX_SHARDS {
        return Err(format!("{}: a shard count of {} is not from 1 to {MAX_SHARDS}", first.file, head.count));
    }
    let mut seen: Vec<Option<&str>> = vec![None; head.count as usize];
    for input in inputs {
        let s = shard_of(input)?;
        let file = &input.file;
        if s.session_id != head.session_id {
            return Err(format!(
                "{file}: shard of session `{}`, not `{}` ({}): merge the shards of one session",
                s.session_id, head.session_id, first.file
            ));
        }
        if s.count != head.count {
            return Err(format!(
                "{file}: shard {}/{}, but {} is of {} shards",
                s.index, s.count, first.file, head.count
            ));
        }
        let slot = seen
            .get_mut(s.index as usize)
            .ok_or_else(|| format!("{file}: shard index {} is not below its count {}", s.index, s.count))?;
        if let Some(other) = slot {
            return Err(format!("{file}: shard {} is given twice (also {other})", s.index));
        }
        *slot = Some(file);
        same_plan(&first.report, &first.file, &input.report, file)?;
        supported(&input.report, file)?;
    }
    Ok((head.session_id.clone(), head.count))
}

fn shard_of(input: &ShardInput) -> Result<&ShardSection, String> {
    input.report.shard.as_ref().ok_or_else(|| {
        let what = if input.report.merge.is_some() { "a merged report" } else { "not a shard report (no `shard`)" };
        format!("{}: {what}; report merge takes the reports of `run --shard i/N`", input.file)
    })
}

/// The settings of `r` that decide what its cells measure, without the shard's own keys.
fn plan_settings(r: &SessionReport) -> impl Iterator<Item = (&String, &String)> {
    r.plan.settings.iter().filter(|(k, _)| !SHARD_OWN_KEYS.contains(&k.as_str()))
}

/// Refuses `b` unless it measured what `a` did: model, target, endpoint, plan kinds, contexts,
/// concurrencies, window and every other plan setting.
fn same_plan(a: &SessionReport, a_file: &str, b: &SessionReport, b_file: &str) -> Result<(), String> {
    let differ = |what: &str, x: String, y: String| {
        Err(format!("{b_file}: {what} is {y}, but {x} in {a_file}: merge the shards of one plan"))
    };
    if a.model != b.model {
        return differ("model", a.model.clone(), b.model.clone());
    }
    if (&a.target.base_url, &a.target.endpoint) != (&b.target.base_url, &b.target.endpoint) {
        let t = |r: &SessionReport| format!("{} ({})", r.target.base_url, r.target.endpoint);
        return differ("the target", t(a), t(b));
    }
    let (pa, pb) = (&a.plan, &b.plan);
    if pa.kinds != pb.kinds {
        return differ("plan", pa.kinds.join(","), pb.kinds.join(","));
    }
    if (&pa.ctx, &pa.conc) != (&pb.ctx, &pb.conc) {
        let m = |p: &crate::report::json::PlanInfo| format!("ctx {:?} conc {:?}", p.ctx, p.conc);
        return differ("the matrix", m(pa), m(pb));
    }
    if pa.window_s != pb.window_s {
        return differ("the window", format!("{} s", pa.window_s), format!("{} s", pb.window_s));
    }
    let (sa, sb): (Vec<_>, Vec<_>) = (plan_settings(a).collect(), plan_settings(b).collect());
    if sa != sb {
        return differ("a setting", setting_diff(&sa, &sb, true), setting_diff(&sa, &sb, false));
    }
    Ok(())
}

type Settings<'a> = [(&'a String, &'a String)];

/// The first setting where `a` and `b` differ, as `key=value` of `a` (`first`) or of `b`.
fn setting_diff(a: &Settings<'_>, b: &Settings<'_>, first: bool) -> String {
    let key = a.iter().chain(b).map(|(k, _)| *k).find(|k| get(a, k) != get(b, k));
    let Some(key) = key else { return "(the same)".into() };
    let v = if first { get(a, key) } else { get(b, key) };
    format!("`{key}={}`", v.unwrap_or_else(|| "(unset)".into()))
}

fn get(s: &Settings<'_>, key: &str) -> Option<String> {
    s.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v.to_string())
}

/// Refuses what the merge does not merge (docs/reports.md §9): sweeps and extension sections
/// other than conversations. `run` refuses to shard a sweep (`--server-cmd`) and an SLO search,
/// so only a report from another version or an edited file holds them.
fn supported(r: &SessionReport, file: &str) -> Result<(), String> {
    let other = r.extensions.iter().find(|e| !super::extension::MERGED_KINDS.contains(&e.kind.as_str()));
    let other = other.map(|e| format!("a `{}` extension section", e.kind));
    let what = [(r.sweep.is_some().then(|| "an engine-config sweep".to_string())), other];
    match what.into_iter().flatten().next() {
        Some(name) => Err(format!(
            "{file}: has {name}, which no sharded run writes (run refuses to shard --server-cmd and --slo-search); report merge merges decode, burst, serve and conversation cells and routing phases"
        )),
        None => Ok(()),
    }
}
