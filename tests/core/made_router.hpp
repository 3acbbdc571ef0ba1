#pragma once
// A Router over a test's configuration: Router::make, its refusal reported as the test's failure.

#include <gtest/gtest.h>

#include <utility>

#include "core/router.hpp"

namespace warden::core {

inline Router made_router(RouterConfig config) {
  auto made = Router::make(std::move(config));
  if (!made) {
    ADD_FAILURE() << made.error();
    return Router{};
  }
  return std::move(*made);
}

}  // namespace warden::core
