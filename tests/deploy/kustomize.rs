//! The kustomize files: each read with unknown fields refused, every path they name present
//! (start.env excepted: `deploy/k8s/start.sh` writes it before each apply), each replacement's
//! source and target fields present, the Service finding the Job's pods and Prometheus told the
//! port the shard listens on. When `kubectl` (or `kustomize`) is on PATH, the example overlay is
//! also assembled and every document of the result parsed into the Kubernetes types.

use crate::manifests::{Manifest, base_job, deploy_dir, documents, is_kustomization, parse_all, yaml_files};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file start.sh writes into an overlay (START_AT, SESSION_ID), ignored by git.
const WRITTEN_BY_START: &str = "start.env";

/// The parts of a kustomization (or component) the deploy files use; any other key fails.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Kustomization {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    components: Vec<String>,
    #[serde(default)]
    images: Vec<Image>,
    #[serde(default)]
    config_map_generator: Vec<Generator>,
    #[serde(default)]
    replacements: Vec<Replacement>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Image {
    name: String,
    new_name: Option<String>,
    new_tag: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Generator {
    name: String,
    behavior: Option<String>,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    literals: Vec<String>,
    #[serde(default)]
    envs: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Replacement {
    source: Selector,
    targets: Vec<Target>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Selector {
    kind: String,
    name: String,
    field_path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Target {
    select: TargetSelect,
    field_paths: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetSelect {
    kind: String,
    name: String,
}

fn read(path: &Path) -> Kustomization {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn kustomizations() -> Vec<PathBuf> {
    yaml_files(&deploy_dir().join("k8s")).into_iter().filter(|p| is_kustomization(p)).collect()
}

/// Whether `entry` of a `resources`/`components` list exists: a file, or a folder holding a
/// kustomization.
fn exists(dir: &Path, entry: &str) -> bool {
    let p = dir.join(entry);
    p.is_file() || p.join("kustomization.yaml").is_file()
}

#[test]
fn every_kustomization_names_files_that_exist() {
    let all = kustomizations();
    assert!(all.len() >= 3, "base, component and example overlay: {all:?}");
    for path in all {
        let (k, dir) = (read(&path), path.parent().expect("a folder"));
        let api = match k.kind.as_str() {
            "Kustomization" => "kustomize.config.k8s.io/v1beta1",
            "Component" => "kustomize.config.k8s.io/v1alpha1",
            other => panic!("{}: kind {other}", path.display()),
        };
        assert_eq!(k.api_version, api, "{}", path.display());
        for entry in k.resources.iter().chain(&k.components) {
            assert!(exists(dir, entry), "{}: {entry} does not exist", path.display());
        }
        for g in &k.config_map_generator {
            assert!(
                matches!(g.behavior.as_deref(), None | Some("create" | "merge" | "replace")),
                "{}: {g:?}",
                path.display()
            );
            for file in g.files.iter().chain(&g.envs).filter(|f| *f != WRITTEN_BY_START) {
                assert!(dir.join(file).is_file(), "{}: {} does not exist", path.display(), file);
            }
        }
        if let Some(ns) = &k.namespace {
            let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
            assert!(!ns.is_empty() && ns.len() <= 63 && ns.chars().all(ok), "{}: namespace {ns}", path.display());
        }
        let images: Vec<String> = base_job_images();
        for image in &k.images {
            assert!(images.contains(&image.name), "{}: no container runs {}", path.display(), image.name);
            assert!(
                image.new_name.is_some() || image.new_tag.is_some(),
                "{}: {image:?} changes nothing",
                path.display()
            );
        }
    }
}

/// The images the base Job's containers run, without tag or digest (as kustomize's `images`
/// name them).
fn base_job_images() -> Vec<String> {
    let pod = base_job().spec.expect("spec").template.spec.expect("pod spec");
    let untagged = |image: String| {
        let image = image.split('@').next().unwrap_or_default().to_string();
        match (image.rfind(':'), image.rfind('/')) {
            (Some(colon), slash) if slash.is_none_or(|s| s < colon) => image[..colon].to_string(),
            _ => image,
        }
    };
    pod.containers.into_iter().filter_map(|c| c.image).map(untagged).collect()
}

#[test]
fn the_example_namespace_is_the_one_the_docs_and_collect_sh_use() {
    let overlay = read(&deploy_dir().join("k8s/overlays/example/kustomization.yaml"));
    let ns = overlay.namespace.expect("the example overlay sets a namespace");
    let collect = std::fs::read_to_string(deploy_dir().join("k8s/collect.sh")).expect("collect.sh");
    assert!(collect.contains(&format!("ns=${{1:-{ns}}}")), "collect.sh defaults to {ns}");
    let readme = std::fs::read_to_string(deploy_dir().join("README.md")).expect("deploy/README.md");
    assert!(readme.contains(&format!("kubectl create namespace {ns}")), "deploy/README.md creates {ns}");
}

#[test]
fn start_sh_writes_what_the_overlay_reads_and_git_ignores_it() {
    let k8s = deploy_dir().join("k8s");
    let start = std::fs::read_to_string(k8s.join("start.sh")).expect("start.sh");
    assert!(start.contains(&format!("\"$overlay/{WRITTEN_BY_START}\"")), "start.sh writes {WRITTEN_BY_START}");
    for var in ["START_AT=", "SESSION_ID="] {
        assert!(start.contains(var), "start.sh writes {var}");
    }
    let ignore = std::fs::read_to_string(k8s.join(".gitignore")).expect("deploy/k8s/.gitignore");
    assert!(ignore.lines().any(|l| l.trim() == WRITTEN_BY_START), "{WRITTEN_BY_START} is git-ignored");
}

/// The value at a dotted path (`spec.completions`) of a YAML document.
fn at<'a>(doc: &'a serde_norway::Value, path: &str) -> Option<&'a serde_norway::Value> {
    path.split('.').try_fold(doc, |v, key| v.get(key))
}

#[test]
fn replacements_read_a_generated_key_and_write_fields_the_job_has() {
    let job_text = std::fs::read_to_string(deploy_dir().join("k8s/base/job.yaml")).expect("job.yaml");
    let job = documents(&job_text).expect("job.yaml").remove(0);
    let base = read(&deploy_dir().join("k8s/base/kustomization.yaml"));
    let generated: BTreeMap<&str, &Generator> =
        base.config_map_generator.iter().map(|g| (g.name.as_str(), g)).collect();
    let mut seen = 0;
    for r in kustomizations().iter().flat_map(|p| read(p).replacements) {
        let key = r.source.field_path.strip_prefix("data.").expect("a ConfigMap's data key");
        let g = generated
            .get(r.source.name.as_str())
            .unwrap_or_else(|| panic!("{} is generated in the base", r.source.name));
        assert_eq!(r.source.kind, "ConfigMap");
        assert!(g.literals.iter().any(|l| l.starts_with(&format!("{key}="))), "the base sets {key}");
        for t in &r.targets {
            assert_eq!((t.select.kind.as_str(), t.select.name.as_str()), ("Job", "llm-decode-bench"));
            for f in &t.field_paths {
                assert!(at(&job, f).is_some_and(|v| v.is_u64()), "job.yaml has the number {f}");
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 2, "SHARDS is copied into completions and parallelism");
}

#[test]
fn the_service_finds_the_shards_and_prometheus_the_port() {
    let services = parse_all(&std::fs::read_to_string(deploy_dir().join("k8s/base/service.yaml")).expect("service"));
    let Ok([Manifest::Service(svc)]) = services.as_deref() else { panic!("one Service: {services:?}") };
    let spec = svc.spec.as_ref().expect("spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "headless");
    let job = base_job();
    let template = job.spec.as_ref().expect("spec").template.clone();
    let meta = template.metadata.expect("pod metadata");
    let labels = meta.labels.expect("pod labels");
    for (k, v) in spec.selector.as_ref().expect("selector") {
        assert_eq!(labels.get(k), Some(v), "pod label {k}");
    }
    let pod = template.spec.expect("pod spec");
    assert_eq!(pod.subdomain.as_deref(), svc.metadata.name.as_deref(), "pods named under the Service");
    let notes = meta.annotations.expect("annotations");
    assert_eq!(notes.get("prometheus.io/scrape").map(String::as_str), Some("true"));
    assert_eq!(notes.get("prometheus.io/path").map(String::as_str), Some("/metrics"));
    let port = notes.get("prometheus.io/port").expect("scrape port");
    let shard = pod.containers.iter().find(|c| c.name == "shard").expect("the shard container");
    let listen =
        shard.args.iter().flatten().find_map(|a| a.strip_prefix("--metrics-listen=")).expect("--metrics-listen");
    assert!(listen.ends_with(&format!(":{port}")), "--metrics-listen {listen} on port {port}");
    let declared = shard.ports.iter().flatten().map(|p| p.container_port.to_string()).collect::<Vec<_>>();
    assert!(declared.contains(port), "container port {port} declared: {declared:?}");
}

/// `kubectl kustomize DIR` (or `kustomize build DIR`), None when neither is installed.
fn render(dir: &Path) -> Option<String> {
    let tries: [(&str, &[&str]); 2] = [("kubectl", &["kustomize"]), ("kustomize", &["build"])];
    for (tool, args) in tries {
        let Ok(out) = Command::new(tool).args(args).arg(dir).output() else { continue };
        assert!(out.status.success(), "{tool} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        return Some(String::from_utf8(out.stdout).expect("utf-8"));
    }
    None
}

/// A copy of `from` (files and folders) under `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let path = entry.expect("entry").path();
        let dest = to.join(path.file_name().expect("name"));
        match path.is_dir() {
            true => copy_tree(&path, &dest),
            false => drop(std::fs::copy(&path, &dest).expect("copy")),
        }
    }
}

#[test]
fn the_example_overlay_assembles_into_valid_manifests() {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_tree(&deploy_dir().join("k8s"), tmp.path());
    let overlay = tmp.path().join("overlays/example");
    std::fs::write(overlay.join(WRITTEN_BY_START), "START_AT=1900000000\nSESSION_ID=test-1\n").expect("start.env");
    let Some(text) = render(&overlay) else {
        eprintln!("neither kubectl nor kustomize is installed: the assembled overlay is not checked");
        return;
    };
    let all = parse_all(&text).unwrap_or_else(|e| panic!("the assembled overlay: {e}\n{text}"));
    let maps: BTreeMap<String, BTreeMap<String, String>> = (all.iter())
        .filter_map(|m| match m {
            Manifest::ConfigMap(c) => {
                Some((c.metadata.name.clone().expect("name"), c.data.clone().unwrap_or_default()))
            }
            _ => None,
        })
        .collect();
    let job = all.iter().find_map(|m| if let Manifest::Job(j) = m { Some(j) } else { None }).expect("a Job");
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)), "the example's SHARDS=4");
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    let pod = spec.template.spec.as_ref().expect("pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let shard = pod.containers.iter().find(|c| c.name == "shard").expect("shard container");
    let run_map = shard.env_from.iter().flatten().find_map(|e| e.config_map_ref.as_ref()).expect("envFrom");
    let run = maps.get(&run_map.name).unwrap_or_else(|| panic!("{} in {maps:?}", run_map.name));
    assert_eq!(run.get("SHARDS").map(String::as_str), Some("4"));
    assert_eq!(run.get("SESSION_ID").map(String::as_str), Some("test-1"));
    for volume in pod.volumes.iter().flatten().filter_map(|v| v.config_map.as_ref()) {
        assert!(maps.contains_key(&volume.name), "volume's ConfigMap {} is generated", volume.name);
    }
    assert!(shard.image.as_deref().is_some_and(|i| i.starts_with("registry.example.com/")), "{:?}", shard.image);
}

#[test]
fn the_reports_container_holds_the_file_the_shard_writes() {
    let pod = base_job().spec.expect("spec").template.spec.expect("pod spec");
    assert_eq!(pod.share_process_namespace, Some(true), "the reports container waits for the shard's process");
    let find =
        |name: &str| pod.containers.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("container {name}"));
    let (shard, holder) = (find("shard"), find("reports"));
    let out = shard.args.iter().flatten().find_map(|a| a.strip_prefix("--out=")).expect("--out");
    let script = holder.args.iter().flatten().cloned().collect::<String>();
    // Kubernetes turns `$$` into `$`, so the shell reads $JOB_COMPLETION_INDEX from the pod.
    let held = out.replace("$(JOB_COMPLETION_INDEX)", "$$JOB_COMPLETION_INDEX");
    assert!(script.contains(&format!("report={held}")), "{script}");
    let mount = |c: &k8s_openapi::api::core::v1::Container| {
        c.volume_mounts.iter().flatten().find(|m| m.mount_path == "/reports").map(|m| m.name.clone())
    };
    assert!(
        out.starts_with("/reports/") && mount(shard).is_some() && mount(shard) == mount(holder),
        "one reports volume"
    );
}
