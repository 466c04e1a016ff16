//! Benchmarks for the zarr workspace.
//!
//! Criterion benches live in `benches/benches/`; run them with `cargo bench -p zarr-benches`.
//! The side-by-side comparison harness (issue #5) will live here too.
