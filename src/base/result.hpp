// The result of an operation that can fail with a readable reason.
#pragma once

#include <boost/system/result.hpp>

#include <string>
#include <utility>

namespace warden::base {

// The one result type of the code base: a value, or why there is none. The error type is each layer's
// own, documented where the layer names its Result (docs/architecture.md, "Errors"); by default the reason
// as text fit for a user (returned as `return std::string("...")` or `return base::Failure{"..."}`).
template <class T, class E = std::string>
using Result = boost::system::result<T, E>;

// The error side of a Result, for value types a string could also build (C++20 aggregates such as
// report::Row): `return base::Failure{"why"};` converts to any Result<T>.
struct Failure {
  std::string message;
  template <class T>
  operator Result<T>() && {
    return Result<T>(boost::system::in_place_error, std::move(message));
  }
};

}  // namespace warden::base
