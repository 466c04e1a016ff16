//! Turning a TARGET argument (a local path or a URL, plus `--path`) into a store and a node
//! path.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use zarr::array::{Array, Node};
use zarr::metadata::NodePath;
use zarr::store::{
    FilesystemOptions, FilesystemStore, ListableStore as _, N5Store, ObjectStoreAdapter,
    ParquetReferences, ReadableStore as _, ReadableStoreExt as _, ReferenceStore, References,
    Store, StoreKey, StorePrefix, ZipStore,
};

use crate::TargetArgs;

/// A resolved target: the store, and the node's path inside it.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The store.
    pub(crate) store: Arc<dyn Store>,
    /// The node path (`/` for the root).
    pub(crate) path: String,
    /// How to name the target in messages: what the user typed.
    pub(crate) display: String,
    /// Whether `display` already names the node (a local path without `--path`).
    display_is_node: bool,
    /// Where the node is: to tell whether two targets overlap.
    location: Location,
    /// The directories that resolving the target created (opening a local store creates its
    /// directory): `(the store's directory, the outermost one created)`.
    created: Option<(PathBuf, PathBuf)>,
    /// The zip archive the store is, if it is one: to complete it after writing.
    zip: Option<Zip>,
    /// Whether the store is an N5 container (read and written through `N5Store`).
    pub(crate) n5: bool,
}

/// A zip archive opened as a target.
#[derive(Debug, Clone)]
struct Zip {
    store: ZipStore,
    path: PathBuf,
    /// Whether resolving the target created the file.
    created: bool,
}

/// Where a target's node is: a directory (the store's resolved root and the node's names
/// below it), or a URL with the node path appended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Location {
    Local(PathBuf),
    Url(Vec<String>),
}

impl Location {
    /// The node at `path` below the store at `url`.
    fn at_url(url: &str, path: &str) -> Self {
        Self::Url(
            url.split('/')
                .chain(path.split('/'))
                .filter(|part| !part.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }
}

/// What a target to be written holds before the command writes anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Occupant {
    /// Nothing at or below the node's place.
    Nothing,
    /// A node: its metadata document (`zarr.json`, or a Zarr v2 `.zarray` or `.zgroup`),
    /// whether it parses or not.
    Node,
    /// Objects that are no Zarr node's (the first one found): a directory of other files,
    /// or a prefix with nodes below it but none of its own.
    Other(String),
}

/// Whether the target is to be read (it must exist), updated (it must exist, and the
/// command writes to it) or written (it may be created).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Update,
    Write,
}

fn is_url(target: &str) -> bool {
    target.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// Resolve `args` for `access`.
///
/// A URL opens an object store at that location and the node is `--path` (default the root).
/// A local path with `--path` is the store root. A local path without it is a node: the store
/// root is the outermost directory reached by walking up through parents that are Zarr groups
/// (so `data.zarr/images/raw` opens store `data.zarr`, node `/images/raw`). A path to be
/// written that does not exist yet is a new node below the nearest existing group; failing
/// that, a new store at its first new directory named `*.zarr` (`new.zarr/images/raw`), or
/// a new store at the path itself.
/// Resolve a source to read and a destination to write (`copy`, `pyramid`), each a target
/// and an optional node path inside it.
pub(crate) fn resolve_pair(
    src: (&str, Option<&str>),
    dst: (&str, Option<&str>),
) -> Result<(Target, Target)> {
    let args = |(target, path): (&str, Option<&str>)| TargetArgs {
        target: target.to_owned(),
        path: path.map(str::to_owned),
    };
    Ok((
        resolve(&args(src), Access::Read)?,
        resolve(&args(dst), Access::Write)?,
    ))
}

pub(crate) fn resolve(args: &TargetArgs, access: Access) -> Result<Target> {
    let display = args.target.clone();
    let node = |path: Option<&str>| -> Result<String> {
        let path = path.unwrap_or("/");
        let path = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        let path = path.trim_end_matches('/');
        let path = if path.is_empty() { "/" } else { path };
        NodePath::new(path).with_context(|| format!("--path {path:?}"))?;
        Ok(path.to_owned())
    };
    if is_url(&args.target) {
        if let Some(target) = zip_url_target(args, access, &display, node(args.path.as_deref())?)? {
            return Ok(target);
        }
        if let Some(target) =
            reference_url_target(args, access, &display, node(args.path.as_deref())?)?
        {
            return Ok(target);
        }
        // Opening a file:// store creates its directory; a target to be read must exist.
        if access != Access::Write
            && let Some(dir) = args.target.strip_prefix("file://")
            && !Path::new(dir).is_dir()
        {
            anyhow::bail!("{}: no such directory", args.target);
        }
        let created = match args.target.strip_prefix("file://") {
            Some(dir) => created_by_opening(Path::new(dir))?,
            None => None,
        };
        let store = ObjectStoreAdapter::from_url(&args.target)
            .with_context(|| format!("opening {}", args.target))?;
        let path = node(args.path.as_deref())?;
        let location = Location::at_url(&args.target, &path);
        // `s3://bucket/data.n5`: an N5 container, its node given by --path.
        let n5 = args
            .target
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .is_some_and(is_n5_name);
        let store: Arc<dyn Store> = if n5 {
            Arc::new(N5Store::new(store))
        } else {
            Arc::new(store)
        };
        return Ok(Target {
            store,
            path,
            display,
            display_is_node: false,
            location,
            created,
            zip: None,
            n5,
        });
    }
    let given = Path::new(&args.target);
    if let Some(target) = zip_target(args, access, &display)? {
        return Ok(target);
    }
    if let Some(target) = reference_target(args, access, &display)? {
        return Ok(target);
    }
    if let Some(target) = n5_target(args, access, &display)? {
        return Ok(target);
    }
    if let Some(path) = &args.path {
        if access != Access::Write && !given.is_dir() {
            anyhow::bail!("{}: not a directory", given.display());
        }
        return local(given, node(Some(path))?, display, false);
    }
    // `zarr info data.zarr/zarr.json` (or a v2 `.zarray` / `.zgroup`) means the node.
    let metadata_file = |n: &std::ffi::OsStr| n == "zarr.json" || n == ".zarray" || n == ".zgroup";
    let given = if given.file_name().is_some_and(metadata_file) && given.is_file() {
        given.parent().unwrap_or(Path::new("."))
    } else {
        given
    };
    match access {
        Access::Read | Access::Update => {
            if !given.exists() {
                anyhow::bail!("{}: no such file or directory", given.display());
            }
            let dir = absolute(given)?;
            if !is_node(&dir) {
                anyhow::bail!(
                    "{}: not a Zarr node (there is no zarr.json, nor a Zarr v2 .zarray or \
                     .zgroup, in it)",
                    given.display()
                );
            }
            let (root, path) = split_at_store_root(&dir)?;
            local(&root, path, display, true)
        }
        Access::Write => {
            let dir = absolute(given)?;
            // The nearest existing directory, and the names below it that do not exist yet.
            let (existing, missing) = up_to(&dir, Path::exists);
            if is_node(&existing) && (missing.is_empty() || is_group(&existing)) {
                let (root, mut path) = split_at_store_root(&existing)?;
                for name in missing {
                    if !path.ends_with('/') {
                        path.push('/');
                    }
                    path.push_str(&name);
                }
                NodePath::new(&path)
                    .with_context(|| format!("{}: not a valid node path", given.display()))?;
                local(&root, path, display, true)
            } else if let Some(i) = missing.iter().position(|name| name.ends_with(".zarr")) {
                // `new.zarr/images/raw`: a new store `new.zarr` with the node below it.
                let mut root = existing.clone();
                root.extend(&missing[..=i]);
                let path = format!("/{}", missing[i + 1..].join("/"));
                NodePath::new(&path)
                    .with_context(|| format!("{}: not a valid node path", given.display()))?;
                local(&root, path, display, true)
            } else {
                local(&dir, "/".to_owned(), display, true)
            }
        }
    }
}

/// How this run's local stores write ([`set_file_options`]; the defaults otherwise).
static FILE_OPTIONS: std::sync::OnceLock<FilesystemOptions> = std::sync::OnceLock::new();

/// Set how the local stores this run opens write (`--in-place-writes`, `--durable`); the
/// first call counts.
pub(crate) fn set_file_options(options: FilesystemOptions) {
    let _ = FILE_OPTIONS.set(options);
}

/// The options of a local store opened by this run.
pub(crate) fn file_options() -> FilesystemOptions {
    FILE_OPTIONS.get().cloned().unwrap_or_default()
}

fn local(root: &Path, path: String, display: String, display_is_node: bool) -> Result<Target> {
    let created = created_by_opening(root)?;
    let store = FilesystemStore::with_options(root, file_options())
        .with_context(|| format!("opening the store at {}", root.display()))?;
    let mut location =
        std::fs::canonicalize(root).with_context(|| format!("resolving {}", root.display()))?;
    location.extend(path.split('/').filter(|name| !name.is_empty()));
    Ok(Target {
        store: Arc::new(store),
        path,
        display,
        display_is_node,
        location: Location::Local(location),
        created,
        zip: None,
        n5: false,
    })
}

/// A zip archive at a URL (`s3://bucket/data.zip`, `https://host/data.zip`), read with range
/// requests through the object store of its parent; the node is `path`. `None` unless the
/// URL's last segment ends in `.zip`.
fn zip_url_target(
    args: &TargetArgs,
    access: Access,
    display: &str,
    path: String,
) -> Result<Option<Target>> {
    let url = args.target.trim_end_matches('/');
    let Some((parent, name)) = url.rsplit_once('/') else {
        return Ok(None);
    };
    if !is_zip_name(Path::new(name)) || !parent.contains("://") {
        return Ok(None);
    }
    if access != Access::Read {
        crate::usage!(
            "{display}: a zip archive at a URL can only be read (write a local archive, or \
             write the hierarchy as a store at a URL)"
        );
    }
    let parent_store =
        ObjectStoreAdapter::from_url(parent).with_context(|| format!("opening {parent}"))?;
    let key = StoreKey::try_new(name).with_context(|| format!("{display}: archive name"))?;
    // Resolving is synchronous; the CLI runs on a multi-threaded runtime.
    let zip = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current()
            .block_on(ZipStore::from_store(Arc::new(parent_store), key))
    })
    .with_context(|| format!("opening the zip archive {url}"))?;
    let location = Location::at_url(url, &path);
    Ok(Some(Target {
        store: Arc::new(zip),
        path,
        display: display.to_owned(),
        display_is_node: false,
        location,
        created: None,
        zip: None,
        n5: false,
    }))
}

/// The nearest of `path` and its ancestors for which `stop` holds (the filesystem root if
/// none does), and the names below it down to `path`.
fn up_to(path: &Path, stop: impl Fn(&Path) -> bool) -> (PathBuf, Vec<String>) {
    let mut place = path.to_path_buf();
    let mut names = Vec::new();
    while !stop(&place) {
        let Some(name) = place.file_name() else {
            break;
        };
        names.push(name.to_string_lossy().into_owned());
        place.pop();
    }
    names.reverse();
    (place, names)
}

/// Whether `name` names a zip archive (by its extension).
fn is_zip_name(name: &Path) -> bool {
    name.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("zip"))
}

/// A target inside a zip archive: `data.zip` (the root), `data.zip/images/raw` (a node in
/// it), or `data.zip --path /images/raw`. Read targets open the archive read-only; updated
/// and written ones open it for appending, and a written one that does not exist yet (whose
/// first new component ends in `.zip`) is a new archive. `None` when no `.zip` file is
/// involved.
fn zip_target(args: &TargetArgs, access: Access, display: &str) -> Result<Option<Target>> {
    let given = absolute(Path::new(&args.target))?;
    // The nearest existing ancestor (or the path itself), and the names below it.
    let (existing, missing) = up_to(&given, Path::exists);
    // `data.zip/inner/path`: an existing file inside whose path the rest lies.
    let (archive, mut inner) = up_to(&existing, Path::is_file);
    let (archive, inner, create) = if archive.is_file() && is_zip_name(&archive) {
        inner.extend(missing);
        (archive, inner, false)
    } else if access == Access::Write
        && existing.is_dir()
        && missing
            .first()
            .is_some_and(|name| is_zip_name(Path::new(name)))
    {
        let archive = existing.join(&missing[0]);
        (archive, missing[1..].to_vec(), true)
    } else {
        return Ok(None);
    };
    let path = inside_path(args, &inner, display)?;
    let store = match (access, create) {
        (Access::Read, _) => ZipStore::open(&archive),
        (_, false) => ZipStore::append(&archive),
        (_, true) => ZipStore::create(&archive),
    }
    .with_context(|| format!("opening the zip archive {}", archive.display()))?;
    let mut location = std::fs::canonicalize(&archive)
        .with_context(|| format!("resolving {}", archive.display()))?;
    location.extend(path.split('/').filter(|name| !name.is_empty()));
    Ok(Some(Target {
        store: Arc::new(store.clone()),
        display_is_node: args.path.is_none(),
        path,
        display: display.to_owned(),
        location: Location::Local(location),
        created: None,
        zip: Some(Zip {
            store,
            path: archive,
            created: create,
        }),
        n5: false,
    }))
}

/// Whether `name` names a reference set: a `.json` file other than a node's metadata (a
/// Zarr `zarr.json`, an N5 `attributes.json`).
fn is_reference_name(name: &Path) -> bool {
    name.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"))
        && name
            .file_name()
            .is_some_and(|n| n != "zarr.json" && n != ".zmetadata" && n != "attributes.json")
}

/// Whether `name` names a Parquet reference set at a URL (fsspec's test: a `.parq` or
/// `.parquet` directory).
fn is_parquet_reference_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".parq") || lower.ends_with(".parquet")
}

/// Whether the directory `dir` is a Parquet reference set (kerchunk's `refs_to_dataframe`):
/// its `.zmetadata` has a `record_size`, and no node's metadata is beside it (a Zarr v2
/// store's consolidated `.zmetadata` has a `.zgroup` beside it).
fn is_parquet_references(dir: &Path) -> bool {
    let zmetadata = dir.join(".zmetadata");
    if !zmetadata.is_file() || is_node(dir) {
        return false;
    }
    std::fs::read(&zmetadata)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|doc| doc.get("record_size").is_some())
}

fn read_only_reference(display: &str) -> Result<()> {
    crate::usage!(
        "{display}: a reference set can only be read (copy it to a store to change the data: \
         `zarr copy {display} data.zarr`)"
    )
}

/// A target inside a reference set (kerchunk's JSON file, or its Parquet directory):
/// `refs.json` (the root), `refs.json/group/array`, or `refs.json --path /group/array`. The
/// files it points into are read as fsspec does: relative paths from the current directory,
/// absolute paths, and `s3://`, `gs://`, `az://` and `http(s)://` URLs. `None` when no
/// reference set is involved.
fn reference_target(args: &TargetArgs, access: Access, display: &str) -> Result<Option<Target>> {
    let given = absolute(Path::new(&args.target))?;
    let (existing, missing) = up_to(&given, Path::exists);
    let (file, mut inner) = up_to(&existing, |p| p.is_file() || is_parquet_references(p));
    let json = file.is_file() && is_reference_name(&file);
    if !json && !is_parquet_references(&file) {
        return Ok(None);
    }
    if access != Access::Read {
        read_only_reference(display)?;
    }
    inner.extend(missing);
    let path = inside_path(args, &inner, display)?;
    let store = ReferenceStore::open(&file)
        .with_context(|| format!("opening the reference set {}", file.display()))?
        .with_remote_urls(true);
    let mut location =
        std::fs::canonicalize(&file).with_context(|| format!("resolving {}", file.display()))?;
    location.extend(path.split('/').filter(|name| !name.is_empty()));
    Ok(Some(Target {
        store: Arc::new(store),
        display_is_node: args.path.is_none(),
        path,
        display: display.to_owned(),
        location: Location::Local(location),
        created: None,
        zip: None,
        n5: false,
    }))
}

/// Whether `dir` is the root of an N5 container: its `attributes.json` names the N5
/// version (and it is no Zarr node).
fn is_n5_root(dir: &Path) -> bool {
    if is_node(dir) {
        return false;
    }
    std::fs::read(dir.join("attributes.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|doc| doc.get("n5").is_some())
}

/// Whether `name` names an N5 container (by its extension).
fn is_n5_name(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".n5")
}

/// A target inside an N5 container, read and written as Zarr through `N5Store`:
/// `data.n5` (the root, whose `attributes.json` names the N5 version), `data.n5/raw` (a
/// dataset or group in it, which need not exist for a written target) or `data.n5 --path
/// /raw`. A written target whose first new directory ends in `.n5` is a new container.
/// `None` when no N5 container is involved, or the target is a Zarr node.
fn n5_target(args: &TargetArgs, access: Access, display: &str) -> Result<Option<Target>> {
    let given = absolute(Path::new(&args.target))?;
    // `data.n5/raw/attributes.json` means the node.
    let given = if given.file_name().is_some_and(|n| n == "attributes.json") && given.is_file() {
        given.parent().map_or(given.clone(), Path::to_path_buf)
    } else {
        given
    };
    if is_node(&given) {
        return Ok(None);
    }
    let (existing, missing) = up_to(&given, Path::exists);
    let (found, mut inner) = up_to(&existing, |p| p.parent().is_none() || is_n5_root(p));
    let (root, inner) = if existing.is_dir() && is_n5_root(&found) {
        if access != Access::Write && !missing.is_empty() {
            anyhow::bail!("{}: no such file or directory", given.display());
        }
        inner.extend(missing);
        (found, inner)
    } else if access == Access::Write
        && existing.is_dir()
        && let Some(i) = missing.iter().position(|name| is_n5_name(name))
    {
        let mut root = existing.clone();
        root.extend(&missing[..=i]);
        (root, missing[i + 1..].to_vec())
    } else {
        return Ok(None);
    };
    let path = inside_path(args, &inner, display)?;
    let created = created_by_opening(&root)?;
    let store = FilesystemStore::with_options(&root, file_options())
        .with_context(|| format!("opening the N5 container at {}", root.display()))?;
    let mut location =
        std::fs::canonicalize(&root).with_context(|| format!("resolving {}", root.display()))?;
    location.extend(path.split('/').filter(|name| !name.is_empty()));
    Ok(Some(Target {
        store: Arc::new(N5Store::new(store)),
        display_is_node: args.path.is_none(),
        path,
        display: display.to_owned(),
        location: Location::Local(location),
        created,
        zip: None,
        n5: true,
    }))
}

/// The node path of a target inside a file (an archive or a reference set): the names below
/// the file, or `--path`, not both.
fn inside_path(args: &TargetArgs, inner: &[String], display: &str) -> Result<String> {
    match &args.path {
        Some(path) if inner.is_empty() => {
            let path = format!("/{}", path.trim_matches('/'));
            NodePath::new(&path).with_context(|| format!("--path {path:?}"))?;
            Ok(path)
        }
        Some(_) => crate::usage!(
            "{display}: give the node either inside the file's path or with --path, not both"
        ),
        None => {
            let path = format!("/{}", inner.join("/"));
            NodePath::new(&path)
                .with_context(|| format!("{display}: not a valid node path in the file"))?;
            Ok(path)
        }
    }
}

/// A reference set at a URL (`s3://bucket/refs.json`, or a Parquet set
/// `s3://bucket/refs.parq`): read through the object store of its parent (of the set's
/// directory); the files it points into must be URLs too (a relative path in a remote set
/// names no file here). `None` unless the URL's last segment is a `.json` file other than a
/// node's metadata, or ends in `.parq` or `.parquet`.
fn reference_url_target(
    args: &TargetArgs,
    access: Access,
    display: &str,
    path: String,
) -> Result<Option<Target>> {
    let url = args.target.trim_end_matches('/');
    let Some((parent, name)) = url.rsplit_once('/') else {
        return Ok(None);
    };
    let parquet = is_parquet_reference_name(name);
    if !(is_reference_name(Path::new(name)) || parquet) || !parent.contains("://") {
        return Ok(None);
    }
    if access != Access::Read {
        read_only_reference(display)?;
    }
    if parquet {
        let files = ObjectStoreAdapter::from_url(url)
            .with_context(|| format!("opening {url}"))?
            .with_read_only(true);
        let references = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(ParquetReferences::open(
                Arc::new(files),
                &StorePrefix::root(),
            ))
        })
        .with_context(|| format!("reading the Parquet reference set {url}"))?
        .with_name(format!("{url}/"));
        let store = ReferenceStore::from_parquet(references)
            .with_name(url)
            .with_remote_urls(true);
        return Ok(Some(Target {
            store: Arc::new(store),
            location: Location::at_url(url, &path),
            path,
            display: display.to_owned(),
            display_is_node: false,
            created: None,
            zip: None,
            n5: false,
        }));
    }
    let parent_store =
        ObjectStoreAdapter::from_url(parent).with_context(|| format!("opening {parent}"))?;
    let key = StoreKey::try_new(name).with_context(|| format!("{display}: file name"))?;
    let json = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(parent_store.get(&key))
    })
    .with_context(|| format!("reading {url}"))?
    .with_context(|| format!("{url}: no such file"))?;
    let references = References::from_json(&json).with_context(|| format!("reading {url}"))?;
    let store = ReferenceStore::new(references)
        .with_name(url)
        .with_remote_urls(true);
    let location = Location::at_url(url, &path);
    Ok(Some(Target {
        store: Arc::new(store),
        path,
        display: display.to_owned(),
        display_is_node: false,
        location,
        created: None,
        zip: None,
        n5: false,
    }))
}

/// What opening the store directory `root` creates: `(root, the outermost directory that
/// does not exist yet)`, or `None` when `root` exists.
fn created_by_opening(root: &Path) -> Result<Option<(PathBuf, PathBuf)>> {
    let root = absolute(root)?;
    let mut outermost = None;
    let mut dir = Some(root.as_path());
    while let Some(d) = dir {
        if d.exists() {
            break;
        }
        outermost = Some(d.to_path_buf());
        dir = d.parent();
    }
    Ok(outermost.map(|outermost| (root.clone(), outermost)))
}

/// `path` made absolute and free of `.` and `..` (without resolving symbolic links).
fn absolute(path: &Path) -> Result<PathBuf> {
    let path = std::path::absolute(path)
        .with_context(|| format!("{}: cannot make the path absolute", path.display()))?;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Whether `dir` holds a node's metadata: `zarr.json`, or Zarr v2's `.zarray` or `.zgroup`.
fn is_node(dir: &Path) -> bool {
    ["zarr.json", ".zarray", ".zgroup"]
        .iter()
        .any(|name| dir.join(name).is_file())
}

/// Whether `dir` holds the metadata of a group: a `zarr.json` saying so, or (without a
/// `zarr.json`) a Zarr v2 `.zgroup`.
fn is_group(dir: &Path) -> bool {
    let Ok(bytes) = std::fs::read(dir.join("zarr.json")) else {
        return dir.join(".zgroup").is_file();
    };
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .is_ok_and(|v| v.get("node_type").and_then(|t| t.as_str()) == Some("group"))
}

/// Split the absolute directory of a node into the store root (walking up while the parent
/// is a group) and the node path.
fn split_at_store_root(dir: &Path) -> Result<(PathBuf, String)> {
    let mut root = dir.to_path_buf();
    let mut names = Vec::new();
    while let Some(parent) = root.parent() {
        if !is_group(parent) {
            break;
        }
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        names.push(name);
        root = parent.to_path_buf();
    }
    names.reverse();
    let path = format!("/{}", names.join("/"));
    NodePath::new(&path)
        .with_context(|| format!("{}: not a valid node path below {}", path, root.display()))?;
    Ok((root, path))
}

impl Target {
    /// The node at `path` of `store`, an in-memory store of a test.
    #[cfg(test)]
    pub(crate) fn in_memory(store: Arc<dyn Store>, path: &str) -> Self {
        Self {
            store,
            path: path.to_owned(),
            display: format!("memory:{path}"),
            display_is_node: true,
            location: Location::at_url("memory://", path),
            created: None,
            zip: None,
            n5: false,
        }
    }

    /// Open the node, whatever it is.
    pub(crate) async fn node(&self) -> Result<Node<dyn Store>> {
        Node::open(Arc::clone(&self.store), &self.path)
            .await
            .with_context(|| format!("opening {}", self.describe()))
    }

    /// Open the node as an array.
    pub(crate) async fn array(&self) -> Result<Array<dyn Store>> {
        Array::open(Arc::clone(&self.store), &self.path)
            .await
            .with_context(|| format!("opening {}", self.describe()))
    }

    /// Complete what the command wrote: for a zip archive, write its central directory.
    pub(crate) fn finish(&self) -> Result<()> {
        if let Some(zip) = &self.zip {
            zip.store
                .finish()
                .with_context(|| format!("completing the zip archive {}", zip.path.display()))?;
        }
        Ok(())
    }

    /// Remove the directories that resolving the target created, those that are empty (and
    /// a zip archive it created): after a command that failed and erased what it wrote, so
    /// that it leaves nothing behind.
    pub(crate) fn remove_created_dirs(&self) {
        if let Some(zip) = &self.zip
            && zip.created
        {
            std::fs::remove_file(&zip.path).ok();
        }
        let Some((root, outermost)) = &self.created else {
            return;
        };
        let mut dir = root.as_path();
        // `remove_dir` removes only empty directories.
        while std::fs::remove_dir(dir).is_ok() && dir != outermost {
            match dir.parent() {
                Some(parent) => dir = parent,
                None => break,
            }
        }
    }

    /// What is at the node's place: nothing, a node, or objects that are no node's.
    pub(crate) async fn occupant(&self) -> Result<Occupant> {
        let prefix = NodePath::new(&self.path)?.prefix();
        for name in ["zarr.json", ".zarray", ".zgroup"] {
            let key = StoreKey::try_new(format!("{prefix}{name}"))?;
            if self
                .store
                .exists(&key)
                .await
                .with_context(|| format!("reading {}", self.describe()))?
            {
                return Ok(Occupant::Node);
            }
        }
        let listing = self
            .store
            .list_dir(&StorePrefix::try_new(prefix)?)
            .await
            .with_context(|| format!("listing {}", self.describe()))?;
        let first = listing
            .keys
            .first()
            .map(|key| key.as_str().to_owned())
            .or_else(|| listing.prefixes.first().map(|p| p.as_str().to_owned()));
        Ok(first.map_or(Occupant::Nothing, Occupant::Other))
    }

    /// A usage error when the node's place holds objects that are no Zarr node's: a new
    /// node there would be mixed with them, and replacing it later (`--overwrite` erases a
    /// node's whole prefix) would erase them too.
    pub(crate) fn refuse_foreign(&self, occupant: &Occupant) -> Result<()> {
        if let Occupant::Other(first) = occupant {
            crate::usage!(
                "{} is not empty but holds no Zarr node (it has {first:?}): a new node there \
                 would be mixed with what is there, and replacing it later with --overwrite \
                 would erase all of it; write to a new or empty place (such as a new \
                 NAME.zarr directory inside it)",
                self.describe()
            );
        }
        Ok(())
    }

    /// Whether one target's node is the other's, or lies inside it (a copy between them
    /// would read what it writes, or erase what it reads).
    pub(crate) fn overlaps(&self, other: &Target) -> bool {
        match (&self.location, &other.location) {
            (Location::Local(a), Location::Local(b)) => a.starts_with(b) || b.starts_with(a),
            (Location::Url(a), Location::Url(b)) => a.starts_with(b) || b.starts_with(a),
            _ => false,
        }
    }

    /// The target as the user named it, with the node path when it was given separately.
    pub(crate) fn describe(&self) -> String {
        if self.display_is_node || self.path == "/" {
            self.display.clone()
        } else {
            format!("{} (node {})", self.display, self.path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("s3://bucket/x"));
        assert!(is_url("memory:///"));
        assert!(!is_url("data.zarr/images"));
        assert!(!is_url("./odd://name"));
    }

    #[test]
    fn the_store_root_is_the_outermost_group() {
        let dir = tempfile::tempdir().unwrap();
        let group = r#"{"zarr_format": 3, "node_type": "group"}"#;
        std::fs::create_dir_all(dir.path().join("s.zarr/a/b")).unwrap();
        std::fs::write(dir.path().join("s.zarr/zarr.json"), group).unwrap();
        std::fs::write(dir.path().join("s.zarr/a/zarr.json"), group).unwrap();
        std::fs::write(dir.path().join("s.zarr/a/b/zarr.json"), group).unwrap();
        let (root, path) = split_at_store_root(&dir.path().join("s.zarr/a/b")).unwrap();
        assert_eq!(root, dir.path().join("s.zarr"));
        assert_eq!(path, "/a/b");
        let (root, path) = split_at_store_root(&dir.path().join("s.zarr")).unwrap();
        assert_eq!(root, dir.path().join("s.zarr"));
        assert_eq!(path, "/");
    }
}
