#pragma once

namespace warden::app {
inline constexpr const char* kVersion = "0.1.0";
}
