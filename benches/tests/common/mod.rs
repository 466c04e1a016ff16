//! Helpers the zarrs interop tests share.

use std::path::Path;

/// Every file below `dir`, by relative path, with its bytes (`zarr.json` left out): the
/// chunks of the arrays there, to compare what two implementations wrote.
pub(crate) fn chunk_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().unwrap() != "zarr.json" {
                let relative = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((relative, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}
