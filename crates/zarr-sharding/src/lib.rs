//! The `sharding_indexed` codec and the sharding storage transformer.

mod codec;
mod error;
mod fetch;
mod index;
mod nd;
mod transformer;

pub use codec::{IndexLocation, NAME, ShardingCodec, register};
pub use error::{Error, Result, ShardName};
pub use fetch::{COALESCE_GAP, ShardFetch};
pub use index::{EMPTY_ENTRY, ShardIndex};
pub use transformer::{
    LEGACY_TRANSFORMER_URL, ShardingTransformer, ShardingTransformerConfig, TRANSFORMER_NAME,
};
