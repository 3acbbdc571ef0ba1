// The result of an operation that can fail with a readable reason.
#pragma once

#include <boost/system/result.hpp>

#include <string>

namespace warden::base {

// A value, or why there is none as text fit for a user (returned as `return std::string("...")`).
template <class T>
using Result = boost::system::result<T, std::string>;

}  // namespace warden::base
