//! Benchmarks for the zarr workspace.
//!
//! - Criterion benches live in `benches/benches/`; run them with `cargo bench -p zarr-benches`.
//! - The side-by-side comparison harness (issue #5) is the `zarr-compare` binary
//!   (`benches/src/bin/zarr-compare/`), with the Python peers in `benches/compare/peers.py`;
//!   `cargo xtask bench` builds and runs it (see `docs/performance.md`).
//!
//! This library holds what both share: the benchmark data ([`field`]), the comparison
//! workloads' geometry ([`Geometry`]) and cutting the data into chunks ([`chunks_of`]).

/// The benchmark data: a `side`^3 `uint16` field in C order, a smooth part (sines along two
/// axes and a ramp along the third) plus one bit of xorshift noise. zstd level 1 compresses
/// it about 3x, like measured data tends to compress, but not trivially.
///
/// Deterministic: every call (and every implementation fed from the harness's input file)
/// sees the same values.
pub fn field(side: u64) -> Vec<u16> {
    let n = usize::try_from(side * side * side).expect("the field fits in memory");
    let mut out = Vec::with_capacity(n);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for z in 0..side {
        for y in 0..side {
            for x in 0..side {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let smooth = 2_000.0
                    + 40.0 * (x as f64 / 16.0).sin()
                    + 30.0 * (y as f64 / 11.0).cos()
                    + (z % 64) as f64;
                out.push(smooth as u16 + (state & 1) as u16);
            }
        }
    }
    out
}

/// The decoded chunks of a `side`^3 C-order array of `values`, each a C-order `chunk`^3 block
/// in native-endian bytes, in C order of the chunk grid.
///
/// # Panics
/// If `chunk` does not divide `side` or `values` does not hold `side`^3 elements.
pub fn chunks_of(values: &[u16], side: u64, chunk: u64) -> Vec<Vec<u8>> {
    assert!(
        chunk > 0 && side.is_multiple_of(chunk),
        "{chunk} does not divide {side}"
    );
    assert_eq!(values.len() as u64, side * side * side);
    let per = side / chunk;
    let mut out = Vec::with_capacity((per * per * per) as usize);
    for cz in 0..per {
        for cy in 0..per {
            for cx in 0..per {
                let mut block = Vec::with_capacity((chunk * chunk * chunk * 2) as usize);
                for z in 0..chunk {
                    for y in 0..chunk {
                        let start = ((cz * chunk + z) * side * side
                            + (cy * chunk + y) * side
                            + cx * chunk) as usize;
                        for v in &values[start..start + chunk as usize] {
                            block.extend_from_slice(&v.to_ne_bytes());
                        }
                    }
                }
                out.push(block);
            }
        }
    }
    out
}

/// The shapes of the comparison workloads for an array of side `side`, scaled from the
/// issue's 512: W1 and W3 chunks of `side / 8` (64), W2 shards of `side / 2` (256) holding
/// inner chunks of `side / 16` (32), and W5's slab at `y = side * 200 / 512` (200).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The array's side (the array is `side`^3 `uint16`).
    pub side: u64,
}

impl Geometry {
    /// The geometry of a `side`^3 array.
    ///
    /// # Errors
    /// If `side` is not a positive multiple of 16 (the inner chunks would not tile it).
    pub fn try_new(side: u64) -> Result<Self, String> {
        if side == 0 || !side.is_multiple_of(16) {
            return Err(format!(
                "the side must be a positive multiple of 16, not {side}"
            ));
        }
        Ok(Self { side })
    }

    /// The array's shape.
    pub fn shape(&self) -> Vec<u64> {
        vec![self.side; 3]
    }

    /// Elements in the array.
    pub fn elements(&self) -> u64 {
        self.side * self.side * self.side
    }

    /// Bytes of the decoded array (`uint16`).
    pub fn bytes(&self) -> u64 {
        self.elements() * 2
    }

    /// The chunk side of W1 and W3.
    pub fn chunk(&self) -> u64 {
        self.side / 8
    }

    /// The shard side of W2.
    pub fn shard(&self) -> u64 {
        self.side / 2
    }

    /// The inner chunk side of W2 (and the block W4 reads).
    pub fn inner(&self) -> u64 {
        self.side / 16
    }

    /// The `y` of W5's slab `[0:side, y, 0:side]`.
    pub fn slab_y(&self) -> u64 {
        self.side * 200 / 512
    }

    /// W4's inner chunks: `count` distinct inner-chunk grid indices, in a fixed pseudo-random
    /// order (the same for every implementation: the harness hands this list to each).
    pub fn random_inner_chunks(&self, count: usize) -> Vec<[u64; 3]> {
        let per = self.side / self.inner();
        let mut all: Vec<[u64; 3]> = (0..per * per * per)
            .map(|i| [i / (per * per), (i / per) % per, i % per])
            .collect();
        // Fisher-Yates with splitmix64: a fixed seed, so the list is the same everywhere.
        let mut state = 0x5eed_0000_0000_0005u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for i in (1..all.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            all.swap(i, j);
        }
        all.truncate(count);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_is_deterministic_and_compresses_like_data() {
        let a = field(32);
        assert_eq!(a, field(32));
        let bytes: Vec<u8> = a.iter().flat_map(|v| v.to_le_bytes()).collect();
        let ratio = bytes.len() as f64 / zstd::bulk::compress(&bytes, 1).unwrap().len() as f64;
        assert!((2.0..6.0).contains(&ratio), "zstd(1) ratio {ratio}");
    }

    #[test]
    fn chunks_tile_the_array() {
        let values: Vec<u16> = (0..16u16 * 16 * 16).collect();
        let chunks = chunks_of(&values, 16, 8);
        assert_eq!(chunks.len(), 8);
        // Chunk (0, 0, 1) starts at x = 8; its second row is y = 1.
        let first = |c: &[u8], i: usize| u16::from_ne_bytes([c[2 * i], c[2 * i + 1]]);
        assert_eq!(first(&chunks[1], 0), 8);
        assert_eq!(first(&chunks[1], 8), 16 + 8);
        // Chunk (1, 0, 0) starts at z = 8.
        assert_eq!(first(&chunks[4], 0), 8 * 256);
    }

    #[test]
    fn geometry_scales_the_issue_shapes() {
        let g = Geometry::try_new(512).unwrap();
        assert_eq!(
            (g.chunk(), g.shard(), g.inner(), g.slab_y()),
            (64, 256, 32, 200)
        );
        assert_eq!(g.bytes(), 256 << 20);
        assert!(Geometry::try_new(100).is_err());
        let picks = g.random_inner_chunks(1000);
        assert_eq!(picks, g.random_inner_chunks(1000));
        let mut unique = picks.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 1000);
        assert!(picks.iter().flatten().all(|&i| i < 16));
    }
}
