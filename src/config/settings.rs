//! The settings that decide what a session measures, by flag name, as saved in the report's
//! `plan.settings`: `--resume` continues a session only under the same ones.

use super::{PlanKind, RunConfig};
use crate::load::client::redact_url;
use std::collections::BTreeMap;
use std::time::Duration;

/// A duration as the flags accept it back (`30s`, `0.25s`).
fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

fn list<T: ToString>(v: &[T]) -> String {
    v.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "default".into(), |v| v.to_string())
}

impl RunConfig {
    /// Every setting that changes what a cell measures, keyed by its flag (without `--`).
    /// Metrics pages, the poll interval, the report path and the display are left out: they
    /// change how a session is watched, not what it measures.
    pub fn settings(&self) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            s.insert(k.to_string(), v);
        };
        put("base-url", redact_url(&self.base_url));
        put("model", opt(self.model.as_ref()));
        put("endpoint", self.endpoint.as_str().into());
        put("plan", self.plans.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(","));
        put("first-token-timeout", opt(self.first_token_timeout.map(secs)));
        put("idle-timeout", secs(self.idle_timeout));
        if self.plans.contains(&PlanKind::Decode) {
            put("ctx", list(&self.ctx));
            put("conc", list(&self.conc));
            put("window", secs(self.window));
            put("warmup-timeout", secs(self.decode.warmup_timeout));
            put("settle", secs(self.decode.settle));
            put("kv-oversubscribe", self.decode.kv_oversubscribe.to_string());
            put("run-burst", self.decode.run_burst.to_string());
            put("burst-tokens", self.decode.burst_tokens.to_string());
            put("max-tokens", opt(self.decode.max_tokens));
            put("min-stream-tokens", self.decode.min_stream_tokens.to_string());
            if self.decode.drain {
                // Only when set: reports from before the flag keep comparing settings equal.
                put("drain", "true".into());
            }
        }
        if !self.rates.is_empty() {
            put("request-rate", list(&self.rates));
            put("burstiness", self.burstiness.to_string());
        }
        if self.plans.contains(&PlanKind::Decode) && !self.rates.is_empty() {
            // Open-loop decode requests ask --output tokens and draw their gaps from --seed.
            put("output", self.routing.output.to_string());
            put("seed", self.routing.seed.to_string());
        }
        if self.plans.contains(&PlanKind::Routing) {
            self.routing_settings(&mut put);
        }
        // Goodput is judged in every experiment; a chosen SLO is a setting (the default one is
        // left out, so sessions saved before goodput was recorded still resume).
        if self.slo_source.is_chosen() {
            put("goodput", self.slo.goodput_arg());
        }
        if self.plans.contains(&PlanKind::Serve) {
            self.serve_settings(&mut put);
        }
        if let Some(search) = &self.slo_search {
            search.settings(&mut put);
        }
        if self.plans.contains(&PlanKind::Conversation) {
            self.conversation_settings(&mut put);
        }
        // Only when repeated, so sessions of one run per cell (and those saved before the flag)
        // still resume.
        if self.num_runs != 1 {
            put("num-runs", self.num_runs.to_string());
        }
        // Only when given (sessions saved before the flag still resume).
        if !self.source_addrs.is_empty() {
            put("source-addrs", list(&self.source_addrs));
        }
        // A sharded session's (issue 27): only when given, so unsharded reports are unchanged.
        // `report merge` expects `shard` to differ between the shards and nothing else.
        if let Some(shard) = self.shard {
            put("shard", shard.to_string());
        }
        if let Some(id) = &self.session_id {
            put("session-id", id.clone());
        }
        if let Some(t) = self.start_at {
            let unix = t.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
            put("start-at", format!("{unix:.3}"));
        }
        if let Some(t) = self.request_timeout {
            put("request-timeout", humantime::format_duration(t).to_string());
        }
        s
    }

    fn conversation_settings(&self, put: &mut impl FnMut(&str, String)) {
        let c = &self.conversation;
        put("conc", list(&self.conc));
        put("output", self.serve.output_len.to_string());
        put("seed", self.serve.seed.to_string());
        put("num-conversations", c.conversations.to_string());
        put("turns", c.turns.to_string());
        put("turn-input-len", c.user_tokens.to_string());
        put("history", c.history.as_str().into());
        put("think-time", c.think.to_string());
        if let Some(h) = &c.session_header {
            put("session-header", h.clone());
        }
        if let Some(d) = &c.dataset {
            put("dataset-name", d.format.name().to_string());
            put("dataset-sha256", d.sampled.sha256.clone());
        }
    }

    fn serve_settings(&self, put: &mut impl FnMut(&str, String)) {
        let v = &self.serve;
        put("ctx", list(&self.ctx));
        put("conc", list(&self.conc));
        put("count", v.num_prompts.to_string());
        put("output", v.output_len.to_string());
        put("seed", v.seed.to_string());
        // Only when spread, so sessions saved before the flag existed still resume.
        if v.range_ratio != crate::config::serve::RangeRatio::FIXED {
            put("random-range-ratio", v.range_ratio.get().to_string());
        }
        // The file by its content: a moved copy still resumes, an edited one does not.
        if let Some(d) = &v.dataset {
            put("dataset-name", d.format.name().to_string());
            put("dataset-sha256", d.sampled.sha256.clone());
            put("dataset-output-len", opt(d.output_len));
            if let Some(t) = &d.tokenizer {
                put("tokenizer-sha256", t.sha256.clone());
            }
        }
        if let Some(t) = &v.trace {
            put("dataset-name", t.format.name().to_string());
            put("dataset-sha256", t.trace.sha256.clone());
            put("replay-speed", t.speed.get().to_string());
        }
        if let Some(p) = &v.prefix_repetition {
            put("dataset-name", "prefix_repetition".into());
            let shape = format!("prefix {} suffix {} prefixes {}", p.prefix_len, p.suffix_len, p.num_prefixes);
            put("prefix-repetition", shape);
        }
        let slo = v.goodput.map(|g| {
            let ms = |d: Option<Duration>, k: &str| d.map(|d| format!("{k}:{}", d.as_secs_f64() * 1e3));
            [ms(g.ttft, "ttft"), ms(g.tpot, "tpot"), ms(g.e2e, "e2el")]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ")
        });
        put("goodput", opt(slo));
    }

    fn routing_settings(&self, put: &mut impl FnMut(&str, String)) {
        let r = &self.routing;
        put("routes", list(&r.routes));
        put("scenarios", list(&r.scenarios));
        put("rounds", r.rounds.to_string());
        put("count", r.count.to_string());
        put("rps", r.rps.to_string());
        put("arrival", format!("{:?}", r.arrival).to_ascii_lowercase());
        put("output", r.output.to_string());
        put("prompt-tokens", r.prompt_tokens.to_string());
        put("families", r.families.to_string());
        put("priming-candidates", r.priming_candidates.to_string());
        if let Some(d) = r.priming_slot {
            put("priming-slot", secs(d));
        }
        put("slo-ttft", opt(self.slo.ttft.map(secs)));
        put("slo-tpot", opt(self.slo.tpot.map(secs)));
        put("seed", r.seed.to_string());
    }
}

/// The first setting where `saved` and `now` differ, as one line naming the flag and both
/// values; None when they agree.
pub(crate) fn first_difference(saved: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Option<String> {
    let keys = saved.keys().chain(now.keys().filter(|k| !saved.contains_key(*k)));
    keys.map(|k| (k, saved.get(k), now.get(k))).find(|(_, a, b)| a != b).map(|(k, a, b)| {
        let show = |v: Option<&String>| v.map_or_else(|| "(not set)".to_string(), |v| v.clone());
        format!("it was run with --{k} {}, this run has --{k} {}", show(a), show(b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::run::tests_support::config;

    #[test]
    fn the_same_flags_agree_and_a_changed_one_is_named() {
        let a = config();
        assert_eq!(first_difference(&a.settings(), &a.settings()), None);
        let mut b = config();
        b.window = Duration::from_secs(10);
        let d = first_difference(&a.settings(), &b.settings()).unwrap();
        assert_eq!(d, "it was run with --window 30s, this run has --window 10s");
        let mut c = config();
        c.conc = vec![1, 2];
        assert!(first_difference(&a.settings(), &c.settings()).unwrap().contains("--conc 1,2,4,8,16"));
    }

    #[test]
    fn routing_settings_appear_only_with_the_routing_plan() {
        let mut a = config();
        assert!(!a.settings().contains_key("rps"));
        a.plans.push(PlanKind::Routing);
        let before = a.settings();
        a.routing.rps = 3.2;
        let d = first_difference(&before, &a.settings()).unwrap();
        assert_eq!(d, "it was run with --rps 1.6, this run has --rps 3.2");
        assert_eq!(before["rps"], "1.6");
    }

    #[test]
    fn repetitions_are_a_setting_only_when_repeated() {
        let one = config();
        assert!(!one.settings().contains_key("num-runs"), "one run per cell records nothing");
        let three = RunConfig { num_runs: 3, ..config() };
        assert_eq!(three.settings()["num-runs"], "3");
        let d = first_difference(&three.settings(), &one.settings()).unwrap();
        assert_eq!(d, "it was run with --num-runs 3, this run has --num-runs (not set)");
    }

    #[test]
    fn watching_settings_do_not_count_and_the_key_is_never_saved() {
        let a = config();
        let mut b = config();
        b.poll_interval = Duration::from_secs(1);
        b.out = Some("x.json".into());
        b.api_key = Some(crate::load::request::ApiKey::new("sk-secret".into()));
        b.base_url = "http://user:pw@127.0.0.1:9".into();
        assert_eq!(first_difference(&a.settings(), &b.settings()), None);
        let text = format!("{:?}", b.settings());
        assert!(!text.contains("sk-secret") && !text.contains("pw@"), "{text}");
    }
}
