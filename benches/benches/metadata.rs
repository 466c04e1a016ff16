//! Metadata parsing and grid arithmetic: the per-open and per-read overheads of `zarr-core`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use zarr_core::{ArrayMetadata, ChunkGrid, DimensionChunks, NodeMetadata, Region};

const ARRAY: &str = r#"{
  "shape": [512, 512, 512], "data_type": "uint16",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 64, 64]}},
  "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
  "fill_value": 0,
  "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
             {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
  "attributes": {"title": "bench", "history": [1, 2, 3]},
  "zarr_format": 3, "node_type": "array", "storage_transformers": []
}"#;

fn parse(c: &mut Criterion) {
    c.bench_function("parse array zarr.json", |b| {
        b.iter(|| NodeMetadata::from_json(black_box(ARRAY)).unwrap())
    });
    let meta = ArrayMetadata::from_json(ARRAY).unwrap();
    c.bench_function("write array zarr.json", |b| {
        b.iter(|| black_box(&meta).to_json_pretty().unwrap())
    });
}

fn grid(c: &mut Criterion) {
    let shape = [512u64, 512, 512];
    let regular = ChunkGrid::regular(vec![64, 64, 64]).unwrap();
    let rectilinear = ChunkGrid::rectilinear(vec![
        DimensionChunks::Regular(64),
        DimensionChunks::from_edges([32, 96].repeat(4)),
        DimensionChunks::Regular(64),
    ])
    .unwrap();
    let whole = Region::full(&shape);
    for (name, grid) in [("regular", &regular), ("rectilinear", &rectilinear)] {
        c.bench_function(
            &format!("{name}: chunks_in_region, whole 512^3 (512 chunks)"),
            |b| {
                b.iter(|| {
                    grid.chunks_in_region(&shape, black_box(&whole))
                        .unwrap()
                        .count()
                })
            },
        );
        c.bench_function(&format!("{name}: chunk_of"), |b| {
            b.iter(|| grid.chunk_of(&shape, black_box(&[300, 200, 100])).unwrap())
        });
    }
}

criterion_group!(benches, parse, grid);
criterion_main!(benches);
