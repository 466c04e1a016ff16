//! The `.npy` format (numpy's `NEP 1`): a header with the dtype, order and shape, then the
//! elements in C order.

use std::io::Read;

use anyhow::{Context, Result, bail};
use zarr::metadata::{DataType, FloatFormat};

/// How elements of a data type are written to `.npy`: the numpy dtype in little-endian form
/// and any change to the stored bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NpyType {
    /// The `descr`: `<f4`, `|b1`, `<M8[10ns]`, ...
    pub(crate) descr: String,
    /// For `int2`/`int4`/`uint2`/`uint4`: the value bits to sign-extend or mask into a whole
    /// byte (`Some((bits, signed))`).
    pub(crate) small_int: Option<(u32, bool)>,
}

/// The numeric data type of a numpy `descr` in any byte order (`<i8` is `int64`, `|b1`
/// `bool`); `None` for every other dtype.
pub(crate) fn numeric_data_type(descr: &str) -> Option<DataType> {
    Some(match descr.trim_start_matches(['<', '>', '|', '=']) {
        "b1" => DataType::Bool,
        "i1" => DataType::Int8,
        "i2" => DataType::Int16,
        "i4" => DataType::Int32,
        "i8" => DataType::Int64,
        "u1" => DataType::UInt8,
        "u2" => DataType::UInt16,
        "u4" => DataType::UInt32,
        "u8" => DataType::UInt64,
        "f2" => DataType::Float16,
        "f4" => DataType::Float32,
        "f8" => DataType::Float64,
        _ => return None,
    })
}

/// The numpy dtype for `data_type`.
///
/// # Errors
/// For types numpy has no dtype for (`bfloat16`, the 8-bit floats), and for `string` and
/// `bytes`, whose numpy dtype depends on the data (see [`TextDtype`]).
pub(crate) fn npy_type(data_type: &DataType) -> Result<NpyType> {
    let plain = |descr: &str| NpyType {
        descr: descr.to_owned(),
        small_int: None,
    };
    Ok(match data_type {
        DataType::Bool => plain("|b1"),
        DataType::Int8 => plain("|i1"),
        DataType::Int16 => plain("<i2"),
        DataType::Int32 => plain("<i4"),
        DataType::Int64 => plain("<i8"),
        DataType::UInt8 => plain("|u1"),
        DataType::UInt16 => plain("<u2"),
        DataType::UInt32 => plain("<u4"),
        DataType::UInt64 => plain("<u8"),
        DataType::Float16 => plain("<f2"),
        DataType::Float32 => plain("<f4"),
        DataType::Float64 => plain("<f8"),
        DataType::Complex64 | DataType::ComplexFloat(FloatFormat::Float32) => plain("<c8"),
        DataType::Complex128 | DataType::ComplexFloat(FloatFormat::Float64) => plain("<c16"),
        DataType::Int2 | DataType::Int4 | DataType::UInt2 | DataType::UInt4 => {
            let bits = if matches!(data_type, DataType::Int2 | DataType::UInt2) {
                2
            } else {
                4
            };
            let signed = matches!(data_type, DataType::Int2 | DataType::Int4);
            NpyType {
                descr: if signed { "|i1" } else { "|u1" }.to_owned(),
                small_int: Some((bits, signed)),
            }
        }
        DataType::DateTime64 { unit, scale_factor }
        | DataType::TimeDelta64 { unit, scale_factor } => {
            let kind = if matches!(data_type, DataType::DateTime64 { .. }) {
                'M'
            } else {
                'm'
            };
            let scale = if *scale_factor == 1 {
                String::new()
            } else {
                scale_factor.to_string()
            };
            plain(&format!("<{kind}8[{scale}{}]", unit.as_str()))
        }
        DataType::FixedLengthUtf32 { length_bytes } => plain(&format!("<U{}", length_bytes / 4)),
        DataType::NullTerminatedBytes { length_bytes } => plain(&format!("|S{length_bytes}")),
        DataType::RawBytes { length_bytes } => plain(&format!("|V{length_bytes}")),
        DataType::RawBits(bytes) => plain(&format!("|V{bytes}")),
        DataType::Struct(st) => {
            let mut fields = Vec::with_capacity(st.fields().len());
            for field in st.fields() {
                if matches!(field.data_type, DataType::NdArray(_)) {
                    bail!(
                        "struct field {:?} holds ndarray elements, which a .npy record cannot                          hold here; use --format raw or json",
                        field.name
                    );
                }
                let inner = npy_type(&field.data_type)
                    .with_context(|| format!("struct field {:?}", field.name))?;
                if inner.small_int.is_some() {
                    bail!(
                        "struct field {:?} is {}, which numpy holds in whole bytes: a record \
                         cannot be written to .npy as stored; use --format raw or json",
                        field.name,
                        field.data_type.name()
                    );
                }
                fields.push(format!(
                    "({}, {})",
                    python_str(&field.name)?,
                    descr_literal(&inner.descr)
                ));
            }
            plain(&format!("[{}]", fields.join(", ")))
        }
        // The elements as stored in memory: the value, then whether it is present.
        DataType::Optional(o) => {
            let inner = npy_type(o.inner())?;
            if inner.small_int.is_some()
                || matches!(o.inner(), DataType::Optional(_) | DataType::NdArray(_))
            {
                bail!("numpy has no dtype for {data_type}; use --format raw or json",);
            }
            plain(&format!(
                "[('value', {}), ('present', '|b1')]",
                descr_literal(&inner.descr)
            ))
        }
        // The stored integers (`<i2` for `Q7f8`): exact, as `read::<i16>` gives them.
        DataType::FixedPoint(fp) => npy_type(&fp.base_type())?,
        // Fixed-shape elements: their scalars, as trailing dimensions (see `get`).
        DataType::NdArray(nd) if nd.element_size().is_some() => npy_type(nd.dtype())?,
        DataType::String | DataType::Bytes => bail!(
            "{} elements have variable lengths: their .npy dtype (<U n or |S n) takes its width \
             from the data",
            data_type.name()
        ),
        other => bail!(
            "numpy has no dtype for {}; use --format raw (one element per {} bytes)",
            other.name(),
            other.fixed_size().unwrap_or(1)
        ),
    })
}

/// A `descr` as a Python literal in the header: a typestr quoted, a structured dtype's list of
/// fields as it is.
fn descr_literal(descr: &str) -> String {
    if descr.starts_with('[') {
        descr.to_owned()
    } else {
        format!("'{descr}'")
    }
}

/// A struct field's name as a Python string literal (printable ASCII, the header's encoding
/// for version 1.0 and 2.0).
fn python_str(name: &str) -> Result<String> {
    if !name.chars().all(|c| c.is_ascii() && !c.is_ascii_control()) {
        bail!("the struct field name {name:?} is not printable ASCII, which .npy headers hold");
    }
    Ok(format!(
        "'{}'",
        name.replace('\\', "\\\\").replace('\'', "\\'")
    ))
}

/// A numpy fixed-width text dtype, as `string` and `bytes` elements are read from and written
/// to `.npy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextDtype {
    /// `<U n` / `>U n`: `chars` UTF-32 code units per element, padded with NULs at the end.
    Utf32 { chars: usize, big_endian: bool },
    /// `|S n`: `len` bytes per element, padded with NULs at the end.
    Bytes { len: usize },
}

impl TextDtype {
    /// The dtype of a `descr` such as `<U5` or `|S3`, if it is one of these.
    pub(crate) fn parse(descr: &str) -> Option<Self> {
        let mut chars = descr.chars();
        let (order, kind) = match (chars.next()?, chars.next()) {
            (order @ ('<' | '>' | '=' | '|'), Some(kind)) => (order, kind),
            // numpy also accepts a descr without its byte order (`U5`).
            (kind, _) => ('=', kind),
        };
        let digits = descr
            .trim_start_matches(['<', '>', '=', '|'])
            .get(kind.len_utf8()..)?
            .trim();
        let n = if digits.is_empty() {
            0
        } else {
            digits.parse::<usize>().ok()?
        };
        match (kind, order) {
            ('U', '<' | '>' | '=') => Some(Self::Utf32 {
                chars: n,
                big_endian: order == '>' || (order == '=' && cfg!(target_endian = "big")),
            }),
            ('S' | 'a', _) => Some(Self::Bytes { len: n }),
            _ => None,
        }
    }

    /// The size of one element in bytes (`usize::MAX` for a width no file can hold, which
    /// the file's size then refutes).
    pub(crate) fn item_size(self) -> usize {
        match self {
            Self::Utf32 { chars, .. } => chars.saturating_mul(4),
            Self::Bytes { len } => len,
        }
    }

    /// The little-endian `descr` of this width, `<U{chars}` or `|S{len}`, never narrower
    /// than 1 (numpy's width for an array of empty values).
    pub(crate) fn descr(self) -> String {
        match self {
            Self::Utf32 { chars, .. } => format!("<U{}", chars.max(1)),
            Self::Bytes { len } => format!("|S{}", len.max(1)),
        }
    }
}

/// An element of a `U n` array that is not text: the offending code unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadCodePoint(pub(crate) u32);

impl std::fmt::Display for BadCodePoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = self.0;
        if (0xD800..0xE000).contains(&unit) {
            write!(f, "U+{unit:04X} is a surrogate, not a character")
        } else {
            write!(f, "0x{unit:X} is beyond U+10FFFF, the last code point")
        }
    }
}

/// Append the text of one `U n` element (`item` holds its `n` UTF-32 code units) to `out`.
/// Trailing NULs are padding and dropped, as numpy drops them; NULs inside are kept.
pub(crate) fn push_utf32(
    item: &[u8],
    big_endian: bool,
    out: &mut String,
) -> Result<(), BadCodePoint> {
    let unit = |b: &[u8]| {
        let b = [b[0], b[1], b[2], b[3]];
        if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let units = item.chunks_exact(4);
    let len = units
        .clone()
        .rposition(|b| unit(b) != 0)
        .map_or(0, |i| i + 1);
    for b in units.take(len) {
        let u = unit(b);
        out.push(char::from_u32(u).ok_or(BadCodePoint(u))?);
    }
    Ok(())
}

/// One `S n` element without its trailing NUL padding (numpy drops it).
pub(crate) fn trim_nuls(item: &[u8]) -> &[u8] {
    let len = item.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &item[..len]
}

/// Append `text` as one `<U{width}` element: UTF-32LE, NUL-padded to `width` code points.
/// `text` must not have more than `width` characters.
pub(crate) fn extend_utf32(out: &mut Vec<u8>, text: &str, width: usize) {
    let mut n = 0;
    for c in text.chars() {
        out.extend(u32::from(c).to_le_bytes());
        n += 1;
    }
    out.resize(out.len() + (width - n.min(width)) * 4, 0);
}

/// Rearrange the elements (`item` bytes each) of an array of `shape` from Fortran order (first
/// index fastest) to C order (last index fastest). `src` holds exactly the array.
pub(crate) fn fortran_to_c(src: &[u8], shape: &[usize], item: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    debug_assert_eq!(src.len(), n * item);
    if shape.len() < 2 || n == 0 || item == 0 {
        return src.to_vec();
    }
    let last = shape.len() - 1;
    // Fortran strides, in bytes.
    let mut stride = vec![item; shape.len()];
    for d in 1..shape.len() {
        stride[d] = stride[d - 1] * shape[d - 1];
    }
    let mut out = Vec::with_capacity(src.len());
    let mut index = vec![0usize; last];
    // Where the current C-order row (the last index running) starts in `src`.
    let mut base = 0usize;
    for _ in 0..n / shape[last] {
        let mut at = base;
        for _ in 0..shape[last] {
            out.extend_from_slice(&src[at..at + item]);
            at += stride[last];
        }
        // The next row: an odometer over the other dimensions, the last of them fastest.
        for d in (0..last).rev() {
            index[d] += 1;
            base += stride[d];
            if index[d] < shape[d] {
                break;
            }
            base -= shape[d] * stride[d];
            index[d] = 0;
        }
    }
    out
}

/// Rewrite `int2`/`int4`/`uint2`/`uint4` elements (one per byte, value in the low bits) as
/// whole `int8`/`uint8` values.
pub(crate) fn widen_small_ints(bytes: &mut [u8], (bits, signed): (u32, bool)) {
    let shift = 8 - bits;
    for b in bytes {
        *b = if signed {
            // Sign-extend the low bits; the casts reinterpret the byte.
            (((*b << shift) as i8) >> shift) as u8
        } else {
            *b & ((1 << bits) - 1)
        };
    }
}

/// The header of an `.npy` file for C-order data of `descr` and `shape`: version 1.0 (2.0
/// when the header does not fit 64 KiB), padded so the data starts on a 64-byte boundary.
pub(crate) fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let shape = match shape {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut dict = format!(
        "{{'descr': {}, 'fortran_order': False, 'shape': {shape}, }}",
        descr_literal(descr)
    );
    let (version, prefix): (u8, usize) = if dict.len() + 11 < 65536 {
        (1, 10)
    } else {
        (2, 12)
    };
    let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
    while prefix + dict.len() + 1 < total {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        // Fits: checked above.
        out.extend(u16::try_from(dict.len()).unwrap_or(u16::MAX).to_le_bytes());
    } else {
        out.extend(u32::try_from(dict.len()).unwrap_or(u32::MAX).to_le_bytes());
    }
    out.extend(dict.as_bytes());
    out
}

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) descr: String,
    pub(crate) fortran_order: bool,
    pub(crate) shape: Vec<u64>,
    /// The header's length in bytes (where the data starts).
    pub(crate) data_offset: u64,
}

impl Header {
    /// The number of elements, `u64::MAX` when the shape's product does not fit (no file
    /// holds that many).
    pub(crate) fn num_elements(&self) -> u64 {
        self.shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .unwrap_or(u64::MAX)
    }
}

/// The longest header read: numpy's own `max_header_size` for untrusted files is 10,000
/// bytes; this leaves room for structured dtypes of many fields without letting a length
/// field claim gigabytes.
const MAX_HEADER: usize = 1 << 20;
/// The deepest nesting of structured dtypes read.
const MAX_NESTING: usize = 32;

/// Read and parse the header of an `.npy` file.
///
/// # Errors
/// If the input is not an `.npy` file or its header is not one numpy writes.
pub(crate) fn read_header(input: &mut impl Read) -> Result<Header> {
    let mut fixed = [0u8; 8];
    input
        .read_exact(&mut fixed)
        .context("reading the .npy magic")?;
    if &fixed[..6] != b"\x93NUMPY" {
        bail!("not an .npy file (no \\x93NUMPY magic)");
    }
    let (len, prefix) = match fixed[6] {
        1 => {
            let mut b = [0u8; 2];
            input.read_exact(&mut b)?;
            (usize::from(u16::from_le_bytes(b)), 10)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            input.read_exact(&mut b)?;
            (usize::try_from(u32::from_le_bytes(b))?, 12)
        }
        v => bail!(".npy version {v} is not supported"),
    };
    if len > MAX_HEADER {
        bail!(
            "the .npy header claims {len} bytes; numpy writes far less (this tool reads at \
             most {MAX_HEADER})"
        );
    }
    let mut dict = vec![0u8; len];
    input
        .read_exact(&mut dict)
        .context("reading the .npy header")?;
    let dict = String::from_utf8(dict).context("the .npy header is not text")?;
    let descr = field(&dict, "descr")?;
    let descr = if descr.starts_with('[') {
        // A structured dtype: checked here, matched to the array's fields by `put`.
        Descr::parse(descr)?;
        descr.to_owned()
    } else {
        descr
            .strip_prefix('\'')
            .and_then(|d| d.strip_suffix('\''))
            .with_context(|| {
                format!(
                    "the .npy descr {descr} is neither a typestr nor a list of fields (numpy's \
                     dict form of a structured dtype, with offsets, is not read)"
                )
            })?
            .to_owned()
    };
    let fortran_order = match field(&dict, "fortran_order")? {
        "True" => true,
        "False" => false,
        other => bail!("the .npy fortran_order is {other}"),
    };
    let shape_text = field(&dict, "shape")?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .with_context(|| format!("the .npy shape {shape_text} is not a tuple"))?;
    let mut shape = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        shape.push(
            part.trim_end_matches('L')
                .parse::<u64>()
                .with_context(|| format!("the .npy shape {shape_text}"))?,
        );
    }
    Ok(Header {
        descr,
        fortran_order,
        shape,
        data_offset: (prefix + len) as u64,
    })
}

/// The value text of `key` in a Python dict literal of simple values (`'x'`, `True`, a tuple).
fn field<'a>(dict: &'a str, key: &str) -> Result<&'a str> {
    let pattern = format!("'{key}':");
    let start = dict
        .find(&pattern)
        .with_context(|| format!("the .npy header has no {key:?}"))?
        + pattern.len();
    let rest = dict[start..].trim_start();
    let end = if rest.starts_with('[') {
        bracketed_len(rest)
    } else if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else if let Some(quoted) = rest.strip_prefix('\'') {
        quoted.find('\'').map(|i| i + 2)
    } else {
        rest.find([',', '}'])
    }
    .with_context(|| format!("the .npy header's {key:?} is not terminated"))?;
    Ok(rest[..end].trim())
}

/// The length of the bracketed list `text` starts with (quotes respected), if it ends.
fn bracketed_len(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '[' | '(' => depth += 1,
                ']' | ')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            },
        }
    }
    None
}

/// A numpy dtype as an `.npy` header spells it: a typestr (`<i4`), or a structured dtype's
/// list of `(name, dtype)` fields (`[('id', '<i4'), ('p', [('x', '<f4')])]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Descr {
    Type(String),
    Record(Vec<(String, Descr)>),
}

impl Descr {
    /// Parse a structured dtype's list literal (Python syntax: either quote, backslash
    /// escapes). Subarray fields (`('v', '<f4', (3,))`) are refused by name.
    pub(crate) fn parse(text: &str) -> Result<Self> {
        let mut parser = Parser {
            text,
            at: 0,
            depth: 0,
        };
        let descr = parser.record()?;
        parser.space();
        if parser.at != text.len() {
            bail!("the .npy descr {text} has more after its list of fields");
        }
        Ok(descr)
    }
}

/// A cursor over a Python literal.
struct Parser<'a> {
    text: &'a str,
    at: usize,
    /// Structured dtypes open around the cursor.
    depth: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.space();
        self.text[self.at..].chars().next()
    }

    fn expect(&mut self, want: char) -> Result<()> {
        match self.peek() {
            Some(c) if c == want => {
                self.at += c.len_utf8();
                Ok(())
            }
            other => bail!(
                "the .npy descr {} has {} where {want:?} belongs (at byte {})",
                self.text,
                other.map_or_else(|| "its end".to_owned(), |c| format!("{c:?}")),
                self.at
            ),
        }
    }

    /// `'...'` or `"..."`, with `\\`, `\'` and `\"` escapes.
    fn string(&mut self) -> Result<String> {
        let Some(quote @ ('\'' | '"')) = self.peek() else {
            bail!(
                "the .npy descr {} has no string at byte {}",
                self.text,
                self.at
            );
        };
        self.at += 1;
        let mut out = String::new();
        let mut chars = self.text[self.at..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, e @ ('\\' | '\'' | '"'))) => out.push(e),
                    _ => bail!(
                        "the .npy descr {} has an escape this tool does not read",
                        self.text
                    ),
                },
                c if c == quote => {
                    self.at += i + 1;
                    return Ok(out);
                }
                c => out.push(c),
            }
        }
        bail!("the .npy descr {} has an unterminated string", self.text)
    }

    /// `[(name, dtype), ...]`.
    fn record(&mut self) -> Result<Descr> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            bail!("the .npy descr nests structured dtypes more than {MAX_NESTING} deep");
        }
        self.expect('[')?;
        let mut fields = Vec::new();
        loop {
            if self.peek() == Some(']') {
                self.at += 1;
                break;
            }
            self.expect('(')?;
            let name = self.string()?;
            self.expect(',')?;
            let dtype = if self.peek() == Some('[') {
                self.record()?
            } else {
                Descr::Type(self.string()?)
            };
            if self.peek() == Some(',') {
                self.at += 1;
                if self.peek() != Some(')') {
                    bail!(
                        "the .npy field {name:?} is a subarray (a shape after its dtype), which \
                         no Zarr data type holds"
                    );
                }
            }
            self.expect(')')?;
            fields.push((name, dtype));
            match self.peek() {
                Some(',') => self.at += 1,
                Some(']') => {}
                _ => self.expect(']')?,
            }
        }
        if fields.is_empty() {
            bail!("the .npy descr {} has no fields", self.text);
        }
        self.depth -= 1;
        Ok(Descr::Record(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_descrs_parse_as_numpy_and_this_tool_write_them() {
        let t = |s: &str| Descr::Type(s.to_owned());
        // numpy's repr, double quotes for a name holding a single quote.
        let numpy = r#"[('id', '<i4'), ("it's", [('x', '>f4'), ('y', '<f8')]), ('ok', '|b1')]"#;
        let ours = r"[('id', '<i4'), ('it\'s', [('x', '>f4'), ('y', '<f8')]), ('ok', '|b1')]";
        let want = Descr::Record(vec![
            ("id".into(), t("<i4")),
            (
                "it's".into(),
                Descr::Record(vec![("x".into(), t(">f4")), ("y".into(), t("<f8"))]),
            ),
            ("ok".into(), t("|b1")),
        ]);
        assert_eq!(Descr::parse(numpy).unwrap(), want);
        assert_eq!(Descr::parse(ours).unwrap(), want);
        for (bad, says) in [
            ("[('v', '<f4', (3,))]", "subarray"),
            ("[]", "no fields"),
            ("[('a', '<i4')", "its end"),
            ("[('a' '<i4')]", "','"),
            ("[('a', '<i4')] x", "more after"),
            ("[('a\\n', '<i4')]", "escape"),
        ] {
            let err = Descr::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let deep = format!("{}'<i4'{}", "[('a', ".repeat(40), ")]".repeat(40));
        let err = Descr::parse(&deep).unwrap_err().to_string();
        assert!(err.contains("32 deep"), "{err}");
        let fine = format!("{}'<i4'{}", "[('a', ".repeat(32), ")]".repeat(32));
        assert!(Descr::parse(&fine).is_ok());
        // A version 2 header claiming 4 GiB is refused before anything is allocated.
        let huge = b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr': '<i4'}";
        let err = read_header(&mut &huge[..]).unwrap_err().to_string();
        assert!(err.contains("claims 4294967295 bytes"), "{err}");
        // Inside a header: the list is the descr, whatever commas it holds.
        let mut file = header(numpy, &[2]);
        file.extend_from_slice(&[0; 2 * 13]);
        let h = read_header(&mut file.as_slice()).unwrap();
        assert_eq!(h.descr, numpy);
        assert_eq!(h.shape, [2]);
    }

    #[test]
    fn headers_round_trip_and_align() {
        for shape in [vec![], vec![7], vec![2, 3, 4]] {
            let h = header("<f4", &shape);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(h[6], 1);
            assert_eq!(*h.last().unwrap(), b'\n');
            let parsed = read_header(&mut h.as_slice()).unwrap();
            assert_eq!(parsed.descr, "<f4");
            assert!(!parsed.fortran_order);
            assert_eq!(parsed.shape, shape);
            assert_eq!(parsed.data_offset, h.len() as u64);
        }
    }

    #[test]
    fn numpy_written_headers_parse() {
        // What numpy 2 writes for np.save(f, np.zeros((3, 4), '>i2')), and for a scalar.
        let dict = "{'descr': '>i2', 'fortran_order': False, 'shape': (3, 4), }";
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        file.extend(u16::try_from(dict.len()).unwrap().to_le_bytes());
        file.extend(dict.as_bytes());
        let h = read_header(&mut file.as_slice()).unwrap();
        assert_eq!(
            (h.descr.as_str(), h.shape.as_slice()),
            (">i2", &[3u64, 4][..])
        );
        let dict = "{'descr': '<U3', 'fortran_order': True, 'shape': (), }";
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        file.extend(u16::try_from(dict.len()).unwrap().to_le_bytes());
        file.extend(dict.as_bytes());
        let h = read_header(&mut file.as_slice()).unwrap();
        assert!(h.fortran_order);
        assert!(h.shape.is_empty());
        assert!(read_header(&mut &b"PK\x03\x04xxxxxx"[..]).is_err());
    }

    #[test]
    fn dtypes() {
        use zarr::metadata::TimeUnit;
        let d = |dt: DataType| npy_type(&dt).unwrap().descr;
        assert_eq!(d(DataType::Bool), "|b1");
        assert_eq!(d(DataType::Float16), "<f2");
        assert_eq!(d(DataType::Complex64), "<c8");
        assert_eq!(d(DataType::Complex128), "<c16");
        assert_eq!(
            d(DataType::DateTime64 {
                unit: TimeUnit::Nanosecond,
                scale_factor: 10
            }),
            "<M8[10ns]"
        );
        assert_eq!(
            d(DataType::TimeDelta64 {
                unit: TimeUnit::Second,
                scale_factor: 1
            }),
            "<m8[s]"
        );
        assert_eq!(d(DataType::FixedLengthUtf32 { length_bytes: 16 }), "<U4");
        assert!(npy_type(&DataType::String).is_err());
        assert!(npy_type(&DataType::BFloat16).is_err());
        // Optional values: the value, then whether it is present, as stored in memory.
        let opt = |text: &str| npy_type(&text.parse().unwrap());
        assert_eq!(
            opt("zarrs.optional<float32>").unwrap().descr,
            "[('value', '<f4'), ('present', '|b1')]"
        );
        assert!(opt("zarrs.optional<int4>").is_err());
        assert!(opt("zarrs.optional<zarrs.optional<int8>>").is_err());
        // ndarray elements nested in a record: numpy would need a subarray field.
        assert!(opt("zarrs.optional<ndarray<int16, [3]>>").is_err());
        assert!(opt("struct{a: ndarray<int16, [3]>, b: uint8}").is_err());
        // Structs: numpy's list of (name, dtype) fields, nested lists for nested structs,
        // names quoted as Python strings.
        use zarr::metadata::{StructField, StructType};
        let st = |fields: Vec<StructField>| DataType::Struct(StructType::new(fields).unwrap());
        let nested = st(vec![
            StructField::new("id", DataType::Int32),
            StructField::new("it's", st(vec![StructField::new("x", DataType::Float32)])),
            StructField::new("ok", DataType::Bool),
        ]);
        assert_eq!(
            d(nested.clone()),
            r"[('id', '<i4'), ('it\'s', [('x', '<f4')]), ('ok', '|b1')]"
        );
        assert!(String::from_utf8_lossy(&header(&d(nested), &[2])).contains(
            r"{'descr': [('id', '<i4'), ('it\'s', [('x', '<f4')]), ('ok', '|b1')], 'fortran_order'"
        ));
        for refused in [
            st(vec![StructField::new("small", DataType::Int4)]),
            st(vec![StructField::new("brain", DataType::BFloat16)]),
            st(vec![StructField::new("caf\u{e9}", DataType::UInt8)]),
        ] {
            assert!(npy_type(&refused).is_err(), "{refused:?}");
        }
        let mut b = [0x0f, 0x07, 0x08];
        widen_small_ints(&mut b, (4, true));
        assert_eq!(b, [0xff, 7, 0xf8]);
    }

    #[test]
    fn text_dtypes() {
        let utf32 = |chars, big_endian| Some(TextDtype::Utf32 { chars, big_endian });
        assert_eq!(TextDtype::parse("<U7"), utf32(7, false));
        assert_eq!(TextDtype::parse(">U1"), utf32(1, true));
        assert_eq!(TextDtype::parse("<U0"), utf32(0, false));
        assert_eq!(TextDtype::parse("|S12"), Some(TextDtype::Bytes { len: 12 }));
        assert_eq!(TextDtype::parse("|U3"), None);
        assert_eq!(TextDtype::parse("|O"), None);
        assert_eq!(TextDtype::parse("<f4"), None);
        assert_eq!(TextDtype::parse("<"), None);
        assert_eq!(
            TextDtype::parse("U5"),
            utf32(5, cfg!(target_endian = "big"))
        );
        assert_eq!(TextDtype::parse("<Ux"), None);
        assert_eq!(
            TextDtype::Utf32 {
                chars: 0,
                big_endian: false
            }
            .descr(),
            "<U1"
        );
        assert_eq!(TextDtype::Bytes { len: 5 }.descr(), "|S5");
        assert_eq!(TextDtype::parse(">U3").unwrap().item_size(), 12);
    }

    #[test]
    fn utf32_elements() {
        let le = |units: &[u32]| {
            units
                .iter()
                .flat_map(|u| u.to_le_bytes())
                .collect::<Vec<_>>()
        };
        let mut s = String::new();
        push_utf32(&le(&[0x61, 0, 0x1F600, 0, 0]), false, &mut s).unwrap();
        assert_eq!(s, "a\0\u{1F600}");
        let be: Vec<u8> = [0xE9u32, 0].iter().flat_map(|u| u.to_be_bytes()).collect();
        s.clear();
        push_utf32(&be, true, &mut s).unwrap();
        assert_eq!(s, "\u{e9}");
        let err = push_utf32(&le(&[0x61, 0xD800]), false, &mut s).unwrap_err();
        assert_eq!(err.to_string(), "U+D800 is a surrogate, not a character");
        let err = push_utf32(&le(&[0x110000]), false, &mut s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "0x110000 is beyond U+10FFFF, the last code point"
        );
        let mut out = Vec::new();
        extend_utf32(&mut out, "a\u{1F600}", 3);
        assert_eq!(out, le(&[0x61, 0x1F600, 0]));
        assert_eq!(trim_nuls(b"ab\0c\0\0"), b"ab\0c");
        assert_eq!(trim_nuls(b"\0\0"), b"");
    }

    #[test]
    fn fortran_order_to_c_order() {
        // A 2x3x4 array whose element [i, j, k] is 100i + 10j + k, laid out in Fortran order.
        let shape = [2usize, 3, 4];
        let mut fortran = Vec::new();
        for k in 0..4u16 {
            for j in 0..3u16 {
                for i in 0..2u16 {
                    fortran.extend((100 * i + 10 * j + k).to_le_bytes());
                }
            }
        }
        let c = fortran_to_c(&fortran, &shape, 2);
        let want: Vec<u8> = (0..2u16)
            .flat_map(|i| (0..3u16).flat_map(move |j| (0..4u16).map(move |k| 100 * i + 10 * j + k)))
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(c, want);
        // 1-d and empty arrays are the same in both orders.
        assert_eq!(fortran_to_c(&[1, 2, 3], &[3], 1), [1, 2, 3]);
        assert_eq!(fortran_to_c(&[], &[2, 0, 3], 4), Vec::<u8>::new());
        // Size-1 dimensions are carried along.
        assert_eq!(fortran_to_c(&[1, 2, 3, 4], &[1, 2, 1, 2], 1), [1, 3, 2, 4]);
    }
}
