//! Variable-length strings and binary data in Arrow layout: the ZEP0007 chunk layout and zarr-python's `vlen-utf8` / `vlen-bytes` codecs.
//!
//! **Status:** this crate is part of the workspace layout but has no public API yet; it is
//! filled in by the project's issue #7. Nothing here pretends to work: it exports nothing.
