//! Fuzz-style properties of codec configurations: every registered codec (core, numcodecs,
//! sharding, vlen), built from random configurations for random chunk representations,
//! either refuses with an error or builds a chain that encodes and decodes without
//! panicking; what it encodes, it decodes to a chunk of the right size.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use zarr_array::{ArrayBytes, default_registry};
use zarr_codecs::{ChunkRepresentation, Codec, CodecChain};
use zarr_core::{DataType, ExtensionObject, FillValue, FloatFormat, MiniFloat};

/// Configuration values: numbers near the edges codecs check, and the words they take.
fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..40).prop_map(Value::from),
        prop_oneof![
            Just(i64::MIN),
            Just(-131_073),
            Just(255),
            Just(256),
            Just(1 << 31),
            Just(i64::MAX)
        ]
        .prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        (-1e3f64..1e3).prop_map(Value::from),
        prop_oneof![
            Just("little"),
            Just("big"),
            Just("lz4"),
            Just("zstd"),
            Just("blosclz"),
            Just("snappy"),
            Just("shuffle"),
            Just("bitshuffle"),
            Just("noshuffle"),
            Just("start"),
            Just("end"),
            Just("auto"),
            Just("none"),
            Just("classic"),
            Just("try_consecutive"),
            Just("try_lookback"),
            Just("equal_pages_up_to"),
            Just("first_byte"),
            Just("last_byte"),
            Just("<i4"),
            Just(">u2"),
            Just("|u1"),
            Just("<f8"),
            Just("float32"),
            Just("int8"),
            Just("|b1"),
            Just("<c8"),
            Just("uint32"),
            Just("uint64"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(2, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((0usize..3, 1u64..5), 1..4)
                .prop_map(|v| Value::from(v.into_iter().map(|(_, n)| n).collect::<Vec<_>>())),
            prop::collection::vec(
                (
                    prop_oneof![Just("bytes"), Just("crc32c"), Just("zstd"), Just("transpose")],
                    inner
                ),
                0..3
            )
            .prop_map(|list| {
                Value::Array(
                    list.into_iter()
                        .map(|(name, config)| json!({"name": name, "configuration": {"level": config.clone(), "endian": "little", "order": config}}))
                        .collect(),
                )
            }),
        ]
    })
}

/// Every configuration key some registered codec reads.
const KEYS: [&str; 39] = [
    "level",
    "checksum",
    "endian",
    "order",
    "cname",
    "clevel",
    "shuffle",
    "typesize",
    "blocksize",
    "chunk_shape",
    "codecs",
    "index_codecs",
    "index_location",
    "dtype",
    "astype",
    "scale",
    "offset",
    "keepbits",
    "digits",
    "encode_dtype",
    "decode_dtype",
    "elementsize",
    "acceleration",
    "location",
    "initval",
    "prefix",
    "format",
    "check",
    "preset",
    "filters",
    "mode_spec",
    "delta_spec",
    "delta_encoding_order",
    "equal_pages_up_to",
    "padding_encoding",
    "first_bit",
    "last_bit",
    "data_codecs",
    "index_data_type",
];

fn arb_config() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((0..KEYS.len(), arb_value()), 0..5).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| (KEYS[k].to_owned(), v))
            .collect()
    })
}

fn data_type() -> impl Strategy<Value = DataType> {
    prop_oneof![
        Just(DataType::Bool),
        Just(DataType::Int8),
        Just(DataType::UInt8),
        Just(DataType::Int16),
        Just(DataType::UInt16),
        Just(DataType::Int32),
        Just(DataType::Int64),
        Just(DataType::UInt64),
        Just(DataType::Float16),
        Just(DataType::Float32),
        Just(DataType::Float64),
        Just(DataType::Complex64),
        Just(DataType::ComplexFloat(FloatFormat::Float16)),
        Just(DataType::ComplexFloat(FloatFormat::Mini(MiniFloat::E5M2))),
        Just(DataType::String),
        Just(DataType::Bytes),
    ]
}

/// A valid configuration of each registered codec, for chunks of `data_type` and `rank`
/// (`None` for a codec not listed here; the test then tries it bare).
fn base_config(name: &str, data_type: &DataType, shape: &[u64]) -> Option<Value> {
    let typestr = match data_type {
        DataType::Int8 => "|i1",
        DataType::UInt8 => "|u1",
        DataType::Int16 => "<i2",
        DataType::UInt16 => "<u2",
        DataType::Int32 => "<i4",
        DataType::Int64 => "<i8",
        DataType::UInt64 => "<u8",
        DataType::Float16 => "<f2",
        DataType::Float32 => "<f4",
        DataType::Float64 => "<f8",
        _ => "<i4",
    };
    let reversed: Vec<usize> = (0..shape.len()).rev().collect();
    let inner: Vec<u64> = shape
        .iter()
        .map(|&n| if n % 2 == 0 && n > 0 { n / 2 } else { n.max(1) })
        .collect();
    Some(match name {
        "bytes" => json!({"endian": "big"}),
        "transpose" => json!({ "order": reversed }),
        "gzip" | "numcodecs.gzip" | "numcodecs.zlib" | "numcodecs.bz2" => json!({"level": 5}),
        "zstd" | "numcodecs.zstd" => json!({"level": 3, "checksum": true}),
        "blosc" => {
            json!({"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0})
        }
        "numcodecs.blosc" => json!({"cname": "zstd", "clevel": 1, "shuffle": -1, "blocksize": 0}),
        "packbits" => json!({"padding_encoding": "first_byte"}),
        "numcodecs.delta" => json!({ "dtype": typestr }),
        "numcodecs.fixedscaleoffset" => {
            json!({"scale": 10, "offset": 1, "dtype": typestr, "astype": "<i4"})
        }
        "numcodecs.bitround" => json!({"keepbits": 3}),
        "bitround" => json!({"keepbits": 2}),
        "scale_offset" => json!({"offset": 0, "scale": 3}),
        "cast_value" => {
            json!({"data_type": "int16", "out_of_range": "clamp", "rounding": "nearest-away",
                               "scalar_map": {"encode": [[0, 1]], "decode": [[1, 0]]}})
        }
        // Flatten everything but the last dimension (or everything, for 0-d and 1-d).
        "reshape" if shape.len() >= 2 => {
            json!({"shape": [(0..shape.len() - 1).collect::<Vec<_>>(), -1]})
        }
        "reshape" => json!({"shape": [-1]}),
        "numcodecs.quantize" => json!({"digits": 2, "dtype": typestr}),
        "numcodecs.astype" => json!({"encode_dtype": "<f8", "decode_dtype": typestr}),
        "numcodecs.shuffle" => json!({"elementsize": 4}),
        "numcodecs.lz4" => json!({"acceleration": 2}),
        "numcodecs.crc32" | "numcodecs.adler32" | "numcodecs.crc32c" => json!({"location": "end"}),
        "numcodecs.jenkins_lookup3" => json!({"initval": 5, "prefix": null}),
        "numcodecs.lzma" => json!({"format": 1, "check": -1, "preset": 1, "filters": null}),
        "numcodecs.pcodec" => {
            json!({"level": 3, "delta_spec": "try_consecutive", "delta_encoding_order": 1})
        }
        "sharding_indexed" => json!({
            "chunk_shape": inner,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "start",
        }),
        "zarrs.vlen" => json!({
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "data_codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}],
            "index_data_type": "uint32",
            "index_location": "end",
        }),
        _ => return None,
    })
}

/// The registry's names, in a fixed order.
fn names() -> Vec<String> {
    default_registry().names().map(str::to_owned).collect()
}

/// Element bytes for `n` elements of `data_type` (booleans 0 or 1).
fn elements(data_type: &DataType, n: usize, seed: u8) -> Vec<u8> {
    let size = data_type.fixed_size().unwrap_or(1);
    (0..n * size)
        .map(|i| {
            let b = (i as u8).wrapping_mul(31).wrapping_add(seed);
            if *data_type == DataType::Bool {
                b & 1
            } else {
                b
            }
        })
        .collect()
}

/// Codecs that may change values when they encode.
const LOSSY: &[&str] = &[
    "bitround",
    "numcodecs.bitround",
    "numcodecs.quantize",
    "cast_value",
    "scale_offset",
];

fn has_lossy_codec(chain: &CodecChain) -> bool {
    chain
        .to_metadata()
        .iter()
        .any(|codec| LOSSY.contains(&codec.name.as_str()))
}

/// Whether `err` is a typed refusal by a codec that lies before a lossy codec in `chain`.
///
/// A lossy codec may change what an earlier codec wrote, so that codec can no longer
/// decode it: bitround rounding up a value that `numcodecs.fixedscaleoffset` then scales
/// beyond its data type (an invalid element), or rounding the padding count that
/// `numcodecs.packbits` stores in its first byte (a corrupt chunk). Either must be a typed
/// error naming that codec, never wrong data.
fn refused_after_a_lossy_codec(chain: &CodecChain, err: &zarr_codecs::Error) -> bool {
    let metadata = chain.to_metadata();
    let Some(last_lossy) = metadata
        .iter()
        .rposition(|codec| LOSSY.contains(&codec.name.as_str()))
    else {
        return false;
    };
    let before: Vec<&str> = metadata[..last_lossy]
        .iter()
        .map(|codec| codec.name.as_str())
        .collect();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        match e.downcast_ref::<zarr_codecs::Error>() {
            Some(
                zarr_codecs::Error::InvalidElement { codec, .. }
                | zarr_codecs::Error::Corrupt { codec, .. },
            ) if before.contains(&codec.as_str()) => return true,
            _ => {}
        }
        current = e.source();
    }
    false
}

/// Whether `err`, or an error it wraps, is [`zarr_codecs::Error::InvalidElement`].
fn names_an_invalid_element(err: &zarr_codecs::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if matches!(
            e.downcast_ref::<zarr_codecs::Error>(),
            Some(zarr_codecs::Error::InvalidElement { .. })
        ) {
            return true;
        }
        current = e.source();
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_codec_configurations_never_panic(
        picks in prop::collection::vec((0usize..64, arb_config(), 0usize..4), 1..4),
        ordered in prop::bool::weighted(0.85),
        data_type in data_type(),
        shape in prop::collection::vec(0u64..6, 0..3),
        seed in any::<u8>(),
    ) {
        let registry = default_registry();
        let names = names();
        let mut metadata: Vec<ExtensionObject> = picks
            .into_iter()
            .map(|(i, mutations, how)| {
                let name = names[i % names.len()].clone();
                let base = base_config(&name, &data_type, &shape);
                // 0: bare; 1: random keys; 2: the valid configuration; 3: it, mutated.
                let config = match (how, base) {
                    (0, _) => return ExtensionObject::new(name),
                    (1, _) | (_, None) => mutations,
                    (2, Some(Value::Object(base))) => base,
                    (_, Some(Value::Object(mut base))) => {
                        base.extend(mutations);
                        base
                    }
                    (_, Some(_)) => Map::new(),
                };
                ExtensionObject::with_configuration(name, config)
            })
            .collect();
        let fill = FillValue::default_for(&data_type);
        let Ok(decoded) = ChunkRepresentation::try_new(shape.clone(), data_type.clone(), fill) else {
            return Ok(());
        };
        // Mostly, put the codecs in the order a chain needs (array->array, one array->bytes,
        // bytes->bytes), adding `bytes` when none is there; sometimes keep the random order.
        if ordered {
            let kind = |meta: &ExtensionObject| match registry.build(meta, &decoded) {
                Ok(Some(Codec::ArrayToArray(_))) => 0,
                Ok(Some(Codec::ArrayToBytes(_))) => 1,
                _ => 2,
            };
            let mut kinds: Vec<(usize, ExtensionObject)> =
                metadata.into_iter().map(|m| (kind(&m), m)).collect();
            if !kinds.iter().any(|(k, _)| *k == 1) {
                kinds.push((1, match data_type {
                    DataType::String => ExtensionObject::new("vlen-utf8"),
                    DataType::Bytes => ExtensionObject::new("vlen-bytes"),
                    _ => ExtensionObject::with_configuration(
                        "bytes",
                        json!({"endian": "little"}).as_object().unwrap().clone(),
                    ),
                }));
            }
            kinds.sort_by_key(|(k, _)| *k);
            let mut seen = false;
            kinds.retain(|(k, _)| *k != 1 || !std::mem::replace(&mut seen, true));
            metadata = kinds.into_iter().map(|(_, m)| m).collect();
        }
        let Ok(chain) = CodecChain::from_metadata(&metadata, decoded.clone(), &registry) else {
            return Ok(());
        };
        // What the chain writes back must build again, as the same chain.
        let again = CodecChain::from_metadata(&chain.to_metadata(), decoded.clone(), &registry)
            .expect("a chain's own metadata builds");
        prop_assert_eq!(again.to_metadata(), chain.to_metadata());
        let Some(size) = decoded.fixed_size() else { return Ok(()) };
        let input = elements(&data_type, (size as usize) / data_type.fixed_size().unwrap_or(1), seed);
        // Random stored bytes: an error or a chunk of the right size.
        if let Ok(out) = chain.decode(bytes::Bytes::from(input.clone())) {
            prop_assert_eq!(out.as_fixed().map(|b| b.len() as u64), Some(size));
        }
        if let Ok(encoded) = chain.encode(ArrayBytes::fixed(input)) {
            match chain.decode(encoded.clone()) {
                Ok(back) => {
                    prop_assert_eq!(back.as_fixed().map(|b| b.len() as u64), Some(size));
                }
                // A lossy codec may change what an earlier codec wrote beyond what that codec
                // can decode: a typed error naming the earlier codec, never wrong data.
                Err(err) => prop_assert!(
                    refused_after_a_lossy_codec(&chain, &err),
                    "{:?} does not decode what it encoded: {err:?}",
                    chain.to_metadata()
                ),
            }
        }
    }
}

/// The case the property test above found: `bitround` rounds an encoded value (here -327,690
/// as an unsigned 32-bit number, to 2 significant bits) so far that
/// `numcodecs.fixedscaleoffset` cannot scale it back into `int16`. Decoding is then a typed
/// element error, not a wrapped or clamped value.
#[test]
fn a_lossy_codec_can_leave_a_chunk_undecodable_with_a_typed_error() {
    let config = |name: &str, value: Value| {
        ExtensionObject::with_configuration(name, value.as_object().unwrap().clone())
    };
    let metadata = [
        config(
            "numcodecs.fixedscaleoffset",
            json!({"scale": 10, "offset": 1, "dtype": "<i2", "astype": "<i4"}),
        ),
        config("bitround", json!({"keepbits": 2})),
        config("bytes", json!({"endian": "little"})),
    ];
    let decoded = ChunkRepresentation::try_new(
        vec![2],
        DataType::Int16,
        FillValue::default_for(&DataType::Int16),
    )
    .unwrap();
    let chain = CodecChain::from_metadata(&metadata, decoded, &default_registry()).unwrap();
    let input: Vec<u8> = [-32768i16, 5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let encoded = chain.encode(ArrayBytes::fixed(input)).unwrap();
    let err = chain.decode(encoded).unwrap_err();
    assert!(names_an_invalid_element(&err), "{err}");
    assert!(has_lossy_codec(&chain));
    assert!(refused_after_a_lossy_codec(&chain, &err));
}

/// The second case the property test found: `numcodecs.packbits` keeps its padding count in
/// the first byte it writes, and `bitround` after it rounds that count (7 for one boolean) to
/// 8. Decoding is then a typed corrupt-chunk error from `numcodecs.packbits`.
#[test]
fn a_lossy_codec_after_packbits_leaves_a_typed_corrupt_chunk_error() {
    let metadata = [
        ExtensionObject::new("numcodecs.packbits"),
        ExtensionObject::with_configuration(
            "bitround",
            json!({"keepbits": 2}).as_object().unwrap().clone(),
        ),
        ExtensionObject::with_configuration(
            "bytes",
            json!({"endian": "little"}).as_object().unwrap().clone(),
        ),
    ];
    let decoded = ChunkRepresentation::try_new(
        vec![],
        DataType::Bool,
        FillValue::default_for(&DataType::Bool),
    )
    .unwrap();
    let chain = CodecChain::from_metadata(&metadata, decoded, &default_registry()).unwrap();
    let encoded = chain.encode(ArrayBytes::fixed(vec![1])).unwrap();
    let err = chain.decode(encoded).unwrap_err();
    assert!(
        matches!(&err, zarr_codecs::Error::Corrupt { codec, .. } if codec == "numcodecs.packbits"),
        "{err:?}"
    );
    assert!(refused_after_a_lossy_codec(&chain, &err));
    // Without the lossy codec, the same chunk decodes.
    let plain = CodecChain::from_metadata(
        &[metadata[0].clone(), metadata[2].clone()],
        ChunkRepresentation::try_new(
            vec![],
            DataType::Bool,
            FillValue::default_for(&DataType::Bool),
        )
        .unwrap(),
        &default_registry(),
    )
    .unwrap();
    let back = plain
        .decode(plain.encode(ArrayBytes::fixed(vec![1])).unwrap())
        .unwrap();
    assert_eq!(back.as_fixed().unwrap().as_ref(), &[1]);
}
