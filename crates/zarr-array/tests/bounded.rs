//! Arrays on zarrs' `zarrs.regular_bounded` chunk grid, whose edge chunks end at the array's
//! end: they are encoded at that smaller shape, and resizing or appending re-encodes the
//! chunks whose shape changes, keeping their values. (zarrs itself reads and writes these
//! arrays in `benches/tests/zarrs_regular_bounded.rs`.)

use std::sync::Arc;

use zarr_array::{Array, ArrayBuilder, Error};
use zarr_core::{ChunkGrid, DataType, FillValue};
use zarr_store::MemoryStore;

const FILL: u16 = 7;

/// A 2-D `uint16` array on a bounded grid of `chunks`, with the builder's default codecs
/// (`bytes` alone) unless `zstd`.
async fn array(
    store: &Arc<MemoryStore>,
    shape: [u64; 2],
    chunks: [u64; 2],
    zstd: bool,
) -> Array<MemoryStore> {
    let mut builder = ArrayBuilder::new(shape.to_vec(), DataType::UInt16, chunks.to_vec())
        .chunk_grid(ChunkGrid::regular_bounded(chunks.to_vec()).unwrap())
        .fill_value(FillValue::from(FILL));
    if zstd {
        builder = builder.zstd(1);
    }
    builder.create(Arc::clone(store), "/b").await.unwrap()
}

/// A model of a 2-D array: its rows.
#[derive(Debug, Clone)]
struct Model(Vec<Vec<u16>>);

impl Model {
    fn new(shape: [u64; 2], seed: u16) -> Self {
        Model(
            (0..shape[0])
                .map(|y| {
                    (0..shape[1])
                        .map(|x| (y as u16 * 100 + x as u16).wrapping_mul(seed) % 60_000 + 10)
                        .collect()
                })
                .collect(),
        )
    }

    fn resize(&mut self, shape: [u64; 2]) {
        self.0.resize(shape[0] as usize, Vec::new());
        for row in &mut self.0 {
            row.resize(shape[1] as usize, FILL);
        }
    }

    fn flat(&self) -> Vec<u16> {
        self.0.iter().flatten().copied().collect()
    }
}

/// Every stored chunk holds exactly its (cut) shape's bytes, with the `bytes` codec alone.
async fn assert_chunks_cut(array: &Array<MemoryStore>) {
    let grid = array.chunk_grid();
    for chunk in array.stored_chunks().await.unwrap() {
        let shape = grid.chunk_shape(array.shape(), &chunk).unwrap();
        let encoded = array.read_encoded_chunk(&chunk).await.unwrap().unwrap();
        assert_eq!(
            encoded.len() as u64,
            shape.iter().product::<u64>() * 2,
            "chunk {chunk:?} of array shape {:?}",
            array.shape()
        );
    }
}

#[tokio::test]
async fn edge_chunks_are_encoded_at_their_cut_shape() {
    let store = Arc::new(MemoryStore::new());
    let array = array(&store, [5, 7], [2, 3], false).await;
    let model = Model::new([5, 7], 3);
    array
        .write(array.full_region(), &model.flat())
        .await
        .unwrap();
    assert_eq!(array.chunk_shape(), None);
    assert_eq!(array.chunk_grid().nominal_chunk_shape(), Some(&[2, 3][..]));
    assert_eq!(array.stored_chunks().await.unwrap().len(), 9);
    let corner = array.read_encoded_chunk(&[2, 2]).await.unwrap().unwrap();
    assert_eq!(corner.len(), 2, "the corner chunk holds one element");
    assert_chunks_cut(&array).await;
    // Regions across the cut edges, and the metadata that opens again as written.
    assert_eq!(
        array.read::<u16>([3..5, 5..7]).await.unwrap(),
        [model.0[3][5], model.0[3][6], model.0[4][5], model.0[4][6]]
    );
    let opened = Array::open(Arc::clone(&store), "/b").await.unwrap();
    assert_eq!(opened.chunk_grid(), array.chunk_grid());
    assert_eq!(
        opened.read::<u16>(opened.full_region()).await.unwrap(),
        model.flat()
    );
    // A partial write into an edge chunk merges with what it holds.
    array.write([4..5, 6..7], &[1u16]).await.unwrap();
    assert_eq!(
        array.read::<u16>([4..5, 5..7]).await.unwrap(),
        [model.0[4][5], 1]
    );
}

#[tokio::test]
async fn resizing_reencodes_the_edge_chunks_and_keeps_values() {
    for zstd in [false, true] {
        let store = Arc::new(MemoryStore::new());
        let mut array = array(&store, [5, 7], [2, 3], zstd).await;
        let mut model = Model::new([5, 7], 5);
        array
            .write(array.full_region(), &model.flat())
            .await
            .unwrap();
        // Leave one edge chunk missing: it must stay missing.
        array.write([4..5, 0..3], &[FILL; 3]).await.unwrap();
        model.0[4][..3].fill(FILL);
        assert_eq!(array.read_encoded_chunk(&[2, 0]).await.unwrap(), None);
        let shapes = [
            [6, 8],  // both edges grow inside their chunks
            [6, 9],  // the last column chunk becomes full
            [4, 4],  // shrink: chunks erased, new edges cut
            [4, 12], // grow over whole new chunks
            [1, 1],
            [9, 10],
            [9, 10],
        ];
        for shape in shapes {
            array.resize(shape.to_vec()).await.unwrap();
            model.resize(shape);
            let opened = Array::open(Arc::clone(&store), "/b").await.unwrap();
            assert_eq!(opened.shape(), shape, "zstd {zstd}");
            assert_eq!(
                opened.read::<u16>(opened.full_region()).await.unwrap(),
                model.flat(),
                "{shape:?}, zstd {zstd}"
            );
            if !zstd {
                assert_chunks_cut(&opened).await;
            }
        }
        // Shrinking dropped values: growing again shows the fill value, not old data.
        assert_eq!(model.0[8][9], FILL);
    }
}

#[tokio::test]
async fn appending_reencodes_the_old_edge_chunk() {
    let store = Arc::new(MemoryStore::new());
    let mut array = array(&store, [3, 2], [2, 2], false).await;
    array
        .write(array.full_region(), &[1u16, 2, 3, 4, 5, 6])
        .await
        .unwrap();
    let region = array.append(0, &[7u16, 8, 9, 10, 11, 12]).await.unwrap();
    assert_eq!(region.ranges(), &[3..6, 0..2]);
    assert_eq!(
        array.read::<u16>(array.full_region()).await.unwrap(),
        (1..=12).collect::<Vec<u16>>()
    );
    assert_chunks_cut(&array).await;
    let opened = Array::open(Arc::clone(&store), "/b").await.unwrap();
    assert_eq!(opened.shape(), [6, 2]);
    assert_chunks_cut(&opened).await;
}

#[tokio::test]
async fn handles_of_another_shape_refuse_edge_chunks_that_change() {
    let store = Arc::new(MemoryStore::new());
    let array = array(&store, [5, 6], [2, 3], false).await;
    // Row chunk 2 holds one row in [5, 6] and two in [6, 6].
    let err = array.with_shape(vec![6, 6]).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("resize"), "{err}");
    // Shrinking cuts row chunk 1 in two.
    assert!(array.with_shape(vec![3, 6]).is_err());
    // The columns end at a chunk boundary, so growing them changes no stored chunk.
    let wider = array.with_shape(vec![5, 9]).unwrap();
    wider.write([0..5, 6..9], &[1u16; 15]).await.unwrap();
    assert_eq!(array.with_shape(vec![5, 6]).unwrap().shape(), [5, 6]);
    assert!(array.with_shape(vec![0, 6]).is_ok());
}

#[tokio::test]
async fn sharded_bounded_arrays_check_every_shard_edge() {
    let store = Arc::new(MemoryStore::new());
    let builder = |shape: Vec<u64>| {
        ArrayBuilder::new(shape, DataType::UInt16, vec![4, 6])
            .chunk_grid(ChunkGrid::regular_bounded(vec![4, 6]).unwrap())
            .sharding(vec![2, 3])
            .fill_value(FillValue::from(FILL))
    };
    // A last shard of 5 - 4 = 1 row cannot hold inner chunks of 2 rows.
    let err = builder(vec![5, 9])
        .create(Arc::clone(&store), "/bad")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Codecs { .. }), "{err}");

    let mut array = builder(vec![6, 9])
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    assert_eq!(array.inner_chunk_shape(), Some(&[2, 3][..]));
    let mut model = Model::new([6, 9], 11);
    array
        .write(array.full_region(), &model.flat())
        .await
        .unwrap();
    for shape in [[8, 12], [2, 3], [10, 15]] {
        array.resize(shape.to_vec()).await.unwrap();
        model.resize(shape);
        let opened = Array::open(Arc::clone(&store), "/s").await.unwrap();
        assert_eq!(
            opened.read::<u16>(opened.full_region()).await.unwrap(),
            model.flat(),
            "{shape:?}"
        );
        assert_eq!(
            opened.read::<u16>([1..2, 2..3]).await.unwrap(),
            [model.0[1][2]]
        );
    }
    // A shape whose last shard cannot hold whole inner chunks is refused before anything
    // changes.
    let err = array.resize(vec![7, 15]).await.unwrap_err();
    assert!(matches!(err, Error::Codecs { .. }), "{err}");
    let opened = Array::open(Arc::clone(&store), "/s").await.unwrap();
    assert_eq!(opened.shape(), [10, 15]);
    assert_eq!(
        opened.read::<u16>(opened.full_region()).await.unwrap(),
        model.flat()
    );
}

#[tokio::test]
async fn strings_in_bounded_arrays_survive_resizing() {
    let store = Arc::new(MemoryStore::new());
    let mut array = ArrayBuilder::new(vec![3, 5], DataType::String, vec![2, 2])
        .chunk_grid(ChunkGrid::regular_bounded(vec![2, 2]).unwrap())
        .zstd(1)
        .create(Arc::clone(&store), "/t")
        .await
        .unwrap();
    let text = |y: usize, x: usize| "é".repeat(x) + &"y".repeat(y + 1);
    let mut model: Vec<Vec<String>> = (0..3)
        .map(|y| (0..5).map(|x| text(y, x)).collect())
        .collect();
    let flat = |model: &Vec<Vec<String>>| model.iter().flatten().cloned().collect::<Vec<_>>();
    array.write_text([0..3, 0..5], &flat(&model)).await.unwrap();
    for shape in [[4usize, 6], [3, 3], [5, 8], [5, 8], [1, 1], [4, 4]] {
        array
            .resize(shape.map(|n| n as u64).to_vec())
            .await
            .unwrap();
        model.resize(shape[0], Vec::new());
        for row in &mut model {
            row.resize(shape[1], String::new());
        }
        let opened = Array::open(Arc::clone(&store), "/t").await.unwrap();
        assert_eq!(
            opened.read_text(opened.full_region()).await.unwrap(),
            flat(&model),
            "{shape:?}"
        );
    }
    let region = array
        .append_array_bytes(
            0,
            zarr_codecs::ArrayBytes::try_from(
                zarr_vlen::VlenStrings::<i32>::from_strs(["w", "x", "yz", ""]).unwrap(),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(region.ranges(), &[4..5, 0..4]);
    model.push(["w", "x", "yz", ""].map(String::from).to_vec());
    assert_eq!(
        array.read_text(array.full_region()).await.unwrap(),
        flat(&model)
    );
}
