//! Converting elements between numeric data types (`zarr copy --data-type`).
//!
//! Integers convert exactly or not at all (a value out of the target's range is an error);
//! floats convert to integers only when they are whole numbers in range; integers and floats
//! convert to floats with rounding; `bool` is 0 or 1 (and any non-zero value is `true`).

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
        DataType::UInt16 => Value::Int(i128::from(u16::from_ne_bytes(arr(b)))),
        DataType::UInt32 => Value::Int(i128::from(u32::from_ne_bytes(arr(b)))),
        DataType::UInt64 => Value::Int(i128::from(u64::from_ne_bytes(arr(b)))),
        DataType::Float16 => Value::Float(f64::from(half::f16::from_ne_bytes(arr(b)))),
        DataType::Float32 => Value::Float(f64::from(f32::from_ne_bytes(arr(b)))),
        _ => Value::Float(f64::from_ne_bytes(arr(b))),
    }
}

fn store(data_type: &DataType, value: Value, out: &mut Vec<u8>) -> Result<()> {
    macro_rules! int {
        ($t:ty) => {{
            let v: i128 = match value {
                Value::Int(v) => v,
                Value::Float(f) => {
                    // In range of i128 and whole, or not convertible.
                    if f.fract() != 0.0 || !f.is_finite() || f.abs() > 1e38 {
                        bail!(
                            "{f} is not a whole number, so it cannot become {}",
                            data_type.name()
                        );
                    }
                    f as i128
                }
            };
            match <$t>::try_from(v) {
                Ok(v) => out.extend(v.to_ne_bytes()),
                Err(_) => bail!("{v} is out of the range of {}", data_type.name()),
            }
        }};
    }
    let float = || match value {
        Value::Int(v) => v as f64,
        Value::Float(f) => f,
    };
    match data_type {
        DataType::Bool => out.push(u8::from(match value {
            Value::Int(v) => v != 0,
            Value::Float(f) => f != 0.0,
        })),
        DataType::Int8 => int!(i8),
        DataType::Int16 => int!(i16),
        DataType::Int32 => int!(i32),
        DataType::Int64 => int!(i64),
        DataType::UInt8 => int!(u8),
        DataType::UInt16 => int!(u16),
        DataType::UInt32 => int!(u32),
        DataType::UInt64 => int!(u64),
        DataType::Float16 => out.extend(half::f16::from_f64(float()).to_ne_bytes()),
        // Rounding to the nearest f32 is the conversion asked for.
        DataType::Float32 => out.extend((float() as f32).to_ne_bytes()),
        DataType::Float64 => out.extend(float().to_ne_bytes()),
        other => bail!("cannot convert to {}", other.name()),
    }
    Ok(())
}

/// Convert native-order elements of `from` to `to`.
///
/// # Errors
/// If a type is not numeric, or a value does not fit the target type.
pub(crate) fn convert(bytes: &[u8], from: &DataType, to: &DataType) -> Result<Vec<u8>> {
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
        store(to, load(from, element), &mut out)
            .map_err(|e| e.context(format!("element {i} of the block")))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let src: Vec<u8> = [1i32, -2, 300]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let f = convert(&src, &DataType::Int32, &DataType::Float32).unwrap();
        let back = convert(&f, &DataType::Float32, &DataType::Int16).unwrap();
        let values: Vec<i16> = back
            .chunks_exact(2)
            .map(|c| i16::from_ne_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(values, [1, -2, 300]);
        assert!(convert(&src, &DataType::Int32, &DataType::UInt8).is_err());
        let half: Vec<u8> = 1.5f64.to_ne_bytes().to_vec();
        assert!(convert(&half, &DataType::Float64, &DataType::Int64).is_err());
        assert_eq!(
            convert(&half, &DataType::Float64, &DataType::Bool).unwrap(),
            [1]
        );
        assert!(convert(&[0], &DataType::Bool, &DataType::String).is_err());
    }
}
