//! Async store traits for Zarr with filesystem, memory and `object_store` backends.
//!
//! **Status:** filled in by the project's issue #3; it exports nothing yet.
