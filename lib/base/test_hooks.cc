#include "lib/base/test_hooks.h"

#include <atomic>

namespace parallax {
namespace {

std::atomic<TestHookReader> installed_reader{nullptr};

}  // namespace

std::optional<std::string> TestHook(std::string_view name) {
  const TestHookReader reader = installed_reader.load();
  return reader == nullptr ? std::nullopt : reader(name);
}

bool TestHooksEnabled() { return installed_reader.load() != nullptr; }

void InstallTestHookReader(TestHookReader reader) { installed_reader.store(reader); }

}  // namespace parallax
