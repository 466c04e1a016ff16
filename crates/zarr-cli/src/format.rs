//! Elements as text and JSON, and byte order.

use std::fmt::Write as _;

use serde_json::Value;
use zarr::metadata::{DataType, FillValue, NdArrayType, OptionalType};

/// How an element is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// For people: floats as `0.1`, `NaN`, `-Infinity`; complex as `1.0+2.0j`; NaT; text
    /// and byte strings quoted.
    Text,
    /// Valid JSON, as Zarr metadata writes fill values: floats as their exact value (the
    /// shortest decimal that reads back as the same `float64`, as numpy's `tolist()` gives),
    /// `"NaN"`, `"Infinity"`, `"-Infinity"`, and `"0x…"` for a NaN with a payload; complex as
    /// `[re, im]`; binary as base64.
    Json,
}

fn arr<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

/// The shortest decimal that reads back as the same value at the type's width
/// (`roundtrips` says whether a decimal does).
fn shortest(value: f64, roundtrips: impl Fn(f64) -> bool) -> String {
    for digits in 0..17 {
        let text = format!("{value:.digits$e}");
        if let Ok(parsed) = text.parse::<f64>()
            && roundtrips(parsed)
        {
            return format!("{parsed:?}");
        }
    }
    format!("{value:?}")
}

/// Write a float: `text` gives the shortest form at the type's width.
fn float(out: &mut String, value: f64, text: impl FnOnce() -> String, style: Style) {
    let special = if value.is_nan() {
        Some("NaN")
    } else if value == f64::INFINITY {
        Some("Infinity")
    } else if value == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    };
    match (special, style) {
        (Some(s), Style::Text) => out.push_str(s),
        (Some(s), Style::Json) => {
            let _ = write!(out, "\"{s}\"");
        }
        // JSON goes through `FillValue::to_json` (see `element`).
        (None, _) => out.push_str(&text()),
    }
}

fn f16_value(bits: u16) -> (f64, String) {
    let v = f64::from(half::f16::from_bits(bits));
    (v, shortest(v, |p| half::f16::from_f64(p).to_bits() == bits))
}

fn bf16_value(bits: u16) -> (f64, String) {
    let v = f64::from(half::bf16::from_bits(bits));
    (
        v,
        shortest(v, |p| half::bf16::from_f64(p).to_bits() == bits),
    )
}

fn json_string(out: &mut String, text: &str) {
    // Serialising a str cannot fail.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

/// Append one fixed-size element (native byte order) of `data_type` to `out`.
pub(crate) fn element(out: &mut String, data_type: &DataType, b: &[u8], style: Style) {
    let float_type = matches!(
        data_type,
        DataType::Float16
            | DataType::BFloat16
            | DataType::Float32
            | DataType::Float64
            | DataType::Complex64
            | DataType::Complex128
            | DataType::ComplexFloat(_)
    );
    if style == Style::Json && float_type {
        // Exactly as Zarr writes fill values: the exact value, "NaN", the infinities, and
        // "0x…" for a NaN with a payload.
        match FillValue::new(b.to_vec()).to_json(data_type) {
            Ok(value) => out.push_str(&value.to_string()),
            Err(_) => out.push('?'),
        }
        return;
    }
    match data_type {
        DataType::Bool => out.push_str(if b[0] != 0 { "true" } else { "false" }),
        DataType::Int8 => {
            let _ = write!(out, "{}", i8::from_ne_bytes(arr(b)));
        }
        DataType::Int16 => {
            let _ = write!(out, "{}", i16::from_ne_bytes(arr(b)));
        }
        DataType::Int32 => {
            let _ = write!(out, "{}", i32::from_ne_bytes(arr(b)));
        }
        DataType::Int64 => {
            let _ = write!(out, "{}", i64::from_ne_bytes(arr(b)));
        }
        DataType::UInt8 => {
            let _ = write!(out, "{}", b[0]);
        }
        DataType::UInt16 => {
            let _ = write!(out, "{}", u16::from_ne_bytes(arr(b)));
        }
        DataType::UInt32 => {
            let _ = write!(out, "{}", u32::from_ne_bytes(arr(b)));
        }
        DataType::UInt64 => {
            let _ = write!(out, "{}", u64::from_ne_bytes(arr(b)));
        }
        DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
            let v = i64::from_ne_bytes(arr(b));
            if v == i64::MIN && style == Style::Text {
                out.push_str("NaT");
            } else {
                let _ = write!(out, "{v}");
            }
        }
        DataType::Float16 => {
            let (v, text) = f16_value(u16::from_ne_bytes(arr(b)));
            float(out, v, || text, style);
        }
        DataType::BFloat16 => {
            let (v, text) = bf16_value(u16::from_ne_bytes(arr(b)));
            float(out, v, || text, style);
        }
        DataType::Float32 => {
            let v = f32::from_ne_bytes(arr(b));
            float(out, f64::from(v), || format!("{v:?}"), style);
        }
        DataType::Float64 => {
            let v = f64::from_ne_bytes(arr(b));
            float(out, v, || format!("{v:?}"), style);
        }
        DataType::Complex64 | DataType::Complex128 | DataType::ComplexFloat(_) => {
            let half = b.len() / 2;
            let Some(component) = data_type.complex_component() else {
                out.push('?');
                return;
            };
            let part = |out: &mut String, bytes: &[u8], style| {
                element(out, &component, bytes, style);
            };
            match style {
                Style::Json => {
                    out.push('[');
                    part(out, &b[..half], style);
                    out.push_str(", ");
                    part(out, &b[half..], style);
                    out.push(']');
                }
                Style::Text => {
                    part(out, &b[..half], style);
                    let mut im = String::new();
                    part(&mut im, &b[half..], style);
                    if !im.starts_with('-') {
                        out.push('+');
                    }
                    out.push_str(&im);
                    out.push('j');
                }
            }
        }
        DataType::FixedLengthUtf32 { .. } => {
            // Trailing NULs pad the value (as in NumPy); NULs inside it are kept.
            let units: Vec<u32> = b
                .chunks_exact(4)
                .map(|unit| u32::from_ne_bytes(arr(unit)))
                .collect();
            let end = units.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
            let text: String = units[..end]
                .iter()
                .map(|&u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect();
            json_string(out, &text);
        }
        DataType::NullTerminatedBytes { .. } | DataType::RawBytes { .. } | DataType::RawBits(_)
            if style == Style::Text =>
        {
            let end = if matches!(data_type, DataType::NullTerminatedBytes { .. }) {
                b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1)
            } else {
                b.len()
            };
            byte_string(out, &b[..end]);
        }
        // All the bytes, trailing NULs included, as base64 (as `raw_bytes` writes them).
        DataType::NullTerminatedBytes { length_bytes } => {
            let raw = DataType::RawBytes {
                length_bytes: *length_bytes,
            };
            match FillValue::new(b.to_vec()).to_json(&raw) {
                Ok(value) => out.push_str(&value.to_string()),
                Err(_) => out.push('?'),
            }
        }
        // `{"x": 1.5, "flag": 2}`: each field as an element of its own type.
        DataType::Struct(st) => {
            out.push('{');
            for (i, (offset, field)) in st.offsets().zip(st.fields()).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                json_string(out, &field.name);
                out.push_str(": ");
                let size = field.data_type.fixed_size().unwrap_or(0);
                element(out, &field.data_type, &b[offset..offset + size], style);
            }
            out.push('}');
        }
        // A missing value as `null`, a present one as its inner type.
        DataType::Optional(o) => match OptionalType::split(b) {
            Some((inner, 1)) => element(out, o.inner(), inner, style),
            _ => out.push_str("null"),
        },
        DataType::NdArray(nd) => nd_element(out, nd, b, style),
        // The number the stored integer stands for (`0.5019607843137255` for 128 of `N0f8`);
        // whole numbers without a fraction.
        DataType::FixedPoint(fp) => {
            let v = fp.to_f64(fp.raw_from_ne_bytes(b));
            if v.fract() == 0.0 && v.abs() < 2f64.powi(53) {
                let _ = write!(out, "{}", v as i64);
            } else {
                let _ = write!(out, "{v:?}");
            }
        }
        // The rest (small integers, minifloats, binary in JSON) as Zarr writes fill values.
        other => match FillValue::new(b.to_vec()).to_json(other) {
            Ok(Value::String(s)) if style == Style::Text => out.push_str(&s),
            Ok(value) => out.push_str(&value.to_string()),
            Err(_) => out.push('?'),
        },
    }
}

/// An element of the `ndarray` data type as nested lists of its scalars (`[[1, 2], [3, 4]]`
/// for a (2, 2) element, `[]` for an empty one); `?` for bytes that are no shape of it.
fn nd_element(out: &mut String, nd: &NdArrayType, b: &[u8], style: Style) {
    let Some(shape) = nd.element_shape(b.len()) else {
        out.push('?');
        return;
    };
    let width = nd.dtype().fixed_size().unwrap_or(1);
    let mut scalars = b.chunks_exact(width);
    nd_level(out, nd.dtype(), &shape, &mut scalars, style);
}

fn nd_level(
    out: &mut String,
    dtype: &DataType,
    shape: &[u64],
    scalars: &mut std::slice::ChunksExact<'_, u8>,
    style: Style,
) {
    let Some((&n, inner)) = shape.split_first() else {
        if let Some(scalar) = scalars.next() {
            element(out, dtype, scalar, style);
        }
        return;
    };
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        nd_level(out, dtype, inner, scalars, style);
    }
    out.push(']');
}

/// `b"..."` with non-printable bytes escaped.
fn byte_string(out: &mut String, bytes: &[u8]) {
    out.push_str("b\"");
    for &byte in bytes {
        out.extend(std::ascii::escape_default(byte).map(char::from));
    }
    out.push('"');
}

/// Append one variable-length element (`string` or `bytes`).
pub(crate) fn variable_element(out: &mut String, data_type: &DataType, b: &[u8], style: Style) {
    match (data_type, style) {
        // A missing value as `null`, a present one without its validity byte.
        (DataType::Optional(o), _) => match OptionalType::split(b) {
            Some((inner, 1)) => variable_element(out, o.inner(), inner, style),
            _ => out.push_str("null"),
        },
        (DataType::String, _) => json_string(out, &String::from_utf8_lossy(b)),
        (DataType::NdArray(nd), _) => nd_element(out, nd, b, style),
        (_, Style::Text) => byte_string(out, b),
        (other, Style::Json) => match FillValue::new(b.to_vec()).to_json(other) {
            Ok(value) => out.push_str(&value.to_string()),
            Err(_) => out.push('?'),
        },
    }
}

/// The size of the units whose byte order matters in an element (1 when it does not).
pub(crate) fn swap_unit(data_type: &DataType) -> usize {
    match data_type {
        DataType::Complex64 => 4,
        DataType::Complex128 => 8,
        DataType::ComplexFloat(c) => c.size(),
        DataType::FixedLengthUtf32 { .. } => 4,
        DataType::NullTerminatedBytes { .. }
        | DataType::RawBytes { .. }
        | DataType::RawBits(_)
        | DataType::String
        | DataType::Bytes => 1,
        DataType::NdArray(nd) => swap_unit(nd.dtype()),
        other => other.fixed_size().unwrap_or(1),
    }
}

/// Reverse the bytes of every `unit`-byte group.
pub(crate) fn swap_bytes(bytes: &mut [u8], unit: usize) {
    if unit > 1 {
        for group in bytes.chunks_exact_mut(unit) {
            group.reverse();
        }
    }
}

/// Native byte order to little-endian (a no-op on little-endian machines).
pub(crate) fn native_to_little(bytes: &mut [u8], data_type: &DataType) {
    if cfg!(target_endian = "big") {
        match data_type.swap_units() {
            Some(units) if matches!(data_type, DataType::Struct(_) | DataType::Optional(_)) => {
                let size = data_type.fixed_size().unwrap_or(1);
                for element in bytes.chunks_exact_mut(size) {
                    for (offset, width) in &units {
                        element[*offset..offset + width].reverse();
                    }
                }
            }
            _ => swap_bytes(bytes, swap_unit(data_type)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(dt: &DataType, b: &[u8]) -> String {
        let mut s = String::new();
        element(&mut s, dt, b, Style::Text);
        s
    }

    fn json(dt: &DataType, b: &[u8]) -> String {
        let mut s = String::new();
        element(&mut s, dt, b, Style::Json);
        s
    }

    #[test]
    fn floats_print_shortest_at_their_width() {
        assert_eq!(text(&DataType::Float32, &0.1f32.to_ne_bytes()), "0.1");
        assert_eq!(text(&DataType::Float64, &(-0.0f64).to_ne_bytes()), "-0.0");
        let h = half::f16::from_f32(0.1).to_bits().to_ne_bytes();
        assert_eq!(text(&DataType::Float16, &h), "0.1");
        let h = half::bf16::from_f32(3.0).to_bits().to_ne_bytes();
        assert_eq!(text(&DataType::BFloat16, &h), "3.0");
        assert_eq!(text(&DataType::Float32, &f32::NAN.to_ne_bytes()), "NaN");
        assert_eq!(json(&DataType::Float32, &f32::NAN.to_ne_bytes()), "\"NaN\"");
        assert_eq!(
            json(&DataType::Float32, &0.1f32.to_ne_bytes()),
            "0.10000000149011612"
        );
        assert_eq!(
            json(&DataType::Float64, &f64::NEG_INFINITY.to_ne_bytes()),
            "\"-Infinity\""
        );
    }

    #[test]
    fn optional_values_print_as_null_or_their_value() {
        let dt: DataType = "zarrs.optional<float32>".parse().unwrap();
        let mut present = 0.1f32.to_ne_bytes().to_vec();
        present.push(1);
        assert_eq!(text(&dt, &present), "0.1");
        assert_eq!(json(&dt, &present), "0.10000000149011612");
        assert_eq!(text(&dt, &[0; 5]), "null");
        let nested: DataType = "zarrs.optional<zarrs.optional<uint8>>".parse().unwrap();
        assert_eq!(json(&nested, &[0, 0, 1]), "null");
        assert_eq!(json(&nested, &[7, 1, 1]), "7");
        let text: DataType = "zarrs.optional<string>".parse().unwrap();
        let mut s = String::new();
        variable_element(&mut s, &text, b"ice\x01", Style::Json);
        variable_element(&mut s, &text, b"\x00", Style::Text);
        assert_eq!(s, "\"ice\"null");
    }

    #[test]
    fn other_types() {
        let mut c = 1.5f32.to_ne_bytes().to_vec();
        c.extend((-2.0f32).to_ne_bytes());
        assert_eq!(text(&DataType::Complex64, &c), "1.5-2.0j");
        assert_eq!(json(&DataType::Complex64, &c), "[1.5,-2.0]");
        // The complex types named after their parts print each part as that type.
        let c16 = DataType::ComplexFloat(zarr::metadata::FloatFormat::Float16);
        let mut h = half::f16::from_f32(0.5).to_ne_bytes().to_vec();
        h.extend(half::f16::INFINITY.to_ne_bytes());
        assert_eq!(text(&c16, &h), "0.5+Infinityj");
        assert_eq!(json(&c16, &h), "[0.5,\"Infinity\"]");
        let e4m3 = DataType::ComplexFloat(zarr::metadata::FloatFormat::Mini(
            zarr::metadata::MiniFloat::E4M3,
        ));
        assert_eq!(text(&e4m3, &[0x38, 0xb8]), "1.0-1.0j");
        assert_eq!(
            text(&DataType::UInt64, &u64::MAX.to_ne_bytes()),
            "18446744073709551615"
        );
        assert_eq!(text(&DataType::Bool, &[1]), "true");
        assert_eq!(text(&DataType::Int4, &[0x0f]), "-1");
        let mut u = Vec::new();
        for c in "hé".chars() {
            u.extend((c as u32).to_ne_bytes());
        }
        u.extend([0; 4]);
        let dt = DataType::FixedLengthUtf32 { length_bytes: 12 };
        assert_eq!(text(&dt, &u), "\"hé\"");
        // A NUL inside the value is kept; only the trailing ones pad it.
        let inner: Vec<u8> = [u32::from('a'), 0, u32::from('b')]
            .iter()
            .flat_map(|c| c.to_ne_bytes())
            .collect();
        assert_eq!(text(&dt, &inner), "\"a\\u0000b\"");
        let dt = DataType::NullTerminatedBytes { length_bytes: 4 };
        assert_eq!(text(&dt, b"a\n\0\0"), "b\"a\\n\"");
        let mut s = String::new();
        variable_element(
            &mut s,
            &DataType::String,
            "say \"hi\"".as_bytes(),
            Style::Text,
        );
        assert_eq!(s, r#""say \"hi\"""#);
    }

    #[test]
    fn byte_swapping() {
        let mut b = [1, 2, 3, 4, 5, 6, 7, 8];
        swap_bytes(&mut b, swap_unit(&DataType::Complex64));
        assert_eq!(b, [4, 3, 2, 1, 8, 7, 6, 5]);
    }
}
