//! The `sharding_indexed` codec and the sharding storage transformer.
//!
//! **Status:** this crate is part of the workspace layout but has no public API yet; it is
//! filled in by the project's issue #6. Nothing here pretends to work: it exports nothing.
