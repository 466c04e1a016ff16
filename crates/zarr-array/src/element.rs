//! [`Element`]: the Rust types an array's values can be read as and written from.

use half::{bf16, f16};
use num_complex::Complex;
use zarr_core::{DataType, FloatFormat};

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that holds one element of an array of a fixed-size data type.
///
/// Reads and writes check the type against the array's data type and return
/// [`Error::ElementType`](crate::Error::ElementType) on a mismatch: an `Array` of `float32`
/// cannot be read as `u32`. Values are in native byte order.
///
/// | Rust type | data types |
/// |---|---|
/// | `bool` | `bool` |
/// | `i8`, `i16`, `i32`, `i64` | `int8` ... `int64`; `i8` also `int2`, `int4`; `i64` also `numpy.datetime64`, `numpy.timedelta64` |
/// | `u8`, `u16`, `u32`, `u64` | `uint8` ... `uint64`; `u8` also `uint2`, `uint4`, the 8-bit float formats, `r8` |
/// | the integer type of the same width and sign | a fixed-point type (`Q7f8`: `i16`, `N0f8`: `u8`): its stored integers ([`Array::read_fixed_point`](crate::Array::read_fixed_point) converts) |
/// | `half::f16`, `half::bf16`, `f32`, `f64` | `float16`, `bfloat16`, `float32`, `float64` |
/// | `num_complex::Complex<f32>`, `Complex<f64>` | `complex64`, `complex128`; also `complex_float32`, `complex_float64` |
/// | `Complex<half::f16>`, `Complex<half::bf16>` | `complex_float16`, `complex_bfloat16` |
///
/// Any fixed-size array can also be read and written as raw bytes (`read_bytes`).
///
/// The trait is sealed: every implementor is plain old data (any byte pattern is a value),
/// except `bool`, whose reads check every byte; for every implementor, all-zero bytes are a
/// value (zero, `false`, `0.0`).
pub trait Element:
    Copy + Send + Sync + Default + std::fmt::Debug + 'static + sealed::Sealed
{
    /// The type's name, for errors.
    const NAME: &'static str;

    /// Whether arrays of `data_type` can be read as this type.
    fn is_compatible(data_type: &DataType) -> bool;

    /// Check decoded bytes before they are seen as values of this type (only `bool` has
    /// invalid byte patterns). Returns the index of the first invalid element.
    #[doc(hidden)]
    fn first_invalid(bytes: &[u8]) -> Option<usize> {
        let _ = bytes;
        None
    }
}

macro_rules! element {
    ($t:ty, $name:literal, $($pat:pat_param)|+) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const NAME: &'static str = $name;
            fn is_compatible(data_type: &DataType) -> bool {
                matches!(data_type, $($pat)|+)
            }
        }
    };
    // An integer type: also a fixed-point type's stored integers.
    ($t:ty, $name:literal, base $base:path, $($pat:pat_param)|+) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const NAME: &'static str = $name;
            fn is_compatible(data_type: &DataType) -> bool {
                matches!(data_type, $($pat)|+)
                    || matches!(data_type, DataType::FixedPoint(fp) if fp.base_type() == $base)
            }
        }
    };
}

element!(i8, "i8", base DataType::Int8, DataType::Int8 | DataType::Int2 | DataType::Int4);
element!(i16, "i16", base DataType::Int16, DataType::Int16);
element!(i32, "i32", base DataType::Int32, DataType::Int32);
element!(
    i64,
    "i64",
    base DataType::Int64,
    DataType::Int64 | DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. }
);
element!(
    u8,
    "u8",
    base DataType::UInt8,
    DataType::UInt8
        | DataType::UInt2
        | DataType::UInt4
        | DataType::MiniFloat(_)
        | DataType::RawBits(1)
);
element!(u16, "u16", base DataType::UInt16, DataType::UInt16);
element!(u32, "u32", base DataType::UInt32, DataType::UInt32);
element!(u64, "u64", base DataType::UInt64, DataType::UInt64);
element!(f16, "half::f16", DataType::Float16);
element!(bf16, "half::bf16", DataType::BFloat16);
element!(f32, "f32", DataType::Float32);
element!(f64, "f64", DataType::Float64);
element!(
    Complex<f32>,
    "Complex<f32>",
    DataType::Complex64 | DataType::ComplexFloat(FloatFormat::Float32)
);
element!(
    Complex<f64>,
    "Complex<f64>",
    DataType::Complex128 | DataType::ComplexFloat(FloatFormat::Float64)
);
element!(
    Complex<f16>,
    "Complex<half::f16>",
    DataType::ComplexFloat(FloatFormat::Float16)
);
element!(
    Complex<bf16>,
    "Complex<half::bf16>",
    DataType::ComplexFloat(FloatFormat::BFloat16)
);

impl sealed::Sealed for bool {}
impl Element for bool {
    const NAME: &'static str = "bool";
    fn is_compatible(data_type: &DataType) -> bool {
        matches!(data_type, DataType::Bool)
    }
    fn first_invalid(bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&b| b > 1)
    }
}

/// The bytes of a slice of elements.
pub(crate) fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    // SAFETY: every `Element` is plain old data without padding (integers, floats, `bool`,
    // and `Complex<f16/bf16/f32/f64>`, each `repr(C)` of two floats), so its memory is initialised
    // bytes; the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }
}

/// The bytes of a mutable slice of elements, for decoding into. Callers must check
/// [`Element::first_invalid`] before reading the elements as `T` when it can fail (`bool`).
pub(crate) fn as_bytes_mut<T: Element>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as `as_bytes`; every byte pattern written is a valid `T` except for `bool`,
    // whose bytes the callers check (as `u8`) before the values are read as `bool`.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), size_of_val(values)) }
}

/// Output buffers at least this large are advised to use transparent huge pages.
const HUGE_PAGE_ADVICE_MIN: usize = 8 << 20;

/// A new `Vec<T>` of `n` zero values, for a read to fill.
///
/// The memory comes zeroed from the allocator (for large buffers, fresh pages the kernel
/// zeroes on first touch), so nothing is written here and the decoders that fill it touch
/// each page first, in parallel. On Linux, a large buffer is advised to use transparent huge
/// pages: one page fault per 2 MiB instead of per 4 KiB, which is a fifth of a whole-array
/// read's CPU time otherwise.
///
/// # Errors
/// [`zarr_codecs::Error::OutOfMemory`] if the allocator refuses (where `vec!` would abort).
pub(crate) fn zeroed_vec<T: Element>(n: usize) -> Result<Vec<T>, zarr_codecs::Error> {
    let refused = || zarr_codecs::Error::OutOfMemory {
        what: format!("the {n} values of the region"),
        bytes: n.saturating_mul(size_of::<T>()),
    };
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| refused())?;
    if layout.size() == 0 {
        return Ok(vec![T::default(); n]);
    }
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(refused());
    }
    advise_huge_pages(ptr.cast::<u8>(), layout.size());
    // SAFETY: allocated by the global allocator with `T`'s alignment and room for exactly `n`
    // values, all initialised: every `Element` accepts all-zero bytes.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < HUGE_PAGE_ADVICE_MIN {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside our own fresh allocation; the advice changes how its
        // pages are backed, never their contents. A kernel without transparent huge pages
        // answers with an error, which changes nothing either.
        let _ = unsafe {
            rustix::mm::madvise(
                start as *mut std::ffi::c_void,
                end - start,
                rustix::mm::Advice::LinuxHugepage,
            )
        };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _len: usize) {
    let _ = HUGE_PAGE_ADVICE_MIN;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_is_strict() {
        assert!(f32::is_compatible(&DataType::Float32));
        assert!(!u32::is_compatible(&DataType::Float32));
        assert!(!f64::is_compatible(&DataType::Float32));
        assert!(bool::is_compatible(&DataType::Bool));
        assert!(!u8::is_compatible(&DataType::Bool));
        assert!(!u8::is_compatible(&DataType::String));
        assert_eq!(bool::first_invalid(&[0, 1, 2]), Some(2));
        assert_eq!(as_bytes(&[1u16, 2]).len(), 4);
    }

    #[test]
    fn zeroed_vecs_hold_zero_values() {
        use super::zeroed_vec;
        assert!(zeroed_vec::<u16>(0).unwrap().is_empty());
        assert_eq!(zeroed_vec::<f16>(3).unwrap(), [f16::ZERO; 3]);
        assert_eq!(
            zeroed_vec::<Complex<f64>>(2).unwrap(),
            [Complex::new(0.0, 0.0); 2]
        );
        assert_eq!(zeroed_vec::<bool>(4).unwrap(), [false; 4]);
        // Too large for any allocator: an error, not an abort.
        assert!(zeroed_vec::<u64>(usize::MAX / 16).is_err());
        // Large enough for the huge-page advice.
        let big = zeroed_vec::<u64>(3 << 20).unwrap();
        assert_eq!(big.len(), 3 << 20);
        assert!(big.iter().all(|&v| v == 0));
    }
}
