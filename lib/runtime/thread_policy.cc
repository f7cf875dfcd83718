// See thread_policy.h.
#include "lib/runtime/thread_policy.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace parallax {
namespace {

// Set before any library constructor; plain globals (no constructors of their own).
bool applied = false;
bool user_omp = false;
bool user_openblas = false;

// The marker the re-executed process finds (and the user's way to opt out: set it to
// "off" and the environment is left as it is). "user:ob": which variables were the
// user's ('o' OMP_WAIT_POLICY, 'b' OPENBLAS_THREAD_TIMEOUT; '-' where the policy set it).
constexpr char kMarker[] = "PARALLAX_THREAD_POLICY";

const char* Find(char** envp, const char* name) {
  const size_t n = std::strlen(name);
  for (char** e = envp; *e != nullptr; ++e) {
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  }
  return nullptr;
}

// Runs from .preinit_array, before any library constructor (libgomp and libopenblas
// read their environment in theirs). setenv here would not last: libc's own
// initialisation, which runs next, resets `environ` to the process's original array.
// So when a policy variable is missing, the process re-executes itself once with it
// added (before any library was initialised, so nothing is lost but the loading time,
// a few milliseconds). Only raw libc calls are safe here.
void ApplyThreadPolicy(int, char** argv, char** envp) {
  const char* marker = Find(envp, kMarker);
  if (marker != nullptr && std::strcmp(marker, "off") == 0) return;
  const char* omp = Find(envp, "OMP_WAIT_POLICY");
  const char* openblas = Find(envp, "OPENBLAS_THREAD_TIMEOUT");
  if (marker != nullptr) {
    // The re-executed process: the marker says which variables the user had set. It is
    // removed again, in place (the array may shrink, not grow), so that child processes
    // (mpirun's ranks forward PARALLAX_* variables) do not inherit it; they see the
    // policy's values as set and keep them.
    user_omp = std::strchr(marker, 'o') != nullptr;
    user_openblas = std::strchr(marker, 'b') != nullptr;
    applied = omp != nullptr && openblas != nullptr;
    char** out = envp;
    for (char** e = envp; *e != nullptr; ++e) {
      if (std::strncmp(*e, kMarker, sizeof(kMarker) - 1) != 0 || (*e)[sizeof(kMarker) - 1] != '=') {
        *out++ = *e;
      }
    }
    *out = nullptr;
    return;
  }
  if (omp != nullptr && openblas != nullptr) {
    user_omp = user_openblas = true;
    applied = true;
    return;
  }
  static char omp_entry[] = "OMP_WAIT_POLICY=PASSIVE";
  static char openblas_entry[] = "OPENBLAS_THREAD_TIMEOUT=20";
  static char marker_entry[] = "PARALLAX_THREAD_POLICY=user:--";  // 'o' / 'b': user-set
  char* user = marker_entry + sizeof("PARALLAX_THREAD_POLICY=user:") - 1;
  user[0] = omp != nullptr ? 'o' : '-';
  user[1] = openblas != nullptr ? 'b' : '-';
  size_t count = 0;
  while (envp[count] != nullptr) ++count;
  char** env = static_cast<char**>(std::malloc((count + 4) * sizeof(char*)));
  if (env == nullptr) return;
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) env[n++] = envp[i];
  if (omp == nullptr) env[n++] = omp_entry;
  if (openblas == nullptr) env[n++] = openblas_entry;
  env[n++] = marker_entry;
  env[n] = nullptr;
  execve("/proc/self/exe", argv, env);
  std::free(env);  // execve failed: run on with the runtimes' defaults (applied stays false)
}

__attribute__((section(".preinit_array"), used)) void (*const preinit_thread_policy)(
    int, char**, char**) = ApplyThreadPolicy;

std::string Describe(const char* name, bool user) {
  const char* value = std::getenv(name);
  std::string out = std::string(name) + "=" + (value != nullptr ? value : "");
  if (!applied) return out + (value != nullptr ? " (environment)" : " (unset)");
  return out + (user ? " (user)" : " (policy)");
}

}  // namespace

bool ThreadPolicyApplied() { return applied; }

std::string DescribeThreadPolicy() {
  return Describe("OMP_WAIT_POLICY", user_omp) + " " +
         Describe("OPENBLAS_THREAD_TIMEOUT", user_openblas);
}

}  // namespace parallax
