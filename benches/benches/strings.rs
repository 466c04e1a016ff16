//! Variable-length strings: decoding (and encoding) a chunk of 1,000,000 short strings in the
//! ZEP0007 layout (`zarr-rs.vlen_arrow`) and in zarr-python's `vlen-utf8` layout, into Arrow
//! layout and through `CodecChain`. Throughput is *encoded chunk bytes* per second.
//!
//! Run: `cargo bench -p zarr-benches --bench strings`.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, ChunkRepresentation};
use zarr_core::{DataType, FillValue};
use zarr_vlen::{VlenArrowCodec, VlenStrings, VlenUtf8Codec};

const N: usize = 1_000_000;

fn bench(c: &mut Criterion) {
    // One million short labels (`zarr_benches::Strings`, the data of the comparison
    // harness's W6): 0 to 16 bytes, 7.5 on average, about 6% with a two-byte character.
    let strings = zarr_benches::Strings::generate(N);
    let typed = VlenStrings::<i32>::from_strs(strings.iter()).unwrap();
    let repr = ChunkRepresentation::try_new(vec![N as u64], DataType::String, FillValue::from(""))
        .unwrap();
    let array = ArrayBytes::try_from(typed.clone()).unwrap();

    let zep = VlenArrowCodec::default();
    let zep_chunk: Bytes = zep.encode_strings(&typed).unwrap();
    let utf8 = VlenUtf8Codec::new();
    let utf8_chunk: Bytes = utf8.encode_strings(&typed).unwrap();
    println!(
        "{N} strings, {} value bytes; ZEP0007 chunk {} bytes, vlen-utf8 chunk {} bytes",
        typed.values().len(),
        zep_chunk.len(),
        utf8_chunk.len()
    );

    let mut g = c.benchmark_group("strings_zep0007");
    g.throughput(Throughput::Bytes(zep_chunk.len() as u64));
    g.bench_function("decode_strings_i32 (zero copy)", |b| {
        b.iter(|| {
            black_box(
                zep.decode_strings::<i32>(black_box(&zep_chunk), N as u64)
                    .unwrap(),
            )
        })
    });
    g.bench_function("decode_strings_i64 (offsets widened)", |b| {
        b.iter(|| {
            black_box(
                zep.decode_strings::<i64>(black_box(&zep_chunk), N as u64)
                    .unwrap(),
            )
        })
    });
    g.bench_function("decode_binary_i32 (no UTF-8 check)", |b| {
        b.iter(|| {
            black_box(
                zep.decode_binary::<i32>(black_box(&zep_chunk), N as u64)
                    .unwrap(),
            )
        })
    });
    g.bench_function("decode (codec trait, u64 offsets)", |b| {
        b.iter(|| black_box(zep.decode(black_box(zep_chunk.clone()), &repr).unwrap()))
    });
    g.bench_function("encode_strings", |b| {
        b.iter(|| black_box(zep.encode_strings(black_box(&typed)).unwrap()))
    });
    g.bench_function("encode (codec trait)", |b| {
        b.iter(|| black_box(zep.encode(black_box(array.clone()), &repr).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("strings_vlen_utf8");
    g.throughput(Throughput::Bytes(utf8_chunk.len() as u64));
    g.bench_function("decode_strings_i32 (into Arrow layout)", |b| {
        b.iter(|| {
            black_box(
                utf8.decode_strings::<i32>(black_box(&utf8_chunk), N as u64)
                    .unwrap(),
            )
        })
    });
    g.bench_function("decode (codec trait, u64 offsets)", |b| {
        b.iter(|| black_box(utf8.decode(black_box(utf8_chunk.clone()), &repr).unwrap()))
    });
    g.bench_function("encode_strings", |b| {
        b.iter(|| black_box(utf8.encode_strings(black_box(&typed)).unwrap()))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
