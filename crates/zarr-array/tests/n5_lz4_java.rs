//! N5's `lz4` compression against lz4-java itself (the library the Java N5 implementation
//! compresses `lz4` datasets with): `tests/java/Lz4BlockPeer.java`, compiled here with
//! `javac` against the jar named by `ZARR_TEST_LZ4_JAVA` (`cargo xtask ci` installs Debian's
//! `liblz4-java` and sets it).
//!
//! Without `ZARR_TEST_LZ4_JAVA` (a plain `cargo test`) the tests say so and pass without
//! running; with it set, failing to compile or run the peer is a test failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use zarr_array::{Array, ArrayBuilder};
use zarr_codecs::{BytesToBytesCodec, ExpectedSize, N5Lz4Codec};
use zarr_core::DataType;
use zarr_store::{MemoryStore, N5Store, ReadableStore, StoreKey, WritableStore};

const JAR_VAR: &str = "ZARR_TEST_LZ4_JAVA";

/// The lz4-java jar, or `None` (with a message) when the variable is unset.
fn jar(test: &str) -> Option<PathBuf> {
    match std::env::var_os(JAR_VAR) {
        Some(jar) => Some(PathBuf::from(jar)),
        None => {
            eprintln!(
                "SKIPPED {test}: {JAR_VAR} is not set. `cargo xtask ci` sets it to Debian's \
                 lz4-java jar; to run this test by hand, install `liblz4-java` and a JDK and set \
                 {JAR_VAR}=/usr/share/java/lz4-java.jar."
            );
            None
        }
    }
}

/// The class path holding the compiled peer and the jar (compiled once per test run).
fn class_path(jar: &Path) -> String {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    let classes = CLASSES.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lz4-java-peer");
        std::fs::create_dir_all(&dir).unwrap();
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Lz4BlockPeer.java");
        let output = Command::new("javac")
            .arg("-cp")
            .arg(jar)
            .arg("-d")
            .arg(&dir)
            .arg(&source)
            .output()
            .expect("javac runs");
        assert!(
            output.status.success(),
            "javac failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        dir
    });
    format!("{}:{}", jar.display(), classes.display())
}

/// Run the peer on `inputs` (`encode BLOCK_SIZE` or `decode`): its output for each.
fn peer(jar: &Path, op: &[&str], inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = op.iter().map(|s| (*s).to_owned()).collect();
    for (i, input) in inputs.iter().enumerate() {
        let (src, dst) = (
            dir.path().join(format!("{i}.in")),
            dir.path().join(format!("{i}.out")),
        );
        std::fs::write(&src, input).unwrap();
        args.push(src.display().to_string());
        args.push(dst.display().to_string());
    }
    let output = Command::new("java")
        .arg("-cp")
        .arg(class_path(jar))
        .arg("Lz4BlockPeer")
        .args(&args)
        .output()
        .expect("java runs");
    assert!(
        output.status.success(),
        "the lz4-java peer failed ({op:?}): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (0..inputs.len())
        .map(|i| std::fs::read(dir.path().join(format!("{i}.out"))).unwrap())
        .collect()
}

/// `n` bytes of runs (compressible) alternating with noise (stored raw by both sides).
fn sample(n: usize, seed: u32) -> Vec<u8> {
    let mut state = seed | 1;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            if (i / 5000) % 3 == 2 {
                state as u8
            } else {
                (i / 11) as u8
            }
        })
        .collect()
}

#[test]
fn lz4_java_reads_our_block_streams_and_we_read_its() {
    let Some(jar) = jar("lz4_java_reads_our_block_streams_and_we_read_its") else {
        return;
    };
    let sizes = [0, 1, 63, 64, 1000, 65_536, 65_537, 300_000];
    let inputs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| sample(n, i as u32 + 7))
        .collect();
    // Block sizes: lz4-java's smallest, one not a power of two, N5's default, 1 MiB.
    for block_size in [64u32, 1000, 65_536, 1 << 20] {
        let codec = N5Lz4Codec::new(block_size).unwrap();
        let ours: Vec<Vec<u8>> = inputs
            .iter()
            .map(|data| codec.encode(Bytes::from(data.clone())).unwrap().to_vec())
            .collect();
        let decoded_by_java = peer(&jar, &["decode"], &ours);
        let encoded_by_java = peer(&jar, &["encode", &block_size.to_string()], &inputs);
        for (i, data) in inputs.iter().enumerate() {
            assert_eq!(
                &decoded_by_java[i],
                data,
                "lz4-java decoding our stream of {} bytes, blocks of {block_size}",
                data.len()
            );
            let theirs = Bytes::from(encoded_by_java[i].clone());
            let back = codec
                .decode(theirs.clone(), ExpectedSize::Exact(data.len() as u64))
                .unwrap();
            assert_eq!(
                &back[..],
                &data[..],
                "decoding lz4-java's stream of {} bytes, blocks of {block_size}",
                data.len()
            );
            // Both end with the same end mark (the token holds the block size).
            assert_eq!(&theirs[theirs.len() - 21..], &ours[i][ours[i].len() - 21..]);
        }
    }
}

#[tokio::test]
async fn n5_lz4_datasets_interoperate_with_lz4_java() {
    let Some(jar) = jar("n5_lz4_datasets_interoperate_with_lz4_java") else {
        return;
    };
    // A 70x50 uint16 dataset in 32x32 blocks, lz4 with blocks of 1024 bytes: each full N5
    // block is 2 KiB, two lz4-java blocks.
    let (rows, cols) = (70u64, 50u64);
    let value = |r: u64, c: u64| ((r * 7 + c * 3) % 400) as u16;
    let values: Vec<u16> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| value(r, c)))
        .collect();
    let memory = MemoryStore::new();
    let store = Arc::new(N5Store::new(memory.clone()));
    let array = ArrayBuilder::new(vec![rows, cols], DataType::UInt16, vec![32, 32])
        .bytes_to_bytes(N5Lz4Codec::new(1024).unwrap().to_metadata())
        .n5()
        .create(Arc::clone(&store), "/volume")
        .await
        .unwrap();
    array.write([0..rows, 0..cols], &values).await.unwrap();
    let attributes = memory
        .get(&StoreKey::new("volume/attributes.json"))
        .await
        .unwrap()
        .unwrap();
    let attributes: serde_json::Value = serde_json::from_slice(&attributes).unwrap();
    assert_eq!(
        attributes["compression"],
        serde_json::json!({"type": "lz4", "blockSize": 1024})
    );

    // Every block we wrote: an N5 header (mode 0, rank 2, the block's extent, fastest
    // dimension first), then a stream lz4-java decodes to the values column-major,
    // big-endian (blocks are written at the chunk's full extent, padded with 0).
    let mut keys = Vec::new();
    let mut payloads = Vec::new();
    let mut expected = Vec::new();
    for br in 0..rows.div_ceil(32) {
        for bc in 0..cols.div_ceil(32) {
            // The N5 dataset has the array's dimensions in the same order; its blocks
            // hold them column-major (the first fastest).
            let key = format!("volume/{br}/{bc}");
            let block = memory.get(&StoreKey::new(&key)).await.unwrap().unwrap();
            assert_eq!(&block[..4], &[0, 0, 0, 2], "{key}");
            assert_eq!(&block[4..12], &[0, 0, 0, 32, 0, 0, 0, 32], "{key}");
            let mut data = Vec::new();
            for c in bc * 32..bc * 32 + 32 {
                for r in br * 32..br * 32 + 32 {
                    let v = if r < rows && c < cols { value(r, c) } else { 0 };
                    data.extend(v.to_be_bytes());
                }
            }
            keys.push(key);
            payloads.push(block[12..].to_vec());
            expected.push(data);
        }
    }
    let decoded = peer(&jar, &["decode"], &payloads);
    for ((key, got), want) in keys.iter().zip(&decoded).zip(&expected) {
        assert_eq!(got, want, "lz4-java decoding block {key}");
    }

    // The other way: blocks lz4-java compressed, edge blocks truncated to the array as the
    // Java library writes them, read through the N5 store.
    let mut raw = Vec::new();
    let mut headers = Vec::new();
    let mut java_keys = Vec::new();
    for br in 0..rows.div_ceil(32) {
        for bc in 0..cols.div_ceil(32) {
            let (r_end, c_end) = ((br * 32 + 32).min(rows), (bc * 32 + 32).min(cols));
            let mut data = Vec::new();
            for c in bc * 32..c_end {
                for r in br * 32..r_end {
                    data.extend((value(r, c) + 1).to_be_bytes());
                }
            }
            let mut header = vec![0, 0, 0, 2];
            header.extend((r_end - br * 32).to_be_bytes()[4..].iter());
            header.extend((c_end - bc * 32).to_be_bytes()[4..].iter());
            raw.push(data);
            headers.push(header);
            java_keys.push(format!("volume/{br}/{bc}"));
        }
    }
    let compressed = peer(&jar, &["encode", "1024"], &raw);
    for ((key, header), body) in java_keys.iter().zip(headers).zip(compressed) {
        let mut block = header;
        block.extend(body);
        memory
            .set(&StoreKey::new(key), Bytes::from(block))
            .await
            .unwrap();
    }
    let again = Array::open(store, "/volume").await.unwrap();
    let plus_one: Vec<u16> = values.iter().map(|v| v + 1).collect();
    assert_eq!(
        again.read::<u16>([0..rows, 0..cols]).await.unwrap(),
        plus_one
    );
}
