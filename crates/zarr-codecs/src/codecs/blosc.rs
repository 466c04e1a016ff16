//! The `blosc` codec: c-blosc 1 containers, through the C library built by `blosc-src`.

use std::ffi::CStr;

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize, byte_range};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// The C functions used here, declared from c-blosc's `blosc.h` (1.21). Only the `_ctx`
/// variants are used for (de)compression: they take no global lock and are safe to call from
/// many threads at once.
mod ffi {
    use std::ffi::{c_char, c_int, c_void};

    unsafe extern "C" {
        pub(super) fn blosc_compress_ctx(
            clevel: c_int,
            doshuffle: c_int,
            typesize: usize,
            nbytes: usize,
            src: *const c_void,
            dest: *mut c_void,
            destsize: usize,
            compressor: *const c_char,
            blocksize: usize,
            numinternalthreads: c_int,
        ) -> c_int;

        pub(super) fn blosc_decompress_ctx(
            src: *const c_void,
            dest: *mut c_void,
            destsize: usize,
            numinternalthreads: c_int,
        ) -> c_int;

        pub(super) fn blosc_cbuffer_validate(
            cbuffer: *const c_void,
            cbytes: usize,
            nbytes: *mut usize,
        ) -> c_int;

        pub(super) fn blosc_getitem(
            src: *const c_void,
            start: c_int,
            nitems: c_int,
            dest: *mut c_void,
        ) -> c_int;

        pub(super) fn blosc_compname_to_compcode(compname: *const c_char) -> c_int;
    }
}

/// The container header's size.
const HEADER: usize = 16;
/// The largest buffer c-blosc 1 handles (`INT_MAX - BLOSC_MAX_OVERHEAD`).
const MAX_BUFFER: usize = i32::MAX as usize - HEADER;
/// The container format version c-blosc 1 writes and reads.
const FORMAT_VERSION: u8 = 2;
/// Header flag: the data is stored uncompressed after the header.
const FLAG_MEMCPYED: u8 = 0x02;
/// Header flag bit that c-blosc 1 refuses ("compressor flags from the future").
const FLAG_FUTURE: u8 = 0x08;

/// The compressor inside a blosc container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BloscCompressor {
    /// `blosclz`
    BloscLz,
    /// `lz4`
    Lz4,
    /// `lz4hc`
    Lz4Hc,
    /// `zstd`
    Zstd,
    /// `zlib`
    Zlib,
    /// `snappy`
    Snappy,
}

impl BloscCompressor {
    const ALL: [Self; 6] = [
        Self::BloscLz,
        Self::Lz4,
        Self::Lz4Hc,
        Self::Zstd,
        Self::Zlib,
        Self::Snappy,
    ];

    /// The `cname` written in metadata.
    pub fn as_str(self) -> &'static str {
        self.c_name().to_str().unwrap_or_default()
    }

    fn c_name(self) -> &'static CStr {
        match self {
            Self::BloscLz => c"blosclz",
            Self::Lz4 => c"lz4",
            Self::Lz4Hc => c"lz4hc",
            Self::Zstd => c"zstd",
            Self::Zlib => c"zlib",
            Self::Snappy => c"snappy",
        }
    }

    /// The compressor called `name`, if there is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Whether the linked c-blosc was built with this compressor (all six are, with the
    /// features this crate enables).
    pub fn is_available(self) -> bool {
        // SAFETY: a NUL-terminated string; the function only reads it.
        unsafe { ffi::blosc_compname_to_compcode(self.c_name().as_ptr()) >= 0 }
    }
}

/// The shuffle filter applied before compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BloscShuffle {
    /// `noshuffle`
    NoShuffle,
    /// `shuffle`: byte shuffle, grouping the i-th bytes of every element.
    Shuffle,
    /// `bitshuffle`: bit shuffle.
    BitShuffle,
}

impl BloscShuffle {
    /// The name written in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoShuffle => "noshuffle",
            Self::Shuffle => "shuffle",
            Self::BitShuffle => "bitshuffle",
        }
    }

    fn code(self) -> i32 {
        match self {
            Self::NoShuffle => 0,
            Self::Shuffle => 1,
            Self::BitShuffle => 2,
        }
    }
}

/// The 16-byte header of a blosc 1 container.
#[derive(Debug, Clone, Copy)]
struct Header {
    flags: u8,
    typesize: usize,
    nbytes: usize,
    cbytes: usize,
}

impl Header {
    /// Parse and check the header against the container's length and the size the chunk can
    /// hold, before anything is allocated.
    fn parse(data: &[u8], expected: ExpectedSize) -> Result<Self> {
        let codec = BloscCodec::NAME;
        if data.len() < HEADER {
            return Err(Error::truncated(
                codec,
                format!("{} bytes cannot hold the 16-byte blosc header", data.len()),
            ));
        }
        let word = |at: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&data[at..at + 4]);
            u32::from_le_bytes(w) as usize
        };
        let header = Self {
            flags: data[2],
            typesize: usize::from(data[3]),
            nbytes: word(4),
            cbytes: word(12),
        };
        if data[0] != FORMAT_VERSION {
            return Err(Error::corrupt(
                codec,
                format!("unsupported blosc format version {}", data[0]),
            ));
        }
        if header.flags & FLAG_FUTURE != 0 {
            return Err(Error::corrupt(
                codec,
                format!("unknown header flags {:#04x}", header.flags),
            ));
        }
        if header.cbytes > data.len() {
            return Err(Error::truncated(
                codec,
                format!(
                    "the header gives {} bytes, the data has {}",
                    header.cbytes,
                    data.len()
                ),
            ));
        }
        if header.cbytes != data.len() {
            return Err(Error::corrupt(
                codec,
                format!(
                    "the header gives {} bytes, the data has {}",
                    header.cbytes,
                    data.len()
                ),
            ));
        }
        expected.check_claim(codec, header.nbytes as u64)?;
        if header.nbytes > MAX_BUFFER {
            return Err(Error::corrupt(
                codec,
                format!("{} decoded bytes exceed the blosc limit", header.nbytes),
            ));
        }
        if header.memcpyed() && header.cbytes != header.nbytes + HEADER {
            return Err(Error::corrupt(
                codec,
                format!(
                    "an uncompressed container of {} bytes must be {} bytes long, not {}",
                    header.nbytes,
                    header.nbytes + HEADER,
                    header.cbytes
                ),
            ));
        }
        // The library's own check of the same facts, so it agrees before it reads.
        let mut nbytes = 0usize;
        // SAFETY: `data` holds at least the 16 header bytes the function reads; `nbytes` is a
        // valid out-pointer.
        let valid =
            unsafe { ffi::blosc_cbuffer_validate(data.as_ptr().cast(), data.len(), &mut nbytes) };
        if valid != 0 || nbytes != header.nbytes {
            return Err(Error::corrupt(codec, "c-blosc rejects the header"));
        }
        Ok(header)
    }

    fn memcpyed(&self) -> bool {
        self.flags & FLAG_MEMCPYED != 0
    }
}

/// The `blosc` codec (bytes->bytes): a c-blosc 1 container (a 16-byte header, then
/// shuffled, compressed blocks).
///
/// Configuration (zarr v3 `blosc`):
/// - `cname`: `"lz4"`, `"lz4hc"`, `"blosclz"`, `"zstd"`, `"zlib"` or `"snappy"` (required);
/// - `clevel`: 0 to 9 (required);
/// - `shuffle`: `"noshuffle"`, `"shuffle"` or `"bitshuffle"` (required; the zarr v2 integers
///   0, 1, 2 are read as these; v2's -1, "automatic", is refused);
/// - `typesize`: the element size the shuffle works on, 1 to 255 (written always; when
///   missing on read, the element size of the array is used);
/// - `blocksize`: bytes per block, 0 for automatic (default 0).
///
/// Decoding checks the header (its decoded size against the chunk's size, its compressed
/// size against the data's length) *before* allocating; containers stored uncompressed (the
/// memcpyed flag, which c-blosc sets for incompressible data or `clevel` 0, with the shuffle
/// flags left as they were) are copied out directly. A byte range can be decoded without
/// decoding every block ([`BytesToBytesCodec::partial_decode_into`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BloscCodec {
    cname: BloscCompressor,
    clevel: u8,
    shuffle: BloscShuffle,
    typesize: usize,
    blocksize: usize,
}

impl BloscCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "blosc";

    /// A blosc codec.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a `clevel` above 9, a `typesize` outside 1..=255,
    /// or a compressor the linked c-blosc lacks.
    pub fn try_new(
        cname: BloscCompressor,
        clevel: u8,
        shuffle: BloscShuffle,
        typesize: usize,
        blocksize: usize,
    ) -> Result<Self> {
        if clevel > 9 {
            return Err(Error::config(
                Self::NAME,
                format!("`clevel` must be an integer from 0 to 9, found {clevel}"),
            ));
        }
        if !(1..=255).contains(&typesize) {
            return Err(Error::config(
                Self::NAME,
                format!("`typesize` must be an integer from 1 to 255, found {typesize}"),
            ));
        }
        if !cname.is_available() {
            return Err(Error::config(
                Self::NAME,
                format!("compressor `{}` is not built into c-blosc", cname.as_str()),
            ));
        }
        Ok(Self {
            cname,
            clevel,
            shuffle,
            typesize,
            blocksize,
        })
    }

    /// Parse the configuration; `default_typesize` is used when `typesize` is missing (the
    /// element size of the array).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing or invalid key, or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject, default_typesize: usize) -> Result<Self> {
        let config = Config::new(
            metadata,
            &["cname", "clevel", "shuffle", "typesize", "blocksize"],
        )?;
        let cname_value = config.required("cname")?;
        let cname = BloscCompressor::parse(config.str("cname", cname_value)?).ok_or_else(|| {
            config.error(
                "cname",
                "one of \"lz4\", \"lz4hc\", \"blosclz\", \"zstd\", \"zlib\", \"snappy\"",
                cname_value,
            )
        })?;
        let clevel = config.int_in("clevel", config.required("clevel")?, 0..=9)? as u8;
        let shuffle_value = config.required("shuffle")?;
        let shuffle = match shuffle_value {
            Value::String(s) if s == "noshuffle" => BloscShuffle::NoShuffle,
            Value::String(s) if s == "shuffle" => BloscShuffle::Shuffle,
            Value::String(s) if s == "bitshuffle" => BloscShuffle::BitShuffle,
            Value::Number(n) if n.as_i64() == Some(0) => BloscShuffle::NoShuffle,
            Value::Number(n) if n.as_i64() == Some(1) => BloscShuffle::Shuffle,
            Value::Number(n) if n.as_i64() == Some(2) => BloscShuffle::BitShuffle,
            other => {
                return Err(config.error(
                    "shuffle",
                    "\"noshuffle\", \"shuffle\" or \"bitshuffle\"",
                    other,
                ));
            }
        };
        let typesize = match config.get("typesize") {
            None => default_typesize.clamp(1, 255),
            Some(v) => config.int_in("typesize", v, 1..=255)? as usize,
        };
        let blocksize = match config.get("blocksize") {
            None => 0,
            Some(v) => usize::try_from(config.uint("blocksize", v)?)
                .map_err(|_| config.error("blocksize", "a block size in bytes", v))?,
        };
        Self::try_new(cname, clevel, shuffle, typesize, blocksize)
    }

    /// The compressor.
    pub fn cname(&self) -> BloscCompressor {
        self.cname
    }

    /// The compression level.
    pub fn clevel(&self) -> u8 {
        self.clevel
    }

    /// The shuffle filter.
    pub fn shuffle(&self) -> BloscShuffle {
        self.shuffle
    }

    /// The element size the shuffle works on.
    pub fn typesize(&self) -> usize {
        self.typesize
    }

    /// The block size (0: automatic).
    pub fn blocksize(&self) -> usize {
        self.blocksize
    }

    /// Decompress a checked container into `out` (exactly `header.nbytes` long).
    fn decompress(data: &[u8], header: &Header, out: &mut [u8]) -> Result<()> {
        debug_assert_eq!(out.len(), header.nbytes);
        if header.nbytes == 0 {
            return Ok(());
        }
        if header.memcpyed() {
            out.copy_from_slice(&data[HEADER..]);
            return Ok(());
        }
        // SAFETY: the header was checked: `data` is exactly `cbytes` long, as the header says,
        // so c-blosc's bounds checks (which use `cbytes`) keep its reads inside `data`; it
        // writes at most `destsize = out.len()` bytes.
        let n = unsafe {
            ffi::blosc_decompress_ctx(data.as_ptr().cast(), out.as_mut_ptr().cast(), out.len(), 1)
        };
        if n < 0 || n as usize != header.nbytes {
            return Err(Error::corrupt(
                Self::NAME,
                format!("c-blosc failed to decompress (returned {n})"),
            ));
        }
        Ok(())
    }
}

impl BytesToBytesCodec for BloscCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([
                ("cname", Value::from(self.cname.as_str())),
                ("clevel", Value::from(self.clevel)),
                ("shuffle", Value::from(self.shuffle.as_str())),
                ("typesize", Value::from(self.typesize)),
                ("blocksize", Value::from(self.blocksize)),
            ]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        if decoded.len() > MAX_BUFFER {
            return Err(Error::Compression {
                codec: Self::NAME.into(),
                reason: format!(
                    "{} bytes exceed the blosc limit of {MAX_BUFFER}",
                    decoded.len()
                ),
            });
        }
        let destsize = decoded.len() + HEADER;
        let mut out = vec![0u8; destsize];
        // SAFETY: `decoded` holds `nbytes` readable bytes, `out` holds `destsize` writable
        // bytes, and they do not overlap; the compressor name is NUL-terminated.
        let n = unsafe {
            ffi::blosc_compress_ctx(
                i32::from(self.clevel),
                self.shuffle.code(),
                self.typesize,
                decoded.len(),
                decoded.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                destsize,
                self.cname.c_name().as_ptr(),
                self.blocksize,
                1,
            )
        };
        if n <= 0 {
            return Err(Error::Compression {
                codec: Self::NAME.into(),
                reason: format!("c-blosc returned {n}"),
            });
        }
        out.truncate(n as usize);
        Ok(out.into())
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let header = Header::parse(&encoded, expected)?;
        if header.memcpyed() {
            return Ok(encoded.slice(HEADER..));
        }
        let mut out = crate::zeroed_bytes(header.nbytes)?;
        Self::decompress(&encoded, &header, &mut out)?;
        Ok(out.into())
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let header = Header::parse(&encoded, ExpectedSize::Exact(out.len() as u64))?;
        Self::decompress(&encoded, &header, out)
    }

    fn can_partially_decode(&self) -> bool {
        true
    }

    fn partial_decode_into(
        &self,
        encoded: &Bytes,
        expected: ExpectedSize,
        offset: u64,
        out: &mut [u8],
    ) -> Result<()> {
        let header = Header::parse(encoded, expected)?;
        let range = byte_range(offset, out.len(), header.nbytes)?;
        if range.is_empty() {
            return Ok(());
        }
        if header.memcpyed() {
            out.copy_from_slice(&encoded[HEADER + range.start..HEADER + range.end]);
            return Ok(());
        }
        // blosc_getitem works in whole items of the header's typesize.
        let ts = header.typesize.max(1);
        let first = range.start / ts;
        let last = range.end.div_ceil(ts);
        if last * ts > header.nbytes {
            // A trailing partial item: decode everything.
            let mut all = crate::zeroed_bytes(header.nbytes)?;
            Self::decompress(encoded, &header, &mut all)?;
            out.copy_from_slice(&all[range]);
            return Ok(());
        }
        let mut items = vec![0u8; (last - first) * ts];
        // SAFETY: the header was checked as for decompression (c-blosc bounds its reads by
        // the header's `cbytes`, which equals the data's length); `first..last` lies within
        // the `nbytes / typesize` items, so it writes exactly `items.len()` bytes. Both counts
        // fit in `c_int` because `nbytes <= i32::MAX`.
        let n = unsafe {
            ffi::blosc_getitem(
                encoded.as_ptr().cast(),
                first as i32,
                (last - first) as i32,
                items.as_mut_ptr().cast(),
            )
        };
        if n < 0 || n as usize != items.len() {
            return Err(Error::corrupt(
                Self::NAME,
                format!("c-blosc failed to decompress items {first}..{last} (returned {n})"),
            ));
        }
        let skip = range.start - first * ts;
        out.copy_from_slice(&items[skip..skip + out.len()]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Bytes {
        (0..5000u32)
            .flat_map(|i| (i / 3).to_le_bytes())
            .collect::<Vec<u8>>()
            .into()
    }

    #[test]
    fn every_compressor_and_shuffle_round_trips() {
        for cname in BloscCompressor::ALL {
            assert!(cname.is_available(), "{cname:?}");
            for shuffle in [
                BloscShuffle::NoShuffle,
                BloscShuffle::Shuffle,
                BloscShuffle::BitShuffle,
            ] {
                let codec = BloscCodec::try_new(cname, 5, shuffle, 4, 0).unwrap();
                let enc = codec.encode(sample()).unwrap();
                assert!(
                    enc.len() < sample().len(),
                    "{cname:?} {shuffle:?} compresses"
                );
                let dec = codec
                    .decode(enc.clone(), ExpectedSize::Exact(20_000))
                    .unwrap();
                assert_eq!(dec, sample());
                let mut part = [0u8; 37];
                codec
                    .partial_decode_into(&enc, ExpectedSize::Exact(20_000), 1001, &mut part)
                    .unwrap();
                assert_eq!(&part[..], &sample()[1001..1038]);
            }
        }
    }

    #[test]
    fn clevel_zero_is_stored_uncompressed() {
        let codec =
            BloscCodec::try_new(BloscCompressor::Lz4, 0, BloscShuffle::Shuffle, 4, 0).unwrap();
        let enc = codec.encode(sample()).unwrap();
        assert_eq!(enc.len(), 20_000 + 16);
        assert_ne!(enc[2] & FLAG_MEMCPYED, 0);
        assert_eq!(
            codec.decode(enc, ExpectedSize::Exact(20_000)).unwrap(),
            sample()
        );
    }

    #[test]
    fn bad_headers_are_refused_before_allocating() {
        let codec =
            BloscCodec::try_new(BloscCompressor::Lz4, 5, BloscShuffle::Shuffle, 4, 0).unwrap();
        let enc = codec.encode(sample()).unwrap();
        // A header claiming 2^31 - 1 decoded bytes.
        let mut huge = enc.to_vec();
        huge[4..8].copy_from_slice(&(i32::MAX as u32).to_le_bytes());
        let e = codec
            .decode(huge.into(), ExpectedSize::Exact(20_000))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
        // Truncated.
        let e = codec
            .decode(enc.slice(..enc.len() - 1), ExpectedSize::Exact(20_000))
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
        let e = codec
            .decode(enc.slice(..5), ExpectedSize::Exact(20_000))
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
        // A block start pointing past the end (blosc has no checksum: corrupt compressed
        // bytes may decode to wrong values, but never read or write out of bounds).
        let mut bad = enc.to_vec();
        bad[16..20].copy_from_slice(&0xffff_ff00_u32.to_le_bytes());
        let e = codec
            .decode(bad.clone().into(), ExpectedSize::Exact(20_000))
            .unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
        let mut part = [0u8; 8];
        assert!(
            codec
                .partial_decode_into(&bad.into(), ExpectedSize::Exact(20_000), 0, &mut part)
                .is_err()
        );
        // Garbage after a valid header.
        let mut garbage = enc.to_vec();
        let n = garbage.len();
        for (i, b) in garbage[16..n].iter_mut().enumerate() {
            *b = (i * 131 % 256) as u8;
        }
        assert!(
            codec
                .decode(garbage.into(), ExpectedSize::Exact(20_000))
                .is_err()
        );
    }

    #[test]
    fn configuration() {
        let meta = |pairs: Value| {
            ExtensionObject::with_configuration(
                "blosc",
                pairs.as_object().cloned().unwrap_or_default(),
            )
        };
        let codec = BloscCodec::from_metadata(
            &meta(serde_json::json!({"cname": "zstd", "clevel": 3, "shuffle": 2})),
            8,
        )
        .unwrap();
        assert_eq!(codec.shuffle(), BloscShuffle::BitShuffle);
        assert_eq!(
            codec.to_metadata().to_json(),
            serde_json::json!({"name": "blosc", "configuration": {
                "cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 8, "blocksize": 0
            }})
        );
        for bad in [
            serde_json::json!({"cname": "lzma", "clevel": 3, "shuffle": "shuffle"}),
            serde_json::json!({"cname": "lz4", "clevel": 10, "shuffle": "shuffle"}),
            serde_json::json!({"cname": "lz4", "clevel": 1, "shuffle": -1}),
            serde_json::json!({"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 0}),
            serde_json::json!({"cname": "lz4", "clevel": 1}),
            serde_json::json!({"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "x": 1}),
        ] {
            assert!(
                BloscCodec::from_metadata(&meta(bad.clone()), 4).is_err(),
                "{bad}"
            );
        }
    }
}
