//! Partial decoding of the ZEP0007 layout: a region of a chunk in memory, and a range of
//! elements from two byte ranges of a stored chunk.

use std::ops::Range;

use bytes::Bytes;
use zarr_codecs::{ArrayBytes, Error as CodecError, VlenBytes};
use zarr_core::{DataType, Region};
use zarr_vlen::{OffsetType, VlenArrowCodec, VlenBinary, VlenStrings};

use crate::repr;

fn strings(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("{}{i}", "ü".repeat(i % 4)))
        .collect()
}

/// A store's byte-range read: the bytes of `range`, counting how many were fetched.
fn fetch(chunk: &Bytes, range: Range<u64>, fetched: &mut u64) -> Bytes {
    *fetched += range.end - range.start;
    chunk.slice(range.start as usize..range.end as usize)
}

#[test]
fn a_few_elements_of_a_large_chunk_need_two_small_ranges() {
    let all = strings(100_000);
    for offsets in [OffsetType::Int32, OffsetType::Int64] {
        let codec = VlenArrowCodec::new(offsets);
        let chunk = codec
            .encode_strings(&VlenStrings::<i64>::from_strs(&all).unwrap())
            .unwrap();
        let n = all.len() as u64;
        let mut fetched = 0;
        let elements = 70_000..70_005;
        let offsets_range = codec.offsets_byte_range(n, elements.clone()).unwrap();
        let raw = fetch(&chunk, offsets_range.clone(), &mut fetched);
        let values_range = codec.values_byte_range(n, &raw).unwrap();
        let values = fetch(&chunk, values_range, &mut fetched);
        let got = codec
            .decode_range(&DataType::String, n, elements.clone(), &raw, values.clone())
            .unwrap();
        let got: Vec<&[u8]> = got.iter().collect();
        let want: Vec<&[u8]> = all[70_000..70_005].iter().map(|s| s.as_bytes()).collect();
        assert_eq!(got, want);
        // 6 offsets and the five values: well under 100 bytes of a chunk of megabytes.
        assert_eq!(offsets_range.end - offsets_range.start, 6 * offsets.size());
        assert!(fetched < 100, "{fetched} bytes fetched of {}", chunk.len());
        // Bytes data reads the same way, and the values are the fetched buffer itself.
        let b = codec
            .decode_range(&DataType::Bytes, n, elements, &raw, values.clone())
            .unwrap();
        assert_eq!(b.values().as_ptr(), values.as_ptr());
    }
}

#[test]
fn decode_region_matches_the_full_decode() {
    let shape = [7u64, 9, 5];
    let all = strings(7 * 9 * 5);
    let codec = VlenArrowCodec::default();
    let chunk = codec
        .encode_strings(&VlenStrings::<i32>::from_strs(&all).unwrap())
        .unwrap();
    let r = repr(DataType::String, &shape);
    for ranges in [
        vec![0..7, 0..9, 0..5],
        vec![2..3, 0..9, 0..5],
        vec![1..4, 2..7, 1..4],
        vec![6..7, 8..9, 4..5],
        vec![0..7, 3..4, 0..5],
        vec![3..3, 0..9, 0..5],
    ] {
        let region = Region::try_new(ranges.clone()).unwrap();
        let got = codec.decode_region(&chunk, &r, &region).unwrap();
        let mut want = Vec::new();
        for i in ranges[0].clone() {
            for j in ranges[1].clone() {
                for k in ranges[2].clone() {
                    want.push(all[(i * 45 + j * 5 + k) as usize].as_bytes());
                }
            }
        }
        let v = got.as_variable().unwrap();
        assert_eq!(v.iter().collect::<Vec<_>>(), want, "{ranges:?}");
    }
    // One run (whole rows) is a slice of the chunk.
    let rows = Region::try_new(vec![2..4, 0..9, 0..5]).unwrap();
    let got = codec.decode_region(&chunk, &r, &rows).unwrap();
    let v = got.as_variable().unwrap();
    let base = codec.values_start(315).unwrap() as usize;
    let first: usize = all[..90].iter().map(String::len).sum();
    assert_eq!(v.values().as_ptr(), chunk[base + first..].as_ptr());

    let outside = Region::try_new(vec![0..8, 0..9, 0..5]).unwrap();
    assert!(matches!(
        codec.decode_region(&chunk, &r, &outside),
        Err(CodecError::InvalidRegion { .. })
    ));
}

#[test]
fn decode_region_reads_only_what_it_needs() {
    // Corrupt the offsets and values of elements outside the region: a partial decode of
    // other elements still succeeds, a full decode fails.
    let all = strings(1000);
    let codec = VlenArrowCodec::default();
    let mut chunk = codec
        .encode_strings(&VlenStrings::<i32>::from_strs(&all).unwrap())
        .unwrap()
        .to_vec();
    chunk[900 * 4..901 * 4].copy_from_slice(&(-5i32).to_le_bytes());
    let chunk = Bytes::from(chunk);
    let r = repr(DataType::String, &[1000]);
    let region = Region::try_new(vec![10..20]).unwrap();
    let got = codec.decode_region(&chunk, &r, &region).unwrap();
    let got: Vec<&[u8]> = got.as_variable().unwrap().iter().collect();
    let want: Vec<&[u8]> = all[10..20].iter().map(|s| s.as_bytes()).collect();
    assert_eq!(got, want);
    assert!(codec.decode_strings::<i32>(&chunk, 1000).is_err());
    let bad = Region::try_new(vec![895..905]).unwrap();
    assert!(matches!(
        codec.decode_region(&chunk, &r, &bad),
        Err(CodecError::Corrupt { .. })
    ));
}

#[test]
fn partial_decoding_checks_what_it_reads() {
    let codec = VlenArrowCodec::default();
    let all = ["ab", "é", "", "xyz"];
    let chunk = codec
        .encode_binary(&VlenBinary::<i32>::from_elements(all).unwrap())
        .unwrap();
    let raw = chunk.slice(4..16); // offsets 1..=3
    // Wrong number of offset bytes.
    assert!(matches!(
        codec.decode_range(&DataType::String, 4, 1..3, &raw[..8], Bytes::new()),
        Err(CodecError::Truncated { .. })
    ));
    // Values shorter than the offsets say.
    assert!(matches!(
        codec.decode_range(
            &DataType::String,
            4,
            1..3,
            &raw,
            Bytes::from_static(b"\xc3")
        ),
        Err(CodecError::Truncated { .. })
    ));
    // Elements past the chunk.
    assert!(matches!(
        codec.offsets_byte_range(4, 3..5),
        Err(CodecError::InvalidRegion { .. })
    ));
    // Decreasing offsets in range.
    let mut bad = raw.to_vec();
    bad[0..4].copy_from_slice(&9i32.to_le_bytes());
    assert!(matches!(
        codec.values_byte_range(4, &bad),
        Err(CodecError::Corrupt { .. })
    ));
    // Invalid UTF-8 is reported with the element's index in the chunk.
    let e = codec
        .decode_range(
            &DataType::String,
            4,
            1..3,
            &raw,
            Bytes::from_static(b"\xff\xff"),
        )
        .unwrap_err();
    assert!(
        matches!(e, CodecError::InvalidElement { index: 1, .. }),
        "{e}"
    );
    // The same bytes are fine as binary.
    let v: VlenBytes = codec
        .decode_range(
            &DataType::Bytes,
            4,
            1..3,
            &raw,
            Bytes::from_static(b"\xff\xff"),
        )
        .unwrap();
    assert_eq!(v.iter().collect::<Vec<_>>(), [&b"\xff\xff"[..], b""]);
    // Other data types are refused.
    assert!(matches!(
        codec.decode_range(&DataType::UInt8, 4, 1..3, &raw, Bytes::new()),
        Err(CodecError::IncompatibleRepresentation { .. })
    ));
    // A chunk too short for its offsets.
    let r = repr(DataType::String, &[4]);
    let region = Region::try_new(vec![0..1]).unwrap();
    assert!(matches!(
        codec.decode_region(&chunk.slice(..40), &r, &region),
        Err(CodecError::Truncated { .. })
    ));
    let full = codec
        .decode_region(&chunk, &r, &Region::full(&[4]))
        .unwrap();
    assert_eq!(
        full,
        ArrayBytes::Variable(VlenBytes::from_elements(all.map(str::as_bytes)))
    );
}
