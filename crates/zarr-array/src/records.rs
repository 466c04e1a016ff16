//! Consolidated records (a v3 group's inline `consolidated_metadata`, a v2 `.zmetadata`)
//! kept true when this library changes a node they list: a removed node is taken out of
//! them, a node whose metadata changed gets its new metadata.

use bytes::Bytes;
use serde_json::{Map, Value};
use zarr_core::v2::{self, ZarrFormat};
use zarr_core::{ConsolidatedMetadata, GroupMetadata, NodeMetadata, NodePath};
use zarr_store::WritableStore;

use crate::error::{Error, Result};
use crate::group::{read_node, v2_key, write_metadata};
use crate::locks::{Kind, lock};

/// Take the node at `path` and every node below it out of the consolidated record of the
/// group at `group` (an ancestor of `path`), if that group has one listing it: inline
/// `consolidated_metadata` in a v3 `zarr.json` (records nested in the entries of groups
/// between the two included), or a v2 `.zmetadata`. Answers the group's new v3 metadata when
/// it was rewritten.
pub(crate) async fn forget_in_record<S: WritableStore + ?Sized>(
    store: &S,
    group: &NodePath,
    path: &NodePath,
) -> Result<Option<GroupMetadata>> {
    let relative = relative_to(group, path);
    let _record = lock(store, group, Kind::Record).await;
    match read_node(store, group).await? {
        Some((NodeMetadata::Group(mut metadata), ZarrFormat::V3)) => {
            let Some(record) = &mut metadata.consolidated_metadata else {
                return Ok(None);
            };
            if !forget_recorded(&mut record.metadata, &relative) {
                return Ok(None);
            }
            let document = NodeMetadata::Group(metadata.clone());
            write_metadata(store, group, &document, ZarrFormat::V3).await?;
            Ok(Some(*metadata))
        }
        Some((NodeMetadata::Group(_), ZarrFormat::V2)) => {
            let key = v2_key(group, v2::ZMETADATA)?;
            let Some(bytes) = store.get(&key).await? else {
                return Ok(None);
            };
            let malformed = |reason: String| Error::Consolidated {
                path: group.as_str().to_owned(),
                reason,
            };
            let mut doc: Map<String, Value> = serde_json::from_slice(&bytes)
                .map_err(|e| malformed(format!("{} is not a JSON object: {e}", v2::ZMETADATA)))?;
            let Some(Value::Object(entries)) = doc.get_mut("metadata") else {
                return Err(malformed(format!(
                    "{} has no `metadata` object",
                    v2::ZMETADATA
                )));
            };
            // v2 entries are documents: `sub/.zarray`, `sub/arr/.zattrs`.
            let below = format!("{relative}/");
            if !entries.keys().any(|key| key.starts_with(&below)) {
                return Ok(None);
            }
            entries.retain(|key, _| !key.starts_with(&below));
            let mut text =
                serde_json::to_string_pretty(&doc).map_err(|e| malformed(e.to_string()))?;
            text.push('\n');
            store.set(&key, Bytes::from(text.into_bytes())).await?;
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// Remove the entry at `relative` (`a/b`) and every entry below it from an inline record's
/// entries, descending into the records nested in the entries of groups above it. Whether
/// anything was removed.
fn forget_recorded(entries: &mut Map<String, Value>, relative: &str) -> bool {
    let below = format!("{relative}/");
    let before = entries.len();
    entries.retain(|key, _| key != relative && !key.starts_with(&below));
    let changed = entries.len() != before;
    let nested = in_nested_records(entries, relative, |nested, rest| {
        Ok(forget_recorded(nested, rest))
    });
    // Forgetting cannot fail.
    changed | nested.unwrap_or(false)
}

/// Apply `f` to the records nested in the entries of groups above `relative` (`a/b`: the
/// record in the entry `a`, with `b`), as some writers lay them out. Whether any call
/// changed something.
fn in_nested_records(
    entries: &mut Map<String, Value>,
    relative: &str,
    mut f: impl FnMut(&mut Map<String, Value>, &str) -> Result<bool>,
) -> Result<bool> {
    let mut changed = false;
    for (key, document) in entries.iter_mut() {
        if let Some(rest) = relative
            .strip_prefix(key.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            && let Some(Value::Object(nested)) = document
                .get_mut("consolidated_metadata")
                .and_then(|record| record.get_mut("metadata"))
        {
            changed |= f(nested, rest)?;
        }
    }
    Ok(changed)
}

/// The path of `path` relative to its ancestor `group` (`a/b`; `""` for the group itself).
fn relative_to(group: &NodePath, path: &NodePath) -> String {
    path.names()
        .skip(group.names().count())
        .collect::<Vec<_>>()
        .join("/")
}

/// After the metadata of the node at `path` changed and was written (new attributes, a new
/// shape): give every consolidated record that lists the node its new metadata, so that
/// readers of the record do not see the old shape or attributes. The records of every group
/// above the node are looked at (one metadata read per group: `zarr.json`, or `.zmetadata`
/// for Zarr v2, where a group's own record lists its attributes too); a record that does not
/// list the node is left as it is. Answers how many records were rewritten.
///
/// A group whose metadata does not parse has no usable record: it is skipped (and logged),
/// since the node's own change is already stored. Store errors are returned.
pub(crate) async fn refresh_in_records<S: WritableStore + ?Sized>(
    store: &S,
    path: &NodePath,
    metadata: &NodeMetadata,
    format: ZarrFormat,
) -> Result<usize> {
    let mut groups = path.ancestors();
    let mut rewritten = 0;
    match format {
        ZarrFormat::V3 => {
            for group in groups {
                let relative = relative_to(&group, path);
                if refresh_v3_record(store, &group, &relative, metadata).await? {
                    rewritten += 1;
                }
            }
        }
        ZarrFormat::V2 => {
            let document = match metadata {
                NodeMetadata::Array(_) => v2::ZARRAY,
                NodeMetadata::Group(_) => {
                    groups.push(path.clone());
                    v2::ZGROUP
                }
            };
            // The node's documents as stored now, read once for every record.
            let mut documents = Vec::new();
            for name in [document, v2::ZATTRS] {
                let value = match store.get(&v2_key(path, name)?).await? {
                    Some(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                        Ok(value) => Some(value),
                        Err(e) => {
                            tracing::warn!(node = %path, error = %e, "consolidated records not refreshed: the node's {name} is not JSON");
                            return Ok(0);
                        }
                    },
                    None => None,
                };
                documents.push((name, value));
            }
            for group in groups {
                let relative = relative_to(&group, path);
                if refresh_v2_record(store, &group, &relative, &documents).await? {
                    rewritten += 1;
                }
            }
        }
    }
    if rewritten > 0 {
        tracing::debug!(node = %path, records = rewritten, "refreshed consolidated records");
    }
    Ok(rewritten)
}

/// Refresh the entry at `relative` in the inline record of the v3 group at `group`, if it
/// has one listing it. Whether the group's `zarr.json` was rewritten.
async fn refresh_v3_record<S: WritableStore + ?Sized>(
    store: &S,
    group: &NodePath,
    relative: &str,
    metadata: &NodeMetadata,
) -> Result<bool> {
    let _record = lock(store, group, Kind::Record).await;
    let mut own = match read_node(store, group).await {
        Ok(Some((NodeMetadata::Group(own), ZarrFormat::V3))) => own,
        Ok(_) => return Ok(false),
        Err(Error::Store(e)) => return Err(Error::Store(e)),
        Err(e) => {
            tracing::warn!(group = %group, error = %e, "consolidated record not refreshed: the group's metadata does not parse");
            return Ok(false);
        }
    };
    let Some(record) = &mut own.consolidated_metadata else {
        return Ok(false);
    };
    if !refresh_recorded(&mut record.metadata, relative, metadata)? {
        return Ok(false);
    }
    write_metadata(store, group, &NodeMetadata::Group(own), ZarrFormat::V3).await?;
    Ok(true)
}

/// Give the entry at `relative` (`a/b`) of an inline record's entries the node's new
/// metadata: an array's whole document, a group's attributes (its entry's nested record, if
/// any, stays; a group that replaced an array gets a whole group document). Descends into the records nested in the entries of groups above it. Whether
/// anything changed.
fn refresh_recorded(
    entries: &mut Map<String, Value>,
    relative: &str,
    metadata: &NodeMetadata,
) -> Result<bool> {
    let mut changed = false;
    if let Some(entry) = entries.get_mut(relative) {
        let mut updated = entry.clone();
        match metadata {
            NodeMetadata::Array(array) => updated = array.to_value()?,
            NodeMetadata::Group(group)
                if updated.get("node_type").and_then(Value::as_str) != Some("group") =>
            {
                // The group replaced an array: recorded as `consolidate_metadata` records
                // a group below the one holding the record.
                let mut group = GroupMetadata::clone(group);
                group.consolidated_metadata = Some(ConsolidatedMetadata::inline(Map::new()));
                updated = group.to_value();
            }
            NodeMetadata::Group(group) => {
                if let Value::Object(fields) = &mut updated {
                    if group.attributes.is_empty() {
                        fields.remove("attributes");
                    } else {
                        fields.insert("attributes".into(), Value::Object(group.attributes.clone()));
                    }
                }
            }
        }
        if *entry != updated {
            *entry = updated;
            changed = true;
        }
    }
    changed |= in_nested_records(entries, relative, |nested, rest| {
        refresh_recorded(nested, rest, metadata)
    })?;
    Ok(changed)
}

/// Replace the documents of the node at `relative` (`.zarray` or `.zgroup`, and `.zattrs`)
/// in the `.zmetadata` of the v2 group at `group`, if it lists the node. Whether it was
/// rewritten.
async fn refresh_v2_record<S: WritableStore + ?Sized>(
    store: &S,
    group: &NodePath,
    relative: &str,
    documents: &[(&str, Option<Value>)],
) -> Result<bool> {
    let _record = lock(store, group, Kind::Record).await;
    let key = v2_key(group, v2::ZMETADATA)?;
    let Some(bytes) = store.get(&key).await? else {
        return Ok(false);
    };
    let Ok(mut record) = serde_json::from_slice::<Map<String, Value>>(&bytes) else {
        tracing::warn!(group = %group, "consolidated record not refreshed: .zmetadata is not a JSON object");
        return Ok(false);
    };
    let Some(Value::Object(entries)) = record.get_mut("metadata") else {
        return Ok(false);
    };
    let prefix = if relative.is_empty() {
        String::new()
    } else {
        format!("{relative}/")
    };
    let names = [v2::ZARRAY, v2::ZGROUP, v2::ZATTRS];
    if !names[..2]
        .iter()
        .any(|name| entries.contains_key(&format!("{prefix}{name}")))
    {
        return Ok(false);
    }
    // The node's entries as recorded, replaced by its documents as stored (a group that
    // replaced an array loses the array's `.zarray`).
    let before: Vec<Option<Value>> = names
        .iter()
        .map(|name| entries.remove(&format!("{prefix}{name}")))
        .collect();
    for (name, value) in documents {
        if let Some(value) = value {
            entries.insert(format!("{prefix}{name}"), value.clone());
        }
    }
    let after: Vec<Option<&Value>> = names
        .iter()
        .map(|name| entries.get(&format!("{prefix}{name}")))
        .collect();
    if before.iter().map(Option::as_ref).eq(after) {
        return Ok(false);
    }
    let mut text = serde_json::to_string_pretty(&record).map_err(|e| Error::Consolidated {
        path: group.as_str().to_owned(),
        reason: e.to_string(),
    })?;
    text.push('\n');
    store.set(&key, Bytes::from(text.into_bytes())).await?;
    Ok(true)
}
