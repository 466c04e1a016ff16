//! Converting elements between numeric data types (`zarr copy --data-type`, and `zarr put`
//! of a file whose data type is not the array's).
//!
//! Nothing is lost silently: integers convert exactly or not at all (a value out of the
//! target's range is an error), to integers and to floats alike (2049 cannot become
//! `float16`); floats convert to integers only when they are whole numbers in range; floats
//! convert to narrower floats with rounding to the nearest, but a finite value too large for
//! the target (70000 as `float16`) is an error; `bool` holds 0 and 1 only, so only those
//! values convert to it.

use anyhow::{Result, bail};
use zarr::metadata::DataType;

/// One element's value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Int(i128),
    Float(f64),
}

fn arr<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

/// Whether `data_type` can be converted by this module.
pub(crate) fn is_castable(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Bool
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Int2
            | DataType::Int4
            | DataType::UInt2
            | DataType::UInt4
            | DataType::Float16
            | DataType::Float32
            | DataType::Float64
    )
}

fn load(data_type: &DataType, b: &[u8]) -> Value {
    match data_type {
        DataType::Bool => Value::Int(i128::from(b[0] != 0)),
        DataType::Int8 => Value::Int(i128::from(i8::from_ne_bytes(arr(b)))),
        DataType::Int16 => Value::Int(i128::from(i16::from_ne_bytes(arr(b)))),
        DataType::Int32 => Value::Int(i128::from(i32::from_ne_bytes(arr(b)))),
        DataType::Int64 => Value::Int(i128::from(i64::from_ne_bytes(arr(b)))),
        DataType::UInt8 => Value::Int(i128::from(b[0])),
        // One element per byte, the value in the low bits (sign-extended from them).
        DataType::Int2 => Value::Int(i128::from(((b[0] << 6) as i8) >> 6)),
        DataType::Int4 => Value::Int(i128::from(((b[0] << 4) as i8) >> 4)),
        DataType::UInt2 => Value::Int(i128::from(b[0] & 0x3)),
        DataType::UInt4 => Value::Int(i128::from(b[0] & 0xf)),
        DataType::UInt16 => Value::Int(i128::from(u16::from_ne_bytes(arr(b)))),
        DataType::UInt32 => Value::Int(i128::from(u32::from_ne_bytes(arr(b)))),
        DataType::UInt64 => Value::Int(i128::from(u64::from_ne_bytes(arr(b)))),
        DataType::Float16 => Value::Float(f64::from(half::f16::from_ne_bytes(arr(b)))),
        DataType::Float32 => Value::Float(f64::from(f32::from_ne_bytes(arr(b)))),
        _ => Value::Float(f64::from_ne_bytes(arr(b))),
    }
}

fn store(data_type: &DataType, value: Value, out: &mut Vec<u8>) -> Result<()> {
    // The value as an integer: in range of i128 and whole, or not convertible.
    let whole = || -> Result<i128> {
        match value {
            Value::Int(v) => Ok(v),
            Value::Float(f) => {
                if f.fract() != 0.0 || !f.is_finite() || f.abs() > 1e38 {
                    bail!(
                        "{f} is not a whole number, so it cannot become {}",
                        data_type.name()
                    );
                }
                Ok(f as i128)
            }
        }
    };
    // int2/int4/uint2/uint4: one element per byte, as the array holds them (signed values
    // sign-extended to the whole byte).
    let small = |min: i128, max: i128, out: &mut Vec<u8>| -> Result<()> {
        let v = whole()?;
        if !(min..=max).contains(&v) {
            bail!(
                "{v} is out of the range of {} ({min} to {max})",
                data_type.name()
            );
        }
        // In -8..=15, so the byte is exact (negative values as their two's complement).
        out.push(v as i8 as u8);
        Ok(())
    };
    macro_rules! int {
        ($t:ty) => {{
            let v = whole()?;
            match <$t>::try_from(v) {
                Ok(v) => out.extend(v.to_ne_bytes()),
                Err(_) => bail!("{v} is out of the range of {}", data_type.name()),
            }
        }};
    }
    // The value as a float of the target type (`narrow` rounds an f64 to it, `widen` gives
    // the result back as an f64): integers must be exact, finite floats must stay finite.
    let float = |narrow: &dyn Fn(f64) -> f64| -> Result<f64> {
        match value {
            Value::Int(v) => {
                let f = narrow(v as f64);
                // Exact only if it converts back to the same integer.
                if !f.is_finite() || f.abs() > 1e38 || f as i128 != v {
                    bail!("{v} cannot be stored exactly as {}", data_type.name());
                }
                Ok(f)
            }
            Value::Float(x) => {
                let f = narrow(x);
                if x.is_finite() && !f.is_finite() {
                    bail!("{x} is out of the range of {}", data_type.name());
                }
                Ok(f)
            }
        }
    };
    match data_type {
        DataType::Bool => out.push(match value {
            Value::Int(v @ (0 | 1)) => v as u8,
            Value::Float(f) if f == 0.0 || f == 1.0 => u8::from(f == 1.0),
            Value::Int(v) => bail!("{v} is neither 0 nor 1, so it cannot become bool"),
            Value::Float(f) => bail!("{f} is neither 0 nor 1, so it cannot become bool"),
        }),
        DataType::Int8 => int!(i8),
        DataType::Int16 => int!(i16),
        DataType::Int32 => int!(i32),
        DataType::Int64 => int!(i64),
        DataType::UInt8 => int!(u8),
        DataType::UInt16 => int!(u16),
        DataType::UInt32 => int!(u32),
        DataType::UInt64 => int!(u64),
        DataType::Int2 => small(-2, 1, out)?,
        DataType::Int4 => small(-8, 7, out)?,
        DataType::UInt2 => small(0, 3, out)?,
        DataType::UInt4 => small(0, 15, out)?,
        DataType::Float16 => {
            let f = float(&|x| f64::from(half::f16::from_f64(x)))?;
            out.extend(half::f16::from_f64(f).to_ne_bytes());
        }
        // Rounding a float to the nearest f32 is the conversion asked for.
        DataType::Float32 => {
            let f = float(&|x| f64::from(x as f32))?;
            out.extend((f as f32).to_ne_bytes());
        }
        DataType::Float64 => out.extend(float(&|x| x)?.to_ne_bytes()),
        other => bail!("cannot convert to {}", other.name()),
    }
    Ok(())
}

/// Convert native-order elements of `from` to `to`; `name(i)` names element `i` in the error
/// about a value that does not fit (`element [3, 1]`).
///
/// # Errors
/// If a type is not numeric, or a value does not fit the target type.
pub(crate) fn convert(
    bytes: &[u8],
    from: &DataType,
    to: &DataType,
    name: impl Fn(usize) -> String,
) -> Result<Vec<u8>> {
    if !is_castable(from) || !is_castable(to) {
        bail!(
            "converting {} to {} is not supported (only bool, integers and float16/32/64)",
            from.name(),
            to.name()
        );
    }
    let (Some(from_size), Some(to_size)) = (from.fixed_size(), to.fixed_size()) else {
        bail!("variable-length types cannot be converted");
    };
    let mut out = Vec::with_capacity(bytes.len() / from_size * to_size);
    for (i, element) in bytes.chunks_exact(from_size).enumerate() {
        store(to, load(from, element), &mut out).map_err(|e| e.context(name(i)))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(i: usize) -> String {
        format!("element [{i}]")
    }

    #[test]
    fn conversions() {
        let src: Vec<u8> = [1i32, -2, 300]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let f = convert(&src, &DataType::Int32, &DataType::Float32, flat).unwrap();
        let back = convert(&f, &DataType::Float32, &DataType::Int16, flat).unwrap();
        let values: Vec<i16> = back
            .chunks_exact(2)
            .map(|c| i16::from_ne_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(values, [1, -2, 300]);
        assert!(convert(&src, &DataType::Int32, &DataType::UInt8, flat).is_err());
        let half: Vec<u8> = 1.5f64.to_ne_bytes().to_vec();
        assert!(convert(&half, &DataType::Float64, &DataType::Int64, flat).is_err());
        // Nothing is lost silently.
        assert!(convert(&half, &DataType::Float64, &DataType::Bool, flat).is_err());
        let ones: Vec<u8> = [1.0f64, 0.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(
            convert(&ones, &DataType::Float64, &DataType::Bool, flat).unwrap(),
            [1, 0]
        );
        assert!(convert(&2u8.to_ne_bytes(), &DataType::UInt8, &DataType::Bool, flat).is_err());
        let big = 70000u32.to_ne_bytes();
        assert!(convert(&big, &DataType::UInt32, &DataType::Float16, flat).is_err());
        let odd = 2049i32.to_ne_bytes();
        let err = convert(&odd, &DataType::Int32, &DataType::Float16, flat).unwrap_err();
        assert!(
            format!("{err:#}").contains("element [0]: 2049 cannot be stored exactly"),
            "{err:#}"
        );
        assert!(
            convert(
                &2048i32.to_ne_bytes(),
                &DataType::Int32,
                &DataType::Float16,
                flat
            )
            .is_ok()
        );
        let huge = ((1u64 << 53) + 1).to_ne_bytes();
        assert!(convert(&huge, &DataType::UInt64, &DataType::Float64, flat).is_err());
        let wide = 1e300f64.to_ne_bytes();
        assert!(convert(&wide, &DataType::Float64, &DataType::Float32, flat).is_err());
        // Narrowing floats rounds; NaN and infinities stay what they are.
        let tenth = 0.1f64.to_ne_bytes();
        assert_eq!(
            convert(&tenth, &DataType::Float64, &DataType::Float32, flat).unwrap(),
            0.1f32.to_ne_bytes()
        );
        let inf = f64::INFINITY.to_ne_bytes();
        assert!(convert(&inf, &DataType::Float64, &DataType::Float16, flat).is_ok());
        assert!(convert(&[0], &DataType::Bool, &DataType::String, flat).is_err());
    }

    #[test]
    fn small_integers_convert_within_their_range() {
        let bytes: Vec<u8> = [-8i8, -1, 0, 7].iter().map(|&v| v as u8).collect();
        let int4 = convert(&bytes, &DataType::Int8, &DataType::Int4, flat).unwrap();
        assert_eq!(int4, [0xf8, 0xff, 0, 7]);
        // Back, whether the array's bytes are sign-extended or hold only the low bits.
        let low: Vec<u8> = int4.iter().map(|b| b & 0xf).collect();
        for held in [&int4, &low] {
            let back = convert(held, &DataType::Int4, &DataType::Int16, flat).unwrap();
            let values: Vec<i16> = back
                .chunks_exact(2)
                .map(|c| i16::from_ne_bytes([c[0], c[1]]))
                .collect();
            assert_eq!(values, [-8, -1, 0, 7]);
        }
        for (to, bad) in [
            (DataType::Int4, 8i8),
            (DataType::Int4, -9),
            (DataType::Int2, 2),
            (DataType::Int2, -3),
            (DataType::UInt4, -1),
            (DataType::UInt2, 4),
        ] {
            let err = convert(&[0, bad as u8], &DataType::Int8, &to, flat).unwrap_err();
            assert!(
                format!("{err:#}").contains(&format!("element [1]: {bad} is out of the range")),
                "{to:?} {bad}: {err:#}"
            );
        }
        assert_eq!(
            convert(&[3, 15], &DataType::UInt8, &DataType::UInt4, flat).unwrap(),
            [3, 15]
        );
        assert_eq!(
            convert(&[0x3, 0xff], &DataType::UInt2, &DataType::UInt8, flat).unwrap(),
            [3, 3]
        );
        let float = 1.5f32.to_ne_bytes();
        assert!(convert(&float, &DataType::Float32, &DataType::Int2, flat).is_err());
        assert_eq!(
            convert(
                &(-2.0f32).to_ne_bytes(),
                &DataType::Float32,
                &DataType::Int2,
                flat
            )
            .unwrap(),
            [0xfe]
        );
    }
}
