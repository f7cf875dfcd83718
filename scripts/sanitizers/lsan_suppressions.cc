// LeakSanitizer's built-in suppressions for `--config=asan` (.bazelrc): leaks inside
// libraries Parallax does not own. Each entry names a library, never our code; a leak
// whose stack passes through one of them but was allocated by us is still ours to fix,
// so an entry is added only after reading the report.
//
// The sanitizer runtime calls this weak hook at start-up and parses the text as a
// suppressions file: `leak:PATTERN` matches a leak when a frame of its allocation stack
// has PATTERN in its function, source file or module name; `#` starts a comment.
extern "C" const char* __lsan_default_suppressions() {
  return R"(
# OpenMPI 4.1 never frees some of what MPI_Init allocates, even after MPI_Finalize: the
# per-datatype function tables of the reduction ops (ompi_op_base_op_select), copies of
# argv and environment strings (opal_argv_*). open-mpi/ompi#10048, #12584.
leak:libmpi.so
leak:libopen-pal.so
leak:libopen-rte.so
# OpenMPI's components (mca_op_avx.so, mca_pmix_*.so, ...), dlopened from its plugin
# folder (kept loaded to the end by keep_libraries_loaded.cc so that this can match).
leak:/openmpi/lib/openmpi3/
# PMIx, the process-management client OpenMPI starts ranks with: values and names it
# copies at init (pmix_rte_init, pmix_bfrops_base_value_load).
leak:libpmix.so
# hwloc, the topology library OpenMPI binds with: bitmaps OpenMPI keeps in globals.
leak:libhwloc.so
# glibc's asprintf, called by OpenMPI (mca_base_component_to_string, from MPI_Init's
# mca_pml_ob1_add_procs): glibc is built without frame pointers, so ASan's fast unwinder
# stops in vasprintf and the stack never reaches libopen-pal (with
# fast_unwind_on_malloc=0, ~3x slower, it does and the entry above matches). Parallax
# itself never calls asprintf or vasprintf.
leak:__vasprintf_internal
)";
}
