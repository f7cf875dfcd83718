"""Writes generated inputs for the real TF graphs `verify_real_graphs_test.sh` checks, as
.npy files (int32, C order) that `parallax run/verify --feed NAME=FILE` read.

  real_graph_feeds.py lstm_crf DIR   word_ids [N,8], sequence_lengths [N], char_ids
                                     [N,8,5], word_lengths [N,8], labels [N,8]: sentences of
                                     3 to 8 words (ids 1..22) padded to 8, a word's tag (9
                                     tags) a function of its id, its characters of its id
  real_graph_feeds.py vd_cnn DIR     x [N,1014] character ids in [0,70), y [N] in [0,14),
                                     the class a function of the first characters

No numpy: the .npy header (format 1.0) is written by hand.
"""
import os
import struct
import sys


def write_npy(path, shape, values):
    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join("%d" % d for d in shape) if len(shape) != 1 else "%d," % shape[0])
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%di" % len(values), *values))


def lstm_crf(out, sentences=32, words=8, chars=5):
    word_ids, lengths, char_ids, word_lengths, labels = [], [], [], [], []
    for s in range(sentences):
        n = 3 + (s * 5) % 6
        lengths.append(n)
        for w in range(words):
            wid = 1 + (s * 7 + w * 3) % 22 if w < n else 0
            word_ids.append(wid)
            labels.append(wid % 9 if w < n else 0)
            nchars = 1 + wid % chars if w < n else 0
            word_lengths.append(nchars)
            for c in range(chars):
                char_ids.append(1 + (wid * 5 + c) % 27 if c < nchars else 0)
    write_npy(os.path.join(out, "word_ids.npy"), (sentences, words), word_ids)
    write_npy(os.path.join(out, "sequence_lengths.npy"), (sentences,), lengths)
    write_npy(os.path.join(out, "char_ids.npy"), (sentences, words, chars), char_ids)
    write_npy(os.path.join(out, "word_lengths.npy"), (sentences, words), word_lengths)
    write_npy(os.path.join(out, "labels.npy"), (sentences, words), labels)


def vd_cnn(out, texts=16, length=1014):
    x = [(i * 13 + j * 7 + (j * j) % 11) % 70 for i in range(texts) for j in range(length)]
    write_npy(os.path.join(out, "x.npy"), (texts, length), x)
    write_npy(os.path.join(out, "y.npy"), (texts,), [i % 14 for i in range(texts)])


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("lstm_crf", "vd_cnn"):
        sys.exit("usage: real_graph_feeds.py lstm_crf|vd_cnn DIR")
    os.makedirs(sys.argv[2], exist_ok=True)
    {"lstm_crf": lstm_crf, "vd_cnn": vd_cnn}[sys.argv[1]](sys.argv[2])
