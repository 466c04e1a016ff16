//! The codec registry arrays use, and the per-array cache of codec chains.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use zarr_codecs::{CodecChain, CodecRegistry};
use zarr_core::{ArrayMetadata, ChunkGrid};
use zarr_sharding::ShardingCodec;

use crate::error::{Error, Result};

/// A registry with every codec this workspace implements: the core codecs of
/// [`zarr_codecs`], `sharding_indexed` from [`zarr_sharding`], and the variable-length codecs
/// of [`zarr_vlen`].
///
/// Add codecs of your own with [`CodecRegistry::register`] and open arrays with
/// [`ArrayOptions::with_registry`](crate::ArrayOptions::with_registry).
pub fn default_registry() -> CodecRegistry {
    let mut registry = CodecRegistry::with_defaults();
    zarr_sharding::register(&mut registry);
    zarr_vlen::register(&mut registry);
    registry
}

/// The shared default registry (built once).
pub(crate) fn shared_default_registry() -> Arc<CodecRegistry> {
    static REGISTRY: OnceLock<Arc<CodecRegistry>> = OnceLock::new();
    Arc::clone(REGISTRY.get_or_init(|| Arc::new(default_registry())))
}

/// An array's codecs: built and validated at open time for the grid's first chunk shape, and
/// rebuilt (once per distinct shape) for the other shapes of a rectilinear grid.
#[derive(Debug)]
pub(crate) struct ArrayCodecs {
    first: CodecChain,
    /// `first`, shared: handed out per chunk without cloning the chain (and the JSON
    /// configurations it holds).
    first_shared: Arc<CodecChain>,
    others: Mutex<HashMap<Vec<u64>, Arc<CodecChain>>>,
    /// The sharding codec, when it is the array's only codec (then reads of part of a shard
    /// fetch only the index and the inner chunks they need).
    sharding: Option<Arc<ShardingCodec>>,
    other_shardings: Mutex<HashMap<Vec<u64>, Arc<ShardingCodec>>>,
}

impl ArrayCodecs {
    /// Build and validate the chain (an unknown codec or a codec that cannot take the data
    /// type fails here, at open time, not at the first read).
    pub(crate) fn new(
        path: &str,
        metadata: &ArrayMetadata,
        registry: &CodecRegistry,
    ) -> Result<Self> {
        let origin = vec![0; metadata.rank()];
        let shape = if metadata.shape.contains(&0) {
            // No chunk exists; build for the grid's nominal shape where there is one.
            match metadata.chunk_grid.nominal_chunk_shape() {
                Some(shape) => shape.to_vec(),
                None => vec![1; metadata.rank()],
            }
        } else {
            metadata.chunk_grid.chunk_shape(&metadata.shape, &origin)?
        };
        let first =
            CodecChain::from_array_metadata(metadata, shape, registry).map_err(|source| {
                Error::Codecs {
                    array: path.to_owned(),
                    source: Box::new(source),
                }
            })?;
        let sharding = match metadata.codecs.as_slice() {
            [only] if only.name == zarr_sharding::NAME => Some(Arc::new(
                ShardingCodec::from_metadata(only, first.decoded_representation(), registry)
                    .map_err(|source| Error::Sharding {
                        array: path.to_owned(),
                        source: Box::new(source),
                    })?,
            )),
            _ => None,
        };
        if let Some(sharding) = &sharding {
            check_shard_edges(path, metadata, sharding, &first)?;
        }
        Ok(Self {
            first_shared: Arc::new(first.clone()),
            first,
            others: Mutex::new(HashMap::new()),
            sharding,
            other_shardings: Mutex::new(HashMap::new()),
        })
    }

    /// Check that the sharding codec's inner chunks divide every shard of the grid for
    /// `metadata`'s shape (the array's, or another shape it is about to take), as opening
    /// the array does.
    pub(crate) fn check_shape(&self, path: &str, metadata: &ArrayMetadata) -> Result<()> {
        match &self.sharding {
            Some(sharding) => check_shard_edges(path, metadata, sharding, &self.first),
            None => Ok(()),
        }
    }

    /// The sharding codec for shards of the grid's first chunk shape, if the array is
    /// sharded.
    pub(crate) fn sharding_codec(&self) -> Option<&ShardingCodec> {
        self.sharding.as_deref()
    }

    /// The sharding codec for shards of `shape`, if the array is sharded.
    pub(crate) fn sharding(&self, path: &str, shape: &[u64]) -> Result<Option<Arc<ShardingCodec>>> {
        let Some(first) = &self.sharding else {
            return Ok(None);
        };
        if first.shard_representation().shape() == shape {
            return Ok(Some(Arc::clone(first)));
        }
        let mut others = self
            .other_shardings
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(codec) = others.get(shape) {
            return Ok(Some(Arc::clone(codec)));
        }
        let repr = first
            .shard_representation()
            .with_shape(shape.to_vec())
            .map_err(|source| Error::Codecs {
                array: path.to_owned(),
                source: Box::new(source),
            })?;
        let codec =
            Arc::new(
                first
                    .with_shard_representation(repr)
                    .map_err(|source| Error::Sharding {
                        array: path.to_owned(),
                        source: Box::new(source),
                    })?,
            );
        others.insert(shape.to_vec(), Arc::clone(&codec));
        Ok(Some(codec))
    }

    /// The chain for chunks of `shape`.
    pub(crate) fn chain(&self, path: &str, shape: &[u64]) -> Result<Arc<CodecChain>> {
        if self.first.decoded_representation().shape() == shape {
            return Ok(Arc::clone(&self.first_shared));
        }
        let mut others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(chain) = others.get(shape) {
            return Ok(Arc::clone(chain));
        }
        let chain = Arc::new(
            self.first
                .with_chunk_shape(shape.to_vec())
                .map_err(|source| Error::Codecs {
                    array: path.to_owned(),
                    source: Box::new(source),
                })?,
        );
        others.insert(shape.to_vec(), Arc::clone(&chain));
        Ok(chain)
    }

    /// The chain for the first chunk (its metadata is the array's).
    pub(crate) fn first(&self) -> &CodecChain {
        &self.first
    }
}

/// Check, at open time, that the inner chunk shape of the sharding codec divides every shard
/// of a rectilinear or `zarrs.regular_bounded` grid (a regular grid's one shard shape was
/// checked when `first`, the chain for the first shard, was built). The constraint is per dimension, so each distinct edge
/// length of each dimension is checked once.
fn check_shard_edges(
    path: &str,
    metadata: &ArrayMetadata,
    sharding: &ShardingCodec,
    first: &CodecChain,
) -> Result<()> {
    if matches!(metadata.chunk_grid, ChunkGrid::Regular(_)) {
        return Ok(());
    }
    let inner = sharding.inner_chunk_shape();
    let lengths = metadata.chunk_grid.edge_lengths(&metadata.shape)?;
    for (d, lengths) in lengths.iter().enumerate() {
        if let Some(&edge) = lengths.iter().find(|&&edge| edge % inner[d] != 0) {
            // Build the chain for a shard of that edge: the error is the one a first shard
            // of that shape gets, naming both shapes.
            let mut shape = first.decoded_representation().shape().to_vec();
            shape[d] = edge;
            first
                .with_chunk_shape(shape)
                .map_err(|source| Error::Codecs {
                    array: path.to_owned(),
                    source: Box::new(source),
                })?;
        }
    }
    Ok(())
}
