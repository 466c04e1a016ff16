//! Zarr v3 codecs: the codec traits, the chunk representation, codec chains and the extensible codec registry.
//!
//! **Status:** this crate is part of the workspace layout but has no public API yet; it is
//! filled in by the project's issue #4. Nothing here pretends to work: it exports nothing.
