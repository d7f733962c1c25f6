//! Which real gateway the simulated one imitates, and the worker-selection policy of the router modes.

use std::fmt;

/// The gateway product whose behaviour the simulated gateway reproduces (docs/protocol.md §4, §5, §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum GatewayMode {
    /// AIBrix gateway plugin: `routing-strategy` header, `target-pod` answer, `aibrix_*`/`gateway_*` metrics.
    #[default]
    #[value(name = "aibrix")]
    Aibrix,
    /// vllm-router 0.1.17: own policy, strips `continuous_usage_stats`, no worker header, `vllm_router_*` metrics.
    #[value(name = "vllm-router")]
    VllmRouter,
    /// sglang-router 0.3.2: like vllm-router, plus `/workers`, `/get_loads`, `/v1/models` = `unknown`, `smg_*` metrics.
    #[value(name = "sglang-router")]
    SglangRouter,
}

impl GatewayMode {
    /// Stable name, as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Aibrix => "aibrix",
            Self::VllmRouter => "vllm-router",
            Self::SglangRouter => "sglang-router",
        }
    }

    /// True for the vllm-router and sglang-router modes.
    pub fn is_router(self) -> bool {
        !matches!(self, Self::Aibrix)
    }
}

impl fmt::Display for GatewayMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a router-mode gateway picks the worker of a request (its configured `--policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RouterPolicy {
    /// Workers in turn.
    #[default]
    #[value(name = "round_robin")]
    RoundRobin,
    /// A uniformly random worker.
    #[value(name = "random")]
    Random,
    /// Prefix-affinity routing (the simulator reuses its AIBrix prefix-cache router for it).
    #[value(name = "cache_aware")]
    CacheAware,
}

impl RouterPolicy {
    /// The policy name as the routers spell it (`round_robin`, `random`, `cache_aware`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RoundRobin => "round_robin",
            Self::Random => "random",
            Self::CacheAware => "cache_aware",
        }
    }
}

impl fmt::Display for RouterPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn names_parse_as_on_the_command_line() {
        for m in [GatewayMode::Aibrix, GatewayMode::VllmRouter, GatewayMode::SglangRouter] {
            assert_eq!(GatewayMode::from_str(m.as_str(), false), Ok(m));
        }
        for p in [RouterPolicy::RoundRobin, RouterPolicy::Random, RouterPolicy::CacheAware] {
            assert_eq!(RouterPolicy::from_str(p.as_str(), false), Ok(p));
        }
        assert!(GatewayMode::from_str("envoy", false).is_err());
        assert!(!GatewayMode::default().is_router() && GatewayMode::SglangRouter.is_router());
    }
}
