//! Kubernetes manifests read into k8s-openapi's types. Those types skip fields they do not
//! have (their `Deserialize` reads an unknown key as `IgnoredAny`), so `serde_ignored` names
//! every skipped field and [`parse_doc`] fails on any: a typo such as `completionMod` is an
//! error, as `kubectl apply --validate=strict` would make it on a cluster.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use serde::de::DeserializeOwned;
use serde_norway::Value;
use std::path::{Path, PathBuf};

/// One manifest, in the type its `apiVersion` and `kind` name.
#[derive(Debug)]
pub enum Manifest {
    Job(Box<Job>),
    Service(Box<Service>),
    ConfigMap(Box<ConfigMap>),
}

/// The folder of the deployment files.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// Every `.yaml` file under `dir`, recursively, sorted.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            out.extend(yaml_files(&path));
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Whether `path` is a kustomize file rather than a Kubernetes manifest.
pub fn is_kustomization(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "kustomization.yaml")
}

/// The documents of a (multi-document) YAML text, empty documents left out.
pub fn documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for doc in serde_norway::Deserializer::from_str(text) {
        let value = <Value as serde::Deserialize>::deserialize(doc).map_err(|e| e.to_string())?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// `value` as a `T`, an error naming every field `T` does not have.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    let mut ignored = Vec::new();
    // serde_ignored writes `?` for each optional value on the way; the field path is the rest.
    let mut note = |path: serde_ignored::Path| {
        ignored.push(path.to_string().split('.').filter(|s| *s != "?").collect::<Vec<_>>().join("."))
    };
    let parsed = serde_ignored::deserialize(value, &mut note).map_err(|e| e.to_string())?;
    match ignored.is_empty() {
        true => Ok(parsed),
        false => Err(format!("unknown field(s): {}", ignored.join(", "))),
    }
}

/// One document as the Kubernetes type its `apiVersion` and `kind` name.
pub fn parse_doc(doc: &Value) -> Result<Manifest, String> {
    let field = |name: &str| doc.get(name).and_then(Value::as_str).unwrap_or("").to_string();
    let (api, kind) = (field("apiVersion"), field("kind"));
    match (api.as_str(), kind.as_str()) {
        ("batch/v1", "Job") => typed(doc.clone()).map(|j| Manifest::Job(Box::new(j))),
        ("v1", "Service") => typed(doc.clone()).map(|s| Manifest::Service(Box::new(s))),
        ("v1", "ConfigMap") => typed(doc.clone()).map(|c| Manifest::ConfigMap(Box::new(c))),
        _ => Err(format!("apiVersion {api:?} kind {kind:?}: not a kind this test reads (add its type to parse_doc)")),
    }
}

/// Every document of a YAML text, parsed; errors name the document.
pub fn parse_all(text: &str) -> Result<Vec<Manifest>, String> {
    let docs = documents(text)?;
    let parsed = docs.iter().enumerate().map(|(i, d)| parse_doc(d).map_err(|e| format!("document {}: {e}", i + 1)));
    parsed.collect()
}

/// The manifests of one file (panics naming the file).
pub fn parse_file(path: &Path) -> Vec<Manifest> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_all(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The base's Job (deploy/k8s/base/job.yaml).
pub fn base_job() -> Job {
    let path = deploy_dir().join("k8s/base/job.yaml");
    match parse_file(&path).into_iter().next() {
        Some(Manifest::Job(job)) => *job,
        other => panic!("{}: expected one Job, got {other:?}", path.display()),
    }
}

#[test]
fn every_manifest_under_deploy_parses_into_the_kubernetes_types() {
    let files: Vec<PathBuf> = yaml_files(&deploy_dir()).into_iter().filter(|p| !is_kustomization(p)).collect();
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    assert!(names.iter().any(|n| n.ends_with("k8s/base/job.yaml")), "no Job among {names:?}");
    assert!(names.iter().any(|n| n.ends_with("k8s/base/service.yaml")), "no Service among {names:?}");
    for path in files {
        assert!(!parse_file(&path).is_empty(), "{}: no document", path.display());
    }
}

#[test]
fn a_misspelt_field_fails_at_any_depth() {
    let text = std::fs::read_to_string(deploy_dir().join("k8s/base/job.yaml")).expect("job.yaml");
    assert!(parse_all(&text).is_ok(), "the unchanged Job parses");
    let typos = [
        ("completionMode:", "completionMod:", "spec.completionMod"),
        ("readOnlyRootFilesystem:", "readOnlyRootFileSystem:", "readOnlyRootFileSystem"),
        ("containerPort:", "containerport:", "containerport"),
        ("sizeLimit:", "sizelimit:", "sizelimit"),
    ];
    for (right, wrong, named) in typos {
        assert!(text.contains(right), "job.yaml has {right}");
        let err = parse_all(&text.replacen(right, wrong, 1)).expect_err(wrong);
        assert!(err.contains("unknown field") && err.contains(named), "{wrong}: {err}");
    }
}

#[test]
fn a_wrong_kind_api_version_or_type_fails() {
    let text = std::fs::read_to_string(deploy_dir().join("k8s/base/service.yaml")).expect("service.yaml");
    assert!(parse_all(&text).is_ok(), "the unchanged Service parses");
    for (right, wrong) in
        [("apiVersion: v1", "apiVersion: v2"), ("kind: Service", "kind: Servce"), ("port: 9464", "port: [9464]")]
    {
        assert!(text.contains(right), "service.yaml has {right}");
        assert!(parse_all(&text.replacen(right, wrong, 1)).is_err(), "{wrong} was accepted");
    }
}

#[test]
fn several_documents_in_one_file_are_each_checked() {
    let good = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {K: v}\n";
    let two = format!("{good}---\n{}", good.replace("data:", "dta:"));
    assert_eq!(parse_all(&format!("{good}---\n{good}")).map(|m| m.len()), Ok(2));
    let err = parse_all(&two).expect_err("the second document's typo");
    assert!(err.starts_with("document 2") && err.contains("dta"), "{err}");
}
