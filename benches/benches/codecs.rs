//! Codec throughput on one 64^3 `uint16` chunk (512 KiB; a smooth pattern plus noise, about
//! 3.2x compressible with zstd level 1): encode and decode through `CodecChain`, and raw
//! `zstd::bulk` on the same chunk in the same run, so the chain's overhead is visible.
//!
//! A second group runs zfp (floating-point data only) on the same field as `float32`.
//!
//! Run: `cargo bench -p zarr-benches --bench codecs`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use zarr_codecs::{ArrayBytes, ChunkRepresentation, CodecChain, CodecRegistry};
use zarr_core::{DataType, ExtensionObject, FillValue};

const SIDE: u64 = 64;

/// The benchmark field of side `SIDE` (smooth plus one bit of noise, see
/// [`zarr_benches::field`]) in native byte order: zstd level 1 compresses it about 3.2x.
fn chunk() -> Vec<u8> {
    zarr_benches::field(SIDE)
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect()
}

fn chain(codecs: serde_json::Value) -> CodecChain {
    chain_of(codecs, DataType::UInt16, &0u16.to_ne_bytes())
}

/// The chain `codecs` for `SIDE`^3 chunks of `data_type` with the fill value `fill`.
fn chain_of(codecs: serde_json::Value, data_type: DataType, fill: &[u8]) -> CodecChain {
    let list: Vec<ExtensionObject> = codecs
        .as_array()
        .unwrap()
        .iter()
        .map(|v| ExtensionObject::from_json(v, "codecs").unwrap())
        .collect();
    let repr =
        ChunkRepresentation::try_new(vec![SIDE; 3], data_type, FillValue::new(fill.to_vec()))
            .unwrap();
    CodecChain::from_metadata(&list, repr, &CodecRegistry::with_defaults()).unwrap()
}

/// Time `a` and `b` alternately, `rounds` times each, and return their total times: on a
/// shared machine, neighbours slow both sides alike, so the ratio is steadier than two
/// separate measurements.
fn paired(rounds: u32, mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration) {
    let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        let first_a = round % 2 == 0;
        for side in 0..2 {
            let start = Instant::now();
            if (side == 0) == first_a {
                a();
                ta += start.elapsed();
            } else {
                b();
                tb += start.elapsed();
            }
        }
    }
    (ta, tb)
}

/// Chain vs raw zstd on the same chunk, paired; printed to stderr.
fn zstd_overhead(data: &Bytes) {
    let chain = chain(serde_json::json!([
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": 1}}
    ]));
    let encoded = chain.encode(ArrayBytes::Fixed(data.clone())).unwrap();
    let size = data.len();
    let gib =
        |d: Duration, n: u32| (size as f64 * f64::from(n)) / d.as_secs_f64() / f64::from(1 << 30);
    let rounds = 400;

    let mut out = vec![0u8; size];
    let mut raw_out = vec![0u8; size];
    let mut decompressor = zstd::bulk::Decompressor::new().unwrap();
    let (chain_t, raw_t) = paired(
        rounds,
        || {
            chain
                .decode_into(black_box(encoded.clone()), &mut out)
                .unwrap()
        },
        || {
            decompressor
                .decompress_to_buffer(black_box(&encoded[..]), &mut raw_out[..])
                .unwrap();
        },
    );
    eprintln!(
        "paired decode: chain decode_into {:.2} GiB/s, raw decompress_to_buffer {:.2} GiB/s, \
         chain/raw throughput {:.3}",
        gib(chain_t, rounds),
        gib(raw_t, rounds),
        raw_t.as_secs_f64() / chain_t.as_secs_f64()
    );

    let mut compressor = zstd::bulk::Compressor::new(1).unwrap();
    let (chain_t, raw_t) = paired(
        rounds / 4,
        || {
            drop(
                chain
                    .encode(ArrayBytes::Fixed(black_box(data).clone()))
                    .unwrap(),
            )
        },
        || drop(compressor.compress(black_box(&data[..])).unwrap()),
    );
    eprintln!(
        "paired encode: chain encode {:.2} GiB/s, raw compress {:.2} GiB/s, chain/raw \
         throughput {:.3}",
        gib(chain_t, rounds / 4),
        gib(raw_t, rounds / 4),
        raw_t.as_secs_f64() / chain_t.as_secs_f64()
    );
}

fn codecs(c: &mut Criterion) {
    let data = Bytes::from(chunk());
    let size = data.len();
    // Only under `cargo bench` (not when `cargo test` runs benches once as a smoke test).
    if std::env::args().any(|a| a == "--bench") {
        zstd_overhead(&data);
    }
    let chains = [
        (
            "bytes+zstd(1)",
            chain(serde_json::json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "zstd", "configuration": {"level": 1}}
            ])),
        ),
        (
            "bytes",
            chain(serde_json::json!([{"name": "bytes", "configuration": {"endian": "little"}}])),
        ),
        (
            "bytes(big)",
            chain(serde_json::json!([{"name": "bytes", "configuration": {"endian": "big"}}])),
        ),
        (
            "bytes+blosc(lz4,shuffle)",
            chain(serde_json::json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                    "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}
            ])),
        ),
        (
            "transpose[2,1,0]+bytes",
            chain(serde_json::json!([
                {"name": "transpose", "configuration": {"order": [2, 1, 0]}},
                {"name": "bytes", "configuration": {"endian": "little"}}
            ])),
        ),
        (
            "transpose[1,2,0]+bytes",
            chain(serde_json::json!([
                {"name": "transpose", "configuration": {"order": [1, 2, 0]}},
                {"name": "bytes", "configuration": {"endian": "little"}}
            ])),
        ),
    ];

    let mut group = c.benchmark_group("codecs 64^3 uint16");
    group.throughput(Throughput::Bytes(size as u64));
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));

    for (name, chain) in &chains {
        let encoded = encode_and_decode(&mut group, name, chain, &data);
        let mut out = vec![0u8; size];
        group.bench_function(format!("{name}/decode_into"), |b| {
            b.iter(|| {
                chain
                    .decode_into(black_box(encoded.clone()), &mut out)
                    .unwrap()
            })
        });
    }

    // The same chunk through zstd directly: what the chain is measured against.
    let raw = zstd::bulk::compress(&data, 1).unwrap();
    let raw = Bytes::from(raw);
    group.bench_function("raw zstd(1)/compress (new context)", |b| {
        b.iter(|| zstd::bulk::compress(black_box(&data), 1).unwrap())
    });
    let mut compressor = zstd::bulk::Compressor::new(1).unwrap();
    group.bench_function("raw zstd(1)/compress (reused context)", |b| {
        b.iter(|| compressor.compress(black_box(&data)).unwrap())
    });
    group.bench_function("raw zstd(1)/decompress (new context, new Vec)", |b| {
        b.iter(|| zstd::bulk::decompress(black_box(&raw), size).unwrap())
    });
    let mut decompressor = zstd::bulk::Decompressor::new().unwrap();
    let mut out = vec![0u8; size];
    group.bench_function(
        "raw zstd(1)/decompress_to_buffer (reused context and buffer)",
        |b| {
            b.iter(|| {
                decompressor
                    .decompress_to_buffer(black_box(&raw[..]), &mut out[..])
                    .unwrap()
            })
        },
    );
    group.bench_function("raw memcpy (new Vec)", |b| {
        b.iter(|| black_box(&data[..]).to_vec())
    });
    group.finish();
}

/// Scatter (a read: a decoded chunk copied into its place in the array) and gather (a write:
/// a chunk cut out of the array) of every chunk of a 512^3 `uint16` array (256 MiB, far
/// larger than the caches, pre-faulted), for 32^3 chunks (W2's inner chunks, 64-byte rows)
/// and 64^3 chunks (W1, 128-byte rows): the copy kernel of `ArrayViewMut` and `copy_block`.
fn block_copy(c: &mut Criterion) {
    const ARRAY: u64 = 512;
    let shape = [ARRAY; 3];
    let mut array = vec![1u8; (ARRAY * ARRAY * ARRAY * 2) as usize];
    let mut g = c.benchmark_group("block_copy");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(array.len() as u64));
    for side in [32u64, 64] {
        let chunk_shape = [side; 3];
        let chunk: Vec<u8> = (0..side * side * side * 2).map(|i| i as u8).collect();
        let per = ARRAY / side;
        let origins: Vec<[u64; 3]> = (0..per * per * per)
            .map(|i| [i / (per * per) * side, i / per % per * side, i % per * side])
            .collect();
        g.bench_function(format!("scatter {side}^3 chunks"), |b| {
            b.iter(|| {
                let view = zarr_codecs::ArrayViewMut::new(&mut array, &shape, 2).unwrap();
                for origin in &origins {
                    let region =
                        zarr_core::Region::try_new(origin.iter().map(|&o| o..o + side).collect())
                            .unwrap();
                    // SAFETY: one subview at a time.
                    let mut part = unsafe { view.subview(region) }.unwrap();
                    part.copy_from(&chunk, &chunk_shape, &zarr_core::Region::full(&chunk_shape))
                        .unwrap();
                }
            })
        });
        let mut out = vec![0u8; chunk.len()];
        g.bench_function(format!("gather {side}^3 chunks"), |b| {
            b.iter(|| {
                for origin in &origins {
                    zarr_codecs::copy_block(
                        &array,
                        &shape,
                        origin,
                        &mut out,
                        &chunk_shape,
                        &[0; 3],
                        &chunk_shape,
                        2,
                    );
                    black_box(&out);
                }
            })
        });
    }
    g.finish();
}

/// zfp, which takes floating-point (and 32/64-bit integer) data only, on the benchmark field
/// as `float32` (1 MiB): its fixed-rate, fixed-accuracy and reversible modes, beside
/// bytes+zstd(1) on the same chunk.
fn zfp(c: &mut Criterion) {
    let data: Vec<u8> = zarr_benches::field(SIDE)
        .iter()
        .flat_map(|&v| (f32::from(v) / 8.0).to_ne_bytes())
        .collect();
    let data = Bytes::from(data);
    let size = data.len();
    let float_chain =
        |codecs: serde_json::Value| chain_of(codecs, DataType::Float32, &0f32.to_ne_bytes());
    let chains = [
        (
            "zfp(fixed_rate 8)",
            float_chain(serde_json::json!([
                {"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": 8}}
            ])),
        ),
        (
            "zfp(fixed_accuracy 0.01)",
            float_chain(serde_json::json!([
                {"name": "zfp", "configuration": {"mode": "fixed_accuracy", "tolerance": 0.01}}
            ])),
        ),
        (
            "zfp(reversible)",
            float_chain(
                serde_json::json!([{"name": "zfp", "configuration": {"mode": "reversible"}}]),
            ),
        ),
        (
            "bytes+zstd(1)",
            float_chain(serde_json::json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "zstd", "configuration": {"level": 1}}
            ])),
        ),
    ];
    let mut group = c.benchmark_group("codecs 64^3 float32");
    group.throughput(Throughput::Bytes(size as u64));
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, chain) in &chains {
        encode_and_decode(&mut group, name, chain, &data);
    }
    group.finish();
}

/// Report `chain`'s compression ratio on `data` and bench its encode and decode in `group`;
/// returns the encoded chunk.
fn encode_and_decode(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    chain: &CodecChain,
    data: &Bytes,
) -> Bytes {
    let encoded = chain.encode(ArrayBytes::Fixed(data.clone())).unwrap();
    eprintln!(
        "{name}: {} -> {} bytes (ratio {:.2})",
        data.len(),
        encoded.len(),
        data.len() as f64 / encoded.len() as f64
    );
    group.bench_function(format!("{name}/encode"), |b| {
        b.iter(|| {
            chain
                .encode(ArrayBytes::Fixed(black_box(data).clone()))
                .unwrap()
        })
    });
    group.bench_function(format!("{name}/decode"), |b| {
        b.iter(|| chain.decode(black_box(encoded.clone())).unwrap())
    });
    encoded
}

criterion_group!(benches, codecs, zfp, block_copy);
criterion_main!(benches);
