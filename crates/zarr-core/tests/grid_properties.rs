//! Property tests of the chunk grid arithmetic against a naive reference model, JSON round
//! trips, and fuzzing of the parser and the arithmetic for panics.

use std::collections::HashSet;

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};
use zarr_core::{ChunkGrid, DimensionChunks, Region};

/// A random grid on a random array, with a JSON text for it that is written differently from
/// the canonical form (runs partly expanded into bare edge lengths).
#[derive(Debug, Clone)]
struct Case {
    shape: Vec<u64>,
    grid: ChunkGrid,
    json: Value,
    /// Every chunk's edges along every dimension: `edges[i]` lists `(origin, size)` of the
    /// chunks of dimension `i` that start inside the array.
    edges: Vec<Vec<(u64, u64)>>,
}

/// Run-length edge lengths covering at least `n`, sometimes with overshoot.
fn explicit_runs(n: u64) -> impl Strategy<Value = Vec<(u64, u64)>> {
    (
        vec((1..=5u64, 1..=3u64), 0..6),
        1..=4u64,
        vec((1..=5u64, 1..=2u64), 0..3),
    )
        .prop_map(move |(mut runs, fill, overshoot)| {
            let sum: u64 = runs.iter().map(|(s, c)| s * c).sum();
            if sum < n {
                runs.push((fill, (n - sum).div_ceil(fill)));
            }
            runs.extend(overshoot);
            runs
        })
}

fn dimension(n: u64) -> BoxedStrategy<DimensionChunks> {
    prop_oneof![
        (1..=13u64).prop_map(DimensionChunks::Regular),
        explicit_runs(n).prop_map(DimensionChunks::Explicit),
    ]
    .boxed()
}

/// The naive model: the `(origin, size)` of every chunk of a dimension of length `n` that
/// starts inside it.
fn naive_edges(dimension: &DimensionChunks, n: u64) -> Vec<(u64, u64)> {
    let sizes: Vec<u64> = match dimension {
        DimensionChunks::Regular(c) => vec![*c; n.div_ceil(*c) as usize],
        DimensionChunks::Explicit(runs) => runs
            .iter()
            .flat_map(|&(s, c)| std::iter::repeat_n(s, c as usize))
            .collect(),
    };
    let mut origin = 0;
    let mut edges = Vec::new();
    for size in sizes {
        if origin >= n {
            break;
        }
        edges.push((origin, size));
        origin += size;
    }
    edges
}

/// A JSON entry of `chunk_shapes` for a dimension, runs expanded where `mask` says so.
fn dimension_json(dimension: &DimensionChunks, mask: u64) -> Value {
    match dimension {
        DimensionChunks::Regular(c) => json!(c),
        DimensionChunks::Explicit(runs) => {
            let mut items = Vec::new();
            for (j, &(s, c)) in runs.iter().enumerate() {
                if (mask >> (j % 64)) & 1 == 1 {
                    items.extend(std::iter::repeat_n(json!(s), c as usize));
                } else {
                    items.push(json!([s, c]));
                }
            }
            Value::Array(items)
        }
    }
}

/// The three kinds of grid a case may be.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Regular,
    Rectilinear,
    /// `zarrs.regular_bounded`: regular, with the last chunk of each dimension cut at the
    /// array's end.
    Bounded,
}

fn case() -> impl Strategy<Value = Case> {
    vec(0..=12u64, 0..=3).prop_flat_map(|shape| {
        let regular = (
            vec(1..=13u64, shape.len()),
            prop_oneof![Just(Kind::Regular), Just(Kind::Bounded)],
        )
            .prop_map(|(chunk_shape, kind)| {
                let dims: Vec<DimensionChunks> = chunk_shape
                    .into_iter()
                    .map(DimensionChunks::Regular)
                    .collect();
                (kind, dims)
            });
        let rectilinear = shape
            .iter()
            .map(|&n| dimension(n))
            .collect::<Vec<_>>()
            .prop_map(|dims| (Kind::Rectilinear, dims));
        (Just(shape), prop_oneof![regular, rectilinear], any::<u64>()).prop_map(
            |(shape, (kind, dims), mask)| {
                let edges = dims
                    .iter()
                    .zip(&shape)
                    .map(|(d, &n)| {
                        let mut edges = naive_edges(d, n);
                        if let (Kind::Bounded, Some(last)) = (kind, edges.last_mut()) {
                            last.1 = n - last.0;
                        }
                        edges
                    })
                    .collect();
                let chunk_shape = || -> Vec<u64> {
                    dims.iter()
                        .map(|d| match d {
                            DimensionChunks::Regular(c) => *c,
                            DimensionChunks::Explicit(_) => unreachable!(),
                        })
                        .collect()
                };
                let (grid, json) = match kind {
                    Kind::Regular => {
                        let chunk_shape = chunk_shape();
                        let json = json!({
                            "name": "regular", "configuration": {"chunk_shape": chunk_shape}
                        });
                        (ChunkGrid::regular(chunk_shape).unwrap(), json)
                    }
                    Kind::Bounded => {
                        let chunk_shape = chunk_shape();
                        let json = json!({
                            "name": "zarrs.regular_bounded",
                            "configuration": {"chunk_shape": chunk_shape}
                        });
                        (ChunkGrid::regular_bounded(chunk_shape).unwrap(), json)
                    }
                    Kind::Rectilinear => {
                        let shapes: Vec<Value> =
                            dims.iter().map(|d| dimension_json(d, mask)).collect();
                        let json = json!({
                            "name": "rectilinear",
                            "configuration": {"kind": "inline", "chunk_shapes": shapes}
                        });
                        (ChunkGrid::rectilinear(dims.clone()).unwrap(), json)
                    }
                };
                Case {
                    shape,
                    grid,
                    json,
                    edges,
                }
            },
        )
    })
}

/// Every index vector inside `shape`, in C order.
fn all_indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..n).map(move |x| {
                    let mut v = prefix.clone();
                    v.push(x);
                    v
                })
            })
            .collect();
    }
    out
}

/// The position of `index` in a C-order array of shape `shape`.
fn linear(index: &[u64], shape: &[u64]) -> usize {
    index
        .iter()
        .zip(shape)
        .fold(0, |acc, (&x, &n)| acc * n as usize + x as usize)
}

fn naive_region(case: &Case, chunk: &[u64]) -> Vec<(u64, u64)> {
    chunk
        .iter()
        .zip(&case.edges)
        .map(|(&k, edges)| edges[k as usize])
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every element lands in exactly one chunk, and `chunk_of` agrees with the chunk regions
    /// and with the naive model.
    #[test]
    fn every_element_in_exactly_one_chunk(case in case()) {
        let Case { shape, grid, edges, .. } = &case;
        grid.validate(shape).unwrap();
        let grid_shape = grid.grid_shape(shape).unwrap();
        let naive_grid_shape: Vec<u64> = edges.iter().map(|e| e.len() as u64).collect();
        prop_assert_eq!(&grid_shape, &naive_grid_shape);
        prop_assert_eq!(
            grid.num_chunks(shape).unwrap(),
            naive_grid_shape.iter().product::<u64>()
        );

        let num_elements: u64 = shape.iter().product();
        let mut covered = vec![0u32; num_elements as usize];
        for chunk in all_indices(&grid_shape) {
            let expected = naive_region(&case, &chunk);
            let origin = grid.chunk_origin(shape, &chunk).unwrap();
            let chunk_shape = grid.chunk_shape(shape, &chunk).unwrap();
            prop_assert_eq!(&origin, &expected.iter().map(|e| e.0).collect::<Vec<_>>());
            prop_assert_eq!(&chunk_shape, &expected.iter().map(|e| e.1).collect::<Vec<_>>());
            let full = grid.chunk_region(shape, &chunk).unwrap();
            let clipped = grid.chunk_region_clipped(shape, &chunk).unwrap();
            for i in 0..shape.len() {
                prop_assert_eq!(full.ranges()[i].clone(), origin[i]..origin[i] + chunk_shape[i]);
                prop_assert_eq!(
                    clipped.ranges()[i].clone(),
                    origin[i]..(origin[i] + chunk_shape[i]).min(shape[i])
                );
                prop_assert!(clipped.ranges()[i].start < clipped.ranges()[i].end);
            }
            for element in all_indices(&clipped.shape()) {
                let element: Vec<u64> =
                    element.iter().zip(&origin).map(|(x, o)| x + o).collect();
                covered[linear(&element, shape)] += 1;
                let (found, position) = grid.chunk_of(shape, &element).unwrap();
                prop_assert_eq!(&found, &chunk);
                let expected_position: Vec<u64> =
                    element.iter().zip(&origin).map(|(x, o)| x - o).collect();
                prop_assert_eq!(position, expected_position);
            }
            // Out-of-grid neighbours are refused.
            for i in 0..chunk.len() {
                let mut beyond = chunk.clone();
                beyond[i] = grid_shape[i];
                prop_assert!(grid.chunk_origin(shape, &beyond).is_err());
            }
        }
        prop_assert!(covered.iter().all(|&c| c == 1));
        for i in 0..shape.len() {
            let mut outside = vec![0; shape.len()];
            outside[i] = shape[i];
            prop_assert!(grid.chunk_of(shape, &outside).is_err());
        }
    }

    /// The selections of a region partition it, map back onto the chunks consistently, come
    /// in C order, and are exactly the chunks the region touches.
    #[test]
    fn selections_partition_the_region(
        case in case(),
        bounds in vec((any::<u64>(), any::<u64>()), 3),
    ) {
        let Case { shape, grid, .. } = &case;
        let ranges = shape
            .iter()
            .zip(&bounds)
            .map(|(&n, &(a, b))| {
                let (a, b) = (a % (n + 1), b % (n + 1));
                a.min(b)..a.max(b)
            })
            .collect();
        let region = Region::try_new(ranges).unwrap();
        let region_shape = region.shape();
        let starts = region.starts();

        let selections = grid.chunks_in_region(shape, &region).unwrap();
        let count = selections.num_chunks().unwrap();
        prop_assert_eq!(selections.size_hint(), (count as usize, Some(count as usize)));
        let selections: Vec<_> = selections.collect();
        prop_assert_eq!(selections.len() as u64, count);

        let mut covered = vec![0u32; region.num_elements().unwrap() as usize];
        let mut previous: Option<Vec<u64>> = None;
        for s in &selections {
            if let Some(previous) = &previous {
                prop_assert!(previous < &s.chunk, "not in C order");
            }
            previous = Some(s.chunk.clone());
            prop_assert_eq!(&s.chunk_shape, &grid.chunk_shape(shape, &s.chunk).unwrap());
            let origin = grid.chunk_origin(shape, &s.chunk).unwrap();
            prop_assert_eq!(s.within_chunk.shape(), s.within_output.shape());
            prop_assert!(!s.within_chunk.is_empty());
            s.within_chunk.check_within(&s.chunk_shape).unwrap();
            s.within_output.check_within(&region_shape).unwrap();
            for i in 0..shape.len() {
                prop_assert_eq!(
                    origin[i] + s.within_chunk.ranges()[i].start,
                    starts[i] + s.within_output.ranges()[i].start
                );
            }
            for element in all_indices(&s.within_output.shape()) {
                let at: Vec<u64> = element
                    .iter()
                    .zip(s.within_output.ranges())
                    .map(|(x, r)| x + r.start)
                    .collect();
                covered[linear(&at, &region_shape)] += 1;
            }
        }
        prop_assert!(covered.iter().all(|&c| c == 1));

        // The naive set of chunks whose clipped region meets the region.
        let expected: Vec<Vec<u64>> = all_indices(&grid.grid_shape(shape).unwrap())
            .into_iter()
            .filter(|chunk| {
                let clipped = grid.chunk_region_clipped(shape, chunk).unwrap();
                !region.is_empty()
                    && clipped
                        .ranges()
                        .iter()
                        .zip(region.ranges())
                        .all(|(c, r)| c.start < r.end && r.start < c.end)
            })
            .collect();
        let found: Vec<Vec<u64>> = selections.iter().map(|s| s.chunk.clone()).collect();
        prop_assert_eq!(found, expected);
    }

    /// `to_json` and `from_json` round-trip, and the non-canonical JSON parses to the same grid.
    #[test]
    fn json_round_trips(case in case()) {
        let parsed = ChunkGrid::from_json(&case.json, "chunk_grid").unwrap();
        prop_assert_eq!(&parsed, &case.grid);
        let canonical = case.grid.to_json();
        prop_assert_eq!(&ChunkGrid::from_json(&canonical, "chunk_grid").unwrap(), &case.grid);
        let reparsed = ChunkGrid::from_json(&canonical, "chunk_grid").unwrap();
        prop_assert_eq!(reparsed.to_json(), canonical);
    }
}

/// Numbers that stress the arithmetic: small ones and ones near the ends of `u64`.
fn edgy_u64() -> impl Strategy<Value = u64> + Clone {
    prop_oneof![
        0..=20u64,
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(u64::MAX / 2),
        Just(u64::MAX / 2 + 1),
        Just(1 << 32),
        any::<u64>(),
    ]
}

fn edgy_number() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        edgy_u64().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-10.0..10.0f64).prop_map(Value::from),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "name",
            "configuration",
            "chunk_shape",
            "chunk_shapes",
            "kind",
            "type",
            "separator",
            "must_understand",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{0,8}",
    ]
}

/// Arbitrary JSON, biased towards the words and shapes of chunk grids.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        edgy_number(),
        prop::sample::select(vec![
            "regular",
            "rectilinear",
            "rectangular",
            "zarrs.regular_bounded",
            "inline",
            "/",
            "hexagonal",
        ])
        .prop_map(Value::from),
        ".{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((key(), inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// A `chunk_shapes`/`chunk_shape` entry: an integer or a list of integers and pairs.
fn grid_entry() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        edgy_number(),
        vec(
            prop_oneof![
                edgy_number(),
                vec(edgy_number(), 0..4).prop_map(Value::Array),
            ],
            0..5
        )
        .prop_map(Value::Array),
    ]
}

/// JSON that is close to a valid grid, so that parsing reaches its deeper rules.
fn grid_like_json() -> impl Strategy<Value = Value> {
    let entries = vec(grid_entry(), 0..4);
    prop_oneof![
        (entries.clone(), any_json()).prop_map(|(e, extra)| json!({
            "name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": e},
            "must_understand": extra.is_null(),
        })),
        vec(edgy_number(), 0..4)
            .prop_map(|e| json!({"name": "regular", "configuration": {"chunk_shape": e}})),
        vec(edgy_number(), 0..4).prop_map(
            |e| json!({"name": "zarrs.regular_bounded", "configuration": {"chunk_shape": e}})
        ),
        entries
            .clone()
            .prop_map(|e| json!({"type": "rectangular", "chunk_shape": e, "separator": "/"})),
        entries.prop_map(|e| json!({"name": "rectangular", "configuration": {"chunk_shape": e}})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Parsing never panics, whatever the input.
    #[test]
    fn from_json_never_panics(value in prop_oneof![any_json(), grid_like_json()]) {
        if let Ok(grid) = ChunkGrid::from_json(&value, "chunk_grid") {
            let again = ChunkGrid::from_json(&grid.to_json(), "chunk_grid").unwrap();
            prop_assert_eq!(again, grid);
        }
    }

    /// The arithmetic never panics, whatever the grid, shape, element, chunk or region.
    #[test]
    fn arithmetic_never_panics(
        value in grid_like_json(),
        shape in vec(edgy_u64(), 0..4),
        element in vec(edgy_u64(), 0..4),
        bounds in vec((edgy_u64(), edgy_u64()), 4),
    ) {
        let Ok(grid) = ChunkGrid::from_json(&value, "chunk_grid") else {
            return Ok(());
        };
        // Once with the shape as drawn (often the wrong rank), once with the grid's rank.
        let fitted: Vec<u64> = (0..grid.rank())
            .map(|i| shape.get(i).copied().unwrap_or(u64::MAX))
            .collect();
        for shape in [shape, fitted] {
            let _ = grid.validate(&shape);
            let _ = grid.grid_shape(&shape);
            let _ = grid.num_chunks(&shape);
            let _ = grid.chunk_of(&shape, &element);
            let _ = grid.chunk_origin(&shape, &element);
            let _ = grid.chunk_shape(&shape, &element);
            let _ = grid.chunk_region(&shape, &element);
            let _ = grid.chunk_region_clipped(&shape, &element);
            if let Ok(grid_shape) = grid.grid_shape(&shape)
                && grid_shape.iter().all(|&g| g > 0)
            {
                let last: Vec<u64> = grid_shape.iter().map(|g| g - 1).collect();
                let _ = grid.chunk_region(&shape, &last);
                let clipped = grid.chunk_region_clipped(&shape, &last).unwrap();
                clipped.check_within(&shape).unwrap();
                let end: Vec<u64> = clipped.ends().iter().map(|e| e - 1).collect();
                prop_assert_eq!(grid.chunk_of(&shape, &end).unwrap().0, last);
            }
            // A region inside the shape where possible.
            let ranges = bounds
                .iter()
                .zip(&shape)
                .map(|(&(a, b), &n)| {
                    let (a, b) = match n.checked_add(1) {
                        Some(m) => (a % m, b % m),
                        None => (a, b),
                    };
                    a.min(b)..a.max(b)
                })
                .collect();
            let region = Region::try_new(ranges).unwrap();
            for region in [region, Region::full(&shape)] {
                if let Ok(selections) = grid.chunks_in_region(&shape, &region) {
                    let _ = selections.num_chunks();
                    let mut seen = HashSet::new();
                    for s in selections.take(40) {
                        prop_assert!(seen.insert(s.chunk.clone()));
                        prop_assert!(!s.within_chunk.is_empty());
                        s.within_output.check_within(&region.shape()).unwrap();
                    }
                }
            }
        }
    }
}

/// A chunk key encoding of any kind, for arrays of rank 3.
fn arb_key_encoding() -> impl Strategy<Value = zarr_core::ChunkKeyEncoding> {
    use zarr_core::{ChunkKeyEncoding as E, ChunkKeySeparator as S, ChunkKeyTemplate as T};
    let separator = prop_oneof![Just(S::Slash), Just(S::Dot)];
    let plain = prop_oneof![
        separator
            .clone()
            .prop_map(|separator| E::Default { separator }),
        separator.clone().prop_map(|separator| E::V2 { separator }),
    ];
    prop_oneof![
        plain.clone(),
        (separator, "[a-z0-9.]{1,4}")
            .prop_filter("no ..", |(_, s)| !s.contains(".."))
            .prop_map(|(separator, suffix)| E::DefaultSuffix { separator, suffix }),
        ("[a-z0-9]{1,3}/?", plain.clone()).prop_map(|(p, base)| E::prefix(p, base).unwrap()),
        ("[a-z0-9._]{1,4}", plain)
            .prop_filter("no ..", |(s, _)| !s.contains(".."))
            .prop_map(|(s, base)| E::suffix(s, base).unwrap()),
        prop_oneof![3u64..20, Just(1001u64), Just(u64::MAX)].prop_map(|n| E::fanout(n).unwrap()),
        prop_oneof![
            Just(("{*}", Some("/"))),
            Just(("c{2}/{0:03}_{1}", None)),
            Just(("{-1}.{*:02}", Some("-"))),
            Just(("a{1}b{0}c{2}z9", None)),
            Just(("{0}/x{1:05}7/{2}", None)),
        ]
        .prop_map(|(f, s)| E::Template(T::new(f, s).unwrap())),
    ]
}

fn arb_coordinate() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..12, 0u64..100_000, any::<u64>()]
}

proptest! {
    /// Every encoding reads back the key it writes, gives different chunks different keys,
    /// and reads no key it would not write (so a listing never counts a chunk twice).
    #[test]
    fn chunk_keys_decode_exactly_what_they_encode(
        encoding in arb_key_encoding(),
        a in vec(arb_coordinate(), 3),
        b in vec(arb_coordinate(), 3),
        edits in vec((any::<prop::sample::Index>(), 0usize..3, prop::sample::select(vec!['0', '1', '9', '/', '.', 'c', 'd', '_'])), 1..4),
    ) {
        let key = encoding.encode(&a);
        prop_assert_eq!(encoding.decode(&key, 3), Some(a.clone()), "{:?} {}", encoding, &key);
        if a != b {
            prop_assert_ne!(encoding.encode(&b), key.clone());
        }
        let mut other: Vec<char> = key.chars().collect();
        for (at, kind, ch) in edits {
            let i = at.index(other.len() + 1);
            match kind {
                0 => other.insert(i, ch),
                1 if i < other.len() => { other.remove(i); }
                _ if i < other.len() => other[i] = ch,
                _ => other.push(ch),
            }
        }
        let other: String = other.into_iter().collect();
        if let Some(decoded) = encoding.decode(&other, 3) {
            prop_assert_eq!(encoding.encode(&decoded), other);
        }
    }
}
