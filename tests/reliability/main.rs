//! The `reliability` suite (issue 10's proof; `cargo test --test reliability`): exit codes,
//! signals and lost sessions ([`exits`]), bad targets ([`targets`]), secrets and hidden
//! diagnostics ([`diagnostics`]), a replica taken down and back mid-session ([`replica`]),
//! `--resume` ([`resume`], with repetitions [`resume_runs`]), files never replaced silently ([`clobber`]), servers that close
//! their connections after streams ([`connections`]), servers that misbehave on purpose
//! ([`hostile`]), a closed stdout or stderr ([`pipes`]), a target that lists its model and never
//! answers a POST ([`wedged`]), extreme numbers ([`extremes`]), terminal escapes from the
//! server ([`escapes`]) and the servers a sweep starts and stops ([`sweep`]),
//! against the simulator and small servers of the tests' own, all on loopback or in process.

#[path = "../common/mod.rs"]
mod common;

mod clobber;
mod connections;
mod diagnostics;
mod escapes;
mod exits;
mod extremes;
mod hostile;
mod pipes;
mod replica;
mod resume;
mod resume_runs;
mod sweep;
mod targets;
mod wedged;
