#!/usr/bin/env python3
"""Writes the corrupt TensorFlow V2 checkpoints of this folder (and one good one).

Run from anywhere: `python3 testdata/bad_checkpoints/make_bad_checkpoints.py`. The files
are committed; rerun only to change the corpus, then update expected_errors.txt, which
lib/runtime/checkpoint:tf_checkpoint_test checks word for word.

The tables are written here from the published format, independently of LevelDB (one
entry per restart point, the index keyed by each block's last key), so that the good
checkpoint also checks Parallax's reader against a second writer:
  block   = entries (varint shared, varint unshared, varint value size, key, value),
            uint32 restart offsets, uint32 restart count; then a trailer: type byte 0 and
            the masked crc32c of block + type byte
  footer  = metaindex handle, index handle (varint offset, varint size), zero padding to
            40 bytes, magic 0xdb4775248b80fb57 (little-endian)
Entries are BundleEntryProto / BundleHeaderProto (protos/tensor_bundle.proto), encoded by
hand below.
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- CRC-32C (Castagnoli), masked as LevelDB and TensorFlow store it ----

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def mask(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# ---- protobuf encoding ----

def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, value):
    return varint(num << 3 | 2) + varint(len(value)) + value


def field_fixed32(num, value):
    return varint(num << 3 | 5) + struct.pack("<I", value)


def header(num_shards=1, endianness=0, producer=1, min_consumer=0, bad_consumers=()):
    version = field_varint(1, producer) if producer else b""
    if min_consumer:
        version += field_varint(2, min_consumer)
    for bad in bad_consumers:
        version += field_varint(3, bad)
    out = field_varint(1, num_shards) if num_shards else b""
    if endianness:
        out += field_varint(2, endianness)
    return out + field_bytes(3, version)


def shape(dims):
    return b"".join(field_bytes(2, field_varint(1, d) if d else b"") for d in dims)


def extent(start=None, length=None):
    out = b""
    if start:
        out += field_varint(1, start)
    if length is not None:
        out += field_varint(2, length)
    return out


def entry(dtype, dims, offset=0, size=0, crc=0, shard=0, slices=()):
    out = field_varint(1, dtype) + field_bytes(2, shape(dims))
    if shard:
        out += field_varint(3, shard)
    if offset:
        out += field_varint(4, offset)
    if size:
        out += field_varint(5, size)
    if crc:
        out += field_fixed32(6, crc)
    for extents in slices:
        out += field_bytes(7, b"".join(field_bytes(1, e) for e in extents))
    return out


DT_FLOAT, DT_STRING, DT_BOOL, DT_VARIANT = 1, 7, 10, 21


# ---- tables ----

def block(entries):
    out = bytearray()
    restarts = []
    for key, value in entries:
        restarts.append(len(out))
        out += varint(0) + varint(len(key)) + varint(len(value)) + key + value
    if not restarts:
        restarts = [0]
    for r in restarts:
        out += struct.pack("<I", r)
    out += struct.pack("<I", len(restarts))
    return bytes(out)


def trailer(contents, block_type=0):
    typed = contents + bytes([block_type])
    return bytes([block_type]) + struct.pack("<I", mask(crc32c(typed)))


def table(entries, block_type=0):
    data = block(entries)
    out = data + trailer(data, block_type)
    meta_offset = len(out)
    meta = block([])
    out += meta + trailer(meta)
    index_offset = len(out)
    index_entries = [(entries[-1][0], varint(0) + varint(len(data)))] if entries else []
    index = block(index_entries)
    out += index + trailer(index)
    footer = varint(meta_offset) + varint(len(meta)) + varint(index_offset) + varint(len(index))
    footer += b"\0" * (40 - len(footer)) + struct.pack("<Q", 0xDB4775248B80FB57)
    return out + footer


def _varints(data, count):
    """The first `count` varints of `data`, then the offset after them."""
    values, at = [], 0
    for _ in range(count):
        value, shift = 0, 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        values.append(value)
    return values + [at]


def write(name, data=None, index_bytes=None, entries=None, block_type=0):
    if index_bytes is None:
        index_bytes = table(entries, block_type)
    with open(os.path.join(HERE, name + ".index"), "wb") as f:
        f.write(index_bytes)
    if data is not None:
        with open(os.path.join(HERE, name + ".data-00000-of-00001"), "wb") as f:
            f.write(data)


def string_tensor(strings):
    """TF's layout: varint64 lengths, masked crc32c of the lengths as uint32s, the bytes.
    Returns (bytes, the entry's masked crc32c)."""
    lengths = b"".join(varint(len(s)) for s in strings)
    crc = crc32c(b"".join(struct.pack("<I", len(s)) for s in strings))
    checksum = struct.pack("<I", mask(crc))
    crc = crc32c(checksum, crc)
    body = b"".join(strings)
    crc = crc32c(body, crc)
    return lengths + checksum + body, mask(crc)


def main():
    half = struct.pack("<f", 0.5)
    strings, strings_crc = string_tensor([b"ab", b"xyz"])
    good_data = half + strings
    good_entries = [
        (b"", header()),
        (b"a", entry(DT_FLOAT, [], 0, 4, mask(crc32c(half)))),
        (b"s", entry(DT_STRING, [2], 4, len(strings), strings_crc)),
    ]
    write("good", good_data, entries=good_entries)

    # The index itself.
    write("empty", index_bytes=b"")
    write("not_a_table", index_bytes=b"model_checkpoint_path: \"model.ckpt-1\"\n" * 2)
    corrupt = bytearray(table(good_entries))
    corrupt[12] ^= 0x01
    write("block_crc", good_data, index_bytes=bytes(corrupt))
    write("bad_block_type", good_data, entries=good_entries, block_type=7)
    write("no_header", good_data, entries=good_entries[1:])
    write("bad_header", entries=[(b"", b"\xff\xff\xff")])
    write("zero_shards", entries=[(b"", header(num_shards=0))])
    write("big_endian", entries=[(b"", header(endianness=1))])
    write("newer_version", entries=[(b"", header(producer=2, min_consumer=2))])
    write("bad_consumer", entries=[(b"", header(bad_consumers=[1]))])
    write("out_of_order", good_data, entries=[good_entries[0], good_entries[2], good_entries[1]])

    # Entries.
    write("bad_entry", entries=[(b"", header()), (b"a", b"\x12\x05")])
    write("unknown_dim", entries=[(b"", header()), (b"a", entry(DT_FLOAT, [-1], 0, 4))])
    write("bad_shard", half, entries=[(b"", header()), (b"a", entry(DT_FLOAT, [], 0, 4, shard=2))])
    write("bad_size", half, entries=[(b"", header()), (b"a", entry(DT_FLOAT, [3], 0, 8))])
    write("missing_slice", entries=[(b"", header()),
                                    (b"a", entry(DT_FLOAT, [2], slices=[[extent(0, 1)]]))])

    # Data files.
    write("missing_data", None, entries=good_entries)
    write("truncated_data", good_data[:6], entries=good_entries)
    write("crc_mismatch", good_data, entries=[
        (b"", header()), (b"a", entry(DT_FLOAT, [], 0, 4, mask(crc32c(half)) ^ 1))])
    bad_lengths = bytearray(strings)
    bad_lengths[2] ^= 0x10  # inside the length checksum
    write("string_length_crc", bytes(bad_lengths), entries=[
        (b"", header()), (b"s", entry(DT_STRING, [2], 0, len(strings), strings_crc))])
    long_lengths, long_crc = string_tensor([b"ab", b"xyzxyzxyz"])
    short = long_lengths[:6] + b"abxyz"  # the lengths promise 11 bytes, 5 are there
    write("string_lengths_sum", short, entries=[
        (b"", header()), (b"s", entry(DT_STRING, [2], 0, len(short), long_crc))])
    flags = b"\x01\x02"
    write("bool_value", flags, entries=[
        (b"", header()), (b"f", entry(DT_BOOL, [2], 0, 2, mask(crc32c(flags))))])
    write("variant", entries=[(b"", header()), (b"v", entry(DT_VARIANT, []))])

    # Each once a crash of the reader (found by fuzz/tf_checkpoint_fuzzer.cc, or while
    # writing it).
    # A footer whose index block handle claims 2^56 bytes: LevelDB allocated that much
    # before reading the block.
    good_table = table(good_entries)
    handles = good_table[-48:-8]
    meta_offset, meta_size, index_offset, at = _varints(handles, 3)
    footer = varint(meta_offset) + varint(meta_size) + varint(index_offset) + varint(1 << 56)
    footer += b"\0" * (40 - len(footer)) + good_table[-8:]
    write("huge_block_handle", index_bytes=good_table[:-48] + footer)
    # An index claiming 4 TiB of floats beside a 4-byte data file: refused before the
    # tensor is allocated.
    write("huge_shape", half, entries=[
        (b"", header()), (b"a", entry(DT_FLOAT, [1 << 40], 0, 4 << 40, mask(crc32c(half))))])
    # String lengths whose sum wraps around 2^64 to the bytes there (5 + (2^64 - 2) = 3),
    # with a valid checksum of the lengths (TF sums lengths above 4 GiB as uint64s).
    lengths = [5, (1 << 64) - 2]
    crc = crc32c(b"".join(struct.pack("<I" if n < 1 << 32 else "<Q", n) for n in lengths))
    checksum = struct.pack("<I", mask(crc))
    wrapped = b"".join(varint(n) for n in lengths) + checksum + b"abc"
    write("string_lengths_overflow", wrapped, entries=[
        (b"", header()), (b"s", entry(DT_STRING, [2], 0, len(wrapped), mask(crc32c(wrapped))))])


if __name__ == "__main__":
    main()
