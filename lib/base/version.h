// The Parallax version, printed by `parallax --version` and recorded in job plans.
#ifndef PARALLAX_LIB_BASE_VERSION_H_
#define PARALLAX_LIB_BASE_VERSION_H_

namespace parallax {
inline constexpr const char* kParallaxVersion = "0.1.0";
}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_VERSION_H_
