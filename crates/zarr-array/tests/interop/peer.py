#!/usr/bin/env python3
"""The Python side of the live interoperability tests (crates/zarr-array/tests/interop.rs).

Usage:
  peer.py matrix               print the test matrix (JSON) on stdout: every group and array
                               case with its metadata and the regions to write, no values
  peer.py write DIR            write the matrix into a fresh store at DIR with zarr-python
                               (and tensorstore for the cases marked so), then DIR/manifest.json
                               with the expected values of every array; the root's metadata
                               is then consolidated
  peer.py write-v2 DIR         write Zarr v2 arrays and groups with zarr-python
                               (zarr_format=2: every numpy type it stores, both byte orders,
                               order F, blosc/zstd/gzip/zlib, both key separators, missing and
                               edge chunks, strings and bytes, consolidated metadata), then
                               DIR/manifest.json with each array's expected values (fixed-size
                               types: the little-endian bytes in hex)
  peer.py write-struct DIR     write structured (record) arrays with zarr-python (flat,
                               nested with datetime/complex/bool fields, fill values, missing
                               chunks; Zarr v3, and v2 in both byte orders), then
                               DIR/manifest.json with each array's packed little-endian
                               records in hex
  peer.py read-struct DIR      read the arrays DIR/manifest.json names (written by the Rust
                               crate) and print their records and fill values in hex (JSON),
                               little-endian
  peer.py compare-v2 THEIRS OURS
                               open every node of THEIRS/manifest.json (from write-v2) in
                               OURS, the Zarr v2 copy the Rust crate wrote, and compare
                               .zarray, attributes, fill value and values with zarr-python's
                               own (and read the arrays tensorstore's v2 driver can with it),
                               and OURS/.zmetadata with zarr-python's; print the problems
                               (JSON)
  peer.py vlen-array DIR       write Zarr v2 ragged arrays (dtype |O, numcodecs' VLenArray
                               object codec, as zarr-python 2 wrote them; zarr-python 3 cannot)
                               with numcodecs into DIR, then DIR/manifest.json with each
                               array's elements (hex of the items' bytes, null where missing)
  peer.py vlen-array-read DIR  decode the chunks of the arrays DIR/manifest.json names
                               (written by the Rust crate) with numcodecs and print each
                               array's elements as numcodecs decodes them (JSON)
  peer.py ndarray-write DIR    write arrays of the zarr-extensions `ndarray` data type with
                               zarr-python and zarr-vlen-ndarray (the `vlen-ndarray` codec;
                               bool, integer, float16/64, complex scalars; 1 to 3 element
                               dimensions; zstd, gzip, sharded; regions never written), then
                               DIR/manifest.json with each element's shape and little-endian
                               bytes in hex
  peer.py ndarray-read DIR     read the arrays DIR/manifest.json names (written by the Rust
                               crate) with zarr-vlen-ndarray and print each element's shape
                               and bytes (JSON)
  peer.py consolidated-check DIR FORMAT PATH...
                               open DIR from its consolidated metadata (Zarr v FORMAT) with
                               zarr-python: it must list exactly the PATHs, each node equal
                               to its own documents and values; print the problems and each
                               node's recorded attributes (and shape) as JSON
  peer.py kerchunk-hdf5 DIR    write DIR/data.h5 with h5py (integers, floats of both byte
                               orders, float16, complex, bool, fixed-length bytes, UTF-8
                               strings, a scalar; chunked with edge chunks, gzip, shuffle,
                               chunks never written, contiguous; nested groups with
                               attributes), index it with kerchunk into DIR/refs.json
                               (absolute URL) and DIR/refs-relative.json (relative URL), and
                               write DIR/manifest.json with each dataset's values
  peer.py kerchunk-parquet DIR turn kerchunk-hdf5's DIR/refs.json into the Parquet reference
                               set DIR/refs.parq (kerchunk.df.refs_to_dataframe, fastparquet,
                               4 references per file) and DIR/refs-relative.json into
                               DIR/refs-relative.parq (fsspec's LazyReferenceMapper, pyarrow,
                               7 per file); check that fsspec reads back every reference of
                               the JSON sets
  peer.py n5-write DIR         write an N5 container at DIR with tensorstore's N5 driver (every
                               N5 data type; raw, gzip, zlib, bzip2, xz, blosc and zstd
                               blocks; edge blocks; blocks never written; nested groups with
                               attributes), then DIR/manifest.json with each dataset's values
                               in C order of its N5 dimensions
  peer.py n5-read DIR          open every dataset DIR/manifest.json names (an N5 container
                               written by the Rust crate) with tensorstore's N5 driver and
                               compare its values; print one line per dataset
  peer.py references-render IN OUT
                               resolve the reference set IN with fsspec's ReferenceFileSystem
                               (Jinja templates and generators on) and write every key's
                               reference to OUT (inline values as base64)
  peer.py references-read REFS PATH...
                               open the reference set REFS (written by the Rust crate) with
                               fsspec's ReferenceFileSystem and zarr-python, and print the
                               root's attributes and each array's values (JSON: path ->
                               little-endian hex, or strings)
  peer.py verify DIR MANIFEST  open every node MANIFEST lists (written by the Rust crate) with
                               zarr-python, and with tensorstore where the entry asks for it,
                               and compare exactly; if the root has consolidated metadata,
                               open the hierarchy from it and compare each node with its own
                               documents; exit 1 listing every mismatch
  peer.py zip-write DIR        write a small hierarchy into zip archives in DIR: with
                               zarr-python's ZipStore (stored, and deflated), and as a
                               directory store zipped by zipfile below a folder (deflated,
                               ZIP64 records, directory entries)
  peer.py zip-read ZIP [--added]
                               check every CRC of ZIP (zipfile), open it with zarr-python's
                               ZipStore and compare that hierarchy (and /added); exit 1 on a
                               difference
  peer.py zfp-write DIR        write arrays compressed by numcodecs' ZFPY (zfpy 1.0.1) with
                               zarr-python, Zarr v3 and v2, then DIR/manifest.json with each
                               array's input values and the values zarr-python reads back
                               (little-endian hex), and for each the chunks libzfp writes
                               without a header (what the `zfp` codec of zarrs stores)
  peer.py selection-write DIR  write arrays (plain and sharded) with zarr-python, read
                               orthogonal, coordinate and block selections of them, apply
                               orthogonal and coordinate writes to copies, then
                               DIR/manifest.json with the selections and zarr-python's values

Values in manifests, one per element in C order:
  bool -> true/false; integers -> JSON integers;
  floats -> a JSON number (finite), "Infinity", "-Infinity", "NaN" (only the canonical quiet
  NaN of the type), or "0x..." (the IEEE bits, any other NaN); complex -> [re, im];
  string -> a JSON string; bytes -> the bytes in hex ("00ff").
Floats are compared bit for bit, so -0.0 != 0.0 and NaN payloads count.

The pinned versions (xtask/requirements-test.txt) are checked at start-up.
"""

from __future__ import annotations

import json
import math
import os
import sys
import traceback
import warnings
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np

PINS = {"zarr": "3.1.6", "tensorstore": "0.1.86", "numcodecs": "0.16.6", "numpy": "2.4.6",
        # The zarr-extensions `cast_value` codec for zarr-python (a `zarr.codecs` plugin).
        "cast-value": "0.2.1",
        # numcodecs' ZFPY (zfp); 1.0.1.post0 breaks `import numcodecs` (its version string).
        "zfpy": "1.0.1"}
for _pkg, _want in PINS.items():
    try:
        _have = importlib_metadata.version(_pkg)
    except importlib_metadata.PackageNotFoundError:
        sys.exit(f"peer.py: {_pkg}=={_want} is required but not installed")
    if _have != _want:
        sys.exit(f"peer.py: {_pkg}=={_want} is required but {_have} is installed")

import tensorstore as ts  # noqa: E402
import zarr  # noqa: E402
from zarr.storage import LocalStore  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")

ZP = f"zarr-python {zarr.__version__}"
TS = f"tensorstore {importlib_metadata.version('tensorstore')}"

# ---------------------------------------------------------------------------
# Data types and the JSON form of values
# ---------------------------------------------------------------------------

NUMPY = {
    "bool": "?",
    "int8": "i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint8": "u1",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
}
# The variable-length data types: zarr-python writes bytes as "variable_length_bytes"; we
# write the registered name "bytes", which zarr-python reads too.
VLEN = {"string", "bytes", "variable_length_bytes"}
CANONICAL_NAN = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}
UINT = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}


def dtype_of(data_type: str) -> np.dtype:
    return np.dtype(NUMPY[data_type])


def is_vlen(data_type: str) -> bool:
    return data_type in VLEN


def zdtype_of(data_type: str) -> Any:
    """The zarr-python data type to create an array with."""
    from zarr.core.dtype import VariableLengthBytes, VariableLengthUTF8

    if data_type == "string":
        return VariableLengthUTF8()
    if data_type in ("bytes", "variable_length_bytes"):
        return VariableLengthBytes()
    return dtype_of(data_type)


def enc_vlen(x: Any) -> str:
    """A string or bytes element's JSON form: the string, or the bytes in hex."""
    if isinstance(x, (bytes, np.bytes_)):
        return bytes(x).hex()
    if isinstance(x, str):
        return str(x)
    raise TypeError(f"not a string or bytes element: {x!r}")


def dec_vlen_values(values: list[Any], data_type: str) -> list[Any]:
    if not all(isinstance(v, str) for v in values):
        raise ValueError("string and bytes values must be JSON strings")
    return list(values) if data_type == "string" else [bytes.fromhex(v) for v in values]


def dec_vlen_fill(v: Any, data_type: str) -> Any:
    """A string or bytes fill value from its metadata form (bytes: base64)."""
    import base64

    if data_type == "string":
        if not isinstance(v, str):
            raise ValueError(f"bad string fill value {v!r}")
        return v
    if isinstance(v, list):
        return bytes(v)
    return base64.b64decode(v, validate=True)


def float_bits(x: Any, dtype: np.dtype) -> int:
    return int(np.array(x, dtype=dtype).view(UINT[dtype.itemsize]))


def enc_float(x: Any, dtype: np.dtype) -> Any:
    f = float(x)
    if math.isnan(f):
        bits = float_bits(x, dtype)
        if bits == CANONICAL_NAN[dtype.itemsize]:
            return "NaN"
        return f"0x{bits:0{2 * dtype.itemsize}x}"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def enc_scalar(x: Any, dtype: np.dtype) -> Any:
    kind = dtype.kind
    if kind == "b":
        return bool(x)
    if kind in "iu":
        return int(x)
    if kind == "f":
        return enc_float(x, dtype)
    if kind == "c":
        part = np.dtype(f"<f{dtype.itemsize // 2}")
        return [enc_float(np.real(x), part), enc_float(np.imag(x), part)]
    raise TypeError(f"no JSON form for {dtype}")


def enc_values(a: np.ndarray) -> list[Any]:
    return [enc_scalar(v, a.dtype) for v in np.asarray(a).reshape(-1)]


def dec_float_bits(v: Any, dtype: np.dtype, exact: bool = True) -> int:
    if isinstance(v, str):
        if v == "NaN":
            return CANONICAL_NAN[dtype.itemsize]
        if v == "Infinity":
            return float_bits(np.inf, dtype)
        if v == "-Infinity":
            return float_bits(-np.inf, dtype)
        if v.startswith("0x"):
            return int(v, 16)
        raise ValueError(f"bad float value {v!r}")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"bad float value {v!r}")
    bits = float_bits(v, dtype)
    if exact and float(np.array(bits, dtype=UINT[dtype.itemsize]).view(dtype)) != float(v):
        raise ValueError(f"{v!r} is not exactly representable as {dtype}")
    return bits


def dec_values(
    values: list[Any], dtype: np.dtype, shape: list[int], exact: bool = True
) -> np.ndarray:
    """Turn JSON values into an array of `dtype` (little-endian), bit-exact for floats.

    With `exact`, a JSON number must be exactly representable (values in manifests);
    without, it is rounded to the nearest value as the spec says for fill values."""
    n = int(np.prod(shape, dtype=np.int64))
    if len(values) != n:
        raise ValueError(f"{len(values)} values for shape {shape}")
    kind = dtype.kind
    if kind == "b":
        if not all(isinstance(v, bool) for v in values):
            raise ValueError("bool values must be JSON booleans")
        out = np.array(values, dtype=dtype)
    elif kind in "iu":
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise ValueError("integer values must be JSON integers")
        out = np.array(values, dtype=dtype)
    elif kind == "f":
        bits = [dec_float_bits(v, dtype, exact) for v in values]
        out = np.array(bits, dtype=UINT[dtype.itemsize]).view(dtype)
    elif kind == "c":
        part = np.dtype(f"<f{dtype.itemsize // 2}")
        bits = []
        for v in values:
            if not (isinstance(v, list) and len(v) == 2):
                raise ValueError(f"complex value must be [re, im], got {v!r}")
            bits += [dec_float_bits(v[0], part, exact), dec_float_bits(v[1], part, exact)]
        out = np.array(bits, dtype=UINT[part.itemsize]).view(dtype)
    else:
        raise TypeError(f"no JSON form for {dtype}")
    return out.reshape(shape)


def dec_fill(v: Any, dtype: np.dtype) -> Any:
    """A fill value from its JSON form (numbers round to the nearest value)."""
    return dec_values([v], dtype, [1], exact=False)[0]


def canon(x: Any) -> str:
    return json.dumps(x, sort_keys=True, allow_nan=False, ensure_ascii=False)


def bits_of(a: np.ndarray) -> np.ndarray:
    """A little-endian byte view of `a` for bitwise comparison (one row per element)."""
    a = np.ascontiguousarray(a)
    le = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return np.frombuffer(le.tobytes(), dtype=np.uint8).reshape(-1, max(a.dtype.itemsize, 1))


# ---------------------------------------------------------------------------
# The matrix
# ---------------------------------------------------------------------------


def bytes_le() -> dict[str, Any]:
    return {"name": "bytes", "configuration": {"endian": "little"}}


def bytes_be() -> dict[str, Any]:
    return {"name": "bytes", "configuration": {"endian": "big"}}


def transpose(*order: int) -> dict[str, Any]:
    return {"name": "transpose", "configuration": {"order": list(order)}}


def gzip(level: int) -> dict[str, Any]:
    return {"name": "gzip", "configuration": {"level": level}}


def zstd(level: int, checksum: bool = False) -> dict[str, Any]:
    return {"name": "zstd", "configuration": {"level": level, "checksum": checksum}}


def blosc(cname: str, clevel: int, shuffle: str, typesize: int, blocksize: int = 0) -> dict:
    return {
        "name": "blosc",
        "configuration": {
            "cname": cname,
            "clevel": clevel,
            "shuffle": shuffle,
            "typesize": typesize,
            "blocksize": blocksize,
        },
    }


CRC32C = {"name": "crc32c"}


def sharding(
    chunk_shape: list[int],
    codecs: list[dict[str, Any]],
    index_codecs: list[dict[str, Any]] | None = None,
    location: str = "end",
) -> dict[str, Any]:
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": chunk_shape,
            "codecs": codecs,
            "index_codecs": index_codecs or [bytes_le(), CRC32C],
            "index_location": location,
        },
    }


def key(name: str, separator: str) -> dict[str, Any]:
    return {"name": name, "configuration": {"separator": separator}}


DEFAULT_KEYS = key("default", "/")


def whole(shape: list[int]) -> list[list[int]]:
    return [[0, n] for n in shape]


def build_matrix() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []

    def group(path: str, attributes: dict[str, Any]) -> None:
        cases.append({"node_type": "group", "path": path, "attributes": attributes})

    def array(
        path: str,
        data_type: str,
        shape: list[int],
        chunks: list[int],
        fill: Any,
        codecs: list[dict[str, Any]] | None,
        description: str,
        *,
        writer: str = "zarr-python",
        keys: dict[str, Any] = DEFAULT_KEYS,
        writes: list[list[list[int]]] | None = None,
        dims: list[str | None] | None = None,
        attributes: dict[str, Any] | None = None,
        peer_bugs: dict[str, str] | None = None,
        pattern: str | None = None,
    ) -> None:
        # Codec cases get compressible values, so compressors really compress (random data
        # would make c-blosc store most chunks uncompressed); the others get random values
        # with special floats.
        if pattern is None:
            pattern = "smooth" if path.startswith("codec/") else "random"
        cases.append(
            {
                "node_type": "array",
                "path": path,
                "writer": writer,
                "data_type": data_type,
                "shape": shape,
                "chunk_shape": chunks,
                "fill_value": fill,
                "codecs": codecs,
                "chunk_key_encoding": keys,
                "writes": [whole(shape)] if writes is None else writes,
                "dimension_names": dims,
                "attributes": attributes or {},
                "description": description,
                "values_pattern": pattern,
                # Peers that cannot read this case correctly, and why: they are left out of
                # its checks (and said so), the other peer still checks it.
                "peer_bugs": peer_bugs or {},
            }
        )

    group(
        "",
        {
            "title": "zarr interop matrix",
            "unicode": "héllo wörld ✓ 🦀 日本語",
            "numbers": [0, -1, 1.5, -0.0, 1e300, 2**64 - 1, -(2**63)],
            "nested": {"list": [1, None, True, "x", {"deep": []}], "empty": {}},
            "null": None,
        },
    )

    # -- every core data type ------------------------------------------------------------
    group("dtype", {"what": "one array per core data type"})
    fills = {
        "bool": True,
        "int8": -7,
        "int16": -300,
        "int32": 123456,
        "int64": -(2**40),
        "uint8": 200,
        "uint16": 65000,
        "uint32": 4000000000,
        "uint64": 2**64 - 1,
        "float16": 1.5,
        "float32": -3.25,
        "float64": 2.5e-300,
        "complex64": [1.0, 2.0],
        "complex128": ["NaN", "-Infinity"],
    }
    # Shape [10,7], chunks [4,3]: edge chunks on both axes; rows 8-9 and column 6 are left
    # unwritten except element (9,6), so chunks (2,0), (2,1), (0,2), (1,2) are missing and the
    # edge chunk (2,2) is partly written.
    dtype_writes = [[[0, 8], [0, 6]], [[9, 10], [6, 7]]]
    for dt, fill in fills.items():
        array(
            f"dtype/{dt}",
            dt,
            [10, 7],
            [4, 3],
            fill,
            [bytes_le(), zstd(1)],
            f"{dt} [10,7] chunks [4,3], bytes little + zstd 1, missing and partial edge chunks",
            writes=dtype_writes,
        )
        if dtype_of(dt).itemsize > 1:
            array(
                f"dtype/{dt}_be",
                dt,
                [10, 7],
                [4, 3],
                fill,
                [bytes_be()],
                f"{dt} [10,7] chunks [4,3], bytes big, no compression",
                writes=dtype_writes,
            )

    # -- fill values -----------------------------------------------------------------------
    group("fill", {"what": "fill values; chunks 2 and 3 are never written"})
    fill_cases = [
        ("float16_nan", "float16", "NaN"),
        ("float32_nan", "float32", "NaN"),
        ("float64_nan", "float64", "NaN"),
        ("float16_inf", "float16", "Infinity"),
        ("float32_inf", "float32", "Infinity"),
        ("float64_inf", "float64", "Infinity"),
        ("float16_neg_inf", "float16", "-Infinity"),
        ("float32_neg_inf", "float32", "-Infinity"),
        ("float64_neg_inf", "float64", "-Infinity"),
        ("float64_neg_zero", "float64", -0.0),
        ("float32_subnormal", "float32", 1e-45),
        ("complex64_inf_nan", "complex64", ["Infinity", "NaN"]),
        ("complex128_neg_zero", "complex128", [-0.0, 0.5]),
        ("int8_min", "int8", -128),
        ("int64_min", "int64", -(2**63)),
        ("uint64_max", "uint64", 2**64 - 1),
        ("bool_false", "bool", False),
    ]
    for name, dt, fill in fill_cases:
        # zarr-python 3.1.6 treats a complex element as equal to a complex fill value when
        # both have a NaN part, so a chunk whose elements all have a NaN part is dropped as
        # "empty" (data loss; see docs/interop.md). Writing [0, 4) keeps a complete number in
        # every written chunk of the complex NaN-fill case.
        end = 4 if dt.startswith("complex") else 3
        array(
            f"fill/{name}",
            dt,
            [7],
            [2],
            fill,
            [bytes_le()],
            f"{dt} [7] chunks [2], fill {fill!r}; only [0,{end}) written",
            writes=[[[0, end]]],
        )
    # zarr-python 3.1.6 cannot write a hex fill value (it writes "NaN" for any NaN), so the
    # hex cases come from tensorstore, which writes them.
    f16_hex_bug = {
        "zarr-python": 'zarr-python 3.1.6 reads a float16 "0x..." NaN fill value as the '
        "canonical NaN 0x7e00, losing the payload (float32 and float64 keep it)"
    }
    for name, dt, fill, bugs in (
        ("hex_nan_payload_float32", "float32", "0x7fc00001", None),
        ("hex_neg_nan_float64", "float64", "0xfff8000000000000", None),
        ("hex_signalling_nan_float64", "float64", "0x7ff0000000000001", None),
        ("hex_nan_payload_float16", "float16", "0x7e01", f16_hex_bug),
    ):
        array(
            f"fill/{name}",
            dt,
            [7],
            [2],
            fill,
            [bytes_le()],
            f"{dt} [7] chunks [2], hex fill {fill} (written by tensorstore); only [0,3) written",
            writer="tensorstore",
            writes=[[[0, 3]]],
            peer_bugs=bugs,
        )

    # -- codecs ----------------------------------------------------------------------------
    group("codec", {"what": "codecs and codec chains"})
    array("codec/transpose_2d", "int16", [5, 7], [2, 4], 9, [transpose(1, 0), bytes_le()],
          "int16 [5,7] chunks [2,4], transpose [1,0] + bytes little")
    array("codec/transpose_3d_120_be", "float64", [3, 4, 5], [2, 3, 4], -1.0,
          [transpose(1, 2, 0), bytes_be()],
          "float64 [3,4,5] chunks [2,3,4], transpose [1,2,0] + bytes big")
    array("codec/transpose_3d_201_zstd", "uint32", [4, 3, 5], [3, 2, 2], 0,
          [transpose(2, 0, 1), bytes_le(), zstd(3)],
          "uint32 [4,3,5] chunks [3,2,2], transpose [2,0,1] + bytes little + zstd 3",
          writes=[[[0, 4], [0, 3], [0, 4]]])
    for level in (0, 1, 6, 9):
        array(f"codec/gzip_{level}", "float64", [500], [160], 0.0, [bytes_le(), gzip(level)],
              f"float64 [500] chunks [160], bytes little + gzip {level}")
    for name, level, checksum in (("neg5", -5, False), ("0", 0, False), ("3", 3, False),
                                  ("19", 19, False), ("checksum", 3, True)):
        array(f"codec/zstd_{name}", "int32", [400], [160], -1, [bytes_le(), zstd(level, checksum)],
              f"int32 [400] chunks [160], bytes little + zstd level {level} checksum {checksum}")
    for cname in ("lz4", "lz4hc", "blosclz", "zstd", "zlib"):
        for shuffle in ("noshuffle", "shuffle", "bitshuffle"):
            array(f"codec/blosc_{cname}_{shuffle}", "int32", [1000], [400], 0,
                  [bytes_le(), blosc(cname, 5, shuffle, 4)],
                  f"int32 [1000] chunks [400], bytes little + blosc {cname} 5 {shuffle} typesize 4")
    array("codec/blosc_clevel0", "int32", [96], [40], 0,
          [bytes_le(), blosc("lz4", 0, "shuffle", 4)],
          "blosc clevel 0: chunks are stored uncompressed (memcpyed flag) with shuffle set")
    array("codec/blosc_blocksize", "float64", [2000], [1024], 0.0,
          [bytes_le(), blosc("lz4", 9, "shuffle", 4, 256)],
          "float64, blosc lz4 typesize 4 (not the item size) blocksize 256 (several blocks)")
    array("codec/blosc_uint8_bitshuffle", "uint8", [3000], [1024], 0,
          [bytes_le(), blosc("zstd", 5, "bitshuffle", 1)], "uint8, blosc zstd bitshuffle")
    array("codec/blosc_float16_shuffle", "float16", [900], [512], 0.0,
          [bytes_le(), blosc("blosclz", 9, "shuffle", 2)], "float16, blosc blosclz shuffle")
    array("codec/blosc_complex128_bitshuffle", "complex128", [300], [128], [0.0, 0.0],
          [bytes_be(), blosc("zstd", 3, "bitshuffle", 16)],
          "complex128, bytes big + blosc zstd bitshuffle typesize 16")
    array("codec/blosc_bool", "bool", [1000], [512], False,
          [bytes_le(), blosc("lz4", 5, "noshuffle", 1)], "bool, blosc lz4 noshuffle")
    array("codec/crc32c", "uint32", [10], [4], 7, [bytes_le(), CRC32C],
          "uint32, bytes little + crc32c", writes=[[[0, 4]], [[8, 10]]])
    array("codec/gzip_crc32c", "int16", [3, 4], [2, 2], 0, [bytes_le(), gzip(5), CRC32C],
          "int16 [3,4] chunks [2,2], bytes little + gzip 5 + crc32c")
    array("codec/transpose_be_zstd_crc32c", "float32", [4, 5], [3, 2], 0.5,
          [transpose(1, 0), bytes_be(), zstd(1), CRC32C],
          "float32 [4,5] chunks [3,2], transpose + bytes big + zstd 1 + crc32c")
    array("codec/transpose_blosc_crc32c", "int64", [5, 4, 3], [2, 4, 2], -9,
          [transpose(2, 1, 0), bytes_le(), blosc("zstd", 5, "shuffle", 8), CRC32C],
          "int64 [5,4,3] chunks [2,4,2], transpose [2,1,0] + bytes little + blosc zstd "
          "shuffle + crc32c", writes=[[[0, 4], [0, 4], [0, 3]]])
    array("codec/zstd_gzip", "uint16", [33], [10], 1, [bytes_le(), zstd(2), gzip(1)],
          "uint16, two compressors in a row: bytes little + zstd 2 + gzip 1")
    array("codec/complex64_transpose_gzip", "complex64", [3, 6], [2, 4], [0.0, -1.0],
          [transpose(1, 0), bytes_be(), gzip(4)],
          "complex64 [3,6] chunks [2,4], transpose + bytes big + gzip 4")

    # -- numcodecs codecs in v3 metadata (zarr.codecs.numcodecs); tensorstore has none -------
    no_ts = {"tensorstore": "tensorstore reads no numcodecs.* codecs"}
    no_ts_cast = {"tensorstore": "tensorstore 0.1.86 has no cast_value codec"}

    def cast(data_type: str, **configuration: Any) -> dict[str, Any]:
        return {"name": "cast_value", "configuration": {"data_type": data_type, **configuration}}

    def nc(name: str, **configuration: Any) -> dict[str, Any]:
        return {"name": f"numcodecs.{name}", "configuration": configuration}

    array("codec/numcodecs_delta_i4", "int32", [50], [16], -3,
          [nc("delta", dtype="<i4"), bytes_le(), zstd(1)],
          "int32, numcodecs.delta + zstd", peer_bugs=no_ts)
    # (Not big-endian: zarr-python 3.1.6 does not read back its own numcodecs filters before
    # a big-endian `bytes` codec: they view the byte-swapped buffer as little-endian.)
    array("codec/numcodecs_delta_u2_to_i4", "uint16", [7, 6], [3, 4], 5,
          [nc("delta", dtype="<u2", astype="<i4"), bytes_le()],
          "uint16, numcodecs.delta widening to int32", peer_bugs=no_ts,
          writes=[[[0, 3], [0, 6]], [[6, 7], [4, 6]]])
    array("codec/numcodecs_fixedscaleoffset_i4", "int32", [40], [16], 0,
          [nc("fixedscaleoffset", offset=1000, scale=1, dtype="<i4", astype="<i8"),
           bytes_le()],
          "int32, numcodecs.fixedscaleoffset (lossless: scale 1) to int64", peer_bugs=no_ts)
    array("codec/numcodecs_astype_i2_i4", "int16", [30], [8], -1,
          [nc("astype", encode_dtype="<i4", decode_dtype="<i2"), bytes_le(), gzip(1)],
          "int16, numcodecs.astype to int32 + gzip", peer_bugs=no_ts)
    array("codec/numcodecs_shuffle_zstd", "uint32", [300], [128], 0,
          [bytes_le(), nc("shuffle", elementsize=4), zstd(1)],
          "uint32, numcodecs.shuffle + zstd", peer_bugs=no_ts)
    array("codec/numcodecs_lz4", "float32", [500], [200], 0.0,
          [bytes_le(), nc("lz4", acceleration=1)], "float32, numcodecs.lz4", peer_bugs=no_ts)
    array("codec/numcodecs_lz4_accel", "int64", [3, 50], [2, 32], 9,
          [transpose(1, 0), bytes_le(), nc("lz4", acceleration=8)],
          "int64 transposed, numcodecs.lz4 acceleration 8", peer_bugs=no_ts)
    array("codec/numcodecs_checksums", "uint16", [20], [8], 1,
          [bytes_le(), nc("crc32"), nc("adler32", location="end"), nc("crc32c"),
           nc("fletcher32")],
          "uint16, numcodecs.crc32 (start) + adler32 (end) + crc32c + fletcher32",
          peer_bugs=no_ts)
    array("codec/numcodecs_zstd_gzip", "int16", [60], [25], 2,
          [bytes_le(), nc("zstd", level=2, checksum=True), nc("gzip", level=3)],
          "int16, numcodecs.zstd (checksum) + numcodecs.gzip", peer_bugs=no_ts)
    array("codec/numcodecs_blosc_auto", "uint16", [300], [128], 0,
          [bytes_le(), nc("blosc", cname="zstd", clevel=3, shuffle=-1, blocksize=0)],
          "uint16, numcodecs.blosc with numcodecs' automatic shuffle", peer_bugs=no_ts)
    array("codec/numcodecs_blosc_zlib", "float64", [40], [16], 0.5,
          [bytes_le(), nc("blosc", cname="lz4", clevel=9, shuffle=1, blocksize=0), nc("zlib", level=1)],
          "float64, numcodecs.blosc + numcodecs.zlib", peer_bugs=no_ts)
    array("codec/numcodecs_bz2", "int32", [3, 300], [2, 128], -1,
          [bytes_le(), nc("bz2", level=5)], "int32 [3,300], numcodecs.bz2 level 5",
          peer_bugs=no_ts)
    array("codec/numcodecs_lzma_default", "float64", [500], [200], 0.0,
          [bytes_le(), nc("lzma")], "float64, numcodecs.lzma (.xz, CRC-64, preset 6)",
          peer_bugs=no_ts)
    array("codec/numcodecs_lzma_xz_sha256", "uint32", [90], [40], 3,
          [bytes_le(), nc("lzma", format=1, check=10, preset=9 | 0x80000000)],
          "uint32, numcodecs.lzma .xz with SHA-256 at preset 9 extreme", peer_bugs=no_ts)
    array("codec/numcodecs_lzma_alone", "int16", [7, 9], [4, 4], 0,
          [bytes_le(), nc("lzma", format=2, preset=1)],
          "int16 [7,9], numcodecs.lzma legacy .lzma container", peer_bugs=no_ts)
    array("codec/numcodecs_lzma_raw_delta", "uint16", [300], [128], 0,
          [bytes_le(), nc("lzma", format=3,
                          filters=[{"id": 3, "dist": 2}, {"id": 33, "preset": 1}])],
          "uint16, numcodecs.lzma raw stream: delta (2 bytes) + LZMA2", peer_bugs=no_ts)
    array("codec/numcodecs_jenkins_lookup3", "int64", [40], [16], 5,
          [bytes_le(), nc("jenkins_lookup3", initval=7), zstd(1)],
          "int64, numcodecs.jenkins_lookup3 (initval 7) + zstd", peer_bugs=no_ts)
    array("codec/numcodecs_packbits", "bool", [5, 13], [3, 7], False,
          [nc("packbits"), bytes_le(), gzip(1)],
          "bool [5,13] chunks [3,7], numcodecs.packbits + gzip (padding in every chunk)",
          peer_bugs=no_ts)
    array("codec/numcodecs_pcodec", "int32", [7, 300], [4, 128], -2, [nc("pcodec")],
          "int32 [7,300], numcodecs.pcodec (defaults) in place of bytes", peer_bugs=no_ts)
    array("codec/numcodecs_pcodec_float64_classic", "float64", [500], [200], 0.0,
          [nc("pcodec", level=3, mode_spec="classic", delta_spec="none")],
          "float64, numcodecs.pcodec level 3 classic, no delta", peer_bugs=no_ts)
    array("codec/numcodecs_pcodec_uint16_consecutive_zstd", "uint16", [300], [128], 0,
          [nc("pcodec", delta_spec="try_consecutive", delta_encoding_order=2), zstd(1)],
          "uint16, numcodecs.pcodec second-order deltas + zstd", peer_bugs=no_ts)
    # (No transpose before it: zarr-python 3.1.6 hands numcodecs' array->bytes codecs the
    # transposed view, which they flatten in memory order, so it misreads its own data.)
    array("codec/numcodecs_pcodec_float16_lookback", "float16", [6, 40], [4, 16], 0.0,
          [nc("pcodec", delta_spec="try_lookback", equal_pages_up_to=100)],
          "float16 [6,40], numcodecs.pcodec lookback deltas, pages of 100", peer_bugs=no_ts)
    # The zarr-extensions `cast_value` codec through the `cast-value` plugin (zarr-python
    # only). The values are whole numbers in the target's range, so the casts are exact
    # both ways; the NaN fill of the first case goes through `scalar_map` in the unwritten
    # parts of its edge chunks.
    cast_nan = {"encode": [["NaN", -32768]], "decode": [[-32768, "NaN"]]}
    array("codec/cast_value_f8_i2_nan_map", "float64", [9, 7], [4, 3], "NaN",
          [cast("int16", scalar_map=cast_nan), bytes_le(), zstd(1)],
          "float64 as int16 via cast_value, NaN <-> -32768 by scalar_map, partial edge chunks",
          peer_bugs=no_ts_cast, pattern="integral", writes=[[[0, 7], [0, 5]], [[8, 9], [6, 7]]])
    array("codec/cast_value_i4_i1", "int32", [40], [16], -1,
          [cast("int8"), bytes_le()], "int32 as int8 via cast_value (defaults)",
          peer_bugs=no_ts_cast)
    array("codec/cast_value_u2_f4_clamp", "uint16", [6, 20], [4, 8], 7,
          [cast("float32", out_of_range="clamp"), bytes_be(), gzip(1)],
          "uint16 as float32 via cast_value (clamp), big-endian + gzip", peer_bugs=no_ts_cast)
    array("codec/cast_value_f8_f4_towards_zero", "float64", [50], [20], 0.5,
          [cast("float32", rounding="towards-zero"), bytes_le()],
          "float64 as float32 via cast_value, rounding towards zero", peer_bugs=no_ts_cast)
    array("codec/cast_value_f4_u1_wrap_sharded", "float32", [12, 8], [6, 8], 3.0,
          [sharding([3, 4], [cast("uint8", rounding="nearest-away", out_of_range="wrap"),
                             bytes_le()])],
          "float32 sharded, inner cast_value to uint8 (nearest-away, wrap)",
          peer_bugs=no_ts_cast, pattern="integral_unsigned",
          writes=[[[0, 3], [0, 8]], [[9, 12], [4, 8]]])
    array("codec/numcodecs_sharded_delta_lz4", "int32", [12, 10], [6, 10], 4,
          [sharding([3, 5], [nc("delta", dtype="<i4"), bytes_le(), nc("lz4")])],
          "int32 sharded, inner chain numcodecs.delta + bytes + numcodecs.lz4, missing inner "
          "chunks", peer_bugs=no_ts, writes=[[[0, 3], [0, 10]], [[9, 12], [5, 10]]])

    # -- chunk key encodings ---------------------------------------------------------------
    group("key", {"what": "chunk key encodings"})
    for name, enc in (("default_slash", key("default", "/")), ("default_dot", key("default", ".")),
                      ("v2_dot", key("v2", ".")), ("v2_slash", key("v2", "/"))):
        array(f"key/{name}", "int16", [5, 4], [2, 2], -1, [bytes_le()],
              f"int16 [5,4] chunks [2,2], chunk key encoding {canon(enc)}", keys=enc,
              writes=[[[0, 2], [0, 4]], [[4, 5], [2, 4]]])
        array(f"key/{name}_3d", "uint8", [3, 3, 3], [2, 2, 2], 0, [bytes_le(), zstd(1)],
              f"uint8 [3,3,3] chunks [2,2,2], chunk key encoding {canon(enc)}", keys=enc)
        array(f"key/{name}_0d", "float32", [], [], 0.0, [bytes_le()],
              f"0-d float32, chunk key encoding {canon(enc)} (key `c` or `0`)", keys=enc)

    # -- shapes ----------------------------------------------------------------------------
    group("shape", {"what": "0-d, zero-length and odd shapes"})
    array("shape/scalar", "float64", [], [], 0.0, [bytes_le(), zstd(0)], "0-d float64, written")
    array("shape/scalar_unwritten", "int32", [], [], 42, [bytes_le()],
          "0-d int32 fill 42, never written: no chunk, reads as the fill value", writes=[])
    array("shape/scalar_complex_be", "complex128", [], [], [0.0, 0.0], [bytes_be(), gzip(1)],
          "0-d complex128, bytes big + gzip")
    array("shape/empty_1d", "float32", [0], [4], 1.0, [bytes_le()],
          "float32 [0] chunks [4]: no elements", writes=[])
    array("shape/empty_2d", "int64", [3, 0], [2, 2], 5, [bytes_le(), zstd(1)],
          "int64 [3,0] chunks [2,2]: no elements", writes=[])
    array("shape/empty_first_axis", "uint16", [0, 5], [1, 5], 5, [bytes_le()],
          "uint16 [0,5]: no elements", writes=[])
    array("shape/chunk_larger_than_array", "int8", [5], [16], 3, [bytes_le()],
          "int8 [5] in one chunk of 16 (mostly outside the array)")
    array("shape/chunk_of_one", "float32", [6], [1], 0.0, [bytes_le()],
          "float32 [6] chunks [1]")
    array("shape/4d", "uint16", [3, 2, 4, 5], [2, 2, 3, 2], 7, [bytes_le(), zstd(1)],
          "uint16 4-D [3,2,4,5] chunks [2,2,3,2], partly written",
          writes=[[[0, 3], [0, 2], [0, 3], [0, 5]], [[2, 3], [1, 2], [3, 4], [4, 5]]])

    # -- nested groups ---------------------------------------------------------------------
    group("nested", {"level": 0})
    group("nested/a", {"level": 1, "tags": ["x", "y"]})
    group("nested/a/b", {})
    group("nested/a/b/c", {"level": 3, "deep": {"er": {"est": [1, [2, [3]]]}}})
    array("nested/a/values", "int32", [6], [4], 0, [bytes_le()], "an array in a group",
          attributes={"units": "m", "scale": 0.5})
    array("nested/a/b/c/image", "uint16", [4, 6], [2, 3], 0, [bytes_le(), zstd(1)],
          "an array three groups deep with dimension names and attributes",
          dims=["y", "x"], attributes={"long_name": "image ✓", "valid_range": [0, 65535]})
    array("nested/a/b/partly_named", "float32", [2, 3, 2], [2, 2, 2], 0.0, [bytes_le()],
          "dimension names with a null entry", dims=["t", None, "z"])

    # -- written by tensorstore ------------------------------------------------------------
    group("tensorstore", {"writer": "tensorstore"})
    array("tensorstore/minimal", "uint16", [10], [4], 7, None,
          "tensorstore's own minimal zarr.json (no codecs given: it picks them)",
          writer="tensorstore", writes=[[[0, 4]], [[8, 10]]])
    array("tensorstore/blosc_small_chunks", "float32", [4, 5], [2, 3], "NaN",
          [bytes_le(), blosc("lz4", 5, "shuffle", 4)],
          "float32 blosc lz4 shuffle with chunks too small to compress (memcpyed containers)",
          writer="tensorstore", writes=[[[0, 4], [0, 3]], [[0, 2], [3, 5]]])
    array("tensorstore/blosc_clevel0", "int64", [100], [64], -1,
          [bytes_le(), blosc("zstd", 0, "bitshuffle", 8)],
          "int64 blosc clevel 0 bitshuffle (memcpyed)", writer="tensorstore")
    array("tensorstore/transpose_3d", "int16", [3, 4, 5], [2, 3, 4], -32768,
          [transpose(2, 1, 0), bytes_be(), gzip(6), CRC32C],
          "int16 [3,4,5] transpose [2,1,0] + bytes big + gzip 6 + crc32c, '.' keys",
          writer="tensorstore", keys=key("default", "."))
    array("tensorstore/scalar", "float64", [], [], 0.0, None, "0-d float64, tensorstore defaults",
          writer="tensorstore")
    array("tensorstore/bool_v2_keys", "bool", [5, 3], [2, 2], False, None,
          "bool with v2 '/' keys, tensorstore defaults", writer="tensorstore",
          keys=key("v2", "/"))
    array("tensorstore/complex128_zstd_checksum", "complex128", [9], [4], ["NaN", "Infinity"],
          [bytes_le(), zstd(5, True)], "complex128, zstd with checksum", writer="tensorstore",
          writes=[[[0, 5]]])
    array("tensorstore/blosc_snappy", "int32", [1000], [400], 3,
          [bytes_le(), blosc("snappy", 5, "shuffle", 4)],
          "int32 blosc snappy shuffle (compressible values)", writer="tensorstore",
          pattern="smooth", peer_bugs={
              "zarr-python": "numcodecs 0.16.6 is built without snappy: zarr-python cannot "
              "read or write blosc snappy"})
    array("tensorstore/dimension_names", "uint8", [4, 4], [4, 2], 0, [bytes_le()],
          "dimension names written by tensorstore", writer="tensorstore", dims=["row", "col"])

    # -- sharding --------------------------------------------------------------------------
    # zarr-python writes inner chunks in Morton order, we in C order: the peers compare
    # values, never shard bytes.
    group("shard", {"what": "sharding_indexed: index location and codecs, edge and missing "
                            "shards and inner chunks, nesting"})
    # Shape [10,7], shards [4,6], inner chunks [2,3]: shards (*,1) are edge shards (columns
    # 6-11, one column inside the array: inner chunks (*,1) lie wholly outside), shards
    # (2,*) too (rows 8-11); shards (0,1), (1,1) and (2,0) are never written; shard (1,0)
    # holds two of its four inner chunks, shard (0,0) two whole and two partly written ones,
    # shard (2,1) one element.
    shard_writes = [[[0, 5], [0, 4]], [[9, 10], [6, 7]]]
    for name, index_codecs, location in (
        ("end_crc32c", [bytes_le(), CRC32C], "end"),
        ("end_no_crc32c", [bytes_le()], "end"),
        ("start_crc32c", [bytes_le(), CRC32C], "start"),
        ("start_no_crc32c", [bytes_le()], "start"),
        ("big_endian_index", [bytes_be(), CRC32C], "end"),
    ):
        array(f"shard/{name}", "int32", [10, 7], [4, 6], -1,
              [sharding([2, 3], [bytes_le(), zstd(1)], index_codecs, location)],
              f"int32 [10,7] shards [4,6] inner [2,3] (bytes + zstd), index {location} "
              f"{canon(index_codecs)}; edge and missing shards and inner chunks",
              writes=shard_writes)
    array("shard/inner_bytes_only_float64", "float64", [9, 5], [6, 4], "NaN",
          [sharding([3, 2], [bytes_le()])],
          "float64 [9,5] shards [6,4] inner [3,2], inner bytes only (special floats)",
          writes=[[[0, 7], [0, 3]]])
    array("shard/inner_big_endian_crc32c", "uint16", [8, 8], [8, 8], 3,
          [sharding([4, 2], [bytes_be(), gzip(1), CRC32C])],
          "uint16 one shard [8,8] inner [4,2]: bytes big + gzip + crc32c per inner chunk",
          writes=[[[0, 8], [0, 3]], [[5, 8], [6, 8]]])
    array("shard/1d", "uint8", [100], [32], 0, [sharding([8], [bytes_le(), zstd(3)])],
          "uint8 [100] shards [32] inner [8]: edge shard, a missing shard",
          writes=[[[0, 40]], [[97, 100]]])
    array("shard/nested", "int16", [10, 7], [8, 6], 5,
          [sharding([4, 3], [sharding([2, 3], [bytes_le(), zstd(1)])])],
          "int16 [10,7] shards [8,6] of shards [4,3] of inner chunks [2,3] (nested sharding)",
          writes=shard_writes)
    array("shard/transpose_outside", "float32", [6, 5], [4, 4], 0.5,
          [transpose(1, 0), sharding([2, 2], [bytes_le(), zstd(1)], location="start")],
          "float32 [6,5] transpose before sharding (index start)", writes=[[[0, 5], [0, 3]]])
    array("shard/tensorstore_end_crc32c", "int64", [10, 7], [4, 6], -9,
          [sharding([2, 3], [bytes_le(), zstd(1)])],
          "int64 sharded by tensorstore, index end + crc32c", writer="tensorstore",
          writes=shard_writes)
    array("shard/tensorstore_start_no_crc32c", "uint32", [10, 7], [4, 6], 7,
          [sharding([2, 3], [bytes_le(), zstd(1)], [bytes_le()], "start")],
          "uint32 sharded by tensorstore, index start without crc32c", writer="tensorstore",
          writes=shard_writes)

    # -- strings and bytes -----------------------------------------------------------------
    group("vlen", {"what": "variable-length strings and bytes (vlen-utf8, vlen-bytes)"})
    utf8, vbytes = {"name": "vlen-utf8", "configuration": {}}, {"name": "vlen-bytes",
                                                                "configuration": {}}
    # [13] chunks [3]: chunk 2 missing, chunk 3 partly written, chunk 4 (an edge chunk of
    # one element) missing.
    vlen_1d_writes = [[[0, 5]], [[11, 12]]]
    # [5,7] chunks [2,3]: chunks (1,2), (2,0), (2,1) missing, (2,2) an edge chunk partly
    # written.
    vlen_2d_writes = [[[0, 3], [0, 5]], [[4, 5], [6, 7]]]
    array("vlen/string_1d", "string", [13], [3], "", [utf8],
          "string [13] chunks [3], fill '', missing and edge chunks", writes=vlen_1d_writes)
    array("vlen/string_2d_fill", "string", [5, 7], [2, 3], "fïll 🦀", [utf8],
          "string [5,7] chunks [2,3], multi-byte fill value, missing and edge chunks",
          writes=vlen_2d_writes, dims=["y", "x"])
    array("vlen/string_zstd", "string", [40], [16], "-", [utf8, zstd(3)],
          "string [40] chunks [16], vlen-utf8 + zstd 3", writes=[[[0, 30]]])
    array("vlen/string_sharded", "string", [10, 7], [4, 6], "x",
          [sharding([2, 3], [utf8, zstd(1)])],
          "string [10,7] shards [4,6] with vlen-utf8 + zstd inner chunks", writes=shard_writes)
    array("vlen/string_scalar", "string", [], [], "", [utf8], "0-d string")
    array("vlen/bytes_1d", "variable_length_bytes", [13], [3], "", [vbytes],
          "bytes [13] chunks [3], empty fill, missing and edge chunks", writes=vlen_1d_writes)
    array("vlen/bytes_2d_fill_zstd", "variable_length_bytes", [5, 7], [2, 3], "AP96",
          [vbytes, zstd(1)], "bytes [5,7] chunks [2,3], fill 00 fe 7a, vlen-bytes + zstd",
          writes=vlen_2d_writes)
    array("vlen/bytes_sharded", "variable_length_bytes", [10, 7], [4, 6], "",
          [sharding([2, 3], [vbytes], [bytes_le()], "start")],
          "bytes [10,7] shards [4,6] index start, vlen-bytes inner chunks", writes=shard_writes)
    return cases


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def special_floats(dtype: np.dtype) -> list[int]:
    """Bit patterns every float array should hold: NaNs with payloads, infinities, zeros,
    subnormals, the extremes."""
    u = UINT[dtype.itemsize]
    info = np.finfo(dtype)
    return [
        CANONICAL_NAN[dtype.itemsize],
        CANONICAL_NAN[dtype.itemsize] | 1,  # quiet NaN with a payload
        CANONICAL_NAN[dtype.itemsize] | (1 << (8 * dtype.itemsize - 1)),  # negative NaN
        float_bits(np.inf, dtype),
        float_bits(-np.inf, dtype),
        float_bits(-0.0, dtype),
        int(np.array(info.smallest_subnormal, dtype=dtype).view(u)),
        float_bits(info.max, dtype),
        float_bits(info.min, dtype),
    ]


def make_values(data_type: str, shape: list[int], seed: int, pattern: str) -> np.ndarray:
    dtype = dtype_of(data_type)
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    kind = dtype.kind
    if pattern == "smooth":
        # Runs of four equal values on a slow saw-tooth: every compressor shrinks these.
        steps = (np.arange(n) // 4) % 61
        if kind == "b":
            out = (steps % 2).astype(bool)
        elif kind == "u":
            out = (steps * 2).astype(dtype)
        elif kind == "i":
            out = (steps * 2 - 60).astype(dtype)
        elif kind == "f":
            out = (steps * 0.25 - 7.5).astype(dtype)
        else:
            out = (steps * 0.25 - 7.5 - 1j * steps).astype(dtype)
        return out.reshape(shape)
    if pattern in ("integral", "integral_unsigned"):
        # Whole numbers from -30 (or 0) to 30 in runs of four: exact in every numeric type.
        steps = (np.arange(n) // 4) % 61
        out = (steps if pattern == "integral_unsigned" else steps - 30).astype(dtype)
        return out.reshape(shape)
    if pattern != "random":
        raise ValueError(f"unknown values pattern {pattern!r}")
    if kind == "b":
        out = rng.integers(0, 2, n).astype(bool)
    elif kind in "iu":
        info = np.iinfo(dtype)
        out = rng.integers(int(info.min), int(info.max), n, dtype=dtype, endpoint=True)
        extremes = [info.min, info.max, 0, 1]
        for i, v in enumerate(extremes[:n]):
            out[(i * 5) % n] = v
    elif kind == "f":
        out = (rng.standard_normal(n) * 1000).astype(dtype)
        specials = special_floats(dtype)
        for i, bits in enumerate(specials[: max(n // 3, 0)]):
            out[(i * 3 + 1) % n] = np.array(bits, dtype=UINT[dtype.itemsize]).view(dtype)
    elif kind == "c":
        part = np.dtype(f"<f{dtype.itemsize // 2}")
        re = make_values(f"float{part.itemsize * 8}", [n], seed + 1, pattern)
        im = make_values(f"float{part.itemsize * 8}", [n], seed + 2, pattern)[::-1]
        out = np.empty(n, dtype=dtype)
        pairs = out.view(part).reshape(n, 2)
        pairs[:, 0] = re
        pairs[:, 1] = im
    else:
        raise TypeError(data_type)
    return out.reshape(shape)


def seed_of(path: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(path)) % 2**31


def region_slices(region: list[list[int]]) -> tuple[slice, ...]:
    return tuple(slice(a, b) for a, b in region)


def make_vlen_values(data_type: str, shape: list[int], seed: int) -> np.ndarray:
    """Strings (empty, ASCII, multi-byte UTF-8, emoji, long) or bytes (empty, NUL, 0xff,
    random of any length up to 300) as an object array."""
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    pool = ["", "a", "zarr", "héllo wörld", "日本語テキスト", "🦀", "e\u0301 ✓ 🦀🦀", "\x00nul",
            "tab\tnew\nline", "Ω≈ç√∫", "x" * 300, "👩‍👩‍👧‍👦 family"]
    out = np.empty(n, dtype=object)
    for i in range(n):
        r = int(rng.integers(0, 1 << 30))
        if data_type == "string":
            out[i] = pool[r % len(pool)] if i % 5 else f"{i}:{pool[r % len(pool)]}"
        else:
            k = r % 7
            out[i] = (b"" if k == 0 else b"\x00" if k == 1 else b"\xff\x00\x01" if k == 2
                      else rng.integers(0, 256, int(r % 300), dtype=np.uint8).tobytes())
    return out.reshape(shape)


def expected_array(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(data to write, expected content): fill everywhere, data in the written regions."""
    if is_vlen(case["data_type"]):
        data = make_vlen_values(case["data_type"], case["shape"], seed_of(case["path"]))
        expected = np.empty(case["shape"], dtype=object)
        expected.reshape(-1)[:] = [dec_vlen_fill(case["fill_value"], case["data_type"])] * \
            expected.size
        for region in case["writes"]:
            s = region_slices(region)
            expected[s] = data[s]
        return data, expected
    dtype = dtype_of(case["data_type"])
    data = make_values(case["data_type"], case["shape"], seed_of(case["path"]),
                       case["values_pattern"])
    fill = dec_fill(case["fill_value"], dtype)
    expected = np.full(case["shape"], fill, dtype=dtype)
    for region in case["writes"]:
        s = region_slices(region)
        expected[s] = data[s]
    return data, expected


# ---------------------------------------------------------------------------
# write
# ---------------------------------------------------------------------------


def split_codecs(codecs: list[dict[str, Any]]) -> tuple[list, dict, list]:
    array_to_array = {"transpose", "numcodecs.delta", "numcodecs.fixedscaleoffset", "numcodecs.packbits",
                      "numcodecs.astype", "numcodecs.bitround", "numcodecs.quantize",
                      "cast_value"}
    array_to_bytes = {"bytes", "sharding_indexed", "vlen-utf8", "vlen-bytes", "numcodecs.pcodec"}
    filters, serializer, compressors = [], None, []
    for c in codecs:
        if c["name"] in array_to_array:
            filters.append(c)
        elif c["name"] in array_to_bytes:
            serializer = c
        else:
            compressors.append(c)
    if serializer is None:
        raise ValueError("no array->bytes codec")
    return filters, serializer, compressors


def zarr_python_write(root: Path, case: dict[str, Any], data: np.ndarray) -> None:
    dt = case["data_type"]
    filters, serializer, compressors = split_codecs(case["codecs"])
    arr = zarr.create_array(
        LocalStore(root),
        name=case["path"],
        shape=case["shape"],
        chunks=case["chunk_shape"],
        dtype=zdtype_of(dt),
        fill_value=(dec_vlen_fill(case["fill_value"], dt) if is_vlen(dt)
                    else dec_fill(case["fill_value"], dtype_of(dt))),
        filters=filters,
        serializer=serializer,
        compressors=compressors or None,
        chunk_key_encoding=case["chunk_key_encoding"],
        dimension_names=case["dimension_names"],
        attributes=case["attributes"],
        zarr_format=3,
    )
    for region in case["writes"]:
        s = region_slices(region)
        arr[s] = data[s]


def tensorstore_write(root: Path, case: dict[str, Any], data: np.ndarray) -> None:
    metadata: dict[str, Any] = {
        "shape": case["shape"],
        "data_type": case["data_type"],
        "chunk_grid": {"name": "regular",
                       "configuration": {"chunk_shape": case["chunk_shape"]}},
        "chunk_key_encoding": case["chunk_key_encoding"],
        "fill_value": case["fill_value"],
    }
    if case["codecs"] is not None:
        metadata["codecs"] = case["codecs"]
    if case["dimension_names"] is not None:
        metadata["dimension_names"] = case["dimension_names"]
    if case["attributes"]:
        metadata["attributes"] = case["attributes"]
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": str(root / case["path"]) + "/"},
        "metadata": metadata,
    }
    t = ts.open(spec, create=True).result()
    for region in case["writes"]:
        s = region_slices(region)
        if s:
            t[s].write(data[s]).result()
        else:
            t.write(data).result()


def cmd_write(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        sys.exit(f"peer.py write: {out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    zarr.config.set({"async.concurrency": 4})
    manifest = []
    for case in build_matrix():
        entry = dict(case)
        if case["node_type"] == "group":
            zarr.create_group(LocalStore(out), path=case["path"],
                              attributes=case["attributes"], zarr_format=3, overwrite=True)
            entry["writer"] = ZP
            manifest.append(entry)
            continue
        data, expected = expected_array(case)
        if case["writer"] == "tensorstore":
            tensorstore_write(out, case, data)
            entry["writer"] = TS
        else:
            zarr_python_write(out, case, data)
            entry["writer"] = ZP
        metadata = json.loads((out / case["path"] / "zarr.json").read_text())
        # The writer must have stored the fill value we asked for, bit for bit.
        dt = case["data_type"]
        if is_vlen(dt):
            same = (dec_vlen_fill(case["fill_value"], dt)
                    == dec_vlen_fill(metadata["fill_value"], dt))
        else:
            dtype = dtype_of(dt)
            want = bits_of(np.array([dec_fill(case["fill_value"], dtype)]))
            got = bits_of(np.array([dec_fill(metadata["fill_value"], dtype)]))
            same = np.array_equal(want, got)
        if not same:
            sys.exit(f"peer.py write: {entry['writer']} wrote fill_value "
                     f"{metadata['fill_value']!r} for {case['path']}, not {case['fill_value']!r}")
        entry["metadata"] = metadata
        entry["values"] = ([enc_vlen(v) for v in expected.reshape(-1)] if is_vlen(dt)
                           else enc_values(expected))
        canon(entry["values"])  # no bare NaN tokens
        manifest.append(entry)
    # Every array must read back through its writer as the manifest says before we hand the
    # store to the Rust side; a peer that cannot read its own output is not a useful oracle.
    problems = verify_entries(out, [
        dict(e, peers=["zarr-python", "tensorstore"] if e.get("writer") == TS else ["zarr-python"])
        for e in manifest
    ])
    if problems:
        sys.exit("peer.py write: the peers do not read back what they wrote:\n"
                 + "\n".join(problems))
    # The Rust side opens the hierarchy from zarr-python's consolidated metadata too.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not part of the Zarr format 3 specification"
        zarr.consolidate_metadata(LocalStore(out), zarr_format=3)
    text = "[\n" + ",\n".join(json.dumps(e, allow_nan=False, ensure_ascii=False)
                              for e in manifest) + "\n]\n"
    (out / "manifest.json").write_text(text, encoding="utf-8")
    n_arrays = sum(e["node_type"] == "array" for e in manifest)
    print(f"peer.py: wrote {len(manifest)} nodes ({n_arrays} arrays) with {ZP} and {TS}")


# ---------------------------------------------------------------------------
# write-v2
# ---------------------------------------------------------------------------


def v2_cases() -> list[dict[str, Any]]:
    """Zarr v2 arrays: (path, numpy dtype or "str"/"bytes", our v3 data type, shape, chunks,
    create_array keywords)."""
    import numcodecs

    cases: list[dict[str, Any]] = []

    def case(path: str, dtype: str, data_type: Any, shape: tuple, chunks: tuple,
             lossy: bool = False, values: str = "random", **kw: Any) -> None:
        # lossy: the filters change values, and what zarr-python reads back is the oracle.
        # values "small": uniform floats in [-2, 2), integers in [0, 100), for filters that
        # need a range.
        cases.append(dict(path=path, dtype=dtype, data_type=data_type, shape=list(shape),
                          chunks=list(chunks), lossy=lossy, values=values, kw=kw))

    numeric = {"|b1": "bool", "|i1": "int8", "<i2": "int16", "<i4": "int32", "<i8": "int64",
               "|u1": "uint8", "<u2": "uint16", "<u4": "uint32", "<u8": "uint64",
               "<f2": "float16", "<f4": "float32", "<f8": "float64", "<c8": "complex64",
               "<c16": "complex128"}
    for dtype, name in numeric.items():
        case(f"types/{name}", dtype, name, (7, 5), (3, 2))
    for dtype, name in {">i2": "int16", ">u4": "uint32", ">i8": "int64", ">f2": "float16",
                        ">f4": "float32", ">f8": "float64", ">c8": "complex64"}.items():
        case(f"big/{name}", dtype, name, (7, 5), (3, 2))
    compressors = {
        "none": None,
        "blosc_lz4_shuffle": numcodecs.Blosc("lz4", 5, 1),
        "blosc_zstd_bitshuffle": numcodecs.Blosc("zstd", 3, 2),
        "blosc_blosclz_noshuffle": numcodecs.Blosc("blosclz", 9, 0),
        "blosc_lz4hc_auto": numcodecs.Blosc("lz4hc", 4, -1),
        "blosc_zlib_shuffle": numcodecs.Blosc("zlib", 1, 1),
        "blosc_zstd_blocksize": numcodecs.Blosc("zstd", 5, 2, blocksize=256),
        "blosc_clevel0": numcodecs.Blosc("lz4", 0, 1),
        "zstd3_checksum": numcodecs.Zstd(3, checksum=True),
        "zstd_negative": numcodecs.Zstd(-1),
        "gzip5": numcodecs.GZip(5),
        "zlib1": numcodecs.Zlib(1),
        "zlib9": numcodecs.Zlib(9),
    }
    for name, compressor in compressors.items():
        case(f"compressors/{name}", "<u2", "uint16", (7, 5), (3, 2), compressors=compressor)
        case(f"compressors/{name}_u1", "|u1", "uint8", (9,), (4,), compressors=compressor)
    case("order_f/int32", "<i4", "int32", (7, 5), (3, 2), order="F")
    case("order_f/big_float64_3d", ">f8", "float64", (5, 4, 3), (2, 3, 2), order="F",
         compressors=numcodecs.Blosc("lz4", 5, 1))
    case("order_f/uint8_3d_zlib", "|u1", "uint8", (5, 4, 3), (2, 3, 2), order="F",
         compressors=numcodecs.Zlib(3))
    case("separator/slash", "<i2", "int16", (7, 5), (3, 2),
         chunk_key_encoding={"name": "v2", "separator": "/"})
    case("separator/slash_3d_f", "<u4", "uint32", (5, 4, 3), (2, 3, 2), order="F",
         chunk_key_encoding={"name": "v2", "separator": "/"})
    case("fill/nan", "<f8", "float64", (7, 5), (3, 2), fill_value=np.nan)
    case("fill/inf", "<f4", "float32", (7, 5), (3, 2), fill_value=np.inf)
    case("fill/neg_inf_big", ">f8", "float64", (7, 5), (3, 2), fill_value=-np.inf)
    case("fill/int", "<i4", "int32", (7, 5), (3, 2), fill_value=-123456)
    case("fill/bool_true", "|b1", "bool", (7, 5), (3, 2), fill_value=True)
    case("fill/complex", "<c16", "complex128", (7, 5), (3, 2), fill_value=1.5 - 2j)
    case("other/S5", "|S5", {"name": "null_terminated_bytes",
                             "configuration": {"length_bytes": 5}}, (7, 5), (3, 2))
    case("other/U3", "<U3", {"name": "fixed_length_utf32",
                             "configuration": {"length_bytes": 12}}, (7, 5), (3, 2))
    case("other/U3_big", ">U3", {"name": "fixed_length_utf32",
                                 "configuration": {"length_bytes": 12}}, (7, 5), (3, 2))
    case("other/datetime_ns", "<M8[ns]", {"name": "numpy.datetime64",
                                          "configuration": {"unit": "ns", "scale_factor": 1}},
         (7, 5), (3, 2))
    case("other/timedelta_s", "<m8[s]", {"name": "numpy.timedelta64",
                                         "configuration": {"unit": "s", "scale_factor": 1}},
         (7, 5), (3, 2))
    case("strings/zstd", "str", "string", (7, 5), (3, 2))
    case("strings/blosc", "str", "string", (7, 5), (3, 2),
         compressors=numcodecs.Blosc("lz4", 5, 1))
    case("strings/none", "str", "string", (9,), (4,), compressors=None)
    case("bytes/zstd", "bytes", "bytes", (7, 5), (3, 2))
    # numcodecs filters, and its other byte codecs as filters and compressors.
    case("filters/delta_i4", "<i4", "int32", (7, 5), (3, 2),
         filters=[numcodecs.Delta(dtype="<i4")])
    case("filters/delta_big_i8_zstd", ">i8", "int64", (7, 5), (3, 2),
         filters=[numcodecs.Delta(dtype=">i8")], compressors=numcodecs.Zstd(1))
    case("filters/delta_u2_to_i1", "<u2", "uint16", (7, 5), (3, 2), values="small",
         filters=[numcodecs.Delta(dtype="<u2", astype="|i1")])
    case("filters/delta_f8", "<f8", "float64", (20,), (8,), values="small",
         filters=[numcodecs.Delta(dtype="<f8")])
    case("filters/delta_f4_order_f", "<f4", "float32", (5, 4, 3), (2, 3, 2), order="F",
         lossy=True, values="small", filters=[numcodecs.Delta(dtype="<f4")])
    case("filters/fixedscaleoffset_f8_u1", "<f8", "float64", (7, 5), (3, 2), lossy=True,
         values="small", filters=[numcodecs.FixedScaleOffset(offset=-2, scale=60,
                                                             dtype="<f8", astype="|u1")])
    case("filters/fixedscaleoffset_f4_i2_big", ">f4", "float32", (7, 5), (3, 2), lossy=True,
         values="small", filters=[numcodecs.FixedScaleOffset(offset=0.5, scale=1000,
                                                             dtype=">f4", astype=">i2")],
         compressors=numcodecs.Blosc("lz4", 5, 1))
    case("filters/quantize_f8", "<f8", "float64", (7, 5), (3, 2), lossy=True,
         filters=[numcodecs.Quantize(digits=3, dtype="<f8")])
    case("filters/quantize_f4_to_f8", "<f4", "float32", (7, 5), (3, 2), lossy=True,
         values="small", filters=[numcodecs.Quantize(digits=2, dtype="<f4", astype="<f8")])
    case("filters/bitround_f4", "<f4", "float32", (7, 5), (3, 2), lossy=True,
         filters=[numcodecs.BitRound(keepbits=7)], compressors=numcodecs.Zstd(1))
    case("filters/bitround_f8", "<f8", "float64", (7, 5), (3, 2), lossy=True,
         filters=[numcodecs.BitRound(keepbits=20)])
    case("filters/bitround_f2", "<f2", "float16", (7, 5), (3, 2), lossy=True,
         filters=[numcodecs.BitRound(keepbits=4)])
    case("filters/astype_f8_f4", "<f8", "float64", (7, 5), (3, 2), lossy=True,
         filters=[numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")])
    case("filters/astype_u1_big_i4", "|u1", "uint8", (7, 5), (3, 2),
         filters=[numcodecs.AsType(encode_dtype=">i4", decode_dtype="|u1")])
    case("filters/shuffle_zlib", "<u4", "uint32", (7, 5), (3, 2),
         filters=[numcodecs.Shuffle(elementsize=4)], compressors=numcodecs.Zlib(1))
    case("filters/delta_shuffle_crc32_lz4", "<i2", "int16", (7, 5), (3, 2),
         filters=[numcodecs.Delta(dtype="<i2"), numcodecs.Shuffle(elementsize=2),
                  numcodecs.CRC32()], compressors=numcodecs.LZ4())
    case("filters/adler32_end_fletcher32", "<f8", "float64", (7, 5), (3, 2),
         filters=[numcodecs.Adler32(location="end")], compressors=numcodecs.Fletcher32())
    case("compressors/bz2", "<u2", "uint16", (7, 5), (3, 2), compressors=numcodecs.BZ2(5))
    case("compressors/lzma", "<f8", "float64", (7, 5), (3, 2),
         compressors=numcodecs.LZMA(preset=1))
    case("compressors/lzma_raw_filters", "<i4", "int32", (7, 5), (3, 2),
         compressors=numcodecs.LZMA(format=3, filters=[{"id": 3, "dist": 4},
                                                       {"id": 33, "preset": 1}]))
    case("filters/jenkins_lookup3_zlib", "<i2", "int16", (7, 5), (3, 2),
         filters=[numcodecs.JenkinsLookup3(initval=11)], compressors=numcodecs.Zlib(1))
    case("filters/packbits", "|b1", "bool", (7, 5), (3, 2), filters=[numcodecs.PackBits()])
    case("filters/packbits_order_f_bz2", "|b1", "bool", (5, 4, 3), (2, 3, 2), order="F",
         filters=[numcodecs.PackBits()], compressors=numcodecs.BZ2(1))
    case("compressors/lz4", "<u2", "uint16", (7, 5), (3, 2), compressors=numcodecs.LZ4())
    case("compressors/lz4_accel", "<f8", "float64", (9,), (4,),
         compressors=numcodecs.LZ4(acceleration=10))
    case("compressors/crc32c", "|u1", "uint8", (9,), (4,), compressors=numcodecs.CRC32C())
    # pcodec compresses the elements (v3: numcodecs.pcodec in place of bytes).
    case("compressors/pcodec_i4", "<i4", "int32", (7, 5), (3, 2),
         compressors=numcodecs.PCodec())
    case("compressors/pcodec_delta_i8_order_f", "<i8", "int64", (5, 4, 3), (2, 3, 2),
         order="F", filters=[numcodecs.Delta(dtype="<i8")],
         compressors=numcodecs.PCodec(level=3, delta_spec="try_consecutive",
                                      delta_encoding_order=1))
    case("compressors/pcodec_f4_classic", "<f4", "float32", (9,), (4,),
         compressors=numcodecs.PCodec(mode_spec="classic", delta_spec="none"))
    case("shapes/zero_d", "<f8", "float64", (), ())
    case("shapes/zero_length", "<i4", "int32", (0, 3), (2, 2))
    case("shapes/one_chunk", "<u8", "uint64", (4, 4), (4, 4))
    return cases


def v2_values(c: dict[str, Any]) -> np.ndarray:
    shape, seed = c["shape"], seed_of(c["path"])
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    dtype = c["dtype"]
    if dtype in ("str", "bytes"):
        return make_vlen_values("string" if dtype == "str" else "bytes", shape, seed)
    dt = np.dtype(dtype)
    if c["values"] == "small":
        if dt.kind in "iu":
            return rng.integers(0, 100, n).astype(dt).reshape(shape)
        return rng.uniform(-2, 2, n).astype(dt).reshape(shape)
    if dt.kind == "S":
        pool = [b"", b"a", b"abc", b"\x00x", b"12345", b"\xff\xfe"]
        return np.array([pool[int(i) % len(pool)] for i in rng.integers(0, 99, n)],
                        dtype=dt).reshape(shape)
    if dt.kind == "U":
        pool = ["", "a", "é", "日本", "🦀x", "abc"]
        return np.array([pool[int(i) % len(pool)] for i in rng.integers(0, 99, n)],
                        dtype=dt).reshape(shape)
    if dt.kind in "Mm":
        values = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
        values[:1] = np.iinfo(np.int64).min  # NaT
        return values.view(dt.newbyteorder("=")).astype(dt).reshape(shape)
    name = {"b": "bool"}.get(dt.kind, None) or {
        "i": f"int{dt.itemsize * 8}", "u": f"uint{dt.itemsize * 8}",
        "f": f"float{dt.itemsize * 8}", "c": f"complex{dt.itemsize * 8}"}[dt.kind]
    return make_values(name, shape, seed, "random").astype(dt).reshape(shape)


def v2_writes(shape: list[int], chunks: list[int]) -> list[tuple[slice, ...]]:
    """Everything but the chunk at grid position (1, 1, ...) when there is one (left
    missing); whole arrays otherwise."""
    grid = [-(-s // c) if c else 0 for s, c in zip(shape, chunks)]
    if len(shape) < 2 or any(g < 2 for g in grid):
        return [tuple(slice(0, s) for s in shape)]
    # Rows before the missing chunk, after it, and beside it (in its rows).
    r0, r1 = chunks[0], min(2 * chunks[0], shape[0])
    c0, c1 = chunks[1], min(2 * chunks[1], shape[1])
    rest = tuple(slice(0, s) for s in shape[2:])
    return [
        (slice(0, r0), slice(0, shape[1])) + rest,
        (slice(r1, shape[0]), slice(0, shape[1])) + rest,
        (slice(r0, r1), slice(0, c0)) + rest,
        (slice(r0, r1), slice(c1, shape[1])) + rest,
    ]


def le_hex(a: np.ndarray) -> str:
    """The elements' bytes in C order, multi-byte types little-endian."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes().hex()


def cmd_write_v2(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        sys.exit(f"peer.py write-v2: {out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    store = LocalStore(out)
    manifest: list[dict[str, Any]] = []
    groups = {"": {"title": "v2 root"}, "types": {"kind": "numeric"}, "big": {},
              "compressors": {"n": 26}, "order_f": {}, "separator": {}, "fill": {},
              "other": {}, "strings": {}, "bytes": {}, "shapes": {"nested": {"a": [1, 2]}},
              "filters": {"what": "numcodecs filters"}}
    for path, attributes in groups.items():
        zarr.create_group(store, path=path, attributes=attributes, zarr_format=2,
                          overwrite=True)
        manifest.append(dict(path=path, node_type="group", attributes=attributes))
    for c in v2_cases():
        vlen = c["dtype"] in ("str", "bytes")
        dtype: Any = (str if c["dtype"] == "str" else zdtype_of("bytes") if vlen
                      else np.dtype(c["dtype"]))
        kw = dict(c["kw"])
        attributes = {"case": c["path"]}
        arr = zarr.create_array(store, name=c["path"], shape=tuple(c["shape"]),
                                chunks=tuple(c["chunks"]), dtype=dtype,
                                zarr_format=2, attributes=attributes, **kw)
        data = v2_values(c)
        expected = np.empty(c["shape"], dtype=object if vlen else data.dtype)
        fill = arr.fill_value
        if vlen:
            expected.reshape(-1)[:] = [fill if fill is not None else
                                       ("" if c["dtype"] == "str" else b"")] * expected.size
        else:
            expected[...] = fill if fill is not None else 0
        for s in v2_writes(c["shape"], c["chunks"]):
            arr[s] = data[s]
            expected[s] = data[s]
        back = arr[...]
        if c["lossy"]:
            # The filters change values: zarr-python's own reading is what we must match.
            # Make sure they did change something, so the case tests the decoder.
            if le_hex(np.asarray(back, dtype=expected.dtype)) == le_hex(expected):
                sys.exit(f"peer.py write-v2: {c['path']} is marked lossy but reads back exactly")
            expected = np.asarray(back, dtype=expected.dtype)
        same = (list(np.asarray(back).reshape(-1)) == list(expected.reshape(-1)) if vlen
                else le_hex(np.asarray(back, dtype=expected.dtype)) == le_hex(expected))
        if not same:
            sys.exit(f"peer.py write-v2: zarr-python does not read back {c['path']}")
        zarray = json.loads((out / c["path"] / ".zarray").read_text())
        entry = dict(path=c["path"], node_type="array", writer=ZP, data_type=c["data_type"],
                     shape=c["shape"], attributes=attributes, zarray=zarray)
        if vlen:
            entry["values"] = [enc_vlen(v) for v in expected.reshape(-1)]
        else:
            entry["hex"] = le_hex(expected)
            entry["fill_hex"] = le_hex(np.array([fill if fill is not None else 0],
                                                dtype=data.dtype))
        manifest.append(entry)
    zarr.consolidate_metadata(store, zarr_format=2)
    text = "[\n" + ",\n".join(json.dumps(e, allow_nan=False, ensure_ascii=False)
                              for e in manifest) + "\n]\n"
    (out / "manifest.json").write_text(text, encoding="utf-8")
    n_arrays = sum(e["node_type"] == "array" for e in manifest)
    print(f"peer.py write-v2: wrote {len(manifest)} Zarr v2 nodes ({n_arrays} arrays) with {ZP}")


# ---------------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------------


def describe_mismatch(got: np.ndarray, expected: np.ndarray, limit: int = 8) -> str:
    g, e = bits_of(got), bits_of(expected)
    bad = np.nonzero((g != e).any(axis=1))[0]
    flat_g, flat_e = got.reshape(-1), expected.reshape(-1)
    lines = [f"{len(bad)} of {len(flat_e)} elements differ"]
    for i in bad[:limit]:
        idx = np.unravel_index(int(i), expected.shape) if expected.shape else ()
        lines.append(f"      at {list(map(int, idx))}: got {enc_scalar(flat_g[i], got.dtype)!r} "
                     f"expected {enc_scalar(flat_e[i], expected.dtype)!r}")
    return "\n".join(lines)


def compare_vlen(label: str, got: np.ndarray, entry: dict[str, Any]) -> list[str]:
    dt = entry["data_type"]
    if list(got.shape) != entry["shape"]:
        return [f"{label}: shape {list(got.shape)} is not {entry['shape']}"]
    kind = str if dt == "string" else bytes
    # A 0-d read gives a numpy scalar (np.str_ / np.bytes_, subclasses of str / bytes).
    flat = list(got.reshape(-1))
    if not all(isinstance(v, kind) for v in flat):
        types = sorted({type(v).__name__ for v in flat})
        return [f"{label}: elements are {types} ({got.dtype}), not {kind.__name__}"]
    expected = dec_vlen_values(entry["values"], dt)
    flat = [kind(v) for v in flat]
    bad = [i for i, (g, e) in enumerate(zip(flat, expected)) if g != e]
    if not bad:
        return []
    lines = [f"{label}: values differ: {len(bad)} of {len(expected)} elements differ"]
    for i in bad[:8]:
        idx = list(map(int, np.unravel_index(i, got.shape))) if got.shape else []
        lines.append(f"      at {idx}: got {flat[i]!r} expected {expected[i]!r}")
    return ["\n".join(lines)]


def compare(label: str, got: np.ndarray, entry: dict[str, Any]) -> list[str]:
    if is_vlen(entry["data_type"]):
        return compare_vlen(label, got, entry)
    dtype = dtype_of(entry["data_type"])
    problems = []
    if got.dtype.newbyteorder("<") != dtype:
        problems.append(f"{label}: data type {got.dtype} is not {dtype} ({entry['data_type']})")
        return problems
    if list(got.shape) != entry["shape"]:
        problems.append(f"{label}: shape {list(got.shape)} is not {entry['shape']}")
        return problems
    expected = dec_values(entry["values"], dtype, entry["shape"])
    if not np.array_equal(bits_of(got), bits_of(expected)):
        problems.append(f"{label}: values differ: {describe_mismatch(got, expected)}")
    return problems


def check_fill(label: str, fill: Any, entry: dict[str, Any]) -> list[str]:
    if is_vlen(entry["data_type"]):
        want = dec_vlen_fill(entry["fill_value"], entry["data_type"])
        if type(fill) is not type(want) or fill != want:
            return [f"{label}: fill value {fill!r} is not {want!r}"]
        return []
    dtype = dtype_of(entry["data_type"])
    got = bits_of(np.array([fill], dtype=dtype))
    want = bits_of(np.array([dec_fill(entry["fill_value"], dtype)]))
    if not np.array_equal(got, want):
        return [f"{label}: fill value {enc_scalar(np.array(fill, dtype=dtype), dtype)!r} is not "
                f"{entry['fill_value']!r}"]
    return []


def verify_entry(root: Path, entry: dict[str, Any]) -> list[str]:
    path = entry["path"]
    shown = path or "/"
    problems: list[str] = []
    if entry["node_type"] == "group":
        g = zarr.open_group(LocalStore(root, read_only=True), path=path, mode="r", zarr_format=3)
        if canon(dict(g.attrs)) != canon(entry["attributes"]):
            problems.append(f"{shown} (group, {ZP}): attributes {canon(dict(g.attrs))} are not "
                            f"{canon(entry['attributes'])}")
        return problems
    bugs = entry.get("peer_bugs", {})
    peers = [p for p in entry.get("peers", ["zarr-python"]) if p not in bugs]
    if not peers:
        return [f"{shown}: no peer is left to check it (peer_bugs: {bugs})"]
    if "zarr-python" in peers:
        label = f"{shown} ({ZP})"
        a = zarr.open_array(LocalStore(root, read_only=True), path=path, mode="r", zarr_format=3)
        got = np.asarray(a[...])
        problems += compare(label, got, entry)
        problems += check_fill(label, a.fill_value, entry)
        if canon(dict(a.attrs)) != canon(entry["attributes"]):
            problems.append(f"{label}: attributes {canon(dict(a.attrs))} are not "
                            f"{canon(entry['attributes'])}")
        dims = a.metadata.dimension_names
        want_dims = entry.get("dimension_names")
        if (list(dims) if dims is not None else None) != want_dims and not (
            dims is None and want_dims is not None and all(d is None for d in want_dims)
        ):
            problems.append(f"{label}: dimension names {dims} are not {want_dims}")
        # A region that starts and ends inside chunks (partial-chunk reads).
        if got.ndim > 0 and got.size > 0:
            s = tuple(slice(1, n - 1) if n >= 3 else slice(0, n) for n in got.shape)
            part = np.asarray(a[s])
            if is_vlen(entry["data_type"]):
                same = part.shape == got[s].shape and list(part.reshape(-1)) == list(
                    got[s].reshape(-1))
            else:
                same = np.array_equal(bits_of(part), bits_of(np.ascontiguousarray(got[s])))
            if not same:
                problems.append(f"{label}: the region {s} differs from the same region of the "
                                "whole array")
    if "tensorstore" in peers:
        label = f"{shown} ({TS})"
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / path) + "/"}}
        t = ts.open(spec, open=True, read=True).result()
        got = np.asarray(t.read().result())
        problems += compare(label, got, entry)
        problems += check_fill(label, np.asarray(t.fill_value), entry)
        want_labels = [n or "" for n in entry.get("dimension_names") or [""] * got.ndim]
        if list(t.domain.labels) != want_labels:
            problems.append(f"{label}: dimension labels {list(t.domain.labels)} are not "
                            f"{want_labels}")
    return problems


def verify_entries(root: Path, entries: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    for entry in entries:
        try:
            problems += verify_entry(root, entry)
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            detail = traceback.format_exception_only(type(e), e)[-1].strip()
            problems.append(f"{entry['path'] or '/'}: cannot be read: {detail}")
    return problems


def cmd_verify(root: Path, manifest_path: Path) -> None:
    entries = json.loads(manifest_path.read_text(encoding="utf-8"))
    if not entries:
        sys.exit("peer.py verify: the manifest lists no nodes")
    problems = verify_entries(root, entries)
    if any(e["node_type"] == "group" and e["path"] == "" for e in entries):
        # The hierarchy as zarr-python discovers it from the root must be exactly the nodes
        # listed (every group written explicitly, nothing extra).
        try:
            g = zarr.open_group(LocalStore(root, read_only=True), mode="r", zarr_format=3,
                                use_consolidated=False)
            found = sorted(name for name, _ in g.members(max_depth=None))
            want = sorted(e["path"] for e in entries if e["path"])
            if found != want:
                problems.append(f"/ ({ZP}): the hierarchy lists {sorted(set(found) - set(want))} "
                                f"more and {sorted(set(want) - set(found))} fewer nodes than "
                                "the manifest")
        except Exception as e:  # noqa: BLE001
            problems.append(f"/ ({ZP}): cannot list the hierarchy: {e!r}")
    consolidated = "consolidated_metadata" in json.loads((root / "zarr.json").read_text())
    if consolidated:
        unreadable = frozenset(e["path"] for e in entries
                               if "zarr-python" not in e.get("peers", ["zarr-python"])
                               or "zarr-python" in e.get("peer_bugs", {}))
        problems += consolidated_problems(root, [e["path"] for e in entries if e["path"]], 3,
                                          unreadable)
    for e in entries:
        for peer, why in e.get("peer_bugs", {}).items():
            if peer in e.get("peers", []):
                print(f"peer.py verify: {e['path']}: not checked with {peer}: {why}")
    n_arrays = sum(e["node_type"] == "array" for e in entries)
    n_ts = sum("tensorstore" in e.get("peers", []) and "tensorstore" not in e.get("peer_bugs", {})
               for e in entries)
    if problems:
        print(f"peer.py verify: {len(problems)} problem(s) in {len(entries)} nodes:")
        for p in problems:
            print(f"  - {p}")
        sys.exit(1)
    print(f"peer.py verify: {len(entries)} nodes ({n_arrays} arrays) read exactly by {ZP}; "
          f"{n_ts} of the arrays also by {TS}"
          + ("; the hierarchy opened from our consolidated metadata" if consolidated else ""))


def consolidated_problems(root: Path, paths: list[str], zarr_format: int,
                          unreadable: frozenset[str] = frozenset()) -> list[str]:
    """zarr-python opens the hierarchy at ROOT from the consolidated metadata the Rust crate
    wrote: it must list exactly PATHS, each node with the metadata its own documents give
    and, for arrays zarr-python can read (not in UNREADABLE), the same values."""
    store = LocalStore(root, read_only=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = zarr.open_consolidated(store, mode="r", zarr_format=zarr_format)
            members = dict(g.members(max_depth=None))
    except Exception as e:  # noqa: BLE001
        return [f"/ ({ZP}): cannot open our consolidated metadata: {e!r}"]
    problems = []
    if sorted(members) != sorted(paths):
        problems.append(f"/ ({ZP}): our consolidated metadata lists "
                        f"{sorted(set(members) - set(paths))} more and "
                        f"{sorted(set(paths) - set(members))} fewer nodes than were written")

    def doc(node: Any) -> str:
        d = node.metadata.to_dict()
        d.pop("consolidated_metadata", None)
        return json.dumps(d, sort_keys=True, default=repr)

    for name, node in sorted(members.items()):
        try:
            if isinstance(node, zarr.Array):
                direct: Any = zarr.open_array(store, path=name, mode="r",
                                              zarr_format=zarr_format)
            else:
                direct = zarr.open_group(store, path=name, mode="r", zarr_format=zarr_format,
                                         use_consolidated=False)
            if doc(node) != doc(direct):
                problems.append(f"{name} ({ZP}): consolidated metadata {doc(node)} differs "
                                f"from the node's own {doc(direct)}")
            elif isinstance(node, zarr.Array) and name not in unreadable:
                got, want = np.asarray(node[...]), np.asarray(direct[...])
                same = (list(got.reshape(-1)) == list(want.reshape(-1))
                        if got.dtype.kind in "OTUS"  # objects, numpy 2 strings, fixed text
                        else got.dtype == want.dtype and got.tobytes() == want.tobytes())
                if not same:
                    problems.append(f"{name} ({ZP}): opened from our consolidated metadata, "
                                    "it reads other values")
        except Exception as e:  # noqa: BLE001
            problems.append(f"{name} ({ZP}): cannot open from our consolidated metadata: "
                            f"{e!r}")
    return problems


# --- Zarr v2 written by the Rust crate ------------------------------------------------------


def np_dtype(descr: Any) -> np.dtype:
    """A `.zarray` dtype (typestr, or nested lists of fields) as numpy's."""
    def fields(d: Any) -> Any:
        return [(f[0], fields(f[1]), *f[2:]) for f in d] if isinstance(d, list) else d
    return np.dtype(fields(descr))


def zarray_differences(path: str, mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """How our `.zarray` differs from zarr-python's for the same array, semantically: the
    dtype as numpy reads it, codecs as numcodecs builds them, the default separator."""
    import numcodecs

    def resolved(c: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
        # numcodecs' AUTOSHUFFLE (-1) means bit shuffle for one-byte elements, byte shuffle
        # otherwise: the v3 description (and so our `.zarray`) holds the shuffle it means.
        if c.get("id") == "blosc" and c.get("shuffle") == -1:
            return dict(c, shuffle=2 if np_dtype(doc["dtype"]).itemsize == 1 else 1)
        return dict(c)

    def codecs(doc: dict[str, Any]) -> tuple[list[Any], Any]:
        filters = [numcodecs.get_codec(resolved(c, doc)) for c in (doc.get("filters") or [])]
        compressor = doc.get("compressor")
        return filters, numcodecs.get_codec(resolved(compressor, doc)) if compressor else None

    out = []
    for key in ("zarr_format", "shape", "chunks", "order"):
        if mine.get(key) != theirs.get(key):
            out.append(f"{key} {mine.get(key)!r}, zarr-python's {theirs.get(key)!r}")
    if mine.get("dimension_separator", ".") != theirs.get("dimension_separator", "."):
        out.append(f"dimension_separator {mine.get('dimension_separator')!r}")
    if np_dtype(mine["dtype"]) != np_dtype(theirs["dtype"]):
        out.append(f"dtype {mine['dtype']!r}, zarr-python's {theirs['dtype']!r}")
    if codecs(mine) != codecs(theirs):
        out.append(f"filters/compressor {mine.get('filters')!r} {mine.get('compressor')!r}, "
                   f"zarr-python's {theirs.get('filters')!r} {theirs.get('compressor')!r}")
    extra = set(mine) - set(theirs) - {"dimension_separator"}
    if extra:
        out.append(f"keys zarr-python does not write: {sorted(extra)}")
    return [f"{path}: .zarray {d}" for d in out]


# The compressors tensorstore's Zarr v2 driver reads; it reads no filters.
TS_V2_COMPRESSORS = {None, "zstd", "blosc", "zlib", "gzip", "bz2"}


def ts_reads_v2(zarray: dict[str, Any]) -> bool:
    """Whether tensorstore's v2 driver can open an array with this .zarray (numeric or bool
    elements, no filters, a compressor it has, without a zstd checksum)."""
    dtype = zarray.get("dtype")
    compressor = zarray.get("compressor") or {}
    return (isinstance(dtype, str) and len(dtype) > 1 and dtype[1] in "biufc"
            and not zarray.get("filters") and compressor.get("id") in TS_V2_COMPRESSORS
            # zstd's checksum is a member tensorstore refuses (zarr-python writes it too).
            and "checksum" not in compressor)


def cmd_compare_v2(theirs: Path, ours: Path) -> None:
    """Open every node of THEIRS/manifest.json (written by `write-v2`) in OURS, the copy the
    Rust crate wrote as Zarr v2, and compare it with zarr-python's own: metadata, attributes,
    fill value, values. Prints {"problems": [...], "lossy_hex": {path: hex}}, the latter the
    values zarr-python decodes from our arrays with lossy filters."""
    entries = json.loads((theirs / "manifest.json").read_text(encoding="utf-8"))
    lossy = {c["path"] for c in v2_cases() if c["lossy"]}
    ours_store = LocalStore(ours, read_only=True)
    theirs_store = LocalStore(theirs, read_only=True)
    problems: list[str] = []
    lossy_hex: dict[str, str] = {}
    ts_checked = 0
    for e in entries:
        path = e["path"]
        try:
            if e["node_type"] == "group":
                g = zarr.open_group(ours_store, path=path, mode="r", zarr_format=2)
                if dict(g.attrs) != e["attributes"]:
                    problems.append(f"{path or '/'}: group attributes {dict(g.attrs)!r}")
                continue
            mine = json.loads((ours / path / ".zarray").read_text(encoding="utf-8"))
            doc = json.loads((theirs / path / ".zarray").read_text(encoding="utf-8"))
            problems += zarray_differences(path, mine, doc)
            a = zarr.open_array(ours_store, path=path, mode="r", zarr_format=2)
            t = zarr.open_array(theirs_store, path=path, mode="r", zarr_format=2)
            if dict(a.attrs) != dict(t.attrs):
                problems.append(f"{path}: attributes {dict(a.attrs)!r}")
            got, want = a[...], t[...]
            if "values" in e:  # strings or bytes
                empty = "" if doc["filters"][0]["id"] == "vlen-utf8" else b""
                if (a.fill_value or empty) != (t.fill_value or empty):
                    problems.append(f"{path}: fill value {a.fill_value!r}")
                if list(np.asarray(got).reshape(-1)) != list(np.asarray(want).reshape(-1)):
                    problems.append(f"{path}: values differ")
                continue
            dtype = want.dtype
            fill = np.asarray(a.fill_value, dtype=dtype).tobytes()
            if fill != np.asarray(t.fill_value, dtype=dtype).tobytes():
                problems.append(f"{path}: fill value {a.fill_value!r}, zarr-python's "
                                f"{t.fill_value!r}")
            if path in lossy:
                lossy_hex[path] = le_hex(np.asarray(got, dtype=dtype))
                if not np.allclose(got.astype(float), want.astype(float), rtol=1e-3, atol=1e-3,
                                   equal_nan=True):
                    problems.append(f"{path}: lossy values far from zarr-python's own")
            elif le_hex(np.asarray(got, dtype=dtype)) != le_hex(want):
                problems.append(f"{path}: values differ")
            if path not in lossy and ts_reads_v2(mine):
                ts_checked += 1
                try:
                    spec = {"driver": "zarr", "kvstore": {"driver": "file",
                                                          "path": str(ours / path)}}
                    by_ts = ts.open(spec, open=True, read=True).result().read().result()
                    if le_hex(np.asarray(by_ts, dtype=dtype)) != le_hex(want):
                        problems.append(f"{path}: tensorstore reads other values")
                except Exception as ex:  # noqa: BLE001 - every failure is reported
                    detail = traceback.format_exception_only(type(ex), ex)[-1].strip()
                    problems.append(f"{path}: tensorstore cannot read our v2 copy: {detail}")
        except Exception as ex:  # noqa: BLE001 - every failure is reported
            detail = traceback.format_exception_only(type(ex), ex)[-1].strip()
            problems.append(f"{path or '/'}: cannot be read: {detail}")
    if ts_checked < 10:
        problems.append(f"tensorstore read only {ts_checked} of our v2 arrays")
    # Our .zmetadata: the same documents zarr-python's lists for its own copy, and the
    # hierarchy opens from it.
    mine = json.loads((ours / ".zmetadata").read_text(encoding="utf-8"))
    reference = json.loads((theirs / ".zmetadata").read_text(encoding="utf-8"))
    version = mine.get("zarr_consolidated_format")
    if version != 1:
        problems.append(f".zmetadata: zarr_consolidated_format {version!r}")
    keys, want = set(mine["metadata"]), set(reference["metadata"])
    if keys != want:
        problems.append(f".zmetadata lists {sorted(keys - want)} more and "
                        f"{sorted(want - keys)} fewer documents than zarr-python's")
    problems += consolidated_problems(ours, [e["path"] for e in entries if e["path"]], 2)
    print(json.dumps({"problems": problems, "lossy_hex": lossy_hex}))


# --- struct (numpy structured) data types -----------------------------------------------

STRUCT_CASES = [
    # (path, numpy dtype fields, shape, chunks, fill record or None, elements written,
    #  zarr_format)
    ("flat", [("id", "<i4"), ("flags", "u1"), ("value", "<f8")], (10,), (4,), (1, 2, 3.5), 6,
     3),
    ("nested",
     [("p", [("x", "<f4"), ("y", "<f4")]), ("t", "<M8[s]"), ("c", "<c8"), ("ok", "?")],
     (3, 4), (2, 3), None, None, 3),
    ("bytes_only", [("a", "u1"), ("b", "i1")], (5,), (5,), (7, -7), 5, 3),
    # Zarr v2: the dtype is a list of fields, the fill value base64 in the dtype's order.
    ("v2_flat", [("a", "<i4"), ("b", "<f8")], (5,), (2,), (3, 0.5), 1, 2),
    ("v2_big", [("a", ">i4"), ("b", ">f8"), ("c", "u1")], (4,), (3,), (7, 1.5, 9), 2, 2),
    ("v2_nested", [("a", "<i4"), ("p", [("x", "u1"), ("y", "<i2")])], (5,), (2,), None, 3, 2),
]


# Written by zarr-python, but not opened by it (nested structured v2 dtypes).
STRUCT_ZP_CANNOT_OPEN = {"v2_nested"}


def struct_values(dtype: np.dtype, shape: tuple, seed: int) -> np.ndarray:
    """Deterministic records: every byte pattern numpy accepts for the fields."""
    n = int(np.prod(shape))
    raw = np.random.default_rng(seed).integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    values = raw.view(dtype).copy()
    for name in dtype.names:
        if dtype[name] == np.dtype("?"):
            values[name] = values[name].view(np.uint8) & 1
    return values.reshape(shape)


def cmd_write_struct(out: Path) -> None:
    """zarr-python writes structured arrays; the manifest holds every element's packed
    little-endian bytes (hex), missing ones as the fill value."""
    manifest = []
    for i, (path, fields, shape, chunks, fill, written, fmt) in enumerate(STRUCT_CASES):
        dtype = np.dtype(fields)
        fill_value = np.array(fill, dtype=dtype)[()] if fill is not None else None
        a = zarr.create_array(store=str(out / path), shape=shape, chunks=chunks, dtype=dtype,
                              fill_value=fill_value, zarr_format=fmt)
        expected = np.full(shape, fill_value if fill_value is not None else np.zeros((), dtype))
        values = struct_values(dtype, shape, seed=i + 1)
        if written is None:
            a[...] = values
            expected = values
        else:
            a[:written] = values[:written]
            expected[:written] = values[:written]
        little = expected.astype(expected.dtype.newbyteorder("<"))
        fill_record = np.array(fill_value if fill_value is not None else np.zeros((), dtype),
                               dtype=dtype)
        fill_little = fill_record.astype(dtype.newbyteorder("<"))
        manifest.append({"path": path, "shape": list(shape), "zarr_format": fmt,
                         "bytes": little.tobytes().hex(), "fill": fill_little.tobytes().hex()})
    (out / "manifest.json").write_text(json.dumps(manifest))


def cmd_read_struct(root: Path) -> None:
    """Read every array under `root` named in its manifest; print path -> hex of the
    packed little-endian records."""
    out = {}
    for entry in json.loads((root / "manifest.json").read_text()):
        try:
            a = zarr.open_array(str(root / entry["path"]), mode="r")
        except ValueError as e:
            # zarr-python 3.1.6 writes nested structured Zarr v2 dtypes but cannot open any
            # (its own included): "No Zarr data type found that matches".
            if entry["path"] in STRUCT_ZP_CANNOT_OPEN and "No Zarr data type" in str(e):
                out[entry["path"]] = {"skipped": f"{ZP} cannot open it: {e}"}
                continue
            raise
        values = a[...]
        little = values.dtype.newbyteorder("<")  # every field, nested ones too
        fill = np.asarray(a.fill_value, dtype=values.dtype).astype(little)
        out[entry["path"]] = {"dtype": str(values.dtype),
                              "bytes": values.astype(little).tobytes().hex(),
                              "fill": fill.tobytes().hex()}
    print(json.dumps(out))


# --- Zip archives (zarr-python's ZipStore) -------------------------------------------------
#
# Both sides build the same small hierarchy, with values each computes on its own:
#   /            attributes {"title": "zip interop", "n": 3}
#   /u16         uint16 [100, 60] in [32, 25] chunks, fill 7, zstd(3); [0:100, 0:50] written
#                with ones, then with (flat index * 7919) % 65536, the rest never written
#   /sharded     float64 [64, 64], shards [32, 32] of [8, 8] (crc32c index), flat index / 2
#   /group/strings  string [10] in [4] chunks, "s{i}é"


def zip_expected() -> dict[str, np.ndarray]:
    u16 = np.full((100, 60), 7, dtype=np.uint16)
    flat = np.arange(100 * 60, dtype=np.uint64).reshape(100, 60)
    u16[:, :50] = ((flat * 7919) % 65536).astype(np.uint16)[:, :50]
    sharded = np.arange(64 * 64, dtype=np.float64).reshape(64, 64) / 2
    strings = np.array([f"s{i}é" for i in range(10)], dtype=object)
    return {"u16": u16, "sharded": sharded, "group/strings": strings}


def zip_write_hierarchy(store: Any) -> None:
    import zarr

    expected = zip_expected()
    root = zarr.create_group(store=store, attributes={"title": "zip interop", "n": 3})
    u16 = root.create_array("u16", shape=(100, 60), chunks=(32, 25), dtype="uint16",
                            fill_value=7, compressors=[{"name": "zstd",
                                                        "configuration": {"level": 3}}])
    # Written twice: in a ZipStore, zarr-python then appends a second entry of the same
    # name for every chunk (zipfile warns "Duplicate name"), and readers must take the last.
    u16[:, :50] = 1
    u16[:, :50] = expected["u16"][:, :50]
    sharded = root.create_array("sharded", shape=(64, 64), shards=(32, 32), chunks=(8, 8),
                                dtype="float64")
    sharded[...] = expected["sharded"]
    strings = root.create_group("group").create_array("strings", shape=(10,), chunks=(4,),
                                                      dtype=str)
    strings[...] = expected["group/strings"]


def cmd_zip_write(out: Path) -> None:
    """Write the hierarchy three ways: zarr-python's ZipStore stored and deflated, and a
    directory store zipped by `zipfile` below a folder, deflated with ZIP64 records."""
    import zipfile

    import zarr

    out.mkdir(parents=True, exist_ok=True)
    for name, compression in [("zp-stored.zip", zipfile.ZIP_STORED),
                              ("zp-deflated.zip", zipfile.ZIP_DEFLATED)]:
        store = zarr.storage.ZipStore(out / name, mode="w", compression=compression)
        zip_write_hierarchy(store)
        store.close()
    local = out / "local.zarr"
    zip_write_hierarchy(zarr.storage.LocalStore(local))
    with zipfile.ZipFile(out / "folder.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data.zarr/", b"")
        for path in sorted(local.rglob("*")):
            name = "data.zarr/" + path.relative_to(local).as_posix()
            if path.is_dir():
                zf.writestr(name + "/", b"")
                continue
            with zf.open(name, "w", force_zip64=True) as entry:
                entry.write(path.read_bytes())


def cmd_zip_read(path: Path, extra: bool) -> None:
    """Check an archive: every CRC (zipfile's testzip), then the hierarchy's values (and,
    with `extra`, the array /added that the appending test writes)."""
    import zipfile

    import zarr

    with zipfile.ZipFile(path) as zf:
        bad = zf.testzip()
        if bad is not None:
            sys.exit(f"{path}: entry {bad} fails its CRC check")
    store = zarr.storage.ZipStore(path, mode="r")
    root = zarr.open_group(store=store, mode="r")
    attributes = dict(root.attrs)
    if attributes != {"title": "zip interop", "n": 3}:
        sys.exit(f"{path}: root attributes {attributes}")
    for name, want in zip_expected().items():
        got = root[name][...]
        if want.dtype == object:
            same = list(got) == list(want)
        else:
            same = got.dtype == want.dtype and np.array_equal(got, want)
        if not same:
            sys.exit(f"{path}: /{name} differs:\n{got}\nwanted\n{want}")
    if extra:
        got = root["added"][...]
        if not np.array_equal(got, np.arange(1, 6, dtype=np.int32)):
            sys.exit(f"{path}: /added is {got}")
    store.close()
    print(f"{path.name}: equal")


# --- zfp (numcodecs' ZFPY, zfpy 1.0.1 over libzfp 1.0.1) -----------------------------------
#
# (path, zarr_format, dtype, shape, chunks, ZFPY keyword arguments, the written region's end
#  along axis 0 (None: whole), the `zfp` codec configuration of the same parameters)
ZFP_CASES = [
    ("acc_f8_2d", 3, "<f8", (30, 20), (16, 16), {"mode": 4, "tolerance": 1e-3}, None,
     {"mode": "fixed_accuracy", "tolerance": 1e-3}),
    ("rate_f4_3d", 3, "<f4", (9, 10, 11), (4, 5, 6), {"mode": 2, "rate": 12}, None,
     {"mode": "fixed_rate", "rate": 12}),
    ("prec_i8_1d", 3, "<i8", (100,), (32,), {"mode": 3, "precision": 40}, 70,
     {"mode": "fixed_precision", "precision": 40}),
    ("rev_i4_4d", 3, "<i4", (5, 6, 7, 3), (4, 4, 4, 2), {"mode": 4, "tolerance": -1}, None,
     {"mode": "reversible"}),
    ("rev_f4_special", 3, "<f4", (13,), (8,), {"mode": 4, "tolerance": -1}, None,
     {"mode": "reversible"}),
    ("v2_acc_f8", 2, "<f8", (20, 20), (8, 8), {"mode": 4, "tolerance": 1e-2}, None,
     {"mode": "fixed_accuracy", "tolerance": 1e-2}),
]


def zfp_values(dtype: np.dtype, shape: tuple, seed: int) -> np.ndarray:
    n = int(np.prod(shape))
    x = np.arange(n, dtype=np.float64)
    if dtype.kind == "f":
        v = np.sin(x * 0.05 + seed) * 1000.0 + np.cos(x * 0.011) * 3.0
        if shape == (13,):  # reversible floats keep every bit, specials included
            v[:6] = [np.nan, np.inf, -np.inf, -0.0, 1e-40, 3e38]
        return v.astype(dtype).reshape(shape)
    return (np.round(np.sin(x * 0.03 + seed) * 1e6) + x * 7).astype(dtype).reshape(shape)


def cmd_zfp_write(out: Path) -> None:
    import zfpy
    from numcodecs import ZFPY as ZFPYv2
    from zarr.codecs.numcodecs import ZFPY

    manifest = []
    for seed, (path, fmt, dtype, shape, chunks, kw, written, zfp_config) in enumerate(ZFP_CASES):
        dt = np.dtype(dtype)
        values = zfp_values(dt, shape, seed)
        if fmt == 3:
            a = zarr.create_array(store=str(out / path), shape=shape, chunks=chunks, dtype=dt,
                                  fill_value=0, serializer=ZFPY(**kw), compressors=None,
                                  zarr_format=3)
        else:
            a = zarr.create_array(store=str(out / path), shape=shape, chunks=chunks, dtype=dt,
                                  fill_value=0, compressors=ZFPYv2(**kw), filters=None,
                                  zarr_format=2)
        region = slice(0, written)
        a[region] = values[region]
        back = zarr.open_array(str(out / path), mode="r")[...]
        if kw.get("tolerance", 0) < 0 and not np.array_equal(back.view(f"u{dt.itemsize}"),
                                                                 values.view(f"u{dt.itemsize}")):
            sys.exit(f"peer.py zfp-write: {path} is reversible but does not read back exactly")
        # The chunks the `zfp` codec stores for the same parameters: libzfp's stream of each
        # (fill-padded) chunk without a header. zarrs sizes fixed-rate blocks as 3-D ones.
        stored = np.zeros(shape, dtype=dt)
        stored[region] = values[region]
        grid = [-(-n // c) for n, c in zip(shape, chunks)]
        zfp_chunks = {}
        args = {k: v for k, v in kw.items() if k != "mode"}
        if "rate" in args:
            args["rate"] = args["rate"] * 64 / 4 ** len(shape)
        if args.get("tolerance", 0) < 0:
            args = {}
        for index in np.ndindex(*grid):
            if written is not None and index[0] * chunks[0] >= written:
                continue  # never written: no chunk
            block = np.zeros(chunks, dtype=dt)
            sl = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(index, chunks, shape))
            part = stored[sl]
            block[tuple(slice(0, e) for e in part.shape)] = part
            zfp_chunks["c/" + "/".join(map(str, index))] = zfpy.compress_numpy(
                np.ascontiguousarray(block), write_header=False, **args).hex()
        manifest.append({
            "path": path, "zarr_format": fmt, "shape": list(shape), "chunks": list(chunks),
            "input": values.astype(dt.newbyteorder("<")).tobytes().hex(),
            "written": written,
            "read_back": back.astype(dt.newbyteorder("<")).tobytes().hex(),
            "zfp_config": zfp_config, "zfp_chunks": zfp_chunks,
        })
    (out / "manifest.json").write_text(json.dumps(manifest))


SELECTION_ARRAYS = [
    # (name, dtype, shape, chunks, shards)
    ("plain", "int32", (7, 9), (3, 4), None),
    ("sharded", "uint16", (10, 12, 5), (2, 3, 5), (4, 6, 5)),
    ("text", "str", (6, 7), (2, 3), None),
    ("text_sharded", "str", (6, 7), (2, 3), (4, 6)),
]


def numbered(start: int, n: int, dtype: str) -> np.ndarray:
    """`n` values counting from `start`: numbers, or for `str` strings of varying length
    (with a non-ASCII character) naming them."""
    if dtype == "str":
        return np.array([f"s{i}" + "\u00e9" * (i % 4) for i in range(start, start + n)])
    return (start + np.arange(n)).astype(dtype)


def selection_of(spec: list[dict[str, Any]]) -> tuple:
    """An orthogonal selection from its JSON form (one entry per dimension)."""
    out = []
    for axis in spec:
        if "slice" in axis:
            out.append(slice(*axis["slice"]))
        elif "indices" in axis:
            out.append(np.array(axis["indices"], dtype=np.int64))
        else:
            out.append(np.array(axis["mask"], dtype=bool))
    return tuple(out)


def cmd_selection_write(out: Path) -> None:
    """zarr-python writes each array of SELECTION_ARRAYS three times (`NAME`, `NAME_ours`,
    `NAME_theirs`, all holding arange), reads orthogonal, coordinate and block selections of
    `NAME`, and applies orthogonal and coordinate writes to `NAME_theirs`. The manifest
    holds every selection, what zarr-python read, and the writes, for the Rust side to
    repeat on `NAME` and `NAME_ours`."""
    rng = np.random.default_rng(7)
    manifest: dict[str, Any] = {"reads": [], "writes": []}
    for name, dtype, shape, chunks, shards in SELECTION_ARRAYS:
        values = numbered(0, int(np.prod(shape)), dtype).reshape(shape)
        arrays = {}
        for suffix in ("", "_ours", "_theirs"):
            a = zarr.create_array(store=str(out), name=name + suffix, shape=shape,
                                  chunks=chunks, shards=shards, dtype=dtype,
                                  fill_value="" if dtype == "str" else 0, zarr_format=3)
            a[...] = values
            arrays[suffix] = a
        a = arrays[""]
        for case in range(12):
            spec = []
            for dim, n in enumerate(shape):
                kind = (case + dim) % 3 if n > 1 else 0
                if kind == 0:
                    start = int(rng.integers(0, n))
                    stop = int(rng.integers(start, n + 1))
                    spec.append({"slice": [start, stop, int(rng.integers(1, 4))]})
                elif kind == 1:
                    spec.append({"indices": rng.integers(0, n, int(rng.integers(1, 6))).tolist()})
                else:
                    spec.append({"mask": (rng.random(n) < 0.4).tolist()})
            sel = selection_of(spec)
            got = a.get_orthogonal_selection(sel)
            lists = [np.arange(n)[axis] for axis, n in zip(sel, shape)]
            want = values[np.ix_(*lists)]
            if not np.array_equal(got, want):
                sys.exit(f"peer.py selection-write: zarr-python's {name}.oindex{spec} is {got}, "
                         f"numpy's {want}")
            manifest["reads"].append({"array": name, "kind": "orthogonal", "selection": spec,
                                      "values": np.ravel(got).tolist()})
        for _ in range(4):
            count = int(rng.integers(1, 9))
            points = [[int(rng.integers(0, n)) for n in shape] for _ in range(count)]
            coords = tuple(np.array(c, dtype=np.int64) for c in zip(*points))
            got = a.get_coordinate_selection(coords)
            manifest["reads"].append({"array": name, "kind": "points", "points": points,
                                      "values": np.ravel(got).tolist()})
        grid = [-(-n // c) for n, c in zip(shape, shards or chunks)]
        for _ in range(3):
            blocks = []
            for g in grid:
                start = int(rng.integers(0, g))
                blocks.append([start, int(rng.integers(start + 1, g + 1))])
            got = a.get_block_selection(tuple(slice(b0, b1) for b0, b1 in blocks))
            manifest["reads"].append({"array": name, "kind": "blocks", "blocks": blocks,
                                      "values": np.ravel(got).tolist()})
        # Writes without repeated indices or points (numpy leaves which repeat wins open).
        # zarr-python 3.1.6 fails orthogonal writes into shards unless every dimension is a
        # slice (listed indices, or a step beside another dimension's partial range, raise
        # inside its sharding codec), so the sharded arrays get rows by a step only.
        theirs = arrays["_theirs"]
        if shards is None:
            spec = [{"slice": [1, shape[0], 2]},
                    {"indices": rng.permutation(shape[1])[:3].tolist()}]
        else:
            spec = [{"slice": [1, shape[0], 2]}] + [{"slice": [0, n, 1]} for n in shape[1:]]
        sel = selection_of(spec)
        n_values = int(np.prod([len(range(*sl.indices(n))) if isinstance(sl, slice)
                                else (int(sl.sum()) if sl.dtype == bool else len(sl))
                                for sl, n in zip(sel, shape)]))
        vals = numbered(1000, n_values, dtype)
        theirs.set_orthogonal_selection(sel, vals.reshape(theirs.get_orthogonal_selection(sel).shape))
        manifest["writes"].append({"array": name, "kind": "orthogonal", "selection": spec,
                                   "values": vals.tolist()})
        flat = rng.permutation(int(np.prod(shape)))[:10]
        points = [list(map(int, np.unravel_index(i, shape))) for i in flat]
        vals = numbered(2000, len(points), dtype)
        theirs.set_coordinate_selection(tuple(np.array(c) for c in zip(*points)), vals)
        manifest["writes"].append({"array": name, "kind": "points", "points": points,
                                   "values": vals.tolist()})
        manifest["writes"].append({"array": name, "kind": "done",
                                   "values": np.ravel(theirs[...]).tolist()})
    (out / "manifest.json").write_text(json.dumps(manifest))


VLEN_ARRAY_CASES = [
    # (path, item dtype, compressor, shape, chunks, chunks left missing)
    ("int32", "<i4", {"id": "zstd", "level": 1}, [7], [3], []),
    ("float64_be", ">f8", None, [5], [2], [1]),
    ("uint8_2d", "|u1", {"id": "zlib", "level": 1}, [3, 4], [2, 3], [(0, 1)]),
]


def vlen_array_elements(dtype: str, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        size = int(rng.integers(0, 5))
        if np.dtype(dtype).kind == "f":
            out.append((rng.standard_normal(size) * 100).astype(dtype))
        else:
            out.append(rng.integers(0, 200, size).astype(dtype))
    return out


def cmd_vlen_array(out: Path) -> None:
    import numcodecs

    manifest = []
    for seed, (path, dtype, compressor, shape, chunks, missing) in enumerate(VLEN_ARRAY_CASES):
        root = out / path
        root.mkdir(parents=True)
        (root / ".zarray").write_text(json.dumps({
            "zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": "|O",
            "compressor": compressor, "fill_value": None, "order": "C",
            "filters": [{"id": "vlen-array", "dtype": dtype}], "dimension_separator": ".",
        }))
        n = int(np.prod(shape))
        flat = vlen_array_elements(dtype, n, seed)
        values = np.empty(n, dtype=object)
        values[:] = flat
        values = values.reshape(shape)
        codec = numcodecs.VLenArray(dtype)
        comp = numcodecs.get_codec(compressor) if compressor else None
        expected = [e.tobytes().hex() for e in flat]
        grid = [-(-s // c) for s, c in zip(shape, chunks)]
        for index in np.ndindex(*grid):
            sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))
            if index in [tuple(m) if isinstance(m, tuple) else (m,) for m in missing]:
                for flat_index in np.ravel_multi_index(np.indices(values[sl].shape).reshape(
                        len(shape), -1) + np.array([s.start for s in sl])[:, None], shape):
                    expected[flat_index] = None
                continue
            block = np.empty(chunks, dtype=object)
            block.fill(np.array([], dtype=dtype))
            part = values[sl]
            block[tuple(slice(0, e) for e in part.shape)] = part
            data = codec.encode(block)
            if comp is not None:
                data = comp.encode(data)
            (root / ".".join(map(str, index))).write_bytes(bytes(data))
        manifest.append({"path": path, "dtype": dtype, "shape": shape, "chunks": chunks,
                         "elements": expected})
    (out / "manifest.json").write_text(json.dumps(manifest))


def cmd_vlen_array_read(root: Path) -> None:
    import numcodecs

    result = {}
    for entry in json.loads((root / "manifest.json").read_text()):
        path = root / entry["path"]
        zarray = json.loads((path / ".zarray").read_text())
        [obj] = zarray["filters"]
        codec = numcodecs.get_codec(obj)
        comp = numcodecs.get_codec(zarray["compressor"]) if zarray["compressor"] else None
        shape, chunks = zarray["shape"], zarray["chunks"]
        elements: list = [None] * int(np.prod(shape))
        grid = [-(-s // c) for s, c in zip(shape, chunks)]
        for index in np.ndindex(*grid):
            key = path / ".".join(map(str, index))
            if not key.exists():
                continue
            data = key.read_bytes()
            if comp is not None:
                data = comp.decode(data)
            block = codec.decode(data).reshape(chunks)
            sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))
            for local in np.ndindex(*[s.stop - s.start for s in sl]):
                at = np.ravel_multi_index(tuple(s.start + l for s, l in zip(sl, local)), shape)
                item = block[local]
                if item.dtype != np.dtype(obj["dtype"]):
                    sys.exit(f"peer.py vlen-array-read: {key}: items of {item.dtype}")
                elements[at] = item.tobytes().hex()
        result[entry["path"]] = elements
    print(json.dumps(result))


NDARRAY_CASES = [
    # (path, scalar dtype, element shape pattern, array shape, chunks, compressor, sharded,
    #  region left unwritten (a slice per dimension) or None)
    ("float32_pairs", "float32", [None, 2], [7], [3], "zstd", False, (slice(6, 7),)),
    ("uint64_lists", "uint64", [None], [5], [5], None, False, None),
    ("int16_blocks", "int16", [None, 3, 2], [3, 4], [2, 3], "gzip", False, (slice(2, 3), slice(0, 4))),
    ("bool_masks", "bool", [None], [6], [4], None, False, None),
    ("complex64", "complex64", [None, 1], [4], [2], "zstd", False, None),
    ("float16", "float16", [None, 4], [5], [2], None, False, (slice(0, 2),)),
    ("float64_sharded", "float64", [None, 2], [9], [2], None, True, (slice(4, 6),)),
]


def ndarray_elements(dtype: str, pattern: list, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        extent = int(rng.integers(0, 4)) if i % 5 else 0
        shape = tuple(extent if d is None else d for d in pattern)
        size = int(np.prod(shape))
        kind = np.dtype(dtype).kind
        if kind == "b":
            v = rng.integers(0, 2, size).astype(bool)
        elif kind == "c":
            v = (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype)
        elif kind == "f":
            v = (rng.standard_normal(size) * 100).astype(dtype)
        else:
            v = rng.integers(0, 60000, size).astype(dtype)
        out.append(v.reshape(shape))
    return out


def ndarray_codecs(compressor: Any, sharded: bool) -> dict[str, Any]:
    from zarr_vlen_ndarray import VlenNDArrayCodec

    comps = []
    if compressor == "zstd":
        comps = [zarr.codecs.ZstdCodec(level=3)]
    elif compressor == "gzip":
        comps = [zarr.codecs.GzipCodec(level=5)]
    return {"serializer": VlenNDArrayCodec(), "compressors": comps}


def cmd_ndarray_write(out: Path) -> None:
    import zarr_vlen_ndarray  # noqa: F401 (registers the data type and codec)
    from zarr_vlen_ndarray import NDArray

    manifest = []
    for seed, (path, dtype, pattern, shape, chunks, comp, sharded, unwritten) in enumerate(
            NDARRAY_CASES):
        kwargs = ndarray_codecs(comp, sharded)
        if sharded:
            kwargs["shards"] = [c * 2 for c in chunks]
        a = zarr.create_array(store=str(out), name=path, shape=shape, chunks=chunks,
                              dtype=NDArray(dtype=dtype, shape=tuple(pattern)), **kwargs)
        n = int(np.prod(shape))
        flat = ndarray_elements(dtype, pattern, n, seed)
        values = np.empty(n, dtype=object)
        values[:] = flat
        values = values.reshape(shape)
        written = np.ones(shape, dtype=bool)
        if unwritten is not None:
            written[unwritten] = False
        # Write everything but the unwritten region (whole chunks of it stay unstored).
        if unwritten is None:
            a[...] = values
        else:
            for index in np.ndindex(*shape):
                if written[index]:
                    cell = np.empty((), dtype=object)
                    cell[()] = values[index]
                    a[index] = cell
        empty = np.zeros(tuple(0 if d is None else d for d in pattern), dtype=dtype)
        elements = [
            {"shape": list(e.shape), "hex": e.astype(e.dtype.newbyteorder("<")).tobytes().hex()}
            if written.flat[i] else {"shape": list(empty.shape), "hex": ""}
            for i, e in enumerate(flat)
        ]
        manifest.append({"path": path, "dtype": dtype, "pattern": pattern, "shape": shape,
                         "chunks": chunks, "elements": elements})
    (out / "manifest.json").write_text(json.dumps(manifest))


def cmd_ndarray_read(root: Path) -> None:
    import zarr_vlen_ndarray  # noqa: F401

    result = {}
    for entry in json.loads((root / "manifest.json").read_text()):
        a = zarr.open_array(store=str(root), path=entry["path"], mode="r")
        cells = a[...]
        elements = []
        for cell in cells.reshape(-1):
            cell = np.asarray(cell)
            if cell.dtype != np.dtype(entry["dtype"]):
                sys.exit(f"peer.py ndarray-read: {entry['path']}: cells of {cell.dtype}")
            elements.append({"shape": list(cell.shape),
                             "hex": cell.astype(cell.dtype.newbyteorder("<")).tobytes().hex()})
        result[entry["path"]] = elements
    print(json.dumps(result))


def cmd_kerchunk_hdf5(out: Path) -> None:
    import h5py
    from kerchunk.hdf import SingleHdf5ToZarr

    out.mkdir(parents=True, exist_ok=True)
    h5 = out / "data.h5"
    rng = np.random.default_rng(20261122)
    expected: dict[str, Any] = {}

    with h5py.File(h5, "w") as f:
        f.attrs["title"] = "kerchunk interop"
        f.attrs["version"] = 3

        def add(path: str, data: np.ndarray, **kwargs: Any) -> Any:
            d = f.create_dataset(path, data=data, **kwargs)
            expected[path] = data
            return d

        add("ints/i1", rng.integers(-128, 128, (7, 5), dtype="i1"), chunks=(3, 2))
        add("ints/u1", rng.integers(0, 256, (300,), dtype="u1"), chunks=(64,),
            compression="gzip")
        add("ints/u2_be", rng.integers(0, 1 << 16, (100,), dtype="<u2").astype(">u2"), chunks=(30,),
            compression="gzip", shuffle=True)
        add("ints/i4_be", rng.integers(-(1 << 31), 1 << 31, (9, 11), dtype="<i4").astype(">i4"),
            chunks=(4, 4))
        d = add("ints/i8", np.arange(-50, 50, dtype="<i8").reshape(10, 10), chunks=(4, 4),
                compression="gzip", compression_opts=9)
        d.attrs["units"] = "counts"
        add("ints/u8_contiguous", np.arange(5000, dtype="<u8") * 3)
        add("floats/f4", rng.standard_normal((20, 30, 4)).astype("<f4"), chunks=(7, 8, 3),
            shuffle=True, compression="gzip")
        add("floats/f8_be", rng.standard_normal((33,)).astype(">f8"), chunks=(10,))
        add("floats/f2", rng.standard_normal((17,)).astype("<f2"), chunks=(5,))
        add("floats/special", np.array([np.nan, np.inf, -np.inf, -0.0, 1e-310, 5.0], "<f8"),
            chunks=(4,))
        add("complex/c8", (rng.standard_normal(12) + 1j * rng.standard_normal(12))
            .astype("<c8"), chunks=(5,))
        add("complex/c16", (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)))
            .astype("<c16"))
        add("bool", rng.integers(0, 2, (50,)).astype(bool), chunks=(16,))
        add("bytes/fixed", np.array([b"a", b"bcd", b"", b"efgh"], dtype="S4"))
        add("strings/utf8", np.array(["x", "h\u00e9llo", "", "\u65e5\u672c"], dtype=object),
            dtype=h5py.string_dtype())
        add("scalar", np.float64(2.5))
        # Chunks never written are not allocated: kerchunk leaves their keys out, and they
        # read as the fill value.
        sparse = f.create_dataset("sparse", shape=(10, 12), dtype="<i2", chunks=(5, 5),
                                  fillvalue=-3)
        sparse[0:5, 0:5] = 7
        sparse[6, 11] = 9
        expected["sparse"] = sparse[...]
        f.create_group("empty/group").attrs["note"] = "nothing here"

    def translate(url: str) -> dict[str, Any]:
        return SingleHdf5ToZarr(url, inline_threshold=64).translate()

    (out / "refs.json").write_text(json.dumps(translate(str(h5))))
    here = Path.cwd()
    try:
        os.chdir(out)
        (out / "refs-relative.json").write_text(json.dumps(translate("data.h5")))
    finally:
        os.chdir(here)

    manifest = []
    for path, data in expected.items():
        data = np.asarray(data)
        entry: dict[str, Any] = {"path": path, "shape": list(data.shape)}
        if data.dtype == object:
            entry["strings"] = [str(x) for x in data.reshape(-1)]
        else:
            entry["dtype"] = data.dtype.str
            entry["hex"] = le_hex(data)
        manifest.append(entry)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def cmd_kerchunk_parquet(out: Path) -> None:
    import fsspec
    import kerchunk.df
    from fsspec.implementations.reference import LazyReferenceMapper

    def load(name: str) -> dict[str, Any]:
        refs = json.loads((out / name).read_text())
        return refs.get("refs", refs)

    kerchunk.df.refs_to_dataframe(load("refs.json"), str(out / "refs.parq"), record_size=4)
    here = Path.cwd()
    try:
        # The relative URLs start from the current directory, for fsspec as for the writer.
        os.chdir(out)
        mapper = LazyReferenceMapper.create(str(out / "refs-relative.parq"),
                                            fs=fsspec.filesystem("file"), record_size=7,
                                            engine="pyarrow")
        refs = load("refs-relative.json")
        for key in sorted(refs):
            mapper[key] = refs[key]
        mapper.flush()
        for json_name, parquet_name, engine in [
                ("refs.json", "refs.parq", "fastparquet"),
                ("refs-relative.json", "refs-relative.parq", "pyarrow")]:
            # Each read back by fsspec with the engine that wrote it (fastparquet reads a
            # null column pyarrow wrote as NaN, which fsspec takes for a value).
            written = LazyReferenceMapper(str(out / parquet_name), engine=engine)
            for key, ref in load(json_name).items():
                if key.endswith((".zarray", ".zattrs", ".zgroup")):
                    same = json.loads(written[key]) == json.loads(ref)
                elif isinstance(ref, list):
                    same = [x.item() if hasattr(x, "item") else x for x in written[key]] == ref
                else:
                    same = written[key] == kerchunk.df._proc_raw(ref)
                if not same:
                    sys.exit(f"{parquet_name}: fsspec reads {key} as {written[key]!r}, "
                             f"not {ref!r}")
    finally:
        os.chdir(here)


def reference_filesystem(refs: Path, **kwargs: Any) -> Any:
    import fsspec

    return fsspec.filesystem("reference", fo=str(refs), remote_protocol="file", **kwargs)


# --- N5 (tensorstore's N5 driver) -------------------------------------------------------
#
# (path, dataType, dimensions, blockSize, compression, the written region's end along axis
#  0 (None: whole))
N5_CASES = [
    ("raw_u8", "uint8", [9, 6], [4, 4], {"type": "raw"}, None),
    ("gzip_i16", "int16", [7, 5, 3], [3, 2, 2], {"type": "gzip", "level": 5}, None),
    ("zlib_u32", "uint32", [10, 4], [4, 3], {"type": "gzip", "useZlib": True}, 6),
    ("bzip2_i64", "int64", [33], [8], {"type": "bzip2", "blockSize": 4}, None),
    ("xz_f32", "float32", [6, 6], [5, 2], {"type": "xz", "preset": 3}, None),
    ("blosc_f64", "float64", [5, 9], [2, 4],
     {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 2, "blocksize": 0}, 3),
    ("zstd_u64", "uint64", [4, 4, 4], [2, 3, 4], {"type": "zstd", "level": 3}, None),
    ("groups/inner/raw_i8", "int8", [5], [2], {"type": "raw"}, None),
    ("groups/gzip_u16", "uint16", [3, 17], [3, 5], {"type": "gzip"}, None),
    ("groups/zlib_i32", "int32", [6, 2], [4, 2], {"type": "gzip", "useZlib": True, "level": 1}, None),
]


def n5_values(data_type: str, shape: list[int], seed: int) -> np.ndarray:
    """Values of every magnitude the type holds (exact as JSON numbers below 2^53)."""
    dtype = np.dtype(data_type)
    n = int(np.prod(shape))
    index = np.arange(n, dtype=np.int64)
    if dtype.kind == "f":
        values = (index * 0.75 - 3.5 + seed).astype(dtype)
    else:
        info = np.iinfo(dtype)
        top = min(int(info.max), 2**52)
        bottom = max(int(info.min), -(2**52))
        values = np.array([bottom if i % 7 == 3 else top - i if i % 5 == 1 else (i * 37 + seed) % 100
                           for i in range(n)], dtype=dtype)
    return values.reshape(shape)


def n5_spec(path: Path, case: tuple) -> dict[str, Any]:
    name, data_type, dimensions, block_size, compression, _ = case
    return {"driver": "n5", "kvstore": {"driver": "file", "path": str(path / name)},
            "metadata": {"dataType": data_type, "dimensions": dimensions,
                         "blockSize": block_size, "compression": compression}}


def cmd_n5_write(out: Path) -> None:
    import tensorstore as ts

    out.mkdir(parents=True, exist_ok=True)
    (out / "attributes.json").write_text(json.dumps({"n5": "4.0.0", "title": "n5 interop"}))
    manifest = []
    for seed, case in enumerate(N5_CASES):
        name, data_type, dimensions, _, _, end = case
        values = n5_values(data_type, dimensions, seed)
        store = ts.open(n5_spec(out, case), create=True).result()
        region = tuple(slice(0, end if axis == 0 else None) for axis in range(len(dimensions)))
        store[region] = values[region]
        expected = np.zeros_like(values)
        expected[region] = values[region]
        manifest.append({"path": name, "data_type": data_type, "shape": dimensions,
                         "values": expected.reshape(-1).tolist()})
    attributes = out / "groups" / "attributes.json"
    attributes.write_text(json.dumps({"kind": "nested", "scale": [1.5, 2]}))
    (out / "manifest.json").write_text(json.dumps(manifest))


def cmd_n5_read(root: Path) -> None:
    import tensorstore as ts

    manifest = json.loads((root / "manifest.json").read_text())
    problems = []
    for entry in manifest:
        spec = {"driver": "n5", "kvstore": {"driver": "file", "path": str(root / entry["path"])}}
        store = ts.open(spec, open=True, read=True).result()
        got = store.read().result()
        want = np.array(entry["values"], dtype=entry["data_type"]).reshape(entry["shape"])
        if got.dtype != want.dtype or not np.array_equal(got, want):
            problems.append(f"{entry['path']}: {describe_mismatch(got, want)}")
        else:
            print(f"{entry['path']}: equal ({store.spec().to_json()['metadata']['compression']['type']})")
    if problems:
        sys.exit("\n".join(problems))


def cmd_references_render(refs: Path, out: Path) -> None:
    import base64

    fs = reference_filesystem(refs, simple_templates=False)
    result: dict[str, Any] = {}
    for key in sorted(fs.references):
        ref = fs.references[key]
        if isinstance(ref, (str, bytes)):
            result[key] = {"inline": base64.b64encode(fs.cat_file(key)).decode()}
        else:
            result[key] = list(ref)
    out.write_text(json.dumps(result, indent=1))


def cmd_references_read(refs: Path, paths: list[str]) -> None:
    from zarr.storage import FsspecStore

    fs = reference_filesystem(refs, asynchronous=True)
    store = FsspecStore(fs, read_only=True, path="")
    # A Parquet set (a directory) holds Zarr v2 only, and fsspec fails on the v3 keys
    # (`a/zarr.json`) zarr-python would try first: ask for v2.
    version: dict[str, Any] = {"zarr_format": 2} if refs.is_dir() else {}
    # Each array is opened by its path: listing below the root through fsspec's reference
    # file system finds nothing, so zarr-python's recursive `members` does not reach them.
    root = zarr.open_group(store, mode="r", **version)
    result: dict[str, Any] = {"attributes": dict(root.attrs)}
    for path in paths:
        data = np.asarray(zarr.open_array(store, path=path, mode="r", **version)[...])
        if data.dtype.kind in "OTU":
            result[path] = [str(x) for x in data.reshape(-1)]
        else:
            result[path] = le_hex(data)
    print(json.dumps(result))


def cmd_consolidated_check(root: Path, zarr_format: int, paths: list[str]) -> None:
    """zarr-python opens ROOT from its consolidated metadata: it must list exactly PATHS,
    each node as its own documents describe it, with the same values. Prints the problems
    and, per array, the shape and attributes the record gives, as JSON."""
    problems = consolidated_problems(root, paths, zarr_format)
    seen: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_consolidated(LocalStore(root, read_only=True), mode="r",
                                   zarr_format=zarr_format)
        seen[""] = {"attributes": dict(g.attrs)}
        for name, node in g.members(max_depth=None):
            seen[name] = {"attributes": dict(node.attrs)}
            if isinstance(node, zarr.Array):
                seen[name]["shape"] = list(node.shape)
    print(json.dumps({"problems": problems, "nodes": seen}))


def main() -> None:
    args = sys.argv[1:]
    if args == ["matrix"]:
        print(json.dumps(build_matrix(), allow_nan=False, ensure_ascii=False, indent=1))
    elif len(args) == 2 and args[0] == "write":
        cmd_write(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "write-v2":
        cmd_write_v2(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "write-struct":
        cmd_write_struct(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "read-struct":
        cmd_read_struct(Path(args[1]).resolve())
    elif len(args) == 3 and args[0] == "compare-v2":
        cmd_compare_v2(Path(args[1]).resolve(), Path(args[2]).resolve())
    elif len(args) == 2 and args[0] == "zip-write":
        cmd_zip_write(Path(args[1]).resolve())
    elif len(args) in (2, 3) and args[0] == "zip-read":
        cmd_zip_read(Path(args[1]).resolve(), args[2:] == ["--added"])
    elif len(args) == 2 and args[0] == "zfp-write":
        cmd_zfp_write(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "selection-write":
        cmd_selection_write(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "vlen-array":
        cmd_vlen_array(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "vlen-array-read":
        cmd_vlen_array_read(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "ndarray-write":
        cmd_ndarray_write(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "ndarray-read":
        cmd_ndarray_read(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "kerchunk-hdf5":
        cmd_kerchunk_hdf5(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "kerchunk-parquet":
        cmd_kerchunk_parquet(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "n5-write":
        cmd_n5_write(Path(args[1]).resolve())
    elif len(args) == 2 and args[0] == "n5-read":
        cmd_n5_read(Path(args[1]).resolve())
    elif len(args) == 3 and args[0] == "references-render":
        cmd_references_render(Path(args[1]).resolve(), Path(args[2]).resolve())
    elif len(args) >= 2 and args[0] == "references-read":
        cmd_references_read(Path(args[1]).resolve(), args[2:])
    elif len(args) >= 3 and args[0] == "consolidated-check":
        cmd_consolidated_check(Path(args[1]).resolve(), int(args[2]), args[3:])
    elif len(args) == 3 and args[0] == "verify":
        cmd_verify(Path(args[1]).resolve(), Path(args[2]).resolve())
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
