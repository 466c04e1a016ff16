//! `zarr-rs.n5_lz4`: N5's `lz4` compression, the block stream of lz4-java.

use std::ops::Range;

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// The stream's magic bytes, at the start of every block.
const MAGIC: &[u8; 8] = b"LZ4Block";
/// Magic, token, compressed length, decoded length, checksum.
const HEADER_LEN: usize = 8 + 1 + 4 + 4 + 4;
/// A block stored as it is.
const METHOD_RAW: u8 = 0x10;
/// A block stored as one LZ4 block.
const METHOD_LZ4: u8 = 0x20;
/// The token's low nibble is the block size's base-2 logarithm less this.
const LEVEL_BASE: u32 = 10;
/// The seed of the blocks' xxHash32 checksums.
const SEED: u32 = 0x9747_b28c;
/// The checksum is xxHash32's low 28 bits (lz4-java masks its `Checksum` view).
const CHECKSUM_MASK: u32 = 0x0FFF_FFFF;

/// N5's `lz4` compression as a bytes->bytes codec, named `zarr-rs.n5_lz4` (this project's
/// name: no registered codec has this format).
///
/// The Java N5 library compresses an `lz4` dataset's blocks with lz4-java's
/// `LZ4BlockOutputStream`: the data cut into blocks of `block_size` bytes (the N5
/// attribute `blockSize`, 65536 by default), each stored as a 21-byte header (the magic
/// `LZ4Block`; a token holding the method and the block size's logarithm; the stored and
/// decoded lengths and an xxHash32 checksum of the decoded bytes, seed `0x9747b28c`, low
/// 28 bits, all little-endian) followed by one LZ4 block, or the bytes as they are when
/// LZ4 does not make them smaller; an empty block ends the stream. This is neither the LZ4
/// frame format nor `numcodecs.lz4`, which is why N5's `lz4` has no Zarr equivalent.
///
/// Configuration: `block_size`, 64 to 33554432 (lz4-java's limits); default 65536.
///
/// Decoding reads every block header before allocating (the decoded lengths must add up to
/// no more than the chunk's size), checks each block's checksum and lengths, and reads
/// streams without the end mark (ending at a block boundary) or several streams one after
/// another, as lz4-java's reader does. Encoding compresses with `lz4_flex`, whose blocks
/// any LZ4 decoder reads.
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, ExpectedSize, N5Lz4Codec};
///
/// let codec = N5Lz4Codec::new(1024)?;
/// let data = Bytes::from(b"zarr ".repeat(1000));
/// let encoded = codec.encode(data.clone())?;
/// assert_eq!(&encoded[..8], b"LZ4Block");
/// assert_eq!(codec.decode(encoded, ExpectedSize::Exact(5000))?, data);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct N5Lz4Codec {
    block_size: u32,
}

impl Default for N5Lz4Codec {
    fn default() -> Self {
        Self {
            block_size: Self::DEFAULT_BLOCK_SIZE,
        }
    }
}

/// One block of a stream: where its stored bytes are and what they decode to.
struct Block {
    method: u8,
    stored: Range<usize>,
    decoded_len: usize,
    checksum: u32,
}

impl N5Lz4Codec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "zarr-rs.n5_lz4";
    /// N5's (and lz4-java's) default block size.
    pub const DEFAULT_BLOCK_SIZE: u32 = 1 << 16;
    /// The smallest block size lz4-java accepts.
    pub const MIN_BLOCK_SIZE: u32 = 64;
    /// The largest block size lz4-java accepts (32 MiB).
    pub const MAX_BLOCK_SIZE: u32 = 1 << 25;

    /// A codec cutting data into blocks of `block_size` bytes.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] outside `MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE`.
    pub fn new(block_size: u32) -> Result<Self> {
        if !(Self::MIN_BLOCK_SIZE..=Self::MAX_BLOCK_SIZE).contains(&block_size) {
            return Err(Error::config(
                Self::NAME,
                format!(
                    "`block_size` must be from {} to {}, found {block_size}",
                    Self::MIN_BLOCK_SIZE,
                    Self::MAX_BLOCK_SIZE
                ),
            ));
        }
        Ok(Self { block_size })
    }

    /// The block size the encoder cuts data into.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Parse `{"name": "zarr-rs.n5_lz4", "configuration": {"block_size": n}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a block size out of range, not an integer, or an
    /// unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["block_size"])?;
        match config.get("block_size") {
            None => Ok(Self::default()),
            Some(v) => {
                let size = config.int_in(
                    "block_size",
                    v,
                    i64::from(Self::MIN_BLOCK_SIZE)..=i64::from(Self::MAX_BLOCK_SIZE),
                )?;
                Self::new(size as u32)
            }
        }
    }

    /// The token's low nibble: the block size's base-2 logarithm, rounded up, less 10.
    fn level(&self) -> u8 {
        let log2 = u32::BITS - (self.block_size - 1).leading_zeros();
        log2.saturating_sub(LEVEL_BASE) as u8
    }

    fn checksum(data: &[u8]) -> u32 {
        twox_hash::XxHash32::oneshot(SEED, data) & CHECKSUM_MASK
    }

    /// Walk the stream's block headers, checking each as lz4-java's reader does; return the
    /// blocks and their decoded total.
    fn blocks(encoded: &[u8]) -> Result<(Vec<Block>, u64)> {
        let mut blocks = Vec::new();
        let mut total = 0u64;
        let mut at = 0;
        while at < encoded.len() {
            let Some(header) = encoded.get(at..at + HEADER_LEN) else {
                return Err(Error::truncated(
                    Self::NAME,
                    format!(
                        "{} bytes at offset {at} cannot hold a {HEADER_LEN}-byte block header",
                        encoded.len() - at
                    ),
                ));
            };
            if &header[..8] != MAGIC {
                return Err(Error::corrupt(
                    Self::NAME,
                    format!("no `LZ4Block` magic at offset {at}"),
                ));
            }
            let token = header[8];
            let method = token & 0xF0;
            if method != METHOD_RAW && method != METHOD_LZ4 {
                return Err(Error::corrupt(
                    Self::NAME,
                    format!("unknown compression method {method:#04x} in the block at offset {at}"),
                ));
            }
            let int = |i: usize| i32::from_le_bytes(header[i..i + 4].try_into().expect("4 bytes"));
            let (stored_len, decoded_len, checksum) = (int(9), int(13), int(17) as u32);
            let capacity = 1i64 << (LEVEL_BASE + u32::from(token & 0x0F));
            let start = at;
            let bad = |reason: String| {
                Err(Error::corrupt(
                    Self::NAME,
                    format!("the block at offset {start}: {reason}"),
                ))
            };
            if stored_len < 0 || decoded_len < 0 {
                return bad(format!(
                    "negative lengths (stored {stored_len}, decoded {decoded_len})"
                ));
            }
            if i64::from(decoded_len) > capacity {
                return bad(format!(
                    "{decoded_len} decoded bytes exceed the block size {capacity} its token gives"
                ));
            }
            if (decoded_len == 0) != (stored_len == 0) {
                return bad(format!(
                    "{stored_len} stored bytes for {decoded_len} decoded ones"
                ));
            }
            if method == METHOD_RAW && stored_len != decoded_len {
                return bad(format!(
                    "an uncompressed block of {stored_len} stored bytes for {decoded_len} decoded ones"
                ));
            }
            at += HEADER_LEN;
            if decoded_len == 0 {
                // The end mark; a stream may follow it.
                if checksum != 0 {
                    return bad(format!("the end mark has checksum {checksum:#x}, not 0"));
                }
                continue;
            }
            let stored = at..at + stored_len as usize;
            if stored.end > encoded.len() {
                return Err(Error::truncated(
                    Self::NAME,
                    format!(
                        "the block at offset {start} stores {stored_len} bytes, {} remain",
                        encoded.len() - at
                    ),
                ));
            }
            at = stored.end;
            total += decoded_len as u64;
            blocks.push(Block {
                method,
                stored,
                decoded_len: decoded_len as usize,
                checksum,
            });
        }
        Ok((blocks, total))
    }

    /// Decode `blocks` of `encoded` into `out`, which holds exactly their decoded total.
    fn decode_blocks(encoded: &[u8], blocks: &[Block], out: &mut [u8]) -> Result<()> {
        let mut at = 0;
        for block in blocks {
            let target = &mut out[at..at + block.decoded_len];
            let stored = &encoded[block.stored.clone()];
            if block.method == METHOD_RAW {
                target.copy_from_slice(stored);
            } else {
                let produced = lz4_flex::block::decompress_into(stored, target).map_err(|e| {
                    Error::corrupt(
                        Self::NAME,
                        format!(
                            "the block at offset {}: {e}",
                            block.stored.start - HEADER_LEN
                        ),
                    )
                })?;
                if produced != block.decoded_len {
                    return Err(Error::corrupt(
                        Self::NAME,
                        format!(
                            "the block at offset {} decodes to {produced} bytes, its header says {}",
                            block.stored.start - HEADER_LEN,
                            block.decoded_len
                        ),
                    ));
                }
            }
            let computed = Self::checksum(target);
            if computed != block.checksum {
                return Err(Error::ChecksumMismatch {
                    codec: Self::NAME.into(),
                    stored: block.checksum,
                    computed,
                });
            }
            at += block.decoded_len;
        }
        Ok(())
    }
}

impl BytesToBytesCodec for N5Lz4Codec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("block_size", Value::from(self.block_size))]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let level = self.level();
        let block_size = self.block_size as usize;
        let blocks = decoded.len().div_ceil(block_size);
        let bound = lz4_flex::block::get_maximum_output_size(block_size.min(decoded.len()));
        let mut out = Vec::with_capacity(
            blocks * HEADER_LEN + decoded.len().min(blocks * bound) + HEADER_LEN,
        );
        let mut scratch = vec![0u8; bound];
        for block in decoded.chunks(block_size) {
            let checksum = Self::checksum(block);
            let compressed = lz4_flex::block::compress_into(block, &mut scratch).map_err(|e| {
                Error::Compression {
                    codec: Self::NAME.into(),
                    reason: e.to_string(),
                }
            })?;
            let (method, stored) = if compressed < block.len() {
                (METHOD_LZ4, &scratch[..compressed])
            } else {
                (METHOD_RAW, block)
            };
            out.extend_from_slice(MAGIC);
            out.push(method | level);
            // Blocks hold at most 32 MiB, so both lengths fit an i32.
            out.extend_from_slice(&(stored.len() as u32).to_le_bytes());
            out.extend_from_slice(&(block.len() as u32).to_le_bytes());
            out.extend_from_slice(&checksum.to_le_bytes());
            out.extend_from_slice(stored);
        }
        // The end mark: an empty uncompressed block.
        out.extend_from_slice(MAGIC);
        out.push(METHOD_RAW | level);
        out.extend_from_slice(&[0; 12]);
        Ok(out.into())
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let (blocks, total) = Self::blocks(&encoded)?;
        expected.check_claim(Self::NAME, total)?;
        let mut out = crate::zeroed_bytes(total as usize)?;
        Self::decode_blocks(&encoded, &blocks, &mut out)?;
        Ok(out.into())
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let (blocks, total) = Self::blocks(&encoded)?;
        ExpectedSize::Exact(out.len() as u64).check_claim(Self::NAME, total)?;
        Self::decode_blocks(&encoded, &blocks, out)
    }

    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        let n = decoded.limit();
        let blocks = n.div_ceil(u64::from(self.block_size)).max(1);
        // Blocks are stored as they are when LZ4 does not shrink them.
        Some(ExpectedSize::AtMost(
            n.saturating_add((blocks + 1) * HEADER_LEN as u64),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::unhex;

    fn sample(n: usize) -> Bytes {
        // Compressible runs with some noise, so both block methods occur.
        let mut state = 0x2545_f491u32;
        (0..n)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                if (i / 300) % 2 == 0 {
                    (i / 7) as u8
                } else {
                    state as u8
                }
            })
            .collect::<Vec<u8>>()
            .into()
    }

    #[test]
    fn levels_match_lz4_java() {
        for (size, level) in [
            (64, 0),
            (1024, 0),
            (1025, 1),
            (65536, 6),
            (65537, 7),
            (1 << 25, 15),
        ] {
            assert_eq!(N5Lz4Codec::new(size).unwrap().level(), level, "{size}");
        }
        for bad in [0, 63, (1 << 25) + 1] {
            let e = N5Lz4Codec::new(bad).unwrap_err();
            assert!(e.to_string().contains("block_size"), "{e}");
        }
    }

    #[test]
    fn stream_layout_and_round_trips() {
        let codec = N5Lz4Codec::new(1024).unwrap();
        for n in [0, 1, 63, 1024, 1025, 3000, 10_000] {
            let data = sample(n);
            let encoded = codec.encode(data.clone()).unwrap();
            // Every block starts with the magic; the last 21 bytes are the end mark.
            let end = &encoded[encoded.len() - HEADER_LEN..];
            assert_eq!(&end[..8], MAGIC);
            assert_eq!(end[8], METHOD_RAW);
            assert_eq!(&end[9..], &[0; 12]);
            let (blocks, total) = N5Lz4Codec::blocks(&encoded).unwrap();
            assert_eq!(total, n as u64);
            assert_eq!(blocks.len(), n.div_ceil(1024));
            assert_eq!(
                codec
                    .decode(encoded.clone(), ExpectedSize::Exact(n as u64))
                    .unwrap(),
                data
            );
            assert_eq!(
                codec
                    .decode(encoded.clone(), ExpectedSize::AtMost(n as u64 + 5))
                    .unwrap(),
                data
            );
            let mut out = vec![0u8; n];
            codec.decode_into(encoded.clone(), &mut out).unwrap();
            assert_eq!(out, data);
            let bound = codec.encoded_size(ExpectedSize::Exact(n as u64)).unwrap();
            assert!(encoded.len() as u64 <= bound.limit(), "{n}");
        }
        // Noise is stored raw, runs compressed.
        let noise: Vec<u8> = sample(2 * 300 * 4)
            .iter()
            .enumerate()
            .filter(|(i, _)| (i / 300) % 2 == 1)
            .map(|(_, b)| *b)
            .collect();
        let encoded = codec.encode(noise[..1000].to_vec().into()).unwrap();
        assert_eq!(encoded[8], METHOD_RAW);
        let encoded = codec.encode(Bytes::from(vec![7u8; 1000])).unwrap();
        assert_eq!(encoded[8], METHOD_LZ4);
        assert!(encoded.len() < 100);
    }

    #[test]
    fn reads_lz4_java_output() {
        // lz4-java 1.8.0: `new LZ4BlockOutputStream(out, 64)`, written
        // "hello hello hello hello, lz4-java! " three times, finished: two LZ4 blocks of 64
        // and 41 bytes, then the end mark.
        let encoded = unhex(concat!(
            "4c5a34426c6f636b20210000004000000049838c086d68656c6c6f200600be2c206c7a342d6a",
            "617661211d00021200602c206c7a342d4c5a34426c6f636b201b000000290000008b8c9f0dbe",
            "6a617661212068656c6c6f0600c02c206c7a342d6a61766121204c5a34426c6f636b10000000",
            "000000000000000000",
        ));
        let data = b"hello hello hello hello, lz4-java! ".repeat(3);
        let codec = N5Lz4Codec::new(64).unwrap();
        let decoded = codec
            .decode(encoded.clone().into(), ExpectedSize::Exact(105))
            .unwrap();
        assert_eq!(&decoded[..], &data[..]);
        // Our checksums and tokens are lz4-java's: only the LZ4 blocks themselves may differ.
        let ours = codec.encode(data.into()).unwrap();
        let (theirs, _) = N5Lz4Codec::blocks(&encoded).unwrap();
        let (mine, _) = N5Lz4Codec::blocks(&ours).unwrap();
        assert_eq!(theirs.len(), mine.len());
        for (a, b) in theirs.iter().zip(&mine) {
            assert_eq!(a.checksum, b.checksum);
            assert_eq!(a.decoded_len, b.decoded_len);
        }
        assert_eq!(encoded[8], ours[8]);
        assert_eq!(
            &encoded[encoded.len() - HEADER_LEN..],
            &ours[ours.len() - HEADER_LEN..]
        );
    }

    #[test]
    fn corrupt_streams_are_errors() {
        let codec = N5Lz4Codec::new(64).unwrap();
        let data = sample(500);
        let encoded = codec.encode(data.clone()).unwrap().to_vec();
        let decode = |bytes: Vec<u8>| codec.decode(bytes.into(), ExpectedSize::Exact(500));
        // Truncated anywhere inside a block or header.
        for cut in [1, 10, HEADER_LEN, HEADER_LEN + 5] {
            let e = decode(encoded[..cut].to_vec()).unwrap_err();
            assert!(matches!(e, Error::Truncated { .. }), "{cut}: {e}");
        }
        // Without the end mark, the stream still reads (it ends at a block boundary).
        assert_eq!(
            decode(encoded[..encoded.len() - HEADER_LEN].to_vec()).unwrap(),
            data
        );
        // Two streams one after another decode as their concatenation.
        let mut twice = encoded.clone();
        twice.extend_from_slice(&encoded);
        let both = codec
            .decode(twice.into(), ExpectedSize::AtMost(1000))
            .unwrap();
        assert_eq!(&both[..500], &data[..]);
        assert_eq!(&both[500..], &data[..]);
        // Bad magic, method, lengths, checksum.
        let mut bad = encoded.clone();
        bad[0] = b'X';
        assert!(decode(bad).unwrap_err().to_string().contains("magic"));
        let mut bad = encoded.clone();
        bad[8] = 0x30;
        assert!(decode(bad).unwrap_err().to_string().contains("method"));
        let mut bad = encoded.clone();
        bad[13..17].copy_from_slice(&2000u32.to_le_bytes());
        assert!(decode(bad).unwrap_err().to_string().contains("block size"));
        let mut bad = encoded.clone();
        bad[17] ^= 1;
        assert!(matches!(
            decode(bad).unwrap_err(),
            Error::ChecksumMismatch { .. }
        ));
        let mut bad = encoded.clone();
        let end = bad.len() - 1;
        bad[end] = 1;
        assert!(decode(bad).unwrap_err().to_string().contains("end mark"));
        // More data than the chunk holds is refused before allocating.
        let e = codec
            .decode(encoded.clone().into(), ExpectedSize::Exact(499))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e}");
        let e = codec
            .decode(encoded.clone().into(), ExpectedSize::Exact(501))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e}");
        // Flipped bits never panic.
        for i in 0..encoded.len() {
            for bit in [0x01, 0x80] {
                let mut bad = encoded.clone();
                bad[i] ^= bit;
                if let Ok(out) = decode(bad) {
                    assert_eq!(out.len(), 500);
                }
            }
        }
    }

    #[test]
    fn metadata() {
        let codec = N5Lz4Codec::new(4096).unwrap();
        let meta = codec.to_metadata();
        assert_eq!(meta.name, N5Lz4Codec::NAME);
        assert_eq!(N5Lz4Codec::from_metadata(&meta).unwrap(), codec);
        let default = ExtensionObject::new(N5Lz4Codec::NAME);
        assert_eq!(
            N5Lz4Codec::from_metadata(&default).unwrap().block_size(),
            65536
        );
        for bad in [
            serde_json::json!({"block_size": 10}),
            serde_json::json!({"block_size": "big"}),
            serde_json::json!({"level": 1}),
        ] {
            let meta = ExtensionObject::with_configuration(
                N5Lz4Codec::NAME,
                bad.as_object().unwrap().clone(),
            );
            assert!(N5Lz4Codec::from_metadata(&meta).is_err(), "{bad}");
        }
    }
}
