//! Zarr arrays and groups over any store: creation, region reads and writes, the parallel chunk engine.
//!
//! **Status:** this crate is part of the workspace layout but has no public API yet; it is
//! filled in by the project's issue #4. Nothing here pretends to work: it exports nothing.
