//! The codec registry: codec names to constructors.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use zarr_core::ExtensionObject;

use crate::codec::Codec;
use crate::codecs::bitpacking::BitPackingCodec;
use crate::codecs::bitround::BitroundCodec;
use crate::codecs::blosc::BloscCodec;
use crate::codecs::bytes::BytesCodec;
use crate::codecs::cast_value::CastValueCodec;
use crate::codecs::crc32c::Crc32cCodec;
use crate::codecs::gzip::GzipCodec;
use crate::codecs::n5::N5DefaultCodec;
use crate::codecs::n5_lz4::N5Lz4Codec;
use crate::codecs::numcodecs::alias::{ALIASES, NumcodecsAlias};
use crate::codecs::numcodecs::bz2::Bz2Codec;
use crate::codecs::numcodecs::checksum::{Checksum, ChecksumCodec};
use crate::codecs::numcodecs::jenkins::JenkinsLookup3Codec;
use crate::codecs::numcodecs::lz4::Lz4Codec;
use crate::codecs::numcodecs::lzma::LzmaCodec;
use crate::codecs::numcodecs::numeric::{NUMERIC_FILTER_NAMES, NumericFilterCodec};
use crate::codecs::numcodecs::packbits::PackBitsCodec;
use crate::codecs::numcodecs::pcodec::PcodecCodec;
use crate::codecs::numcodecs::shuffle::ShuffleCodec;
use crate::codecs::optional::OptionalCodec;
use crate::codecs::pad::{OffsetCodec, PadCodec};
use crate::codecs::reshape::ReshapeCodec;
use crate::codecs::scale_offset::ScaleOffsetCodec;
use crate::codecs::singleton_dim::SingletonDimCodec;
use crate::codecs::squeeze::SqueezeCodec;
use crate::codecs::transpose::TransposeCodec;
use crate::codecs::zfp::{ZfpCodec, ZfpyCodec};
use crate::codecs::zlib::ZlibCodec;
use crate::codecs::zstd::ZstdCodec;
use crate::error::Result;
use crate::representation::ChunkRepresentation;

/// A function that builds a codec from its metadata.
///
/// It receives the codec's metadata (name, configuration, `must_understand`), the
/// representation the codec will see (for an array->array or array->bytes codec, the array
/// it encodes; for a bytes->bytes codec, the array the chain's array->bytes codec encodes,
/// which tells it the element size), and the registry itself (for codecs that contain codec
/// chains of their own, like `sharding_indexed`).
pub type CodecConstructor = Arc<
    dyn Fn(&ExtensionObject, &ChunkRepresentation, &CodecRegistry) -> Result<Codec> + Send + Sync,
>;

/// Codec names mapped to constructors.
///
/// [`CodecRegistry::with_defaults`] knows every codec of this crate: `bytes`, `transpose`,
/// `gzip`, `zstd`, `blosc` and `crc32c`, and the numcodecs codecs zarr-python writes:
/// `numcodecs.zlib`, `numcodecs.bz2`, `numcodecs.lzma`, `numcodecs.lz4`, `numcodecs.shuffle`,
/// the checksums `numcodecs.crc32`, `numcodecs.adler32`, `numcodecs.crc32c`,
/// `numcodecs.fletcher32` and `numcodecs.jenkins_lookup3`, the filters `numcodecs.delta`,
/// `numcodecs.fixedscaleoffset`, `numcodecs.bitround`, `numcodecs.quantize`,
/// `numcodecs.astype` and `numcodecs.packbits`, the serializers `numcodecs.pcodec` and
/// `numcodecs.zfpy`, and `numcodecs.blosc`, `numcodecs.zstd` and `numcodecs.gzip`
/// (numcodecs' configurations of the codecs above); the zarr-extensions codecs `bitround`,
/// `reshape`, `scale_offset`, `cast_value` and `zfp` (zarrs' zfp, also read as `zarrs.zfp`); and
/// zarrs' `zarrs.optional` for nullable data types (also read as `optional`). Other crates
/// add theirs the same way a user does:
///
/// ```
/// use std::sync::Arc;
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, Codec, CodecRegistry, ExpectedSize, Result};
/// use zarr_core::ExtensionObject;
///
/// /// Flips every bit: a toy bytes->bytes codec.
/// #[derive(Debug)]
/// struct Invert;
///
/// impl BytesToBytesCodec for Invert {
///     fn to_metadata(&self) -> ExtensionObject {
///         ExtensionObject::new("example.invert")
///     }
///     fn encode(&self, decoded: Bytes) -> Result<Bytes> {
///         Ok(decoded.iter().map(|b| !b).collect::<Vec<u8>>().into())
///     }
///     fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
///         expected.check("example.invert", encoded.len() as u64)?;
///         self.encode(encoded)
///     }
/// }
///
/// let mut registry = CodecRegistry::with_defaults();
/// registry.register("example.invert", |_meta, _repr, _registry| {
///     Ok(Codec::BytesToBytes(Arc::new(Invert)))
/// });
/// assert!(registry.contains("example.invert"));
/// assert!(registry.contains("zstd"));
/// ```
#[derive(Clone, Default)]
pub struct CodecRegistry {
    constructors: BTreeMap<String, CodecConstructor>,
}

impl fmt::Debug for CodecRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.constructors.keys()).finish()
    }
}

impl CodecRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry with every codec of this crate.
    pub fn with_defaults() -> Self {
        let mut registry = Self::new();
        registry
            .register(BytesCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToBytes(Arc::new(BytesCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(TransposeCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(
                    TransposeCodec::from_metadata(meta)?,
                )))
            })
            .register(GzipCodec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(GzipCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(ZlibCodec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(ZlibCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(ZstdCodec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(ZstdCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(BloscCodec::NAME, |meta, repr, _| {
                let typesize = repr.element_size().unwrap_or(1);
                Ok(Codec::BytesToBytes(Arc::new(BloscCodec::from_metadata(
                    meta, typesize,
                )?)))
            })
            .register(Crc32cCodec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(Crc32cCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(Lz4Codec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(Lz4Codec::from_metadata(
                    meta,
                )?)))
            })
            .register(ShuffleCodec::NAME, |meta, repr, _| {
                let size = repr.element_size().unwrap_or(1);
                Ok(Codec::BytesToBytes(Arc::new(ShuffleCodec::from_metadata(
                    meta, size,
                )?)))
            })
            .register(Bz2Codec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(Bz2Codec::from_metadata(
                    meta,
                )?)))
            })
            .register(LzmaCodec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(LzmaCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(JenkinsLookup3Codec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(
                    JenkinsLookup3Codec::from_metadata(meta)?,
                )))
            })
            .register(BitPackingCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToBytes(Arc::new(
                    BitPackingCodec::from_metadata(meta)?,
                )))
            })
            .register(PackBitsCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(PackBitsCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(PcodecCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToBytes(Arc::new(PcodecCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(BitroundCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(BitroundCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(ReshapeCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(ReshapeCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(CastValueCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(
                    CastValueCodec::from_metadata(meta)?,
                )))
            })
            .register(ScaleOffsetCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(
                    ScaleOffsetCodec::from_metadata(meta)?,
                )))
            })
            .register(SqueezeCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(SqueezeCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(SingletonDimCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToArray(Arc::new(
                    SingletonDimCodec::from_metadata(meta)?,
                )))
            })
            .register(PadCodec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(PadCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(OffsetCodec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(OffsetCodec::from_metadata(
                    meta,
                )?)))
            })
            .register(N5Lz4Codec::NAME, |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(N5Lz4Codec::from_metadata(
                    meta,
                )?)))
            })
            .register(ZfpyCodec::NAME, |meta, _, _| {
                Ok(Codec::ArrayToBytes(Arc::new(ZfpyCodec::from_metadata(
                    meta,
                )?)))
            });
        registry.register(N5DefaultCodec::NAME, |meta, repr, registry| {
            Ok(Codec::ArrayToBytes(Arc::new(
                N5DefaultCodec::from_metadata(meta, repr, registry)?,
            )))
        });
        for name in [OptionalCodec::NAME, OptionalCodec::REGISTERED] {
            registry.register(name, |meta, repr, registry| {
                Ok(Codec::ArrayToBytes(Arc::new(OptionalCodec::from_metadata(
                    meta, repr, registry,
                )?)))
            });
        }
        for name in [ZfpCodec::NAME, ZfpCodec::ALIAS] {
            registry.register(name, |meta, _, _| {
                Ok(Codec::ArrayToBytes(Arc::new(ZfpCodec::from_metadata(
                    meta,
                )?)))
            });
        }
        for checksum in [
            Checksum::Crc32,
            Checksum::Adler32,
            Checksum::Crc32c,
            Checksum::Fletcher32,
        ] {
            registry.register(checksum.name(), move |meta, _, _| {
                Ok(Codec::BytesToBytes(Arc::new(ChecksumCodec::from_metadata(
                    checksum, meta,
                )?)))
            });
        }
        for (name, id) in ALIASES {
            registry.register(name, move |meta, repr, registry| {
                NumcodecsAlias::build(id, meta, repr, registry)
            });
        }
        for name in NUMERIC_FILTER_NAMES {
            registry.register(name, |meta, repr, _| {
                Ok(Codec::ArrayToArray(Arc::new(
                    NumericFilterCodec::from_metadata(meta, repr.data_type())?,
                )))
            });
        }
        registry
    }

    /// Register `constructor` under `name`, replacing any constructor already registered
    /// under that name.
    pub fn register<F>(&mut self, name: impl Into<String>, constructor: F) -> &mut Self
    where
        F: Fn(&ExtensionObject, &ChunkRepresentation, &CodecRegistry) -> Result<Codec>
            + Send
            + Sync
            + 'static,
    {
        self.constructors.insert(name.into(), Arc::new(constructor));
        self
    }

    /// Remove the constructor registered under `name`, returning it.
    pub fn unregister(&mut self, name: &str) -> Option<CodecConstructor> {
        self.constructors.remove(name)
    }

    /// Whether a codec called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.constructors.contains_key(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.constructors.keys().map(String::as_str)
    }

    /// Build the codec `metadata` names, or `None` if no codec of that name is registered.
    ///
    /// # Errors
    /// Whatever the constructor returns: typically
    /// [`Error::InvalidConfiguration`](crate::Error::InvalidConfiguration).
    pub fn build(
        &self,
        metadata: &ExtensionObject,
        input: &ChunkRepresentation,
    ) -> Result<Option<Codec>> {
        match self.constructors.get(&metadata.name) {
            None => Ok(None),
            Some(constructor) => constructor(metadata, input, self).map(Some),
        }
    }
}
