//! The `numcodecs.lzma` codec: xz, legacy `.lzma` ("alone") or raw LZMA streams, as Python's
//! `lzma.compress` writes them, through liblzma.

use bytes::Bytes;
use liblzma::bufread::XzDecoder;
use liblzma::stream::{
    Action, CONCATENATED, Check, Filters, LzmaOptions, MatchFinder, Mode, Status, Stream,
};
use serde_json::{Map, Value};
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::codecs::{decode_stream, decode_stream_into};
use crate::config::Config;
use crate::error::{Error, Result};

const NAME: &str = "numcodecs.lzma";

/// Python's `lzma.PRESET_EXTREME`, or'd into a preset level.
const PRESET_EXTREME: u64 = 0x8000_0000;

/// The container an [`LzmaCodec`] writes (numcodecs' `format`, Python's `lzma.FORMAT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LzmaFormat {
    /// The `.xz` container (`format` 1, the default): filters and an integrity check in the
    /// stream.
    Xz,
    /// The legacy `.lzma` container (`format` 2): one LZMA1 filter, no integrity check.
    Alone,
    /// A raw stream (`format` 3): no container, the filter chain comes from the metadata.
    Raw,
}

impl LzmaFormat {
    fn code(self) -> i64 {
        match self {
            Self::Xz => 1,
            Self::Alone => 2,
            Self::Raw => 3,
        }
    }
}

/// The options of an LZMA1 or LZMA2 filter: a preset, then the keys given.
#[derive(Debug, Clone, PartialEq)]
struct LzmaSpec {
    version: u8,
    preset: u32,
    dict_size: Option<u32>,
    lc: Option<u32>,
    lp: Option<u32>,
    pb: Option<u32>,
    /// `lzma.MODE_FAST` (1) or `MODE_NORMAL` (2).
    mode: Option<u32>,
    nice_len: Option<u32>,
    /// An `lzma.MF_*` value (checked when parsed).
    mf: Option<u32>,
    depth: Option<u32>,
}

/// One filter of a chain (a Python `lzma` filter specifier).
#[derive(Debug, Clone, PartialEq)]
enum FilterSpec {
    /// `FILTER_LZMA1` or `FILTER_LZMA2`.
    Lzma(LzmaSpec),
    /// `FILTER_DELTA` with its byte distance.
    Delta { dist: u32 },
    /// A branch/call/jump filter (`FILTER_X86` ... `FILTER_SPARC`, ARM64, RISC-V).
    Bcj { id: u64, start_offset: u32 },
}

const FILTER_LZMA1: u64 = 0x4000_0000_0000_0001;
const FILTER_LZMA2: u64 = 0x21;
const FILTER_DELTA: u64 = 0x03;
/// x86, PowerPC, IA-64, ARM, ARM-Thumb, SPARC, ARM64, RISC-V.
const BCJ_FILTERS: std::ops::RangeInclusive<u64> = 0x04..=0x0b;

impl FilterSpec {
    fn parse(value: &Value, index: usize) -> Result<Self> {
        let field = format!("filters[{index}]");
        let bad = |reason: String| Error::config(NAME, format!("`{field}`: {reason}"));
        let map = value
            .as_object()
            .ok_or_else(|| bad(format!("expected a filter specifier object, found {value}")))?;
        let id = map
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("needs an integer `id` (an `lzma.FILTER_*` value)".into()))?;
        let allowed: &[&str] = match id {
            FILTER_LZMA1 | FILTER_LZMA2 => &[
                "id",
                "preset",
                "dict_size",
                "lc",
                "lp",
                "pb",
                "mode",
                "nice_len",
                "mf",
                "depth",
            ],
            FILTER_DELTA => &["id", "dist"],
            id if BCJ_FILTERS.contains(&id) => &["id", "start_offset"],
            other => return Err(bad(format!("unknown filter id {other}"))),
        };
        if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(bad(format!("unknown key `{key}` for filter id {id}")));
        }
        let uint = |key: &str, range: std::ops::RangeInclusive<u64>| -> Result<Option<u32>> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => match v.as_u64() {
                    Some(n) if range.contains(&n) => Ok(Some(n as u32)),
                    _ => Err(bad(format!(
                        "`{key}` must be an integer from {} to {}, found {v}",
                        range.start(),
                        range.end()
                    ))),
                },
            }
        };
        Ok(match id {
            FILTER_LZMA1 | FILTER_LZMA2 => {
                let preset = match map.get("preset") {
                    None | Some(Value::Null) => 6,
                    Some(v) => parse_preset(v).map_err(&bad)?,
                };
                let mf = uint("mf", 0..=0xff)?;
                if let Some(other) = mf.filter(|m| match_finder(*m).is_none()) {
                    return Err(bad(format!(
                        "`mf` must be an `lzma.MF_*` value (3, 4, 18, 19 or 20), found {other}"
                    )));
                }
                FilterSpec::Lzma(LzmaSpec {
                    version: if id == FILTER_LZMA1 { 1 } else { 2 },
                    preset,
                    // liblzma's own bounds: 4 KiB to 1.5 GiB, 2 to 273.
                    dict_size: uint("dict_size", 4096..=(3 << 29))?,
                    lc: uint("lc", 0..=4)?,
                    lp: uint("lp", 0..=4)?,
                    pb: uint("pb", 0..=4)?,
                    nice_len: uint("nice_len", 2..=273)?,
                    mode: uint("mode", 1..=2)?,
                    mf,
                    depth: uint("depth", 0..=u64::from(u32::MAX))?,
                })
            }
            FILTER_DELTA => FilterSpec::Delta {
                dist: uint("dist", 1..=256)?.unwrap_or(1),
            },
            id => FilterSpec::Bcj {
                id,
                start_offset: uint("start_offset", 0..=u64::from(u32::MAX))?.unwrap_or(0),
            },
        })
    }

    fn is_lzma(&self) -> bool {
        matches!(self, Self::Lzma(_))
    }

    fn is_lzma1(&self) -> bool {
        matches!(self, Self::Lzma(LzmaSpec { version: 1, .. }))
    }
}

impl LzmaSpec {
    /// The liblzma options.
    fn options(&self) -> std::result::Result<LzmaOptions, liblzma::stream::Error> {
        let Self {
            preset,
            dict_size,
            lc,
            lp,
            pb,
            mode,
            nice_len,
            mf,
            depth,
            ..
        } = self;
        let mut options = LzmaOptions::new_preset(*preset)?;
        if let Some(v) = dict_size {
            options.dict_size(*v);
        }
        if let Some(v) = lc {
            options.literal_context_bits(*v);
        }
        if let Some(v) = lp {
            options.literal_position_bits(*v);
        }
        if let Some(v) = pb {
            options.position_bits(*v);
        }
        if let Some(v) = mode {
            options.mode(if *v == 1 { Mode::Fast } else { Mode::Normal });
        }
        if let Some(v) = nice_len {
            options.nice_len(*v);
        }
        if let Some(v) = mf.and_then(match_finder) {
            options.match_finder(v);
        }
        if let Some(v) = depth {
            options.depth(*v);
        }
        Ok(options)
    }
}

/// The match finder of an `lzma.MF_*` value.
fn match_finder(code: u32) -> Option<MatchFinder> {
    Some(match code {
        0x03 => MatchFinder::HashChain3,
        0x04 => MatchFinder::HashChain4,
        0x12 => MatchFinder::BinaryTree2,
        0x13 => MatchFinder::BinaryTree3,
        0x14 => MatchFinder::BinaryTree4,
        _ => return None,
    })
}

/// A preset level 0 to 9, optionally or'd with `lzma.PRESET_EXTREME`.
fn parse_preset(value: &Value) -> std::result::Result<u32, String> {
    match value.as_u64() {
        Some(p) if (p & !PRESET_EXTREME) <= 9 => Ok(p as u32),
        _ => Err(format!(
            "`preset` must be a level from 0 to 9, optionally or'd with lzma.PRESET_EXTREME \
             (2147483648), found {value}"
        )),
    }
}

/// The liblzma filter chain of `specs`.
fn build_filters(specs: &[FilterSpec]) -> std::result::Result<Filters, liblzma::stream::Error> {
    let mut filters = Filters::new();
    for spec in specs {
        match spec {
            FilterSpec::Lzma(lzma) if lzma.version == 1 => {
                filters.lzma1(&lzma.options()?);
            }
            FilterSpec::Lzma(lzma) => {
                filters.lzma2(&lzma.options()?);
            }
            FilterSpec::Delta { dist } => {
                // The delta filter's one property byte is the distance minus one.
                filters.delta_properties(&[(dist - 1) as u8])?;
            }
            FilterSpec::Bcj { id, start_offset } => {
                let props = start_offset.to_le_bytes();
                let props: &[u8] = if *start_offset == 0 { &[] } else { &props };
                match id {
                    0x04 => filters.x86_properties(props)?,
                    0x05 => filters.powerpc_properties(props)?,
                    0x06 => filters.ia64_properties(props)?,
                    0x07 => filters.arm_properties(props)?,
                    0x08 => filters.arm_thumb_properties(props)?,
                    0x09 => filters.sparc_properties(props)?,
                    0x0a => filters.arm64_properties(props)?,
                    _ => filters.riscv_properties(props)?,
                };
            }
        }
    }
    Ok(filters)
}

/// The `numcodecs.lzma` codec (bytes->bytes): LZMA compression as numcodecs' `LZMA` does it
/// through Python's `lzma` module, in any of its three containers. Zarr v2 arrays name it
/// `lzma`; zarr-python 3 writes it in v3 metadata as `numcodecs.lzma`.
///
/// Configuration (numcodecs' keys, with Python's `lzma` constants as integers):
/// - `format`: 1 for `.xz` (the default), 2 for the legacy `.lzma` container, 3 for a raw
///   stream;
/// - `check`: the `.xz` integrity check, -1 for the default (CRC-64), 0 none, 1 CRC-32,
///   4 CRC-64, 10 SHA-256; the other formats take only -1 or 0;
/// - `preset`: the level 0 to 9 (default 6), optionally or'd with `PRESET_EXTREME`
///   (2147483648); not together with `filters`;
/// - `filters`: a filter chain as Python's `lzma` takes it, a list of up to four objects with
///   an `id` (`FILTER_LZMA1` 4611686018427387905, `FILTER_LZMA2` 33, `FILTER_DELTA` 3, the
///   branch filters 4 to 11) and that filter's keys (`preset`, `dict_size`, `lc`, `lp`, `pb`,
///   `mode`, `nice_len`, `mf`, `depth`; `dist`; `start_offset`), the LZMA filter last.
///   Required for raw streams; the legacy container takes exactly one `FILTER_LZMA1`.
///
/// Decoding reads concatenated `.xz` streams one after another, verifies their integrity
/// checks, and stops with [`Error::DecodedSizeLimit`](crate::Error::DecodedSizeLimit) as
/// soon as the output would exceed what the chunk can hold. liblzma allocates the dictionary
/// a stream declares (up to 1.5 GiB of address space, touched only as far as the chunk's data
/// reaches); encoding at high presets takes liblzma's memory per encoding thread (about
/// 674 MiB at preset 9).
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, ExpectedSize, LzmaCodec};
///
/// let codec = LzmaCodec::xz(1)?;
/// let data = Bytes::from(b"zarr ".repeat(1000));
/// let encoded = codec.encode(data.clone())?;
/// assert_eq!(&encoded[..6], b"\xfd7zXZ\0"); // the .xz magic
/// assert_eq!(codec.decode(encoded, ExpectedSize::Exact(5000))?, data);
/// # Ok::<(), zarr_codecs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LzmaCodec {
    format: LzmaFormat,
    /// numcodecs' `check` as written (-1 for the format's default).
    check: i64,
    preset: Option<u32>,
    filters: Option<Vec<FilterSpec>>,
    /// The `filters` value as it was read, written back unchanged.
    filters_json: Option<Vec<Value>>,
}

impl LzmaCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = NAME;

    /// An `.xz` codec at `preset` (0 to 9, optionally or'd with `PRESET_EXTREME`) with the
    /// default CRC-64 check: numcodecs' `LZMA(preset=preset)`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a preset out of range.
    pub fn xz(preset: u32) -> Result<Self> {
        let preset =
            parse_preset(&Value::from(preset)).map_err(|reason| Error::config(NAME, reason))?;
        Ok(Self {
            format: LzmaFormat::Xz,
            check: -1,
            preset: Some(preset),
            filters: None,
            filters_json: None,
        })
    }

    /// The container.
    pub fn format(&self) -> LzmaFormat {
        self.format
    }

    /// Parse `{"name": "numcodecs.lzma", "configuration": {"format": 1, "check": -1,
    /// "preset": null, "filters": null}}` (every key optional).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for an unknown format, check, preset or filter, a
    /// combination Python's `lzma` refuses (a preset with filters, a check outside `.xz`, a
    /// raw stream without filters), or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["format", "check", "preset", "filters"])?;
        let format = match config.get("format") {
            None | Some(Value::Null) => LzmaFormat::Xz,
            Some(v) => match config.int_in("format", v, 1..=3)? {
                1 => LzmaFormat::Xz,
                2 => LzmaFormat::Alone,
                _ => LzmaFormat::Raw,
            },
        };
        let check = match config.get("check") {
            None | Some(Value::Null) => -1,
            Some(v) => match v.as_i64() {
                Some(c @ (-1 | 0 | 1 | 4 | 10)) => c,
                _ => return Err(config.error("check", "-1, 0, 1, 4 or 10", v)),
            },
        };
        if format != LzmaFormat::Xz && !matches!(check, -1 | 0) {
            return Err(Error::config(
                NAME,
                format!("`check` {check}: integrity checks are only in the .xz format (format 1)"),
            ));
        }
        let preset = match config.get("preset") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_preset(v).map_err(|reason| Error::config(NAME, reason))?),
        };
        let filters_json = match config.get("filters") {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(v) => return Err(config.error("filters", "a list of filter specifiers", v)),
        };
        let filters = match &filters_json {
            None => None,
            Some(list) => Some(
                list.iter()
                    .enumerate()
                    .map(|(i, v)| FilterSpec::parse(v, i))
                    .collect::<Result<Vec<_>>>()?,
            ),
        };
        let codec = Self {
            format,
            check,
            preset,
            filters,
            filters_json,
        };
        codec.validate_chain()?;
        Ok(codec)
    }

    /// The combinations Python's `lzma` accepts.
    fn validate_chain(&self) -> Result<()> {
        let Some(filters) = &self.filters else {
            if self.format == LzmaFormat::Raw {
                return Err(Error::config(
                    NAME,
                    "a raw stream (format 3) needs `filters`",
                ));
            }
            return Ok(());
        };
        if self.preset.is_some() {
            return Err(Error::config(
                NAME,
                "`preset` and `filters` cannot both be given (put the preset in the LZMA filter)",
            ));
        }
        let Some(last) = filters.last() else {
            return Err(Error::config(NAME, "`filters` is empty"));
        };
        if filters.len() > 4 {
            return Err(Error::config(
                NAME,
                format!(
                    "`filters` has {} filters; liblzma takes at most 4",
                    filters.len()
                ),
            ));
        }
        if !last.is_lzma() || filters[..filters.len() - 1].iter().any(FilterSpec::is_lzma) {
            return Err(Error::config(
                NAME,
                "`filters` must end with its one LZMA1 or LZMA2 filter",
            ));
        }
        if self.format == LzmaFormat::Alone && !(filters.len() == 1 && filters[0].is_lzma1()) {
            return Err(Error::config(
                NAME,
                "the legacy .lzma format (format 2) takes exactly one FILTER_LZMA1 filter",
            ));
        }
        if self.format == LzmaFormat::Xz && filters.iter().any(FilterSpec::is_lzma1) {
            return Err(Error::config(
                NAME,
                "the .xz format (format 1) takes FILTER_LZMA2, not FILTER_LZMA1",
            ));
        }
        Ok(())
    }

    fn liblzma_check(&self) -> Check {
        match self.check {
            0 => Check::None,
            1 => Check::Crc32,
            10 => Check::Sha256,
            _ => Check::Crc64,
        }
    }

    fn encoder(&self) -> std::result::Result<Stream, liblzma::stream::Error> {
        let preset = self.preset.unwrap_or(6);
        match (self.format, &self.filters) {
            (LzmaFormat::Xz, None) => Stream::new_easy_encoder(preset, self.liblzma_check()),
            (LzmaFormat::Xz, Some(specs)) => {
                Stream::new_stream_encoder(&build_filters(specs)?, self.liblzma_check())
            }
            (LzmaFormat::Alone, None) => {
                Stream::new_lzma_encoder(&LzmaOptions::new_preset(preset)?)
            }
            (LzmaFormat::Alone, Some(specs)) => match specs.as_slice() {
                // The one LZMA1 filter, as validated.
                [FilterSpec::Lzma(lzma)] => Stream::new_lzma_encoder(&lzma.options()?),
                _ => Err(liblzma::stream::Error::Options),
            },
            (LzmaFormat::Raw, specs) => {
                Stream::new_raw_encoder(&build_filters(specs.as_deref().unwrap_or_default())?)
            }
        }
    }

    /// A decoder of a stream that decodes to `size`. The memory the stream's headers may
    /// make liblzma allocate (its dictionary, mostly) is bounded by
    /// [`LzmaCodec::memory_limit`]; raw streams take their filters from the metadata, not
    /// from the data.
    fn decoder(&self, size: ExpectedSize) -> Result<XzDecoderStream> {
        let memlimit = self.memory_limit(size);
        let stream = match self.format {
            LzmaFormat::Xz => Stream::new_stream_decoder(memlimit, CONCATENATED),
            LzmaFormat::Alone => Stream::new_lzma_decoder(memlimit),
            LzmaFormat::Raw => build_filters(self.filters.as_deref().unwrap_or_default())
                .and_then(|filters| Stream::new_raw_decoder(&filters)),
        }
        .map_err(|e| Error::corrupt(NAME, format!("liblzma refused to start decoding: {e}")))?;
        Ok(XzDecoderStream(stream))
    }
}

impl LzmaCodec {
    /// The most memory liblzma may use decoding a chunk of `size`: 256 MiB, or more for a
    /// chunk of known size over 128 MiB (twice its size) or for `filters` naming a larger
    /// dictionary (its size and 16 MiB). numcodecs' presets use dictionaries of at most
    /// 64 MiB (preset 9), and a dictionary larger than the chunk it decodes gains nothing, so
    /// a stream whose header declares one (up to 4 GiB) beyond what the metadata allows is
    /// refused with a typed error instead of allocated.
    fn memory_limit(&self, size: ExpectedSize) -> u64 {
        let configured = self
            .filters
            .iter()
            .flatten()
            .filter_map(|filter| match filter {
                FilterSpec::Lzma(spec) => spec.dict_size,
                _ => None,
            })
            .map(|dict| u64::from(dict) + (16 << 20))
            .max()
            .unwrap_or(0);
        let chunk = match size {
            ExpectedSize::Exact(n) => n.saturating_mul(2),
            // Unknown (variable-length elements, or a codec before this one): only a
            // dictionary the metadata names raises the limit.
            ExpectedSize::AtMost(_) => 0,
        };
        (256u64 << 20).max(chunk).max(configured)
    }
}

/// `e`, or, when liblzma stopped at the memory limit `limit`
/// ([`LzmaCodec::memory_limit`]), an error that says so.
fn explain_memory_limit(e: Error, limit: u64) -> Error {
    let at_limit = matches!(&e, Error::Decompression { source, .. }
        if source
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<liblzma::stream::Error>())
            .is_some_and(|inner| matches!(inner, liblzma::stream::Error::MemLimit)));
    if at_limit {
        Error::corrupt(
            NAME,
            format!(
                "the stream's header asks for more than {} MiB of memory to decode (a \
                 dictionary larger than the chunk needs, and than the codec's `filters` name)",
                limit >> 20
            ),
        )
    } else {
        e
    }
}

/// A liblzma decoding stream, read through as `Read`.
struct XzDecoderStream(Stream);

impl XzDecoderStream {
    fn reader(self, encoded: &[u8]) -> XzDecoder<&[u8]> {
        XzDecoder::new_stream(encoded, self.0)
    }
}

impl BytesToBytesCodec for LzmaCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut map = Map::new();
        map.insert("format".into(), Value::from(self.format.code()));
        map.insert("check".into(), Value::from(self.check));
        map.insert(
            "preset".into(),
            self.preset.map_or(Value::Null, Value::from),
        );
        map.insert(
            "filters".into(),
            self.filters_json.clone().map_or(Value::Null, Value::Array),
        );
        ExtensionObject::with_configuration(Self::NAME, map)
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let fail = |e: liblzma::stream::Error| Error::Compression {
            codec: NAME.into(),
            reason: e.to_string(),
        };
        let mut stream = self.encoder().map_err(fail)?;
        let mut out = Vec::with_capacity(decoded.len() / 2 + 128);
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.capacity().max(4096));
            }
            let consumed = stream.total_in() as usize;
            let status = stream
                .process_vec(&decoded[consumed..], &mut out, Action::Finish)
                .map_err(fail)?;
            if status == Status::StreamEnd {
                return Ok(out.into());
            }
        }
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let limit = self.memory_limit(expected);
        decode_stream(
            &mut self.decoder(expected)?.reader(&encoded),
            expected,
            NAME,
        )
        .map_err(|e| explain_memory_limit(e, limit))
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let size = ExpectedSize::Exact(u64::try_from(out.len()).unwrap_or(u64::MAX));
        let limit = self.memory_limit(size);
        decode_stream_into(&mut self.decoder(size)?.reader(&encoded), out, NAME)
            .map_err(|e| explain_memory_limit(e, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata(configuration: Value) -> ExtensionObject {
        ExtensionObject::with_configuration(NAME, configuration.as_object().cloned().unwrap())
    }

    fn sample() -> Bytes {
        (0..20_000u32)
            .flat_map(|i| ((i / 7) as u16).to_le_bytes())
            .collect::<Vec<u8>>()
            .into()
    }

    fn round_trip(config: Value) -> Bytes {
        let codec = LzmaCodec::from_metadata(&metadata(config.clone())).unwrap();
        let data = sample();
        let encoded = codec.encode(data.clone()).unwrap();
        let n = data.len() as u64;
        assert_eq!(
            codec
                .decode(encoded.clone(), ExpectedSize::Exact(n))
                .unwrap(),
            data,
            "{config}"
        );
        let mut out = vec![0u8; data.len()];
        codec.decode_into(encoded.clone(), &mut out).unwrap();
        assert_eq!(out, data);
        // What is written back parses to the same codec.
        assert_eq!(
            LzmaCodec::from_metadata(&codec.to_metadata()).unwrap(),
            codec
        );
        encoded
    }

    #[test]
    fn every_format_round_trips() {
        let xz = round_trip(json!({}));
        assert_eq!(&xz[..6], b"\xfd7zXZ\0");
        // Stream flags: the check id in the low nibble of the second flag byte.
        assert_eq!(xz[7], 4);
        assert_eq!(round_trip(json!({"check": 0}))[7], 0);
        assert_eq!(round_trip(json!({"check": 1, "preset": 1}))[7], 1);
        assert_eq!(
            round_trip(json!({"check": 10, "preset": 9 | PRESET_EXTREME}))[7],
            10
        );
        // The legacy header: properties byte (lc, lp, pb = 3, 0, 2 -> 0x5d), then the dict size.
        let alone = round_trip(json!({"format": 2, "preset": 1}));
        assert_eq!(alone[0], 0x5d);
        round_trip(json!({"format": 2, "filters": [{"id": FILTER_LZMA1, "preset": 3, "lc": 0}]}));
        round_trip(
            json!({"format": 3, "filters": [{"id": FILTER_DELTA, "dist": 2},
                                                   {"id": FILTER_LZMA2, "preset": 1}]}),
        );
        round_trip(
            json!({"format": 3, "filters": [{"id": FILTER_LZMA1, "dict_size": 65536,
                                                    "mode": 1, "mf": 4, "nice_len": 32}]}),
        );
        round_trip(json!({"format": 1, "filters": [{"id": 4}, {"id": FILTER_LZMA2, "pb": 0}]}));
    }

    #[test]
    fn python_lzma_output_decodes() {
        // CPython 3.11: lzma.compress(b"hello zarr") (.xz, CRC-64, preset 6); with
        // format=FORMAT_ALONE, preset=1; and format=FORMAT_RAW with filters
        // [{"id": FILTER_DELTA, "dist": 2}, {"id": FILTER_LZMA2, "preset": 1}].
        const XZ: &[u8] = &[
            0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x04, 0xe6, 0xd6, 0xb4, 0x46, 0x02, 0x00,
            0x21, 0x01, 0x16, 0x00, 0x00, 0x00, 0x74, 0x2f, 0xe5, 0xa3, 0x01, 0x00, 0x09, 0x68,
            0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x7a, 0x61, 0x72, 0x72, 0x00, 0x00, 0x00, 0xb2, 0x37,
            0xed, 0xc9, 0x0d, 0xfd, 0x2b, 0x23, 0x00, 0x01, 0x22, 0x0a, 0x15, 0x1a, 0xe1, 0x67,
            0x1f, 0xb6, 0xf3, 0x7d, 0x01, 0x00, 0x00, 0x00, 0x00, 0x04, 0x59, 0x5a,
        ];
        const ALONE: &[u8] = &[
            0x5d, 0x00, 0x00, 0x10, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
            0x34, 0x19, 0x49, 0xdb, 0x85, 0x5c, 0x63, 0xbb, 0x71, 0xd3, 0xcd, 0xfb, 0xbc, 0xe7,
            0xff, 0xff, 0x85, 0xd0, 0x00, 0x00,
        ];
        const RAW: &[u8] = &[
            0x01, 0x00, 0x09, 0x68, 0x65, 0x04, 0x07, 0x03, 0xb4, 0x0b, 0x41, 0xf8, 0x11, 0x00,
        ];
        for (config, encoded) in [
            (json!({}), XZ),
            (json!({"format": 2, "preset": 1}), ALONE),
            (
                json!({"format": 3, "filters": [{"id": FILTER_DELTA, "dist": 2},
                                               {"id": FILTER_LZMA2, "preset": 1}]}),
                RAW,
            ),
        ] {
            let codec = LzmaCodec::from_metadata(&metadata(config)).unwrap();
            let encoded = Bytes::from_static(encoded);
            assert_eq!(
                codec
                    .decode(encoded.clone(), ExpectedSize::Exact(10))
                    .unwrap(),
                Bytes::from_static(b"hello zarr")
            );
            // liblzma writes what Python's lzma (also liblzma) writes.
            assert_eq!(
                codec.encode(Bytes::from_static(b"hello zarr")).unwrap(),
                encoded
            );
        }
        // Two .xz streams one after the other decode as one.
        let codec = LzmaCodec::from_metadata(&metadata(json!({}))).unwrap();
        let twice = Bytes::from([XZ, XZ].concat());
        assert_eq!(
            codec.decode(twice, ExpectedSize::AtMost(100)).unwrap(),
            Bytes::from_static(b"hello zarrhello zarr")
        );
    }

    #[test]
    fn corrupt_truncated_and_oversized_streams_are_errors() {
        for config in [
            json!({}),
            json!({"format": 2}),
            json!({"format": 3, "filters": [{"id": FILTER_LZMA2}]}),
        ] {
            let codec = LzmaCodec::from_metadata(&metadata(config.clone())).unwrap();
            let data = sample();
            let n = data.len() as u64;
            let encoded = codec.encode(data).unwrap();
            let truncated = encoded.slice(..encoded.len() - 8);
            assert!(
                codec.decode(truncated, ExpectedSize::Exact(n)).is_err(),
                "{config}"
            );
            let e = codec
                .decode(encoded.clone(), ExpectedSize::Exact(n - 1))
                .unwrap_err();
            assert!(
                matches!(e, Error::DecodedSizeLimit { .. }),
                "{config}: {e:?}"
            );
            let e = codec
                .decode(encoded.clone(), ExpectedSize::Exact(n + 1))
                .unwrap_err();
            assert!(
                matches!(e, Error::DecodedSizeMismatch { .. }),
                "{config}: {e:?}"
            );
            assert!(
                codec
                    .decode(
                        Bytes::from_static(b"not lzma at all"),
                        ExpectedSize::AtMost(n)
                    )
                    .is_err()
            );
        }
        // A flipped bit in the .xz payload fails its CRC-64 (or the decoder).
        let codec = LzmaCodec::xz(6).unwrap();
        let data = sample();
        let mut bad = codec.encode(data.clone()).unwrap().to_vec();
        let middle = bad.len() / 2;
        bad[middle] ^= 0x10;
        assert!(
            codec
                .decode(bad.into(), ExpectedSize::Exact(data.len() as u64))
                .is_err()
        );
    }

    #[test]
    fn a_header_declaring_a_huge_dictionary_is_refused() {
        // The legacy header's dictionary size (bytes 1..5) raised to 4 GiB - 1: the data
        // still decodes with it, but liblzma would allocate the dictionary first.
        let codec = LzmaCodec::from_metadata(&metadata(json!({"format": 2, "preset": 1}))).unwrap();
        let data = sample();
        let n = data.len() as u64;
        let mut encoded = codec.encode(data.clone()).unwrap().to_vec();
        encoded[1..5].copy_from_slice(&(1u32 << 27).to_le_bytes());
        // 128 MiB is within the limit.
        assert_eq!(
            codec
                .decode(encoded.clone().into(), ExpectedSize::Exact(n))
                .unwrap(),
            data
        );
        encoded[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = codec
            .decode(encoded.clone().into(), ExpectedSize::Exact(n))
            .unwrap_err();
        assert!(e.to_string().contains("more than 256 MiB of memory"), "{e}");
        let mut out = vec![0u8; data.len()];
        let e = codec
            .decode_into(encoded.clone().into(), &mut out)
            .unwrap_err();
        assert!(e.to_string().contains("more than 256 MiB of memory"), "{e}");
        // Strings (size unknown) get no more, even for a 512 MiB dictionary, ...
        encoded[1..5].copy_from_slice(&(1u32 << 29).to_le_bytes());
        let e = codec
            .decode(encoded.clone().into(), ExpectedSize::AtMost(4 << 30))
            .unwrap_err();
        assert!(e.to_string().contains("more than 256 MiB of memory"), "{e}");
        // ... a chunk of known size twice its size, and a dictionary the metadata names
        // what it needs.
        assert_eq!(codec.memory_limit(ExpectedSize::Exact(1 << 30)), 2 << 30);
        let named = LzmaCodec::from_metadata(&metadata(json!({
            "filters": [{"id": FILTER_LZMA2, "preset": 1, "dict_size": 1u32 << 29}]
        })))
        .unwrap();
        assert_eq!(
            named.memory_limit(ExpectedSize::AtMost(4 << 30)),
            (1 << 29) + (16 << 20)
        );
        // A stream declaring the 512 MiB dictionary its codec's metadata names decodes.
        let mut big = encoded;
        big[1..5].copy_from_slice(&(1u32 << 29).to_le_bytes());
        let named = LzmaCodec::from_metadata(&metadata(json!({
            "format": 2,
            "filters": [{"id": FILTER_LZMA1, "preset": 1, "dict_size": 1u32 << 29}]
        })))
        .unwrap();
        assert_eq!(
            named.decode(big.into(), ExpectedSize::Exact(n)).unwrap(),
            data
        );
    }

    #[test]
    fn configurations_python_refuses_are_refused() {
        for config in [
            json!({"format": 0}),
            json!({"format": 4}),
            json!({"check": 2}),
            json!({"format": 2, "check": 1}),
            json!({"preset": 10}),
            json!({"preset": 1, "filters": [{"id": FILTER_LZMA2}]}),
            json!({"format": 3}),
            json!({"filters": []}),
            json!({"filters": [{"id": FILTER_LZMA2}, {"id": FILTER_DELTA}]}),
            json!({"filters": [{"id": FILTER_LZMA1}]}),
            json!({"format": 2, "filters": [{"id": FILTER_LZMA2}]}),
            json!({"filters": [{"id": 99}, {"id": FILTER_LZMA2}]}),
            json!({"filters": [{"id": FILTER_DELTA, "dist": 0}, {"id": FILTER_LZMA2}]}),
            json!({"filters": [{"id": FILTER_LZMA2, "lc": 5}]}),
            json!({"filters": [{"id": FILTER_LZMA2, "mf": 7}]}),
            json!({"filters": [{"id": FILTER_LZMA2, "dist": 1}]}),
            json!({"filters": "lzma2"}),
            json!({"level": 1}),
        ] {
            let e = LzmaCodec::from_metadata(&metadata(config.clone()));
            assert!(
                matches!(e, Err(Error::InvalidConfiguration { .. })),
                "{config}: {e:?}"
            );
        }
        assert!(LzmaCodec::xz(10).is_err());
    }
}
