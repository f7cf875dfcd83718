"""parallax_fuzzer: one libFuzzer harness as the targets fuzz/BUILD.bazel describes."""

def parallax_fuzzer(name, deps, inputs, data):
    """The harness `name`.cc, which defines LLVMFuzzerTestOneInput, as three targets.

    name:        the fuzzer. Under --config=fuzz (--define=parallax_fuzz=libfuzzer) it links
                 libFuzzer's main; otherwise replay_main, to run files through by hand.
    name_test:   replay_main over `inputs`: CI's smoke run of every seed.
    name_seeds:  `inputs`, one a line, in bazel-bin/fuzz/name.seeds: the seed corpus
                 scripts/fuzz.sh copies.

    Args:
      name: the harness, "<what>_fuzzer".
      deps: the parser's libraries.
      inputs: the seed corpus as replay_main.cc takes it: repository paths, "shared:"
        paths under $PARALLAX_SHARED_DIR, a last component with '*' for the files that
        match.
      data: the targets that hold the repository paths.
    """
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = [name + ".cc"],
        deps = deps + [":fuzz_input"] + select({
            ":libfuzzer": [],
            "//conditions:default": [":replay_main"],
        }),
        linkopts = select({
            ":libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
    )
    native.cc_test(
        name = name + "_test",
        size = "small",
        srcs = [name + ".cc"],
        deps = deps + [":fuzz_input", ":replay_main"],
        args = inputs,
        data = data,
    )
    native.genrule(
        name = name + "_seeds",
        outs = [name + ".seeds"],
        cmd = "printf '%s\\n' " + " ".join(["'%s'" % i for i in inputs]) + " > $@",
    )
