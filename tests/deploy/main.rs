//! The `deploy` suite (`cargo test --test deploy`): the files under `deploy/` a user applies.
//! Every Kubernetes manifest is read into the Kubernetes API's own types (k8s-openapi) with any
//! field those types do not have reported as an error, so a misspelt field fails here and not
//! on a cluster ([`manifests`]); every kustomization points at files that exist, and what it
//! assembles parses too ([`kustomize`]); the shard Job runs only flags the binary knows, or the
//! scale-out flags issue 27 names, and its plan files parse as `run --config` reads them
//! ([`job_args`]). Every shell script parses and passes shellcheck ([`scripts`]); collect.sh
//! runs against a `kubectl` shim ([`collect`]) and run-shards.sh on loopback with `ssh` and
//! `scp` shims against the simulator ([`ssh_run`]).

#[path = "../common/mod.rs"]
mod common;

mod collect;
mod job_args;
mod kustomize;
mod manifests;
mod scripts;
mod ssh_run;
