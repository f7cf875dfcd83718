// dlclose that unloads nothing, for `--config=asan` (.bazelrc) only.
//
// OpenMPI loads its components (mca_*.so) with dlopen and unloads them in MPI_Finalize.
// LeakSanitizer checks for leaks at exit, after that: the stacks of what the components
// allocated and never freed then point into unmapped memory, print as "<unknown module>",
// and no suppression (lsan_suppressions.cc) can name them. Keeping every library mapped
// until exit lets the report name the library and its function. A process that is
// exiting loses nothing by it; no code of ours unloads libraries.

// The definition in the executable comes first in symbol lookup, before libc's, for
// every library that calls dlclose (the link exports it: BUILD.bazel).
extern "C" int dlclose(void* /*handle*/) { return 0; }
