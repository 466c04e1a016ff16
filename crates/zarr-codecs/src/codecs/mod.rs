//! The codecs this crate implements, and helpers they share.

pub(crate) mod bitpacking;
pub(crate) mod bitround;
pub(crate) mod blosc;
pub(crate) mod bytes;
pub(crate) mod cast_value;
pub(crate) mod crc32c;
pub(crate) mod gzip;
pub(crate) mod n5;
pub(crate) mod n5_lz4;
pub(crate) mod numcodecs;
pub(crate) mod optional;
pub(crate) mod pad;
pub(crate) mod reshape;
pub(crate) mod scale_offset;
pub(crate) mod singleton_dim;
pub(crate) mod squeeze;
pub(crate) mod transpose;
pub(crate) mod zfp;
pub(crate) mod zlib;
pub(crate) mod zstd;

use std::io::{ErrorKind, Read};

/// The [`ArrayToArrayCodec`](crate::codec::ArrayToArrayCodec) methods of a codec that only
/// relabels the chunk's shape (`zarrs.squeeze`, `singleton_dim`): the elements stay as
/// they are, in the same order, checked against the representation under the codec's
/// `NAME`.
macro_rules! relabel_codec_methods {
    () => {
        fn encode(
            &self,
            array: crate::array_bytes::ArrayBytes,
            decoded: &crate::representation::ChunkRepresentation,
        ) -> crate::error::Result<crate::array_bytes::ArrayBytes> {
            array.validate_for(Self::NAME, decoded)?;
            Ok(array)
        }

        fn decode(
            &self,
            array: crate::array_bytes::ArrayBytes,
            decoded: &crate::representation::ChunkRepresentation,
        ) -> crate::error::Result<crate::array_bytes::ArrayBytes> {
            // Same elements, same order: the decoded chunk checks as the encoded one would.
            array.validate_for(Self::NAME, decoded)?;
            Ok(array)
        }

        fn decode_into(
            &self,
            array: crate::array_bytes::ArrayBytes,
            decoded: &crate::representation::ChunkRepresentation,
            out: &mut [u8],
        ) -> crate::error::Result<()> {
            array.validate_for(Self::NAME, decoded)?;
            crate::codec::copy_exact(&array.into_fixed(Self::NAME)?, out)
        }

        fn decoded_position(
            &self,
            index: u64,
            _decoded: &crate::representation::ChunkRepresentation,
        ) -> Option<u64> {
            Some(index)
        }
    };
}
pub(crate) use relabel_codec_methods;

/// Flip each of `bits` in every byte of `encoded` and decode: an error, or a chunk of the
/// right size, never a panic (test helper for array->bytes codecs).
#[cfg(test)]
pub(crate) fn assert_bit_flips_decode_safely(
    codec: &dyn crate::codec::ArrayToBytesCodec,
    encoded: &::bytes::Bytes,
    repr: &crate::representation::ChunkRepresentation,
    bits: &[u8],
) {
    let size = repr.fixed_size_usize().unwrap();
    for i in 0..encoded.len() {
        for &bit in bits {
            let mut bad = encoded.to_vec();
            bad[i] ^= bit;
            if let Ok(back) = codec.decode(bad.into(), repr) {
                assert_eq!(
                    back.as_fixed().unwrap().len(),
                    size,
                    "byte {i} bit {bit:#x}"
                );
            }
        }
    }
}

/// Bytes from hex text (test fixtures: streams other implementations wrote).
#[cfg(test)]
pub(crate) fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

use crate::error::{Error, Result};

fn stream_error(codec: &str, source: std::io::Error) -> Error {
    Error::Decompression {
        codec: codec.to_owned(),
        source,
    }
}

/// Read a decoder to its end into `out`, returning how many bytes it produced; fail with
/// [`Error::DecodedSizeLimit`] as soon as it produces more than `out` holds.
pub(crate) fn read_exact_bounded(
    decoder: &mut impl Read,
    out: &mut [u8],
    codec: &str,
) -> Result<usize> {
    let mut filled = 0;
    while filled < out.len() {
        match decoder.read(&mut out[filled..]) {
            Ok(0) => return Ok(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(stream_error(codec, e)),
        }
    }
    // Full: one more byte is too many.
    let mut probe = [0u8; 1];
    loop {
        match decoder.read(&mut probe) {
            Ok(0) => return Ok(filled),
            Ok(_) => {
                return Err(Error::DecodedSizeLimit {
                    codec: codec.to_owned(),
                    claimed: filled as u64 + 1,
                    limit: filled as u64,
                });
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(stream_error(codec, e)),
        }
    }
}

/// Read a decoder to its end, failing with [`Error::DecodedSizeLimit`] as soon as the output
/// exceeds `limit` bytes (so at most `limit + 1` bytes are ever buffered).
pub(crate) fn read_bounded(decoder: &mut impl Read, limit: u64, codec: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    decoder
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| stream_error(codec, e))?;
    if out.len() as u64 > limit {
        return Err(Error::DecodedSizeLimit {
            codec: codec.to_owned(),
            claimed: out.len() as u64,
            limit,
        });
    }
    Ok(out)
}

/// Decode the stream `decoder` yields (a deflate-family codec) into a new buffer: exactly
/// the expected size, or at most its limit, never more.
pub(crate) fn decode_stream(
    decoder: &mut impl Read,
    expected: crate::codec::ExpectedSize,
    codec: &str,
) -> Result<::bytes::Bytes> {
    use crate::codec::ExpectedSize;
    match expected {
        ExpectedSize::Exact(n) => {
            let n = usize::try_from(n).map_err(|_| Error::DecodedSizeLimit {
                codec: codec.into(),
                claimed: n,
                limit: usize::MAX as u64,
            })?;
            let mut out = crate::zeroed_bytes(n)?;
            let produced = read_exact_bounded(decoder, &mut out, codec)?;
            expected.check(codec, produced as u64)?;
            Ok(out.into())
        }
        ExpectedSize::AtMost(limit) => Ok(read_bounded(decoder, limit, codec)?.into()),
    }
}

/// Decode the stream `decoder` yields into `out`, which it must fill exactly.
pub(crate) fn decode_stream_into(
    decoder: &mut impl Read,
    out: &mut [u8],
    codec: &str,
) -> Result<()> {
    let produced = read_exact_bounded(decoder, out, codec)?;
    crate::codec::ExpectedSize::Exact(out.len() as u64).check(codec, produced as u64)
}

/// A deflate-family compression level: 0 to 9.
pub(crate) fn deflate_level(codec: &str, level: u32) -> Result<u32> {
    if level > 9 {
        return Err(Error::config(
            codec,
            format!("`level` must be an integer from 0 to 9, found {level}"),
        ));
    }
    Ok(level)
}

/// Compress `data` through a deflate-family `encoder` and `finish` it, with an I/O failure
/// reported as the `codec`'s compression error.
pub(crate) fn encode_stream<W: std::io::Write>(
    mut encoder: W,
    data: &[u8],
    finish: impl FnOnce(W) -> std::io::Result<Vec<u8>>,
    codec: &str,
) -> Result<::bytes::Bytes> {
    let fail = |e: std::io::Error| Error::Compression {
        codec: codec.into(),
        reason: e.to_string(),
    };
    encoder.write_all(data).map_err(fail)?;
    Ok(finish(encoder).map_err(fail)?.into())
}
