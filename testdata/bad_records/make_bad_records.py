#!/usr/bin/env python3
"""Writes the corrupt TFRecord files of this folder (run from anywhere; Python 3 only).

Each file breaks one rule of the format; expected_errors.txt holds the exact error the
reader reports for it (lib/runtime/data/tfrecord_test.cc checks every line). A name
ending in .gz is read with compression_type "GZIP", .zlib with "ZLIB", others with "".
"""
import gzip
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked(length)) + data +
            struct.pack("<I", masked(data)))


def flip(data, index):
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1:]


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def gzip_bytes(data):
    # mtime 0: the same bytes on every run.
    return gzip.compress(data, mtime=0)


def main():
    a = record(b"first record")    # 12 bytes of data: 28 framed
    b = record(b"second")          # 6: 22 framed
    c = record(b"x" * 40)          # 40: 56 framed

    write("truncated_header.tfrecord", a + record(b"second")[:5])
    write("length_crc.tfrecord", flip(a, 8))
    write("truncated_data.tfrecord", a + b + record(b"y" * 100)[:12 + 37])
    write("truncated_data_crc.tfrecord", a + b[:-2])
    write("data_crc.tfrecord", a + b + flip(c, 12 + 39))
    # A length of 2^40 with a valid crc, and 20 bytes of data: reported as truncated
    # without allocating a terabyte.
    huge = struct.pack("<Q", 1 << 40)
    write("huge_length.tfrecord", a + huge + struct.pack("<I", masked(huge)) + b"z" * 20)
    # A gzip file read without compression_type: the error suggests "GZIP".
    write("gzip_not_declared.tfrecord", gzip_bytes(a + b))
    # A plain file read as gzip.
    write("not_gzip.tfrecord.gz", a + b)
    # The gzip stream ends before its trailer.
    whole = gzip_bytes(a + b + c)
    write("truncated.tfrecord.gz", whole[:-6])
    # The gzip trailer's CRC-32 does not match the data (its first byte flipped).
    write("bad_gzip_crc.tfrecord.gz", flip(whole, len(whole) - 8))
    # A record with a bad data crc inside a valid zlib stream.
    write("data_crc.tfrecord.zlib", zlib.compress(a + flip(b, 13)))
    # Bytes after the end of a zlib stream.
    write("trailing_data.tfrecord.zlib", zlib.compress(a + b) + b"junk")


if __name__ == "__main__":
    main()
