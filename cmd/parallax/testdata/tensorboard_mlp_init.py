#!/usr/bin/env python3
"""Writes a step-0 Parallax checkpoint (safetensors) for the shared TensorBoard MNIST MLP.

That graph restores its variables with a Saver and has no init op, so `parallax run`
and `parallax verify` need starting values: Glorot-uniform weights (seeded) and zero
biases, in the checkpoint format of lib/runtime/checkpoint (docs/run.md).

Usage: tensorboard_mlp_init.py OUT.safetensors
"""
import json
import random
import struct
import sys

SHAPES = {"hidden_weights": [784, 100], "hidden_biases": [100],
          "logits_weights": [100, 10], "logits_biases": [10]}


def main(out_path):
    rng = random.Random(0)
    header, data = {}, b""
    for name in sorted(SHAPES):
        shape = SHAPES[name]
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        scale = 0.0 if name.endswith("biases") else (6.0 / sum(shape)) ** 0.5
        blob = struct.pack("<%df" % n, *[rng.uniform(-scale, scale) for _ in range(n)])
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    header["__metadata__"] = {"format": "parallax-checkpoint-1", "step": "0",
                              "data_epoch": "0", "data_index": "0", "shuffle_seed": "0"}
    encoded = json.dumps(header).encode()
    with open(out_path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + data)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
