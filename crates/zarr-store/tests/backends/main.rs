//! Every backend of the crate against the conformance suite, plus backend-specific tests.
//!
//! One test binary (with one module per backend) keeps link time down.

mod filesystem;
mod http;
mod memory;
mod object_local;
mod parquet_references;
mod reference;
mod s3;
mod suite_self_test;
mod wrappers;
mod zip;
