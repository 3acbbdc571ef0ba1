// The result of an operation that can fail with a readable reason.
#pragma once

#include <boost/system/result.hpp>

#include <string>
#include <utility>

namespace warden::base {

// A value, or why there is none as text fit for a user (returned as `return std::string("...")`).
template <class T>
using Result = boost::system::result<T, std::string>;

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
