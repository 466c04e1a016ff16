//! Orthogonal selections, points and blocks: reads and writes against a model of the array,
//! on every chunk layout and both runtime flavours, plus what they cost and how they fail.

use std::sync::Arc;

use proptest::prelude::*;
use zarr_array::{Array, ArrayBuilder, AxisSelection, Error, Region, Selection, blocking};
use zarr_core::{ChunkGrid, DataType, DimensionChunks};
use zarr_store::{MemoryStore, RecordingStore};

/// How the test array is chunked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Regular,
    Rectilinear,
    /// The sharding codec, inner chunks of the given size in shards of twice it.
    Sharded,
    /// The sharding storage transformer, two chunks per shard along each dimension.
    Transformer,
    /// The rectilinear grid through the transformer, two chunks per shard along each
    /// dimension.
    RectilinearTransformer,
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    layout: Layout,
    multi_thread: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(1u64..=11, rank),
                prop::collection::vec(1u64..=4, rank),
                prop_oneof![
                    Just(Layout::Regular),
                    Just(Layout::Rectilinear),
                    Just(Layout::Sharded),
                    Just(Layout::Transformer),
                    Just(Layout::RectilinearTransformer),
                ],
                any::<bool>(),
            )
        })
        .prop_map(|(shape, chunk, layout, multi_thread)| Case {
            shape,
            chunk,
            layout,
            multi_thread,
        })
}

fn builder(case: &Case) -> ArrayBuilder {
    builder_of(
        case,
        DataType::UInt16,
        zarr_core::FillValue::new(7u16.to_le_bytes().to_vec()),
    )
}

fn builder_of(case: &Case, data_type: DataType, fill: zarr_core::FillValue) -> ArrayBuilder {
    let b = ArrayBuilder::new(case.shape.clone(), data_type.clone(), case.chunk.clone())
        .fill_value(fill.clone())
        .zstd(1);
    match case.layout {
        Layout::Regular => b,
        Layout::Rectilinear | Layout::RectilinearTransformer => {
            // Edges 1, c, 2c, 1, c, 2c, ... until the dimension is covered.
            let dims = case
                .shape
                .iter()
                .zip(&case.chunk)
                .map(|(&n, &c)| {
                    let mut edges = Vec::new();
                    let mut total = 0;
                    let mut k = 0;
                    while total < n {
                        let e = [1, c, 2 * c][k % 3];
                        edges.push(e);
                        total += e;
                        k += 1;
                    }
                    DimensionChunks::from_edges(edges)
                })
                .collect();
            let b = b.chunk_grid(ChunkGrid::rectilinear(dims).unwrap());
            if case.layout == Layout::RectilinearTransformer {
                // Chunks of several shapes in one shard.
                b.sharding_transformer(vec![2; case.shape.len()])
            } else {
                b
            }
        }
        Layout::Sharded => ArrayBuilder::new(
            case.shape.clone(),
            data_type,
            case.chunk.iter().map(|c| c * 2).collect(),
        )
        .fill_value(fill)
        .zstd(1)
        .sharding(case.chunk.clone()),
        Layout::Transformer => b.sharding_transformer(vec![2; case.shape.len()]),
    }
}

fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
    if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }
}

/// A selection of one dimension of length `n`: a strided range, listed indices (repeats
/// and any order) or a mask.
fn axis(n: u64) -> impl Strategy<Value = AxisSelection> {
    prop_oneof![
        (0..=n, 0..=n, 1u64..=4).prop_map(|(a, b, step)| {
            let (a, b) = (a.min(b), a.max(b));
            AxisSelection::step(a..b, step)
        }),
        prop::collection::vec(0..n, 0..8).prop_map(AxisSelection::Indices),
        prop::collection::vec(any::<bool>(), n as usize).prop_map(AxisSelection::Mask),
    ]
}

fn strides(shape: &[u64]) -> Vec<u64> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The array positions (C-order offsets) of a selection's values, in output order.
fn positions(shape: &[u64], selection: &Selection) -> Vec<usize> {
    let lists: Vec<Vec<u64>> = selection
        .axes()
        .iter()
        .zip(shape)
        .map(|(a, &n)| a.indices_in(n).unwrap())
        .collect();
    let strides = strides(shape);
    let mut out = vec![0usize];
    for (list, stride) in lists.iter().zip(&strides) {
        out = out
            .iter()
            .flat_map(|&base| list.iter().map(move |&i| base + (i * stride) as usize))
            .collect();
    }
    out
}

fn offset(shape: &[u64], point: &[u64]) -> usize {
    point
        .iter()
        .zip(strides(shape))
        .map(|(i, s)| (i * s) as usize)
        .sum()
}

#[derive(Debug, Clone)]
struct Scenario {
    case: Case,
    selection: Selection,
    points: Vec<Vec<u64>>,
    seed: u16,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    case().prop_flat_map(|case| {
        let axes: Vec<_> = case.shape.iter().map(|&n| axis(n)).collect();
        let point = case
            .shape
            .iter()
            .map(|&n| 0..n)
            .collect::<Vec<_>>()
            .prop_map(|p: Vec<u64>| p);
        (
            Just(case),
            axes.prop_map(Selection::new),
            prop::collection::vec(point, 0..12),
            any::<u16>(),
        )
            .prop_map(|(case, selection, points, seed)| Scenario {
                case,
                selection,
                points,
                seed,
            })
    })
}

async fn check(s: &Scenario) {
    let Scenario {
        case,
        selection,
        points,
        seed,
    } = s;
    let shape = &case.shape;
    let n: u64 = shape.iter().product();
    let store = Arc::new(MemoryStore::new());
    let array = builder(case).create(store, "/s").await.unwrap();
    // Some elements are the fill value, so some chunks are not stored.
    let mut model: Vec<u16> = (0..n as u16)
        .map(|i| {
            if i % 5 == 0 {
                7
            } else {
                i.wrapping_mul(*seed | 1)
            }
        })
        .collect();
    array.write(.., &model).await.unwrap();

    let wanted = positions(shape, selection);
    let read = array.read_selection::<u16>(selection).await.unwrap();
    let expected: Vec<u16> = wanted.iter().map(|&p| model[p]).collect();
    assert_eq!(read, expected, "read_selection");
    assert_eq!(
        Region::full(&selection.shape_in(shape).unwrap())
            .num_elements()
            .unwrap(),
        read.len() as u64
    );

    let read = array.read_points::<u16, _>(points).await.unwrap();
    let expected: Vec<u16> = points.iter().map(|p| model[offset(shape, p)]).collect();
    assert_eq!(read, expected, "read_points");

    // Writes: later values win where an index repeats.
    let values: Vec<u16> = (0..wanted.len() as u16)
        .map(|i| if i % 3 == 0 { 7 } else { 1000 + i })
        .collect();
    array.write_selection(selection, &values).await.unwrap();
    for (&p, &v) in wanted.iter().zip(&values) {
        model[p] = v;
    }
    assert_eq!(
        array.read::<u16>(..).await.unwrap(),
        model,
        "write_selection"
    );

    let values: Vec<u16> = (0..points.len() as u16).map(|i| 2000 + i).collect();
    array.write_points(points, &values).await.unwrap();
    for (p, &v) in points.iter().zip(&values) {
        model[offset(shape, p)] = v;
    }
    assert_eq!(array.read::<u16>(..).await.unwrap(), model, "write_points");
}

/// A string for element `i`: empty, the fill value, or of a length that varies with `i`.
fn text(i: usize, seed: u16) -> String {
    match i % 5 {
        0 => "-".to_owned(),
        1 => String::new(),
        _ => format!(
            "{}é{}",
            "x".repeat(i % 7),
            i.wrapping_mul(seed as usize | 1)
        ),
    }
}

/// [`check`] for a `string` array: the same selections and points, read and written as text.
async fn check_text(s: &Scenario) {
    let Scenario {
        case,
        selection,
        points,
        seed,
    } = s;
    let shape = &case.shape;
    let n: usize = shape.iter().product::<u64>() as usize;
    let store = Arc::new(MemoryStore::new());
    let array = builder_of(case, DataType::String, zarr_core::FillValue::from("-"))
        .create(store, "/t")
        .await
        .unwrap();
    let mut model: Vec<String> = (0..n).map(|i| text(i, *seed)).collect();
    array.write_text(.., &model).await.unwrap();

    let wanted = positions(shape, selection);
    let expected: Vec<&String> = wanted.iter().map(|&p| &model[p]).collect();
    let read = array.read_selection_text(selection).await.unwrap();
    assert_eq!(
        read.iter().collect::<Vec<_>>(),
        expected,
        "read_selection_text"
    );

    let expected: Vec<&String> = points.iter().map(|p| &model[offset(shape, p)]).collect();
    let read = array.read_points_text(points).await.unwrap();
    assert_eq!(
        read.iter().collect::<Vec<_>>(),
        expected,
        "read_points_text"
    );

    let values: Vec<String> = (0..wanted.len())
        .map(|i| {
            if i % 3 == 0 {
                "-".into()
            } else {
                format!("w{}", "y".repeat(i % 4))
            }
        })
        .collect();
    array
        .write_selection_text(selection, &values)
        .await
        .unwrap();
    for (&p, v) in wanted.iter().zip(&values) {
        model[p] = v.clone();
    }
    assert_eq!(
        array.read_text(..).await.unwrap(),
        model,
        "write_selection_text"
    );

    let values: Vec<String> = (0..points.len()).map(|i| format!("p{i}")).collect();
    array.write_points_text(points, &values).await.unwrap();
    for (p, v) in points.iter().zip(&values) {
        model[offset(shape, p)] = v.clone();
    }
    assert_eq!(
        array.read_text(..).await.unwrap(),
        model,
        "write_points_text"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn selections_match_a_model_of_the_array(s in scenario()) {
        runtime(s.case.multi_thread).block_on(check(&s));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn text_selections_match_a_model_of_the_array(s in scenario()) {
        runtime(s.case.multi_thread).block_on(check_text(&s));
    }
}

async fn grid_array(store: Arc<MemoryStore>) -> Array<MemoryStore> {
    let array = ArrayBuilder::new(vec![6, 8], DataType::Int32, vec![2, 3])
        .create(store, "/g")
        .await
        .unwrap();
    array
        .write(.., &(0..48).collect::<Vec<i32>>())
        .await
        .unwrap();
    array
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selections_read_numpy_orthogonal_results() {
    let array = grid_array(Arc::new(MemoryStore::new())).await;
    // a[1::2][:, [7, 0, 7]] in numpy.
    let selection = Selection::new([
        AxisSelection::step(1.., 2),
        AxisSelection::indices([7, 0, 7]),
    ]);
    assert_eq!(selection.shape_in(array.shape()).unwrap(), [3, 3]);
    assert_eq!(
        array.read_selection::<i32>(&selection).await.unwrap(),
        [15, 8, 15, 31, 24, 31, 47, 40, 47]
    );
    // Masks and single indices; a selection of step-1 ranges is a region.
    let mask = Selection::new([
        AxisSelection::mask([true, false, false, false, false, true]),
        AxisSelection::index(2),
    ]);
    assert_eq!(array.read_selection::<i32>(&mask).await.unwrap(), [2, 42]);
    let region = Selection::from(Region::try_new(vec![1..3, 2..4]).unwrap());
    assert_eq!(
        array.read_selection::<i32>(&region).await.unwrap(),
        array.read::<i32>([1..3, 2..4]).await.unwrap()
    );
    assert_eq!(
        array.read_selection_bytes(&selection).await.unwrap(),
        [15i32, 8, 15, 31, 24, 31, 47, 40, 47]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>()
    );
    // Empty selections read nothing.
    let empty = Selection::new([AxisSelection::indices([]), AxisSelection::all()]);
    assert!(
        array
            .read_selection::<i32>(&empty)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        array
            .read_points::<i32, [u64; 2]>([])
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn blocks_are_regions_of_whole_chunks() {
    let array = grid_array(Arc::new(MemoryStore::new())).await;
    // Chunks 2x3 over 6x8: the grid is 3x3, the last column of chunks 2 wide.
    assert_eq!(
        array.blocks_region([1..2, 2..3]).unwrap(),
        Region::try_new(vec![2..4, 6..8]).unwrap()
    );
    assert_eq!(
        array.read_blocks::<i32>([2..3, 2..3]).await.unwrap(),
        [38, 39, 46, 47]
    );
    assert_eq!(
        array.blocks_region([0..0, 1..3]).unwrap(),
        Region::try_new(vec![0..0, 3..8]).unwrap()
    );
    assert!(array.blocks_region([0..4, 0..1]).is_err());

    let sharded = ArrayBuilder::new(vec![10], DataType::Int32, vec![4])
        .sharding(vec![2])
        .create(Arc::new(MemoryStore::new()), "/s")
        .await
        .unwrap();
    // Blocks of a sharded array are its shards.
    assert_eq!(
        sharded.blocks_region(2..3).unwrap(),
        Region::try_new(std::iter::once(8..10).collect()).unwrap()
    );
}

#[tokio::test]
async fn bad_selections_are_typed_errors() {
    let array = grid_array(Arc::new(MemoryStore::new())).await;
    let bad = [
        Selection::new([AxisSelection::all()]),
        Selection::new([AxisSelection::step(.., 0), AxisSelection::all()]),
        Selection::new([AxisSelection::range(0..7), AxisSelection::all()]),
        Selection::new([AxisSelection::indices([6]), AxisSelection::all()]),
        Selection::new([AxisSelection::mask([true; 5]), AxisSelection::all()]),
    ];
    for selection in &bad {
        assert!(
            matches!(
                array.read_selection::<i32>(selection).await,
                Err(Error::Region { .. })
            ),
            "{selection:?}"
        );
        assert!(matches!(
            array.write_selection::<i32>(selection, &[]).await,
            Err(Error::Region { .. } | Error::BufferSize { .. })
        ));
    }
    let err = array.read_points::<i32, _>([[6u64, 0]]).await.unwrap_err();
    assert!(err.to_string().contains("point 0 [6, 0]"), "{err}");
    assert!(matches!(
        array.read_points::<i32, _>([vec![1u64]]).await,
        Err(Error::Region { .. })
    ));
    assert!(matches!(
        array.read_points::<u8, _>([[0u64, 0]]).await,
        Err(Error::ElementType { .. })
    ));
    let selection = Selection::new([AxisSelection::indices([0, 1]), AxisSelection::index(0)]);
    assert!(matches!(
        array.write_selection(&selection, &[1i32]).await,
        Err(Error::BufferSize { .. })
    ));
    assert!(matches!(
        array.write_points([[0u64, 0]], &[1i32, 2]).await,
        Err(Error::BufferSize { .. })
    ));
    // Into a caller's buffer: the right length reads, any other is refused.
    let selection = Selection::new([AxisSelection::indices([5, 0]), AxisSelection::step(.., 4)]);
    let mut out = [0i32; 4];
    array
        .read_selection_into(&selection, &mut out)
        .await
        .unwrap();
    assert_eq!(out, [40, 44, 0, 4]);
    for len in [3, 5] {
        let mut out = vec![0i32; len];
        assert!(matches!(
            array.read_selection_into(&selection, &mut out).await,
            Err(Error::BufferSize {
                expected: 4,
                found
            }) if found == len as u64
        ));
        assert!(matches!(
            array.read_points_into([[5u64, 7]], &mut out).await,
            Err(Error::BufferSize { expected: 1, .. })
        ));
    }
    let mut one = [0i32];
    array.read_points_into([[5u64, 7]], &mut one).await.unwrap();
    assert_eq!(one, [47]);
    // Nothing was written.
    assert_eq!(
        array.read::<i32>(..).await.unwrap(),
        (0..48).collect::<Vec<i32>>()
    );
}

/// Points in opposite corners of one shard read the shard's index once, then the two inner
/// chunks holding them in one request, not the whole shard. (A current-thread runtime and a
/// store whose reads complete at once make the order of requests, and so their count,
/// certain.)
#[tokio::test]
async fn sparse_points_read_only_their_inner_chunks() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![128, 128], DataType::UInt32, vec![128, 128])
        .sharding(vec![16, 16])
        .create(Arc::clone(&store), "/p")
        .await
        .unwrap();
    let model: Vec<u32> = (0..128 * 128).collect();
    array.write(.., &model).await.unwrap();
    // The index: 64 entries of 16 bytes and a checksum; an inner chunk: 1 KiB, stored in C
    // order (inner chunk 63, the last, 62 KiB after the first: not coalesced with it).
    let (index, inner) = (64 * 16 + 4, 1024);
    store.clear();
    let read = array
        .read_points::<u32, _>([[127u64, 127], [0, 0], [0, 1]])
        .await
        .unwrap();
    assert_eq!(read, [128 * 128 - 1, 0, 1]);
    let stats = store.stats();
    assert_eq!((stats.partial_reads, stats.ranges), (2, 3), "{stats:?}");
    assert_eq!(stats.bytes_read, index + 2 * inner, "{stats:?}");

    // A strided selection through the same shard reads the inner chunks it touches (0, 4,
    // 32 and 36 in C order) in one request: 0 and 4 are near enough to read as one range
    // (the three chunks between them with it), as are 32 and 36.
    store.clear();
    let selection = Selection::new([AxisSelection::step(.., 64), AxisSelection::step(.., 64)]);
    assert_eq!(
        array.read_selection::<u32>(&selection).await.unwrap(),
        [0, 64, 64 * 128, 64 * 128 + 64]
    );
    let stats = store.stats();
    assert_eq!((stats.partial_reads, stats.ranges), (2, 3), "{stats:?}");
    assert_eq!(stats.bytes_read, index + 10 * inner, "{stats:?}");
}

/// The boxes of one shard go to the store together: through the `sharding_indexed` codec
/// as the shard's index and one request for their inner chunks, through the storage
/// transformer as its two requests (indexes, chunk ranges). A decode budget smaller than
/// one box reads each alone. Strings batch the same way.
#[tokio::test]
async fn selection_reads_batch_the_boxes_of_each_shard() {
    // Points in each of the four chunks (inner chunks) of the first 8x8 shard, and one in
    // the last shard; one chunk of the first shard is not stored.
    let points = [[0u64, 0], [7, 7], [0, 7], [15, 15], [7, 0], [1, 1]];
    for transformer in [false, true] {
        for budget in [None, Some(1)] {
            let store = Arc::new(RecordingStore::new(MemoryStore::new()));
            let mut options = zarr_array::ArrayOptions::default();
            if let Some(budget) = budget {
                options = options.with_decode_budget(budget);
            }
            let builder = if transformer {
                ArrayBuilder::new(vec![16, 16], DataType::UInt32, vec![4, 4])
                    .sharding_transformer(vec![2, 2])
            } else {
                ArrayBuilder::new(vec![16, 16], DataType::UInt32, vec![8, 8]).sharding(vec![4, 4])
            };
            let array = builder
                .fill_value(zarr_core::FillValue::new(7u32.to_ne_bytes()))
                .options(options)
                .create(Arc::clone(&store), "/b")
                .await
                .unwrap();
            let mut model: Vec<u32> = (0..256).collect();
            array.write(.., &model).await.unwrap();
            // Rows 4..8, columns 0..4: the chunk (inner chunk) at (1, 0), back to the fill value.
            array.write([4..8, 0..4], &[7u32; 16]).await.unwrap();
            for row in 4..8 {
                model[row * 16..row * 16 + 4].fill(7);
            }
            store.clear();
            let read = array.read_points::<u32, _>(points).await.unwrap();
            let expected: Vec<u32> = points
                .iter()
                .map(|[r, c]| model[(r * 16 + c) as usize])
                .collect();
            assert_eq!(
                read, expected,
                "transformer {transformer}, budget {budget:?}"
            );
            let stats = store.stats();
            let requests = match (transformer, budget) {
                // Shard 0: its index, then its three stored chunks; shard 3: index, chunk.
                (false, None) => 4,
                // Shard 0's index, then each stored inner chunk alone; shard 3 as before.
                (false, Some(_)) => 1 + 3 + 2,
                // Two requests per shard.
                (true, None) => 4,
                // Each of the five chunks alone (one holds two points): the index, then
                // the chunk if stored (not the erased one).
                (true, Some(_)) => 2 * 4 + 1,
            };
            assert_eq!(
                stats.calls(),
                requests,
                "transformer {transformer}, budget {budget:?}: {stats:?}"
            );

            // The same reads of strings.
            let store = Arc::new(RecordingStore::new(MemoryStore::new()));
            let builder = if transformer {
                ArrayBuilder::new(vec![16, 16], DataType::String, vec![4, 4])
                    .sharding_transformer(vec![2, 2])
            } else {
                ArrayBuilder::new(vec![16, 16], DataType::String, vec![8, 8]).sharding(vec![4, 4])
            };
            let mut options = zarr_array::ArrayOptions::default();
            if let Some(budget) = budget {
                options = options.with_decode_budget(budget);
            }
            let text = builder
                .options(options)
                .create(Arc::clone(&store), "/t")
                .await
                .unwrap();
            let mut words: Vec<String> = (0..256).map(|i| format!("w{i}")).collect();
            text.write_text(.., &words).await.unwrap();
            text.write_text([4..8, 0..4], &vec![String::new(); 16])
                .await
                .unwrap();
            for row in 4..8 {
                words[row * 16..row * 16 + 4].fill(String::new());
            }
            store.clear();
            let read = text.read_points_text(points).await.unwrap();
            let expected: Vec<String> = points
                .iter()
                .map(|[r, c]| words[(r * 16 + c) as usize].clone())
                .collect();
            assert_eq!(
                read, expected,
                "text, transformer {transformer}, budget {budget:?}"
            );
            assert_eq!(
                store.stats().calls(),
                requests,
                "text, transformer {transformer}, budget {budget:?}: {:?}",
                store.stats()
            );
        }
    }
}

/// Writers of different elements of one chunk, at the same time, lose neither update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_point_writes_to_one_chunk_keep_every_update() {
    for transformer in [false, true] {
        let builder = ArrayBuilder::new(vec![16, 16], DataType::UInt32, vec![8, 8]).zstd(1);
        let builder = if transformer {
            builder.sharding_transformer(vec![2, 2])
        } else {
            builder
        };
        let array = builder
            .create(Arc::new(MemoryStore::new()), "/c")
            .await
            .unwrap();
        let tasks: Vec<_> = (0..16u64)
            .map(|row| {
                let array = array.clone();
                tokio::spawn(async move {
                    // Each task writes its own row, every second element of it by points
                    // and the others by a strided selection.
                    let points: Vec<[u64; 2]> = (0..16).step_by(2).map(|x| [row, x]).collect();
                    let values: Vec<u32> = (0..16)
                        .step_by(2)
                        .map(|x| (row * 16 + x) as u32 + 1)
                        .collect();
                    array.write_points(&points, &values).await.unwrap();
                    let selection =
                        Selection::new([AxisSelection::index(row), AxisSelection::step(1.., 2)]);
                    let values: Vec<u32> = (1..16)
                        .step_by(2)
                        .map(|x| (row * 16 + x) as u32 + 1)
                        .collect();
                    array.write_selection(&selection, &values).await.unwrap();
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(
            array.read::<u32>(..).await.unwrap(),
            (1..=256).collect::<Vec<u32>>(),
            "transformer: {transformer}"
        );
    }
}

#[test]
fn blocking_selections() {
    let builder = ArrayBuilder::new(vec![3, 4], DataType::UInt8, vec![2, 2]);
    let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/b").unwrap();
    let selection = Selection::new([AxisSelection::indices([2, 0]), AxisSelection::step(.., 3)]);
    array.write_selection(&selection, &[1u8, 2, 3, 4]).unwrap();
    assert_eq!(
        array.read_selection::<u8>(&selection).unwrap(),
        [1, 2, 3, 4]
    );
    array.write_points([[1u64, 1]], &[9u8]).unwrap();
    assert_eq!(
        array.read_points::<u8, _>([[1u64, 1], [0, 0]]).unwrap(),
        [9, 3]
    );
    assert_eq!(array.read_points_bytes([[1u64, 1]]).unwrap(), [9]);
    assert_eq!(
        array.read_selection_bytes(&selection).unwrap(),
        [1, 2, 3, 4]
    );
    assert_eq!(array.read_blocks::<u8>([1..2, 1..2]).unwrap(), [0, 2]);
    let mut out = [0u8; 4];
    array.read_selection_into(&selection, &mut out).unwrap();
    assert_eq!(out, [1, 2, 3, 4]);
    array
        .read_points_into([[1u64, 1], [2, 0]], &mut out[..2])
        .unwrap();
    assert_eq!(out[..2], [9, 1]);
    array
        .write_selection_bytes(&selection, &[0, 0, 0, 0])
        .unwrap();
    array.write_points_bytes([[1u64, 1]], &[0]).unwrap();
    assert_eq!(array.read::<u8>(..).unwrap(), [0; 12]);
}

/// Writers of different strings of one chunk (and shard), at the same time, lose neither
/// update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_text_writes_to_one_chunk_keep_every_update() {
    for layout in ["plain", "transformer", "codec"] {
        let builder = ArrayBuilder::new(vec![8, 8], DataType::String, vec![8, 8]);
        let builder = match layout {
            "plain" => builder,
            "transformer" => ArrayBuilder::new(vec![8, 8], DataType::String, vec![4, 4])
                .sharding_transformer(vec![2, 2]),
            _ => builder.sharding(vec![4, 4]),
        };
        let array = builder
            .create(Arc::new(MemoryStore::new()), "/c")
            .await
            .unwrap();
        let tasks: Vec<_> = (0..8u64)
            .map(|row| {
                let array = array.clone();
                tokio::spawn(async move {
                    let points: Vec<[u64; 2]> = (0..8).step_by(2).map(|x| [row, x]).collect();
                    let values: Vec<String> =
                        (0..8).step_by(2).map(|x| format!("{row}.{x}")).collect();
                    array.write_points_text(&points, &values).await.unwrap();
                    let selection =
                        Selection::new([AxisSelection::index(row), AxisSelection::step(1.., 2)]);
                    let values: Vec<String> =
                        (1..8).step_by(2).map(|x| format!("{row}.{x}")).collect();
                    array
                        .write_selection_text(&selection, &values)
                        .await
                        .unwrap();
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let expected: Vec<String> = (0..64).map(|i| format!("{}.{}", i / 8, i % 8)).collect();
        assert_eq!(array.read_text(..).await.unwrap(), expected, "{layout}");
    }
}

/// `bytes` arrays (and fixed-size ones) through `ArrayBytes`; the errors of variable-length
/// selections.
#[tokio::test]
async fn array_bytes_selections_of_any_data_type() {
    use zarr_array::{ArrayBytes, VlenBytes};
    let store = Arc::new(MemoryStore::new());
    let binary = ArrayBuilder::new(vec![3, 3], DataType::Bytes, vec![2, 2])
        .create(Arc::clone(&store), "/b")
        .await
        .unwrap();
    let elements: Vec<Vec<u8>> = (0..9u8).map(|i| vec![i; i as usize]).collect();
    binary
        .write_array_bytes(
            ..,
            ArrayBytes::Variable(VlenBytes::from_elements(elements.iter().map(Vec::as_slice))),
        )
        .await
        .unwrap();
    let selection = Selection::new([
        AxisSelection::mask([true, false, true]),
        [2u64, 0].to_vec().into(),
    ]);
    let ArrayBytes::Variable(read) = binary.read_selection_array_bytes(&selection).await.unwrap()
    else {
        panic!("fixed-size bytes from a bytes array");
    };
    let expected = [&elements[2], &elements[0], &elements[8], &elements[6]];
    assert_eq!(read.iter().collect::<Vec<_>>(), expected);
    let ArrayBytes::Variable(read) = binary
        .read_points_array_bytes([[2u64, 2], [1, 1]])
        .await
        .unwrap()
    else {
        panic!("fixed-size bytes from a bytes array");
    };
    assert_eq!(
        read.iter().collect::<Vec<_>>(),
        [&elements[8], &elements[4]]
    );
    binary
        .write_points_array_bytes(
            [[0u64, 1]],
            ArrayBytes::Variable(VlenBytes::from_elements([&b"new"[..]])),
        )
        .await
        .unwrap();
    let ArrayBytes::Variable(all) = binary.read_array_bytes(..).await.unwrap() else {
        panic!("fixed-size bytes from a bytes array");
    };
    assert_eq!(all.get(1), Some(&b"new"[..]));
    assert_eq!(all.get(0), Some(&[][..]));

    // Errors: the wrong number of values, values of the wrong kind, the wrong element type.
    let two = ArrayBytes::Variable(VlenBytes::from_elements([&b"a"[..], b"b"]));
    assert!(matches!(
        binary
            .write_selection_array_bytes(&selection, two.clone())
            .await,
        Err(Error::BufferSize { .. })
    ));
    assert!(matches!(
        binary
            .write_points_array_bytes([[0u64, 0]], two.clone())
            .await,
        Err(Error::BufferSize { .. })
    ));
    assert!(matches!(
        binary.read_selection_text(&selection).await,
        Err(Error::ElementType { .. })
    ));
    assert!(matches!(
        binary.write_points_text([[0u64, 0]], &["a"]).await,
        Err(Error::ElementType { .. })
    ));
    assert!(matches!(
        binary.read_selection_bytes(&selection).await,
        Err(Error::Unsupported { .. })
    ));
    let fixed = grid_array(Arc::clone(&store)).await;
    assert!(matches!(
        fixed
            .write_points_array_bytes([[0u64, 0], [0, 1]], two)
            .await,
        Err(Error::Unsupported { .. })
    ));
    // Fixed-size data through the same methods.
    let selection = Selection::new([AxisSelection::indices([5]), AxisSelection::step(.., 4)]);
    let read = fixed.read_selection_array_bytes(&selection).await.unwrap();
    let expected: Vec<u8> = [40i32, 44].iter().flat_map(|v| v.to_ne_bytes()).collect();
    assert_eq!(read.as_fixed().unwrap().as_ref(), expected);
    fixed
        .write_selection_array_bytes(&selection, ArrayBytes::fixed(vec![0u8; 8]))
        .await
        .unwrap();
    assert_eq!(
        fixed
            .read_points::<i32, _>([[5u64, 0], [5, 4], [5, 5]])
            .await
            .unwrap(),
        [0, 0, 45]
    );
    // The rest of the bytes array is as it was.
    let ArrayBytes::Variable(after) = binary.read_array_bytes(..).await.unwrap() else {
        panic!("fixed-size bytes from a bytes array");
    };
    assert_eq!(
        after.iter().collect::<Vec<_>>(),
        all.iter().collect::<Vec<_>>()
    );
}

/// Strings at opposite corners of a shard read its index once, then the two inner chunks
/// holding them in one request (one range: they are near).
#[tokio::test]
async fn sparse_text_points_read_only_their_inner_chunks() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![16, 16], DataType::String, vec![16, 16])
        .sharding(vec![4, 4])
        .create(Arc::clone(&store), "/p")
        .await
        .unwrap();
    let model: Vec<String> = (0..256).map(|i| format!("s{i}")).collect();
    array.write_text(.., &model).await.unwrap();
    store.clear();
    let read = array.read_points_text([[15u64, 15], [0, 0]]).await.unwrap();
    assert_eq!(read, ["s255", "s0"]);
    let stats = store.stats();
    assert_eq!((stats.partial_reads, stats.ranges), (2, 2), "{stats:?}");
    store.clear();
    let selection = Selection::new([AxisSelection::step(.., 8), AxisSelection::indices([15, 1])]);
    assert_eq!(
        array.read_selection_text(&selection).await.unwrap(),
        ["s15", "s1", "s143", "s129"]
    );
    // The index, then four inner chunks in one request.
    let stats = store.stats();
    assert_eq!((stats.partial_reads, stats.ranges), (2, 2), "{stats:?}");
}

/// A selection budget smaller than one part runs the parts one at a time (each larger than
/// the budget), reads and writes alike, without waiting for permits that never come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selection_budget_below_one_part_still_completes() {
    let options = zarr_array::ArrayOptions::default().with_selection_budget(1);
    assert_eq!(options.selection_budget(), 1);
    assert_eq!(
        zarr_array::ArrayOptions::default().selection_budget(),
        zarr_array::DEFAULT_SELECTION_BUDGET
    );
    let array = ArrayBuilder::new(vec![1024, 1024], DataType::UInt16, vec![512, 512])
        .options(options)
        .create(Arc::new(MemoryStore::new()), "/b")
        .await
        .unwrap();
    let model: Vec<u16> = (0..1024 * 1024).map(|i| (i % 65_521) as u16).collect();
    array.write(.., &model).await.unwrap();
    // Every other row and column: parts of 256x256 selected values in 511x511 boxes
    // (510 KiB, eight times the smallest permit) of 512x512 chunks.
    let selection = Selection::new([AxisSelection::step(.., 2), AxisSelection::step(1.., 2)]);
    let expected: Vec<u16> = positions(&[1024, 1024], &selection)
        .into_iter()
        .map(|p| model[p])
        .collect();
    let work = async {
        assert_eq!(
            array.read_selection::<u16>(&selection).await.unwrap(),
            expected
        );
        let zeros = vec![0u16; expected.len()];
        array.write_selection(&selection, &zeros).await.unwrap();
        assert_eq!(
            array.read_selection::<u16>(&selection).await.unwrap(),
            zeros
        );
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), work)
        .await
        .expect("the selection finished");
}
