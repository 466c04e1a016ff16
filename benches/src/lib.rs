//! Benchmarks for the zarr workspace.
//!
//! - Criterion benches live in `benches/benches/`; run them with `cargo bench -p zarr-benches`.
//! - The side-by-side comparison harness (issue #5) is the `zarr-compare` binary
//!   (`benches/src/bin/zarr-compare/`), with the Python peers in `benches/compare/peers.py`;
//!   `cargo xtask bench` builds and runs it (see `docs/performance.md`).
//!
//! This library holds what both share: the benchmark data ([`field`], and [`Strings`] for
//! the string workload W6 and the `strings` bench), the comparison workloads' geometry
//! ([`Geometry`]) and cutting the data into chunks ([`chunks_of`]).

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

/// Short, varied UTF-8 strings in Arrow layout (offsets and one values buffer): the data of
/// the comparison harness's W6 and of the `strings` criterion bench.
///
/// [`Strings::generate`] makes labels of 0 to 15 characters (7.5 on average) from a fixed
/// seed: lowercase ASCII letters, and in about one string in sixteen the last letter replaced
/// by `é` (two bytes), so 0 to 16 bytes each. That is what a dimension's labels or a
/// categorical column look like. Deterministic: every implementation the harness feeds from
/// its input file sees the same strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strings {
    offsets: Vec<usize>,
    values: Vec<u8>,
}

impl Strings {
    /// `count` strings from the fixed seed. The first `n` strings are the same for every
    /// `count >= n`.
    pub fn generate(count: usize) -> Self {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut offsets = Vec::with_capacity(count + 1);
        let mut values = Vec::with_capacity(count * 8);
        offsets.push(0);
        for _ in 0..count {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let r = state;
            let len = (r % 16) as usize;
            for i in 0..len {
                values.push(b'a' + ((r >> (8 + i * 3)) % 26) as u8);
            }
            if r >> 60 == 0 && len > 0 {
                values.pop();
                values.extend_from_slice("é".as_bytes());
            }
            offsets.push(values.len());
        }
        Self { offsets, values }
    }

    /// Strings from `offsets` (`n + 1` of them) and `values`.
    ///
    /// # Errors
    /// If the offsets do not start at 0, decrease, or do not end at the length of `values`,
    /// or an element is not UTF-8.
    pub fn try_from_parts(offsets: Vec<usize>, values: Vec<u8>) -> Result<Self, String> {
        if offsets.first() != Some(&0) {
            return Err("the offsets do not start at 0".into());
        }
        if offsets.last() != Some(&values.len()) {
            return Err(format!(
                "the last offset is {:?}, not the length of the values ({})",
                offsets.last(),
                values.len()
            ));
        }
        for (i, pair) in offsets.windows(2).enumerate() {
            if pair[1] < pair[0] {
                return Err(format!("offset {} is below offset {i}", i + 1));
            }
            if let Err(e) = std::str::from_utf8(&values[pair[0]..pair[1]]) {
                return Err(format!("element {i} is not UTF-8: {e}"));
            }
        }
        Ok(Self { offsets, values })
    }

    /// The number of strings.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no strings.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `n + 1` offsets: string `i` is `values[offsets[i]..offsets[i + 1]]`.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Every string's bytes, back to back.
    pub fn values(&self) -> &[u8] {
        &self.values
    }

    /// String `i`'s bytes.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    pub fn bytes(&self, i: usize) -> &[u8] {
        &self.values[self.offsets[i]..self.offsets[i + 1]]
    }

    /// The strings, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.offsets
            .windows(2)
            .map(|w| std::str::from_utf8(&self.values[w[0]..w[1]]).expect("checked when built"))
    }

    /// The index of the first of `got` that differs from these strings, with what was read
    /// there (`None` past the end of `got` or of these strings): `None` if `got` holds
    /// exactly these strings.
    pub fn first_difference<'a>(
        &self,
        got: impl IntoIterator<Item = &'a [u8]>,
    ) -> Option<(usize, Option<&'a [u8]>)> {
        let mut got = got.into_iter();
        for i in 0..self.len() {
            match got.next() {
                Some(g) if g == self.bytes(i) => {}
                other => return Some((i, other)),
            }
        }
        got.next().map(|extra| (self.len(), Some(extra)))
    }

    /// The file form: the count (`u64`), the `count + 1` offsets (`u64`), all little endian,
    /// then the values.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * (self.offsets.len() + 1) + self.values.len());
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        for &o in &self.offsets {
            out.extend_from_slice(&(o as u64).to_le_bytes());
        }
        out.extend_from_slice(&self.values);
        out
    }

    /// Parse [`to_file_bytes`](Self::to_file_bytes)' form.
    ///
    /// # Errors
    /// If `bytes` is shorter than its header says, or as [`try_from_parts`](Self::try_from_parts).
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Self, String> {
        let word = |i: usize| -> Result<usize, String> {
            let b = bytes
                .get(8 * i..8 * i + 8)
                .ok_or_else(|| format!("the file ends inside word {i}"))?;
            usize::try_from(u64::from_le_bytes(b.try_into().expect("8 bytes")))
                .map_err(|e| e.to_string())
        };
        let count = word(0)?;
        if count >= bytes.len() / 8 {
            return Err(format!("a count of {count} does not fit the file"));
        }
        let offsets = (1..count + 2).map(word).collect::<Result<Vec<_>, _>>()?;
        let values = bytes[8 * (count + 2)..].to_vec();
        Self::try_from_parts(offsets, values)
    }
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

    #[test]
    fn strings_are_deterministic_varied_and_round_trip() {
        let s = Strings::generate(100_000);
        assert_eq!(s, Strings::generate(100_000));
        assert_eq!(Strings::generate(10).bytes(3), s.bytes(3));
        let lens: Vec<usize> = s.iter().map(str::len).collect();
        assert_eq!(*lens.iter().max().unwrap(), 16);
        assert!(lens.contains(&0));
        let mean = s.values().len() as f64 / s.len() as f64;
        assert!((7.0..8.5).contains(&mean), "{mean}");
        let multi = s.iter().filter(|x| !x.is_ascii()).count() as f64 / s.len() as f64;
        assert!((0.05..0.07).contains(&multi), "{multi}");
        let back = Strings::from_file_bytes(&s.to_file_bytes()).unwrap();
        assert_eq!(back, s);
        assert_eq!(s.first_difference(back.iter().map(str::as_bytes)), None);
    }

    #[test]
    fn a_different_string_is_found() {
        let s = Strings::generate(1000);
        let mut got: Vec<&[u8]> = s.iter().map(str::as_bytes).collect();
        assert_eq!(
            s.first_difference(got[..999].iter().copied()),
            Some((999, None))
        );
        got[500] = b"x";
        assert_eq!(
            s.first_difference(got.iter().copied()),
            Some((500, Some(&b"x"[..])))
        );
        let mut bytes = s.to_file_bytes();
        let last = bytes.len() - 1;
        bytes[last] = 0xff;
        assert!(
            Strings::from_file_bytes(&bytes)
                .unwrap_err()
                .contains("not UTF-8")
        );
        assert!(Strings::from_file_bytes(&bytes[..20]).is_err());
    }
}
