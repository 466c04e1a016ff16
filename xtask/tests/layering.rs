//! The workspace's layering, checked from `cargo metadata`: dependencies point down only, and
//! `zarr-core` pulls in no async runtime and no I/O crate.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Each library crate's layer; a normal dependency must go to a crate listed in `ALLOWED`.
const LAYERS: [(&str, u8); 8] = [
    ("zarr-core", 0),
    ("zarr-store", 0),
    ("zarr-codecs", 1),
    ("zarr-sharding", 2),
    ("zarr-vlen", 2),
    ("zarr-array", 3),
    ("zarr", 4),
    ("zarr-cli", 5),
];

/// The workspace crates each crate may depend on (normal and build dependencies).
const ALLOWED: [(&str, &[&str]); 8] = [
    ("zarr-core", &[]),
    ("zarr-store", &[]),
    ("zarr-codecs", &["zarr-core"]),
    ("zarr-sharding", &["zarr-core", "zarr-store", "zarr-codecs"]),
    ("zarr-vlen", &["zarr-core", "zarr-codecs"]),
    (
        "zarr-array",
        &[
            "zarr-core",
            "zarr-store",
            "zarr-codecs",
            "zarr-sharding",
            "zarr-vlen",
        ],
    ),
    (
        "zarr",
        &[
            "zarr-core",
            "zarr-store",
            "zarr-codecs",
            "zarr-sharding",
            "zarr-vlen",
            "zarr-array",
        ],
    ),
    ("zarr-cli", &["zarr"]),
];

/// Crates that mean an async runtime or I/O; none may be reachable from `zarr-core`.
const NOT_IN_CORE: [&str; 14] = [
    "tokio",
    "mio",
    "async-std",
    "smol",
    "futures",
    "futures-util",
    "futures-io",
    "async-trait",
    "object_store",
    "reqwest",
    "hyper",
    "rayon",
    "zarr-store",
    "socket2",
];

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn layer(name: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

#[test]
fn dependencies_point_down() {
    let meta = metadata();
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for package in meta["packages"].as_array().unwrap() {
        if !members.contains(package["id"].as_str().unwrap()) {
            continue;
        }
        let name = package["name"].as_str().unwrap();
        let Some(own_layer) = layer(name) else {
            continue;
        };
        seen.insert(name.to_owned());
        let allowed = ALLOWED.iter().find(|(n, _)| *n == name).unwrap().1;
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            let Some(dep_layer) = layer(dep_name) else {
                continue;
            };
            match dep["kind"].as_str() {
                Some("dev") => {
                    if dep_layer > own_layer || (dep_name == "zarr" && name != "zarr-cli") {
                        problems.push(format!("{name} has a dev-dependency up to {dep_name}"));
                    }
                }
                _ => {
                    if !allowed.contains(&dep_name) {
                        problems.push(format!(
                            "{name} depends on {dep_name}, which the layering forbids"
                        ));
                    }
                }
            }
        }
    }
    assert_eq!(
        seen.len(),
        LAYERS.len(),
        "every layered crate is a workspace member: {seen:?}"
    );
    assert!(
        problems.is_empty(),
        "layering broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn zarr_core_has_no_runtime_or_io() {
    let meta = metadata();
    let nodes: BTreeMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let core = names
        .iter()
        .find(|(_, n)| **n == "zarr-core")
        .map(|(id, _)| *id)
        .expect("zarr-core is in the workspace");
    // Walk normal (non-dev, non-build) dependencies.
    let mut stack = vec![core];
    let mut reached = BTreeSet::new();
    while let Some(id) = stack.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            let dep_id = dep["pkg"].as_str().unwrap();
            if normal && reached.insert(names[dep_id]) {
                stack.push(dep_id);
            }
        }
    }
    let bad: Vec<_> = reached
        .iter()
        .filter(|n| NOT_IN_CORE.contains(n) || n.starts_with("tokio") || n.starts_with("futures"))
        .collect();
    assert!(
        bad.is_empty(),
        "zarr-core reaches {bad:?} (its dependencies: {reached:?})"
    );
    assert!(
        reached.contains("serde_json"),
        "the walk found zarr-core's dependencies"
    );
}

/// zarrs is the comparison harness's peer, nothing else's: only `zarr-benches` may depend on
/// it (and only the benches crate's binary uses it).
#[test]
fn zarrs_is_a_dependency_of_the_bench_crate_only() {
    let meta = metadata();
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    let mut users = Vec::new();
    for package in meta["packages"].as_array().unwrap() {
        if !members.contains(package["id"].as_str().unwrap()) {
            continue;
        }
        let name = package["name"].as_str().unwrap();
        if package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|dep| dep["name"].as_str().is_some_and(|d| d.starts_with("zarrs")))
        {
            users.push(name.to_owned());
        }
    }
    assert_eq!(users, ["zarr-benches"], "crates depending on zarrs");
}
