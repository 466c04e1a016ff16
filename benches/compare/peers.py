"""The Python peers of the comparison harness: tensorstore and zarr-python.

`zarr-compare` (benches/src/bin/zarr-compare) runs this script once per measurement, in a
fresh interpreter, with the same flags its own `measure` takes:

    python peers.py --impl tensorstore --workload W1 --op read --data DIR --side 512 --reps 5

It prints one JSON line with the same fields as the Rust measurements. `--versions` prints
the peers' versions and exits. The data (DIR/input.u16, little-endian uint16, C order), the
W4 chunk list (DIR/w4-chunks.json) and the array layouts are the harness's: see
zarr_benches::Geometry. Each implementation writes to DIR/<impl>/<w1|w2|w3> and reads its
own copy; `cross_read` reads another writer's W2 copy.

W6 (zarr-python only: tensorstore has no `vlen-utf8`) writes and reads the strings of
DIR/input-w6.strings (zarr_benches::Strings) as a 1-D `string` array in DIR/<impl>/w6, chunks
of a tenth, `vlen-utf8` then zstd(1); `cross_read` reads another writer's W6 copy.
"""

import argparse
import asyncio
import json
import os
import resource
import shutil
import sys
import time
from importlib.metadata import version

import numpy as np


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--versions", action="store_true")
    p.add_argument("--impl", choices=["tensorstore", "zarr-python"])
    p.add_argument("--workload")
    p.add_argument("--op")
    p.add_argument("--data")
    p.add_argument("--side", type=int)
    p.add_argument("--reps", type=int)
    p.add_argument("--writer")
    p.add_argument("--threads", type=int)
    return p.parse_args()


# --- what the process records about itself and the machine (as stats.rs does) -----------


def machine_busy_ticks():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]


def own_cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def peak_rss_bytes():
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent through fork and exec.
    return status_bytes("VmHWM:")


def current_rss_bytes():
    return status_bytes("VmRSS:")


def cores():
    return len(os.sched_getaffinity(0))


def time_reps(reps, run):
    """Time `reps` runs of `run` (warm-up is the caller's), with the load during them."""
    busy0, own0, t0 = machine_busy_ticks(), own_cpu_seconds(), time.perf_counter()
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    wall = max(time.perf_counter() - t0, 1e-9)
    busy = (machine_busy_ticks() - busy0) / os.sysconf("SC_CLK_TCK")
    own = own_cpu_seconds() - own0
    load = {
        "other_cpu": min(max((busy - own) / (wall * cores()), 0.0), 1.0),
        "own_cores": own / wall,
    }
    return seconds, load


# --- the data --------------------------------------------------------------------------


class Geometry:
    def __init__(self, side):
        self.side = side
        self.chunk = side // 8
        self.shard = side // 2
        self.inner = side // 16
        self.slab_y = side * 200 // 512

    @property
    def nbytes(self):
        return self.side**3 * 2


def load_input(data, g):
    return np.fromfile(os.path.join(data, "input.u16"), dtype="<u2").reshape((g.side,) * 3)


def w4_blocks(data, g):
    with open(os.path.join(data, "w4-chunks.json")) as f:
        chunks = json.load(f)
    i = g.inner
    return [tuple(slice(c * i, (c + 1) * i) for c in chunk) for chunk in chunks]


def check_equal(what, got, expected):
    got = np.asarray(got)
    if got.shape != expected.shape:
        raise SystemExit(f"{what}: read shape {got.shape}, expected {expected.shape}")
    if not np.array_equal(got, expected):
        i = int(np.flatnonzero(got.ravel() != expected.ravel())[0])
        raise SystemExit(
            f"{what}: value {i} is {got.ravel()[i]}, expected {expected.ravel()[i]} "
            "(the values differ from the input)"
        )


def load_strings(data):
    """W6's input, DIR/input-w6.strings (zarr_benches::Strings::to_file_bytes): the count
    (u64), the count + 1 offsets (u64), all little endian, then the UTF-8 values. Returns the
    strings (a NumPy StringDType array) and the number of value bytes."""
    with open(os.path.join(data, "input-w6.strings"), "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    offsets = np.frombuffer(raw, dtype="<u8", count=n + 1, offset=8).tolist()
    values = raw[8 * (n + 2) :]
    strings = [values[a:b].decode() for a, b in zip(offsets[:-1], offsets[1:])]
    return np.array(strings, dtype=np.dtypes.StringDType()), len(values)


def strings_chunk(n):
    """W6's chunk length: a tenth of the strings, as zarr-compare's job::strings_chunk."""
    return max(-(-n // 10), 1)


def check_strings(what, got, expected):
    got = np.asarray(got)
    if got.shape != expected.shape:
        raise SystemExit(
            f"{what}: read {got.size} strings, expected {expected.size} "
            "(the values differ from the input)"
        )
    differ = np.flatnonzero(got != expected)
    if differ.size:
        i = int(differ[0])
        raise SystemExit(
            f"{what}: string {i} is {str(got[i])!r}, expected {str(expected[i])!r} "
            "(the values differ from the input)"
        )


def store_dir(data, writer, w):
    return os.path.join(data, writer, w)


def fresh_dir(path):
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)


# --- tensorstore -----------------------------------------------------------------------


class TensorStore:
    durable = True  # the file driver fsyncs what it writes (file_io_sync, on by default)

    def __init__(self):
        import tensorstore as ts

        self.ts = ts
        self.version = version("tensorstore")

    def metadata(self, g, w):
        bytes_codec = {"name": "bytes", "configuration": {"endian": "little"}}
        zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
        if w == "w1":
            grid, codecs = g.chunk, [bytes_codec, zstd]
        elif w == "w2":
            grid = g.shard
            codecs = [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": [g.inner] * 3,
                        "codecs": [bytes_codec, zstd],
                        "index_codecs": [bytes_codec, {"name": "crc32c"}],
                        "index_location": "end",
                    },
                }
            ]
        else:
            grid, codecs = g.chunk, [bytes_codec]
        return {
            "shape": [g.side] * 3,
            "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [grid] * 3}},
            "chunk_key_encoding": {"name": "default"},
            "fill_value": 0,
            "codecs": codecs,
        }

    def spec(self, path):
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}

    def create(self, path, g, w):
        spec = dict(self.spec(path), metadata=self.metadata(g, w))
        return self.ts.open(spec, create=True, delete_existing=True).result()

    def open(self, path):
        return self.ts.open(self.spec(path), open=True, read=True).result()

    def write(self, array, values):
        array.write(values).result()

    def read(self, array, selection=...):
        return array[selection].read().result()

    def read_all(self, array, selections):
        futures = [array[s].read() for s in selections]
        return [f.result() for f in futures]


# --- zarr-python -------------------------------------------------------------------------


class ZarrPython:
    durable = False  # LocalStore does not fsync

    def __init__(self):
        import zarr

        self.zarr = zarr
        self.version = version("zarr")

    def create(self, path, g, w):
        from zarr.codecs import BytesCodec, ZstdCodec

        compressors = None if w == "w3" else [ZstdCodec(level=1, checksum=False)]
        if w == "w2":
            chunks, shards = (g.inner,) * 3, (g.shard,) * 3
        else:
            chunks, shards = (g.chunk,) * 3, None
        return self.zarr.create_array(
            store=path,
            shape=(g.side,) * 3,
            chunks=chunks,
            shards=shards,
            dtype="uint16",
            serializer=BytesCodec(endian="little"),
            compressors=compressors,
            filters=None,
            fill_value=0,
            zarr_format=3,
            overwrite=True,
        )

    def create_strings(self, path, n):
        from zarr.codecs import VLenUTF8Codec, ZstdCodec

        return self.zarr.create_array(
            store=path,
            shape=(n,),
            chunks=(strings_chunk(n),),
            dtype=str,
            serializer=VLenUTF8Codec(),
            compressors=[ZstdCodec(level=1, checksum=False)],
            filters=None,
            fill_value="",
            zarr_format=3,
            overwrite=True,
        )

    def open(self, path):
        self.path = path
        return self.zarr.open_array(path, mode="r")

    def write(self, array, values):
        array[...] = values

    def read(self, array, selection=...):
        return array[selection]

    def read_all(self, array, selections):
        # All in flight: zarr-python's async API, one coroutine per selection.
        async def run():
            a = await self.zarr.api.asynchronous.open_array(store=self.path, mode="r")
            return await asyncio.gather(*(a.getitem(s) for s in selections))

        return asyncio.run(run())


# --- the measurement ---------------------------------------------------------------------


def measure_strings(args, peer):
    """W6: write, read or cross_read the strings; returns the times, the load and the record's
    own fields."""
    if not hasattr(peer, "create_strings"):
        raise SystemExit(f"{args.impl}: no W6 (no vlen-utf8 strings)")
    record = {"threads": cores(), "verified": True}
    if args.op == "write":
        values, nbytes = load_strings(args.data)
        path = store_dir(args.data, args.impl, "w6")
        fresh_dir(path)
        array = peer.create_strings(path, values.size)
        peer.write(array, values)
        seconds, load = time_reps(args.reps, lambda: peer.write(array, values))
        record.update(verified=False, durable=peer.durable)
    elif args.op in ("read", "cross_read"):
        writer = args.writer if args.op == "cross_read" else args.impl
        array = peer.open(store_dir(args.data, writer, "w6"))
        if args.op == "read":
            base = current_rss_bytes()
            peer.read(array)  # warm-up; the result is dropped at once
            seconds, load = time_reps(args.reps, lambda: peer.read(array))
            record.update(peak_rss=peak_rss_bytes(), base_rss=base)
            got = peer.read(array)
            what = "whole read"
        else:
            got = []
            seconds, load = time_reps(1, lambda: got.append(peer.read(array)))
            got = got[0]
            record.update(writer=writer)
            what = f"reading {writer}'s W6"
        values, nbytes = load_strings(args.data)
        check_strings(what, got, values)
    else:
        raise SystemExit(f"{args.impl}: no W6 op {args.op}")
    record.update(bytes=nbytes, elements=values.size, chunk_elements=strings_chunk(values.size))
    return seconds, load, record


def measure(args):
    peer = TensorStore() if args.impl == "tensorstore" else ZarrPython()
    g = Geometry(args.side)
    w = args.workload.lower()
    full = g.side**3 * 2
    record = {"threads": cores(), "verified": True}
    if args.workload == "W6":
        seconds, load, record = measure_strings(args, peer)
    elif args.op == "write":
        values = load_input(args.data, g)
        path = store_dir(args.data, args.impl, w)
        fresh_dir(path)
        array = peer.create(path, g, w)
        peer.write(array, values)
        seconds, load = time_reps(args.reps, lambda: peer.write(array, values))
        record.update(bytes=full, verified=False, durable=peer.durable)
    elif args.op == "read":
        array = peer.open(store_dir(args.data, args.impl, w))
        base = current_rss_bytes()
        peer.read(array)  # warm-up; the result is dropped at once
        seconds, load = time_reps(args.reps, lambda: peer.read(array))
        record.update(bytes=full, peak_rss=peak_rss_bytes(), base_rss=base)
        check_equal("whole read", peer.read(array), load_input(args.data, g))
    elif args.op == "cross_read":
        array = peer.open(store_dir(args.data, args.writer, w))
        got = []
        seconds, load = time_reps(1, lambda: got.append(peer.read(array)))
        check_equal(f"reading {args.writer}'s {args.workload}", got[0], load_input(args.data, g))
        record.update(bytes=full, writer=args.writer)
    elif args.op in ("serial", "concurrent"):
        array = peer.open(store_dir(args.data, args.impl, "w2"))
        blocks = w4_blocks(args.data, g)
        values = load_input(args.data, g)
        if args.op == "serial":
            run = lambda: [peer.read(array, b) for b in blocks]  # noqa: E731
        else:
            run = lambda: peer.read_all(array, blocks)  # noqa: E731
        for got, block in zip(run(), blocks):
            check_equal("W4 block", got, values[block])
        seconds, load = time_reps(args.reps, run)
        record.update(bytes=len(blocks) * g.inner**3 * 2)
    elif args.op in ("slab_w1", "slab_w2"):
        array = peer.open(store_dir(args.data, args.impl, args.op[5:]))
        slab = (slice(None), slice(g.slab_y, g.slab_y + 1), slice(None))
        check_equal("W5 slab", peer.read(array, slab), load_input(args.data, g)[slab])
        seconds, load = time_reps(args.reps, lambda: peer.read(array, slab))
        record.update(bytes=g.side * g.side * 2)
    else:
        raise SystemExit(f"{args.impl}: no op {args.op}")
    ordered = sorted(seconds)
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    record = {
        "implementation": args.impl,
        "version": peer.version,
        "api": "python",
        "workload": args.workload,
        "op": args.op,
        "side": g.side,
        "reps": n,
        "median_s": median,
        "min_s": ordered[0],
        "mib_s": record["bytes"] / median / 2**20,
        "other_cpu": load["other_cpu"],
        "own_cores": load["own_cores"],
        "seconds": seconds,
        **record,
    }
    if "elements" in record:
        record["elements_s"] = record["elements"] / median
    print(json.dumps(record))


def main():
    args = parse_args()
    if args.versions:
        import tensorstore  # noqa: F401  (both must import)
        import zarr  # noqa: F401

        print(f"tensorstore {version('tensorstore')}, zarr-python {version('zarr')}")
        return
    missing = [f for f in ("impl", "workload", "op", "data", "side", "reps") if getattr(args, f) is None]
    if missing:
        raise SystemExit("peers.py: missing " + ", ".join("--" + m for m in missing))
    measure(args)


if __name__ == "__main__":
    sys.exit(main())
