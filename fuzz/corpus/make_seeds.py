#!/usr/bin/env python3
"""Writes the binary seed inputs of fuzz/corpus/ (the text ones are written by hand).

Run from anywhere: `python3 fuzz/corpus/make_seeds.py`. The files are committed; rerun
only to change the seeds. Each folder is one harness's seeds, next to the test data the
BUILD file also gives it:
  safetensors/     small safetensors files (with and without checksums)
  npy/             .npy arrays of every supported dtype and format version
  idx/             IDX files, plain and gzip-compressed
  tf_checkpoint/   the checkpoints of testdata/bad_checkpoints as tf_checkpoint_fuzzer
                   reads them: P.index, then the data shard after the part separator
  tf_checkpoint_entries/  checkpoints as tf_checkpoint_entries_fuzzer reads them: the
                   data, the header, then each entry's key and value (whole tensors of
                   several dtypes, strings, a tensor saved as slices)
  keyed_column/    CSV files and TFRecord files of tf.train.Example with feature "x"
  event_file/      a TensorBoard event file: file_version, a scalar, a histogram
"""

import gzip
import json
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside make_bad_checkpoints.py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "testdata", "bad_checkpoints"))
from make_bad_checkpoints import (  # noqa: E402
    DT_BOOL, DT_FLOAT, DT_STRING, crc32c, entry, extent, field_bytes, field_varint, header,
    mask, string_tensor, varint)

# fuzz_input.h's kPartSeparator.
PART_SEPARATOR = b"\n--PARALLAX-FUZZ-PART--\n"
DT_INT64 = 9


def write(folder, name, data):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data)


def field_fixed32(num, value):
    return varint(num << 3 | 5) + struct.pack("<I", value)


def field_double(num, value):
    return varint(num << 3 | 1) + struct.pack("<d", value)


def field_float(num, value):
    return varint(num << 3 | 5) + struct.pack("<f", value)


def tfrecord(records):
    out = b""
    for r in records:
        length = struct.pack("<Q", len(r))
        out += length + struct.pack("<I", mask(crc32c(length))) + r
        out += struct.pack("<I", mask(crc32c(r)))
    return out


def safetensors(tensors, metadata, checksums):
    header = {"__metadata__": dict(metadata)}
    data = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        if checksums:
            header["__metadata__"]["crc32c:" + name] = "%08x" % crc32c(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def npy(descr, shape, raw, major=1):
    dims = "(" + "".join("%d, " % d for d in shape).rstrip(" ")
    dims = dims[:-1] + ",)" if len(shape) == 1 else dims.rstrip(",") + ")"
    header = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)).encode()
    length_bytes = 2 if major == 1 else 4
    total = 6 + 2 + length_bytes + len(header) + 1
    header += b" " * ((64 - total % 64) % 64) + b"\n"
    length = struct.pack("<H" if major == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + length + header + raw


def idx(type_code, dims, raw):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + raw


def example(features):
    """features: name -> ("int64" | "float" | "bytes", values)."""
    entries = b""
    for name, (kind, values) in features.items():
        if kind == "int64":
            packed = b"".join(varint(v) for v in values)
            feature = field_bytes(3, field_bytes(1, packed))
        elif kind == "float":
            feature = field_bytes(2, field_bytes(1, b"".join(struct.pack("<f", v) for v in values)))
        else:
            feature = field_bytes(1, b"".join(field_bytes(1, v) for v in values))
        entries += field_bytes(1, field_bytes(1, name.encode()) + field_bytes(2, feature))
    return field_bytes(1, entries)


def main():
    f32 = struct.pack("<4f", 1.0, -2.5, 3.25, 0.0)
    tensors = {"w": ("F32", [2, 2], f32), "step": ("I64", [], struct.pack("<q", 100)),
               "mask": ("BOOL", [3], b"\x01\x00\x01"), "ids": ("I32", [0, 5], b"")}
    write("safetensors", "checksummed.safetensors",
          safetensors(tensors, {"step": "100", "graph_fingerprint": "0123456789abcdef"}, True))
    write("safetensors", "plain.safetensors",
          safetensors({"b": ("U8", [4], b"\x00\x7f\x80\xff"), "d": ("F64", [1], struct.pack("<d", 1e300))},
                      {}, False))

    write("npy", "f4_v1.npy", npy("<f4", [2, 2], f32))
    write("npy", "i8_v2.npy", npy("<i8", [3], struct.pack("<3q", -1, 0, 1 << 40), major=2))
    write("npy", "u1_v3.npy", npy("|u1", [2, 1, 2], b"\x00\x01\xfe\xff", major=3))
    write("npy", "b1_scalar.npy", npy("|b1", [], b"\x01"))
    write("npy", "f8_empty.npy", npy("<f8", [0, 3], b""))

    write("idx", "labels.idx1-ubyte", idx(0x08, [5], bytes([0, 1, 2, 9, 3])))
    images = idx(0x08, [2, 3, 3], bytes(range(18)))
    write("idx", "images.idx3-ubyte", images)
    write("idx", "images.idx3-ubyte.gz", gzip.compress(images, mtime=0))
    write("idx", "floats.idx2", idx(0x0D, [2, 2], struct.pack(">4f", 1.0, 2.0, -1.0, 0.5)))
    write("idx", "int16.idx1", idx(0x0B, [3], struct.pack(">3h", -1, 0, 300)))

    bad = os.path.join(REPO, "testdata", "bad_checkpoints")
    for name in sorted(os.listdir(bad)):
        if not name.endswith(".index"):
            continue
        prefix = name[:-len(".index")]
        with open(os.path.join(bad, name), "rb") as f:
            seed = f.read()
        data = os.path.join(bad, prefix + ".data-00000-of-00001")
        if os.path.exists(data):
            with open(data, "rb") as f:
                seed += PART_SEPARATOR + f.read()
        write("tf_checkpoint", prefix, seed)

    def entries_seed(data, entries):
        parts = [data, header()]
        for key, value in entries:
            parts += [key, value]
        return PART_SEPARATOR.join(parts)

    half = struct.pack("<f", 0.5)
    strings, _ = string_tensor([b"ab", b"", b"xyz"])
    ints = struct.pack("<4q", 1, -2, 3, 1 << 40)
    write("tf_checkpoint_entries", "whole", entries_seed(half + strings + ints + b"\x01\x00", [
        (b"a", entry(DT_FLOAT, [], 0, 4)),
        (b"s", entry(DT_STRING, [3], 4, len(strings))),
        (b"i", entry(DT_INT64, [2, 2], 4 + len(strings), 32)),
        (b"m", entry(DT_BOOL, [2], 36 + len(strings), 2)),
    ]))
    # A float [4, 3] saved as two halves of rows: the tensor's entry lists the slices,
    # each slice has its own entry under TF's key (tensor_slice.h EncodeTensorNameSlice:
    # OrderedCode 0, the name, the rank, then start and length per dimension; small
    # numbers are one byte each, a full extent's length -1 is 0x7f).
    def slice_key(name, extents):
        key = b"\x00" + name + b"\x00\x01" + bytes([1, len(extents)])
        for start, length in extents:
            key += bytes([0x80 ^ (start & 0xFF), 0x80 ^ (length & 0xFF)])
        return key
    rows = struct.pack("<12f", *range(12))
    write("tf_checkpoint_entries", "sliced", entries_seed(rows, [
        (b"w", entry(DT_FLOAT, [4, 3], slices=[[extent(0, 2), b""], [extent(2, 2), b""]])),
        (slice_key(b"w", [(0, 2), (0, -1)]), entry(DT_FLOAT, [2, 3], 0, 24)),
        (slice_key(b"w", [(2, 2), (0, -1)]), entry(DT_FLOAT, [2, 3], 24, 24)),
    ]))

    write("keyed_column", "columns.csv", b'x,"a, b",label\r\n1,0.5,3\n-2,"1e3",4\n\n7,2,5\n')
    write("keyed_column", "floats.csv", b"label,x\n1,0.25\n2,-inf\n")
    write("keyed_column", "examples.tfrecord", tfrecord([
        example({"x": ("float", [0.5, 1.5]), "label": ("int64", [1]), "raw": ("bytes", [b"ab"])}),
        example({"x": ("float", [2.0, -1.0]), "label": ("int64", [0]), "raw": ("bytes", [b""])}),
    ]))
    write("keyed_column", "int_examples.tfrecord", tfrecord([
        example({"x": ("int64", [7])}), example({"x": ("int64", [1 << 40])})]))
    write("keyed_column", "one_example", example({"x": ("int64", [1, 2, 3])}))

    histogram = (field_double(1, -1.0) + field_double(2, 2.0) + field_double(3, 4.0) +
                 field_bytes(6, struct.pack("<2d", 0.0, 2.0)) + field_bytes(7, struct.pack("<2d", 1.0, 3.0)))
    write("event_file", "events.out.tfevents.1700000000.seed", tfrecord([
        field_double(1, 1700000000.0) + field_bytes(3, b"brain.Event:2"),
        field_double(1, 1700000001.5) + field_varint(2, 10) +
        field_bytes(5, field_bytes(1, field_bytes(1, b"loss") + field_float(2, 0.25))),
        field_double(1, 1700000002.0) + field_varint(2, 20) +
        field_bytes(5, field_bytes(1, field_bytes(1, b"w") + field_bytes(5, histogram))),
    ]))


if __name__ == "__main__":
    main()
