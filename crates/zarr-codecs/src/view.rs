//! [`ArrayViewMut`]: a region of one C-order output buffer that parallel decoders write into.

use std::marker::PhantomData;
use std::ops::Range;

use zarr_core::Region;

use crate::error::{Error, Result};

/// A mutable view of a region of a C-order buffer of fixed-size elements.
///
/// A read allocates one output buffer and decodes every chunk straight into its place in it.
/// Chunks occupy disjoint regions of the output but not disjoint byte ranges, so safe
/// `split_at_mut` cannot hand each decoder its part. An `ArrayViewMut` is the part: it knows
/// the whole buffer's shape and its own region, and writes only inside that region.
///
/// Views of disjoint regions may be written from different threads at once; views are made
/// with the `unsafe` [`subview`](Self::subview), whose caller promises that views used at the
/// same time do not overlap. Every write is bounds-checked against the view's region.
///
/// ```
/// use zarr_codecs::ArrayViewMut;
/// use zarr_core::Region;
///
/// let mut out = vec![0u8; 16]; // a 4x4 array of u8
/// let mut view = ArrayViewMut::new(&mut out, &[4, 4], 1)?;
/// // The 2x2 block at rows 1..3, columns 2..4, from a 2x2 chunk.
/// let mut block = unsafe { view.subview(Region::try_new(vec![1..3, 2..4])?)? };
/// block.copy_from(&[1, 2, 3, 4], &[2, 2], &Region::full(&[2, 2]))?;
/// assert_eq!(out, [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ArrayViewMut<'a> {
    ptr: *mut u8,
    len: usize,
    shape: Vec<u64>,
    region: Region,
    elem: usize,
    _marker: PhantomData<&'a mut [u8]>,
}

// SAFETY: a view is a `&mut [u8]` restricted to a region; sending it to another thread is as
// safe as sending the slice. Views that share a buffer are only made by `subview`, whose
// caller guarantees that concurrently used views do not overlap.
unsafe impl Send for ArrayViewMut<'_> {}
// SAFETY: shared references allow no writes (every writing method takes `&mut self`).
unsafe impl Sync for ArrayViewMut<'_> {}

impl<'a> ArrayViewMut<'a> {
    /// A view of all of `buffer`, a C-order array of `shape` with `element_size`-byte
    /// elements.
    ///
    /// # Errors
    /// [`Error::OutputSize`] if the buffer does not hold exactly that array.
    pub fn new(buffer: &'a mut [u8], shape: &[u64], element_size: usize) -> Result<Self> {
        let expected = shape
            .iter()
            .try_fold(element_size as u64, |acc, &d| acc.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Error::InvalidRegion {
                reason: format!("an array of shape {shape:?} does not fit in memory"),
            })?;
        if buffer.len() != expected {
            return Err(Error::output_size(expected, buffer.len()));
        }
        Ok(Self {
            ptr: buffer.as_mut_ptr(),
            len: buffer.len(),
            shape: shape.to_vec(),
            region: Region::full(shape),
            elem: element_size,
            _marker: PhantomData,
        })
    }

    /// A view of `region`, given in the coordinates of this view's region (`0..n` is the
    /// view's first `n` elements along a dimension).
    ///
    /// # Safety
    /// The new view aliases this one. While both are in use, the caller must not write
    /// through this view to the sub-region, and views made by `subview` that are used at the
    /// same time (from any thread) must cover disjoint regions.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if `region` has the wrong rank or lies outside this view.
    pub unsafe fn subview(&self, region: Region) -> Result<ArrayViewMut<'a>> {
        let own = self.region.ranges();
        if region.rank() != own.len() {
            return Err(Error::InvalidRegion {
                reason: format!(
                    "region {region} has {} dimensions, the view {}",
                    region.rank(),
                    own.len()
                ),
            });
        }
        let mut ranges = Vec::with_capacity(own.len());
        for (r, o) in region.ranges().iter().zip(own) {
            if r.end > o.end - o.start {
                return Err(Error::InvalidRegion {
                    reason: format!("region {region} lies outside the view of shape {:?}", {
                        self.region.shape()
                    }),
                });
            }
            ranges.push(o.start + r.start..o.start + r.end);
        }
        Ok(ArrayViewMut {
            ptr: self.ptr,
            len: self.len,
            shape: self.shape.clone(),
            region: Region::try_new(ranges).map_err(|e| Error::InvalidRegion {
                reason: e.to_string(),
            })?,
            elem: self.elem,
            _marker: PhantomData,
        })
    }

    /// The shape of the view (of its region).
    pub fn shape(&self) -> Vec<u64> {
        self.region.shape()
    }

    /// The view's region within the whole buffer.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The shape of the whole buffer.
    pub fn buffer_shape(&self) -> &[u64] {
        &self.shape
    }

    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.elem
    }

    /// The number of bytes the view covers.
    pub fn num_bytes(&self) -> usize {
        self.region
            .ranges()
            .iter()
            .map(|r| (r.end - r.start) as usize)
            .product::<usize>()
            * self.elem
    }

    /// The view as one contiguous slice, when its region is contiguous in the buffer (it
    /// spans whole trailing dimensions), so a decoder can write straight into it.
    pub fn as_contiguous_mut(&mut self) -> Option<&mut [u8]> {
        let range = contiguous_range(&self.shape, &self.region, self.elem)?;
        debug_assert!(range.end <= self.len);
        // SAFETY: the range lies inside the buffer (the region lies inside the shape, which
        // `new` checked against the buffer length) and inside this view's region, which no
        // other live view overlaps (the `subview` contract); `&mut self` excludes other
        // access through this view.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) })
    }

    /// Copy `src_region` of `src`, a C-order array of `src_shape`, into the whole view. The
    /// region's shape must equal the view's shape. Contiguous runs are copied in bulk.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the shapes differ or the region lies outside `src_shape`;
    /// [`Error::OutputSize`] if `src` does not hold `src_shape`.
    pub fn copy_from(&mut self, src: &[u8], src_shape: &[u64], src_region: &Region) -> Result<()> {
        let src_len = checked_len(src_shape, self.elem)?;
        if src.len() != src_len {
            return Err(Error::output_size(src_len, src.len()));
        }
        src_region
            .check_within(src_shape)
            .map_err(|e| Error::InvalidRegion {
                reason: e.to_string(),
            })?;
        if src_region.shape() != self.region.shape() {
            return Err(Error::InvalidRegion {
                reason: format!(
                    "a region of shape {:?} cannot fill a view of shape {:?}",
                    src_region.shape(),
                    self.region.shape()
                ),
            });
        }
        let plan = BlockPlan::new(
            src_shape,
            &src_region.starts(),
            &self.shape,
            &self.region.starts(),
            &src_region.shape(),
            self.elem,
        );
        let stream = self.len >= STREAM_MIN_DST;
        // SAFETY: every run the plan writes lies inside this view's region of the buffer
        // (the region lies inside the shape `new` checked against the buffer), which no other
        // live view overlaps; every run it reads lies inside `src_region`, which was checked
        // to lie inside `src_shape`, which `src` holds exactly.
        unsafe { plan.copy(src.as_ptr(), self.ptr, stream) };
        Ok(())
    }

    /// Copy the whole view out into `dst_region` of `dst`, a C-order array of `dst_shape`
    /// (the reverse of [`copy_from`](Self::copy_from)).
    ///
    /// # Errors
    /// As [`copy_from`](Self::copy_from).
    pub fn copy_to(&self, dst: &mut [u8], dst_shape: &[u64], dst_region: &Region) -> Result<()> {
        let dst_len = checked_len(dst_shape, self.elem)?;
        if dst.len() != dst_len {
            return Err(Error::output_size(dst_len, dst.len()));
        }
        dst_region
            .check_within(dst_shape)
            .map_err(|e| Error::InvalidRegion {
                reason: e.to_string(),
            })?;
        if dst_region.shape() != self.region.shape() {
            return Err(Error::InvalidRegion {
                reason: format!(
                    "a view of shape {:?} cannot fill a region of shape {:?}",
                    self.region.shape(),
                    dst_region.shape()
                ),
            });
        }
        let plan = BlockPlan::new(
            &self.shape,
            &self.region.starts(),
            dst_shape,
            &dst_region.starts(),
            &dst_region.shape(),
            self.elem,
        );
        // SAFETY: every run the plan reads lies inside this view's region of the buffer;
        // every run it writes lies inside `dst_region`, checked to lie inside `dst_shape`,
        // which `dst` holds exactly (and `dst`, a `&mut`, cannot overlap the view's buffer).
        unsafe { plan.copy(self.ptr, dst.as_mut_ptr(), false) };
        Ok(())
    }

    /// Set every element of the view to `element` (one element's bytes, e.g. the fill value).
    ///
    /// # Errors
    /// [`Error::OutputSize`] if `element` is not one element long.
    pub fn fill(&mut self, element: &[u8]) -> Result<()> {
        if element.len() != self.elem {
            return Err(Error::output_size(self.elem, element.len()));
        }
        let ptr = self.ptr;
        let uniform = element.iter().all(|&b| b == element[0]);
        for_each_run(&self.shape, &self.region, self.elem, |offset, n| {
            // SAFETY: the run lies inside this view's region of the buffer.
            let run = unsafe { std::slice::from_raw_parts_mut(ptr.add(offset), n) };
            if uniform {
                run.fill(element[0]);
            } else {
                for chunk in run.chunks_exact_mut(element.len()) {
                    chunk.copy_from_slice(element);
                }
            }
        });
        Ok(())
    }
}

/// `shape`'s size in bytes as a `usize`.
fn checked_len(shape: &[u64], elem: usize) -> Result<usize> {
    shape
        .iter()
        .try_fold(elem as u64, |acc, &d| acc.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::InvalidRegion {
            reason: format!("an array of shape {shape:?} does not fit in memory"),
        })
}

/// Byte strides of a C-order array.
fn strides(shape: &[u64], elem: usize) -> Vec<usize> {
    let mut strides = vec![elem; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1] as usize;
    }
    strides
}

/// The byte range of `region` in a C-order buffer of `shape`, if it is contiguous.
fn contiguous_range(shape: &[u64], region: &Region, elem: usize) -> Option<Range<usize>> {
    let ranges = region.ranges();
    let strides = strides(shape, elem);
    let start: usize = ranges
        .iter()
        .zip(&strides)
        .map(|(r, s)| r.start as usize * s)
        .sum();
    if ranges.iter().any(|r| r.start == r.end) {
        return Some(start..start);
    }
    // Contiguous when, after the first dimension with more than one index, every dimension
    // is whole.
    let first_wide = ranges.iter().position(|r| r.end - r.start > 1);
    if let Some(d) = first_wide {
        for (r, &extent) in ranges[d + 1..].iter().zip(&shape[d + 1..]) {
            if r.start != 0 || r.end != extent {
                return None;
            }
        }
    }
    let len = ranges
        .iter()
        .map(|r| (r.end - r.start) as usize)
        .product::<usize>()
        * elem;
    Some(start..start + len)
}

/// Call `f(offset, len)` for each contiguous run of `region` in a C-order buffer of `shape`.
fn for_each_run(shape: &[u64], region: &Region, elem: usize, mut f: impl FnMut(usize, usize)) {
    let full = Region::full(region.shape().as_slice());
    for_each_paired_run(shape, region, &region.shape(), &full, elem, |s, _, n| {
        f(s, n)
    });
}

/// Call `f(src_offset, dst_offset, len)` for each run that is contiguous in both a region
/// of a C-order `src_shape` buffer and an equally shaped region of a `dst_shape` buffer, in
/// C order. Both regions must lie within their shapes and have the same shape.
fn for_each_paired_run(
    src_shape: &[u64],
    src_region: &Region,
    dst_shape: &[u64],
    dst_region: &Region,
    elem: usize,
    f: impl FnMut(usize, usize, usize),
) {
    for_each_block_run(
        src_shape,
        &src_region.starts(),
        dst_shape,
        &dst_region.starts(),
        &src_region.shape(),
        elem,
        f,
    );
}

/// Copy `n` bytes from `src` to `dst`, inlined for the short runs a scatter of small inner
/// chunks makes (a 32^3 chunk of `u16` is 64-byte rows): a call to `memmove` per 64-byte run
/// cost as much as the copying itself. Every run of one scatter has the same length, so the
/// branch is always predicted.
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`].
#[inline(always)]
unsafe fn copy_run(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY (every arm): the caller's contract, with the constant length equal to `n`.
    unsafe {
        match n {
            8 => std::ptr::copy_nonoverlapping(src, dst, 8),
            16 => std::ptr::copy_nonoverlapping(src, dst, 16),
            32 => std::ptr::copy_nonoverlapping(src, dst, 32),
            64 => std::ptr::copy_nonoverlapping(src, dst, 64),
            128 => std::ptr::copy_nonoverlapping(src, dst, 128),
            256 => std::ptr::copy_nonoverlapping(src, dst, 256),
            _ => std::ptr::copy_nonoverlapping(src, dst, n),
        }
    }
}

/// Destinations at least this large (in bytes; larger than the last-level caches of current
/// CPUs) are written with streaming stores, which do not read each destination cache line in
/// before overwriting it nor evict the decoder's working set: 17% faster scatter of 64^3
/// `u16` chunks into a 512^3 array (criterion `block_copy`, one thread).
const STREAM_MIN_DST: usize = 64 << 20;
/// Runs this long or longer are streamed. Shorter ones (a 32^3 `u16` chunk's 64-byte rows)
/// rarely cover a whole cache line, since a large allocation typically starts 16 bytes past
/// a page boundary, and partly written lines make streaming stores slow: those are copied
/// with prefetching instead, which was 35% faster for them.
const STREAM_MIN_RUN: usize = 128;

/// Copy `n` bytes, with streaming (non-temporal) stores for the part of the destination from
/// its first 16-byte boundary on and ordinary stores for the unaligned head and tail.
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`]. The caller issues an `sfence` before the bytes are
/// read by another thread (streaming stores are weakly ordered).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_run_streaming(src: *const u8, dst: *mut u8, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let head = dst.align_offset(16).min(n);
    let end = head + (n - head) / 16 * 16;
    // SAFETY: every access lies inside the `n` bytes of both runs (the caller's contract);
    // the streaming stores go to 16-byte-aligned addresses, as `movntdq` requires; the
    // loads are unaligned ones. SSE2 is part of x86-64.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut i = head;
        while i < end {
            let v = _mm_loadu_si128(src.add(i).cast::<__m128i>());
            _mm_stream_si128(dst.add(i).cast::<__m128i>(), v);
            i += 16;
        }
        std::ptr::copy_nonoverlapping(src.add(end), dst.add(end), n - end);
    }
}

/// Ask the CPU to load the cache lines of `n` bytes at `ptr` (a hint: never faults, whatever
/// the address).
#[inline(always)]
fn prefetch_run(ptr: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let mut offset = 0;
        while offset < n {
            // SAFETY: `prefetcht0` (SSE, which every x86-64 CPU has) is a hint that never
            // faults; `wrapping_add` keeps the address computation defined.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.wrapping_add(offset).cast::<i8>()) };
            offset += 64;
        }
        // The last line, which a run that does not start on a line boundary reaches into.
        // SAFETY: as above.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.wrapping_add(n - 1).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ptr, n);
}

/// Runs this short or shorter are prefetched ahead (longer ones the hardware prefetcher
/// follows by itself).
const PREFETCH_MAX_RUN: usize = 1024;
/// How far ahead runs are prefetched, in bytes of runs: about 2 KiB, which the scatter and
/// gather microbenchmarks of 32^3 and 64^3 `u16` chunks in a 512^3 array found best (1.4 to
/// 1.9 times the speed of copying without prefetching).
const PREFETCH_AHEAD_BYTES: usize = 2048;

/// A block copy between two C-order arrays, as runs: `rows` runs of `run` bytes per plane,
/// `s_row`/`d_row` bytes apart, and planes in C order over the dimensions before the rows.
/// Trailing dimensions whole in both arrays merge into one run.
struct BlockPlan {
    run: usize,
    rows: usize,
    s_row: usize,
    d_row: usize,
    s_base: usize,
    d_base: usize,
    /// Extents and byte strides of the plane dimensions (empty: one plane).
    extent: Vec<u64>,
    ss: Vec<usize>,
    ds: Vec<usize>,
    /// No runs at all (an empty block).
    empty: bool,
}

impl BlockPlan {
    fn new(
        src_shape: &[u64],
        src_start: &[u64],
        dst_shape: &[u64],
        dst_start: &[u64],
        extent: &[u64],
        elem: usize,
    ) -> Self {
        let rank = extent.len();
        let ss = strides(src_shape, elem);
        let ds = strides(dst_shape, elem);
        let s_base: usize = (0..rank).map(|d| src_start[d] as usize * ss[d]).sum();
        let d_base: usize = (0..rank).map(|d| dst_start[d] as usize * ds[d]).sum();
        let mut k = rank;
        while k > 0 && extent[k - 1] == src_shape[k - 1] && extent[k - 1] == dst_shape[k - 1] {
            k -= 1;
        }
        let empty = extent.contains(&0);
        if k == 0 {
            let run = extent.iter().map(|&e| e as usize).product::<usize>() * elem;
            return Self {
                run,
                rows: 1,
                s_row: 0,
                d_row: 0,
                s_base,
                d_base,
                extent: Vec::new(),
                ss: Vec::new(),
                ds: Vec::new(),
                empty,
            };
        }
        let run = extent[k - 1..]
            .iter()
            .map(|&e| e as usize)
            .product::<usize>()
            * elem;
        // The dimensions before the run's, without those of extent 1 (they only move the
        // base): the last is the rows, the others the planes.
        let mut outer: Vec<(u64, usize, usize)> = (0..k - 1)
            .filter(|&d| extent[d] > 1)
            .map(|d| (extent[d], ss[d], ds[d]))
            .collect();
        let (rows, s_row, d_row) = outer
            .pop()
            .map_or((1, 0, 0), |(e, s, d)| (e as usize, s, d));
        Self {
            run,
            rows,
            s_row,
            d_row,
            s_base,
            d_base,
            extent: outer.iter().map(|o| o.0).collect(),
            ss: outer.iter().map(|o| o.1).collect(),
            ds: outer.iter().map(|o| o.2).collect(),
            empty,
        }
    }

    /// The (source, destination) byte offsets of every plane's first run, in C order.
    fn planes(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut index = vec![0u64; self.extent.len()];
        let (mut s, mut d) = (self.s_base, self.d_base);
        let mut done = self.empty;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let current = (s, d);
            let mut dim = self.extent.len();
            loop {
                if dim == 0 {
                    done = true;
                    break;
                }
                dim -= 1;
                index[dim] += 1;
                s += self.ss[dim];
                d += self.ds[dim];
                if index[dim] < self.extent[dim] {
                    break;
                }
                s -= self.extent[dim] as usize * self.ss[dim];
                d -= self.extent[dim] as usize * self.ds[dim];
                index[dim] = 0;
            }
            Some(current)
        })
    }

    /// Call `f(src_offset, dst_offset, len)` for every run, in C order.
    fn for_each(&self, mut f: impl FnMut(usize, usize, usize)) {
        for (s, d) in self.planes() {
            for r in 0..self.rows {
                f(s + r * self.s_row, d + r * self.d_row, self.run);
            }
        }
    }

    /// Call `copy_one(src_run, dst_run, len)` for every run, in C order, with nothing else
    /// (no prefetching).
    ///
    /// # Safety
    /// As [`copy`](Self::copy); `copy_one` is a run copier with the contract of
    /// [`std::ptr::copy_nonoverlapping`], which each call meets.
    #[inline(always)]
    unsafe fn copy_each(
        &self,
        src: *const u8,
        dst: *mut u8,
        copy_one: impl Fn(*const u8, *mut u8, usize),
    ) {
        for (s, d) in self.planes() {
            for r in 0..self.rows {
                // SAFETY: the caller's contract: every run lies inside both allocations.
                let (from, to) =
                    unsafe { (src.add(s + r * self.s_row), dst.add(d + r * self.d_row)) };
                copy_one(from, to, self.run);
            }
        }
    }

    /// Copy every run from `src` to `dst`: with streaming stores if `stream` (the caller's
    /// destination is at least [`STREAM_MIN_DST`] bytes) and runs are at least
    /// [`STREAM_MIN_RUN`] bytes, on x86-64; otherwise prefetching the strided side(s) of
    /// short runs about [`PREFETCH_AHEAD_BYTES`] ahead (into the next plane at the end of
    /// one).
    ///
    /// # Safety
    /// Every run lies inside both allocations and the runs written do not overlap the runs
    /// read.
    unsafe fn copy(&self, src: *const u8, dst: *mut u8, stream: bool) {
        let run = self.run;
        if self.empty || run == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if stream && run >= STREAM_MIN_RUN {
            // SAFETY: the caller's contract, passed on run by run.
            unsafe { self.copy_each(src, dst, |s, d, n| copy_run_streaming(s, d, n)) };
            // Order the streaming stores before every later store (the one that tells another
            // thread the copy is done included).
            // SAFETY: `sfence` is SSE, part of x86-64.
            unsafe { std::arch::x86_64::_mm_sfence() };
            return;
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = stream;
        let prefetch = run <= PREFETCH_MAX_RUN && self.rows > 1;
        if !prefetch {
            // SAFETY: the caller's contract, passed on run by run.
            unsafe { self.copy_each(src, dst, |s, d, n| copy_run(s, d, n)) };
            return;
        }
        let ahead = PREFETCH_AHEAD_BYTES.div_ceil(run).min(self.rows);
        // Prefetch a side only where its runs are apart (a contiguous side streams by itself).
        let (pf_src, pf_dst) = (self.s_row != run, self.d_row != run);
        let mut planes = self.planes();
        let mut current = planes.next();
        while let Some((s, d)) = current {
            let next = planes.next();
            for r in 0..self.rows {
                let t = r + ahead;
                let target = if t < self.rows {
                    Some((s + t * self.s_row, d + t * self.d_row))
                } else {
                    next.map(|(ns, nd)| {
                        (
                            ns + (t - self.rows) * self.s_row,
                            nd + (t - self.rows) * self.d_row,
                        )
                    })
                };
                if let Some((ps, pd)) = target {
                    if pf_src {
                        prefetch_run(src.wrapping_add(ps), run);
                    }
                    if pf_dst {
                        prefetch_run(dst.wrapping_add(pd).cast_const(), run);
                    }
                }
                // SAFETY: the caller's contract.
                unsafe {
                    copy_run(
                        src.add(s + r * self.s_row),
                        dst.add(d + r * self.d_row),
                        run,
                    )
                };
            }
            current = next;
        }
    }
}

/// Copy the block of `extent` at `src_start` of a C-order `src_shape` array of `elem`-byte
/// elements to `dst_start` of a `dst_shape` array, run by run (see [`for_each_block_run`]);
/// short runs (a 32^3 chunk's 64-byte rows) are copied inline, with the strided side
/// prefetched ahead.
///
/// # Panics
/// If the block does not lie inside both arrays, or a slice does not hold its whole array.
///
/// ```
/// // Rows 1..3, columns 1..3 of a 3x4 array of u8, to the corner of a 2x2 array.
/// let src: Vec<u8> = (0..12).collect();
/// let mut dst = [0u8; 4];
/// zarr_codecs::copy_block(&src, &[3, 4], &[1, 1], &mut dst, &[2, 2], &[0, 0], &[2, 2], 1);
/// assert_eq!(dst, [5, 6, 9, 10]);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn copy_block(
    src: &[u8],
    src_shape: &[u64],
    src_start: &[u64],
    dst: &mut [u8],
    dst_shape: &[u64],
    dst_start: &[u64],
    extent: &[u64],
    elem: usize,
) {
    let rank = extent.len();
    assert!(
        src_shape.len() == rank
            && src_start.len() == rank
            && dst_shape.len() == rank
            && dst_start.len() == rank,
        "copy_block: shapes, starts and extent differ in rank"
    );
    if extent.contains(&0) {
        return;
    }
    let within = |shape: &[u64], start: &[u64]| {
        (0..rank).all(|d| {
            start[d]
                .checked_add(extent[d])
                .is_some_and(|end| end <= shape[d])
        })
    };
    assert!(
        within(src_shape, src_start) && within(dst_shape, dst_start),
        "copy_block: the block {extent:?} at {src_start:?} / {dst_start:?} lies outside \
         {src_shape:?} / {dst_shape:?}"
    );
    let holds = |shape: &[u64], len: usize| {
        shape
            .iter()
            .try_fold(elem as u64, |acc, &d| acc.checked_mul(d))
            .is_some_and(|n| n <= len as u64)
    };
    assert!(
        holds(src_shape, src.len()) && holds(dst_shape, dst.len()),
        "copy_block: a slice is shorter than its array"
    );
    let plan = BlockPlan::new(src_shape, src_start, dst_shape, dst_start, extent, elem);
    // SAFETY: the block lies inside both arrays and both slices hold their arrays (checked
    // above), so every run lies inside its slice; a shared and a mutable slice cannot
    // overlap.
    unsafe { plan.copy(src.as_ptr(), dst.as_mut_ptr(), false) };
}

/// The runs of a block copy between two C-order arrays: call `f(src_offset, dst_offset,
/// len)` (in bytes) for every run that is contiguous in both arrays when the block of
/// `extent` at `src_start` of a `src_shape` array goes to `dst_start` of a `dst_shape` array,
/// in C order of the block. Trailing dimensions whole in both arrays merge into one run.
///
/// The offsets are only numbers: the caller checks that both blocks lie in their arrays
/// (otherwise the offsets point past them) and that the arrays fit in memory.
///
/// ```
/// let mut runs = Vec::new();
/// // Rows 1..3, columns 0..2 of a 3x4 array of u8, to the start of a 2x2 array.
/// zarr_codecs::for_each_block_run(&[3, 4], &[1, 0], &[2, 2], &[0, 0], &[2, 2], 1, |s, d, n| {
///     runs.push((s, d, n))
/// });
/// assert_eq!(runs, [(4, 0, 2), (8, 2, 2)]);
/// ```
pub fn for_each_block_run(
    src_shape: &[u64],
    src_start: &[u64],
    dst_shape: &[u64],
    dst_start: &[u64],
    extent: &[u64],
    elem: usize,
    f: impl FnMut(usize, usize, usize),
) {
    BlockPlan::new(src_shape, src_start, dst_shape, dst_start, extent, elem).for_each(f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A block copy: element size, source and destination shapes, the block's extent and
    /// its start in each.
    #[derive(Debug, Clone)]
    struct BlockCase {
        elem: usize,
        src_shape: Vec<u64>,
        src_start: Vec<u64>,
        dst_shape: Vec<u64>,
        dst_start: Vec<u64>,
        extent: Vec<u64>,
    }

    /// A random block copy (extents of 0 and 1 included, ranks 0 to 4).
    fn block_case() -> impl Strategy<Value = BlockCase> {
        (prop::sample::select(vec![1usize, 2, 8]), 0usize..=4)
            .prop_flat_map(|(elem, rank)| {
                (
                    Just(elem),
                    prop::collection::vec((0u64..=5, 0u64..=3, 0u64..=3, 0u64..=3, 0u64..=3), rank),
                )
            })
            .prop_map(|(elem, dims)| BlockCase {
                elem,
                extent: dims.iter().map(|d| d.0).collect(),
                src_start: dims.iter().map(|d| d.1).collect(),
                dst_start: dims.iter().map(|d| d.2).collect(),
                src_shape: dims.iter().map(|d| d.0 + d.1 + d.3).collect(),
                dst_shape: dims.iter().map(|d| d.0 + d.2 + d.4).collect(),
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Every way of copying a block (the free function, a view filled from an array
        /// and a view copied out to one, and the runs themselves) moves exactly the bytes
        /// an element-by-element copy does, whatever the ranks, extents and element size.
        #[test]
        fn block_copies_match_the_naive_model(case in block_case()) {
            let BlockCase { elem, src_shape, src_start, dst_shape, dst_start, extent } = case;
            let len = |shape: &[u64]| shape.iter().product::<u64>() as usize * elem;
            let src: Vec<u8> = (0..len(&src_shape)).map(|i| (i % 251) as u8 + 1).collect();
            let region = |start: &[u64]| {
                Region::try_new(start.iter().zip(&extent).map(|(s, e)| *s..s + e).collect())
                    .unwrap()
            };
            let (sr, dr) = (region(&src_start), region(&dst_start));
            // The model, on elements of `elem` bytes: copy each element's bytes.
            let mut expected = vec![0u8; len(&dst_shape)];
            let n: u64 = extent.iter().product();
            for flat in 0..n {
                let mut rem = flat;
                let mut idx = vec![0u64; extent.len()];
                for d in (0..extent.len()).rev() {
                    idx[d] = rem % extent[d];
                    rem /= extent[d];
                }
                let off = |shape: &[u64], start: &[u64]| {
                    (0..shape.len()).fold(0u64, |o, d| o * shape[d] + start[d] + idx[d]) as usize
                        * elem
                };
                let (s, d) = (off(&src_shape, &src_start), off(&dst_shape, &dst_start));
                expected[d..d + elem].copy_from_slice(&src[s..s + elem]);
            }

            let mut out = vec![0u8; len(&dst_shape)];
            copy_block(&src, &src_shape, &src_start, &mut out, &dst_shape, &dst_start, &extent, elem);
            prop_assert_eq!(&out, &expected);

            let mut out = vec![0u8; len(&dst_shape)];
            let view = ArrayViewMut::new(&mut out, &dst_shape, elem).unwrap();
            let mut sub = unsafe { view.subview(dr.clone()).unwrap() };
            sub.copy_from(&src, &src_shape, &sr).unwrap();
            prop_assert_eq!(&out, &expected);

            let mut back = vec![0u8; len(&dst_shape)];
            let mut src_copy = src.clone();
            let view = ArrayViewMut::new(&mut src_copy, &src_shape, elem).unwrap();
            let sub = unsafe { view.subview(sr.clone()).unwrap() };
            sub.copy_to(&mut back, &dst_shape, &dr).unwrap();
            prop_assert_eq!(&back, &expected);

            let mut out = vec![0u8; len(&dst_shape)];
            for_each_block_run(&src_shape, &src_start, &dst_shape, &dst_start, &extent, elem, |s, d, n| {
                out[d..d + n].copy_from_slice(&src[s..s + n]);
            });
            prop_assert_eq!(&out, &expected);
        }
    }

    /// Destinations of [`STREAM_MIN_DST`] bytes or more take the streaming-store path: rows
    /// whose length and start are not multiples of 16 arrive whole, and the bytes around
    /// them stay untouched.
    #[test]
    fn large_destinations_get_every_byte_of_unaligned_rows() {
        const COLS: usize = 1 << 20;
        let rows = STREAM_MIN_DST / COLS;
        let mut out = vec![0u8; rows * COLS];
        let shape = [rows as u64, COLS as u64];
        let view = ArrayViewMut::new(&mut out, &shape, 1).unwrap();
        let cases = [
            (128, 0),
            (128, 1),
            (129, 15),
            (200, 16),
            (4099, 17),
            (STREAM_MIN_RUN, 7),
        ];
        let mut expected_rows = Vec::new();
        for (i, &(run, col)) in cases.iter().enumerate() {
            let row = 3 * i;
            let src: Vec<u8> = (0..3 * run).map(|k| (k % 253) as u8 + 1).collect();
            let region = Region::try_new(vec![
                row as u64..row as u64 + 3,
                col as u64..(col + run) as u64,
            ])
            .unwrap();
            // SAFETY: one subview at a time.
            let mut part = unsafe { view.subview(region) }.unwrap();
            part.copy_from(&src, &[3, run as u64], &Region::full(&[3, run as u64]))
                .unwrap();
            for r in 0..3 {
                expected_rows.push((row + r, col, src[r * run..(r + 1) * run].to_vec()));
            }
        }
        for (row, col, bytes) in expected_rows {
            let line = &out[row * COLS..(row + 1) * COLS];
            assert_eq!(&line[col..col + bytes.len()], &bytes[..], "row {row}");
            assert!(line[..col].iter().all(|&b| b == 0), "before row {row}");
            assert!(
                line[col + bytes.len()..].iter().all(|&b| b == 0),
                "after row {row}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "lies outside")]
    fn copy_block_refuses_a_block_outside_its_array() {
        let src = [0u8; 4];
        let mut dst = [0u8; 4];
        copy_block(
            &src,
            &[2, 2],
            &[1, 1],
            &mut dst,
            &[2, 2],
            &[0, 0],
            &[2, 2],
            1,
        );
    }

    #[test]
    fn contiguity_and_fill() {
        let mut out = vec![0u8; 24];
        let mut view = ArrayViewMut::new(&mut out, &[2, 3, 4], 1).unwrap();
        assert_eq!(view.as_contiguous_mut().map(|s| s.len()), Some(24));
        let mut row =
            unsafe { view.subview(Region::try_new(vec![1..2, 1..3, 0..4]).unwrap()) }.unwrap();
        assert_eq!(row.as_contiguous_mut().map(|s| s.len()), Some(8));
        let mut block =
            unsafe { view.subview(Region::try_new(vec![0..2, 0..1, 1..3]).unwrap()) }.unwrap();
        assert!(block.as_contiguous_mut().is_none());
        block.fill(&[7]).unwrap();
        row.fill(&[9]).unwrap();
        assert_eq!(
            out,
            [
                0, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, //
                0, 7, 7, 0, 9, 9, 9, 9, 9, 9, 9, 9
            ]
        );
    }

    #[test]
    fn bad_views_are_errors() {
        let mut out = vec![0u8; 6];
        assert!(ArrayViewMut::new(&mut out, &[2, 4], 1).is_err());
        let view = ArrayViewMut::new(&mut out, &[2, 3], 1).unwrap();
        assert!(unsafe { view.subview(Region::try_new(vec![0..3, 0..1]).unwrap()) }.is_err());
        assert!(unsafe { view.subview(Region::full(&[1])) }.is_err());
        let mut sub = unsafe { view.subview(Region::try_new(vec![0..1, 0..2]).unwrap()) }.unwrap();
        assert!(
            sub.copy_from(&[1, 2, 3], &[3], &Region::full(&[3]))
                .is_err()
        );
        assert!(sub.fill(&[1, 2]).is_err());
    }
}
