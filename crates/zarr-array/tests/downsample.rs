//! `Array::downsample_from`: each reduction against a reference written here element by
//! element, over partial edge windows, output chunks and shards that do not line up with
//! the windows, the blocking API, and the errors.

use std::sync::Arc;

use zarr_array::{ArrayBuilder, Error, Reduction, blocking, downsampled_shape};
use zarr_core::DataType;
use zarr_store::MemoryStore;

/// The reduction of every window of `values` (C order, `shape`) by `factors`, computed the
/// plain way.
fn reference(values: &[u16], shape: &[u64], factors: &[u64], reduction: Reduction) -> Vec<u16> {
    let out = downsampled_shape(shape, factors);
    let count: u64 = out.iter().product();
    let index_of = |index: &[u64]| {
        index
            .iter()
            .zip(shape)
            .fold(0u64, |acc, (&i, &n)| acc * n + i) as usize
    };
    (0..count)
        .map(|i| {
            let position = zarr_core::unravel_index(i, &out).unwrap();
            // Every element of the window, in C order.
            let mut window = Vec::new();
            let lengths: Vec<u64> = position
                .iter()
                .zip(factors)
                .zip(shape)
                .map(|((&p, &f), &n)| f.min(n - p * f))
                .collect();
            let total: u64 = lengths.iter().product();
            for j in 0..total {
                let offset = zarr_core::unravel_index(j, &lengths).unwrap();
                let index: Vec<u64> = position
                    .iter()
                    .zip(factors)
                    .zip(&offset)
                    .map(|((&p, &f), &o)| p * f + o)
                    .collect();
                window.push(values[index_of(&index)]);
            }
            match reduction {
                Reduction::Mean => {
                    let sum: u64 = window.iter().map(|&v| u64::from(v)).sum();
                    let n = window.len() as u64;
                    ((2 * sum + n) / (2 * n)) as u16
                }
                Reduction::Min => *window.iter().min().unwrap(),
                Reduction::Max => *window.iter().max().unwrap(),
                Reduction::Stride => window[0],
                Reduction::Mode => {
                    let count = |v: u16| window.iter().filter(|&&w| w == v).count();
                    // The most frequent; the first in C order on a tie.
                    let mut best = window[0];
                    for &v in &window {
                        if count(v) > count(best) {
                            best = v;
                        }
                    }
                    best
                }
                _ => unreachable!("a reduction this test does not know"),
            }
        })
        .collect()
}

#[tokio::test]
async fn each_reduction_matches_the_reference_whatever_the_output_layout() {
    let shape = vec![9u64, 37, 23];
    let factors = [2u64, 3, 2];
    let values: Vec<u16> = (0..shape.iter().product::<u64>())
        // Few distinct values, so that modes and ties happen.
        .map(|i| ((i * 7919) % 13) as u16 * 1000 + (i % 3) as u16)
        .collect();
    let store = Arc::new(MemoryStore::new());
    let source = ArrayBuilder::new(shape.clone(), DataType::UInt16, vec![4, 8, 8])
        .create(Arc::clone(&store), "/source")
        .await
        .unwrap();
    source.write(.., &values).await.unwrap();
    let out_shape = downsampled_shape(&shape, &factors);
    assert_eq!(out_shape, [5, 13, 12]);
    for reduction in [
        Reduction::Mean,
        Reduction::Mode,
        Reduction::Min,
        Reduction::Max,
        Reduction::Stride,
    ] {
        let want = reference(&values, &shape, &factors, reduction);
        for (name, builder) in [
            (
                "chunks",
                ArrayBuilder::new(out_shape.clone(), DataType::UInt16, vec![2, 5, 4]).zstd(1),
            ),
            (
                "shards",
                ArrayBuilder::new(out_shape.clone(), DataType::UInt16, vec![4, 10, 8])
                    .sharding(vec![2, 5, 4]),
            ),
        ] {
            let path = format!("/{reduction}-{name}");
            let out = builder.create(Arc::clone(&store), &path).await.unwrap();
            out.downsample_from(&source, &factors, reduction)
                .await
                .unwrap();
            let got: Vec<u16> = out.read(..).await.unwrap();
            assert_eq!(got, want, "{reduction} into {name}");
        }
    }
    // Factors of 1 copy.
    let copy = ArrayBuilder::new(shape.clone(), DataType::UInt16, vec![5, 5, 5])
        .create(Arc::clone(&store), "/copy")
        .await
        .unwrap();
    copy.downsample_from(&source, &[1, 1, 1], Reduction::Mean)
        .await
        .unwrap();
    assert_eq!(copy.read::<u16>(..).await.unwrap(), values);
}

#[test]
fn the_blocking_api_downsamples_too() {
    let store = Arc::new(MemoryStore::new());
    let builder = ArrayBuilder::new(vec![3, 4], DataType::Float32, vec![2, 2]);
    let source = blocking::Array::create(&builder, Arc::clone(&store), "/a").unwrap();
    source
        .write(
            ..,
            &[
                1.0f32,
                2.0,
                3.0,
                4.0,
                5.0,
                6.0,
                7.0,
                8.0,
                9.0,
                f32::NAN,
                11.0,
                12.0,
            ],
        )
        .unwrap();
    let builder = ArrayBuilder::new(vec![2, 2], DataType::Float32, vec![2, 2]);
    let out = blocking::Array::create(&builder, store, "/b").unwrap();
    out.downsample_from(&source, &[2, 2], Reduction::Max)
        .unwrap();
    let got: Vec<f32> = out.read(..).unwrap();
    // The last row's windows are 1x2: [9, NaN] and [11, 12].
    assert_eq!([got[0], got[1], got[3]], [6.0, 8.0, 12.0]);
    assert!(got[2].is_nan(), "a NaN wins max: {got:?}");
}

#[tokio::test]
async fn what_cannot_be_downsampled_is_an_error_naming_why() {
    let store = Arc::new(MemoryStore::new());
    let source = ArrayBuilder::new(vec![8, 8], DataType::Int32, vec![4, 4])
        .create(Arc::clone(&store), "/src")
        .await
        .unwrap();
    let half = ArrayBuilder::new(vec![4, 4], DataType::Int32, vec![4, 4])
        .create(Arc::clone(&store), "/half")
        .await
        .unwrap();
    let err = half
        .downsample_from(&source, &[2], Reduction::Mean)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Core(zarr_core::Error::RankMismatch { .. })),
        "{err}"
    );
    let err = half
        .downsample_from(&source, &[2, 0], Reduction::Mean)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at least 1"), "{err}");
    let err = half
        .downsample_from(&source, &[2, 4], Reduction::Mean)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("downsampled by [2, 4] is [4, 2]"),
        "{err}"
    );
    let floats = ArrayBuilder::new(vec![4, 4], DataType::Float32, vec![4, 4])
        .create(Arc::clone(&store), "/floats")
        .await
        .unwrap();
    let err = floats
        .downsample_from(&source, &[2, 2], Reduction::Mean)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unsupported { reason, .. } if reason.contains("int32")),
        "{err}"
    );
    let complex = ArrayBuilder::new(vec![8, 8], DataType::Complex64, vec![4, 4])
        .create(Arc::clone(&store), "/complex")
        .await
        .unwrap();
    let complex_half = ArrayBuilder::new(vec![4, 4], DataType::Complex64, vec![4, 4])
        .create(Arc::clone(&store), "/complex_half")
        .await
        .unwrap();
    let err = complex_half
        .downsample_from(&complex, &[2, 2], Reduction::Mean)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the mean reduction does not take complex64 elements"),
        "{err}"
    );
    // Mode and stride take any fixed-size type, comparing bits.
    complex_half
        .downsample_from(&complex, &[2, 2], Reduction::Mode)
        .await
        .unwrap();
    assert!(!Reduction::Mean.supports(&DataType::String));
    assert!(!Reduction::Stride.supports(&DataType::String));
    assert_eq!(Reduction::from_name("mode"), Some(Reduction::Mode));
    assert_eq!(Reduction::from_name("median"), None);
    // Nothing was written by the failed calls.
    assert_eq!(half.num_stored_chunks().await.unwrap(), 0);
}
