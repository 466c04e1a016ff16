//! The `zarr` command-line tool.
fn main() {}
