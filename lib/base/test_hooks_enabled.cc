// Links the environment reader of the test hooks into a test binary (test_hooks.h).
#include <cstdlib>
#include <string>

#include "lib/base/test_hooks.h"

namespace parallax {
namespace {

std::optional<std::string> ReadHookFromEnvironment(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

const bool installed = [] {
  InstallTestHookReader(&ReadHookFromEnvironment);
  return true;
}();

}  // namespace
}  // namespace parallax
