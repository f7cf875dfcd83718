"""cuda_library: CUDA sources compiled by nvcc (/usr/local/cuda/bin/nvcc) into a
cc_library, for the --config=cuda build.

Each .cu file becomes one position-independent object through a genrule (Bazel 4.2 has
no CUDA rules, and Debian packages none), compiled for sm_90 (H100/H200) with PTX for
compute_90 so that later GPUs can JIT it. The sources see the workspace root as an
include folder, like the C++ ones; keep .cu files free of the project's C++ headers
(protobuf, Status): they hold the device code and its launch functions, declared in a
plain header that the .cc kernels include.
"""

NVCC = "/usr/local/cuda/bin/nvcc"

NVCC_FLAGS = [
    "-std=c++20",
    "-O3",
    "-Xcompiler=-fPIC",
    "-Xcompiler=-Wall",
    # No fused multiply-adds where the source has a multiply and an add: the CPU kernels
    # (x86-64 without -mfma) round each, and the GPU kernels must give their bits.
    "-fmad=false",
    "--expt-relaxed-constexpr",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
    "-I.",
    "-I$(GENDIR)",
]

def cuda_library(name, srcs, hdrs = [], device_headers = [], deps = [], **kwargs):
    """`device_headers`: headers of other packages the .cu files include (exported files)."""
    objects = []
    for src in srcs:
        stem = src.replace("/", "_").rsplit(".", 1)[0]
        obj = "_nvcc/%s/%s.pic.o" % (name, stem)
        native.genrule(
            name = "%s_nvcc_%s" % (name, stem),
            srcs = [src] + hdrs + device_headers,
            outs = [obj],
            cmd = " ".join([NVCC] + NVCC_FLAGS + ["-c", "$(location %s)" % src, "-o", "$@"]),
            tags = kwargs.get("tags", []),
            target_compatible_with = kwargs.get("target_compatible_with", []),
        )
        objects.append(obj)
    native.cc_library(
        name = name,
        srcs = objects,
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart"],
        **kwargs
    )
