// Expected failures of the engine layer: a result carrying a message fit for an HTTP 400 body.
#pragma once

#include <boost/assert/source_location.hpp>
#include <boost/throw_exception.hpp>

#include <stdexcept>
#include <string>
#include <utility>

#include "base/result.hpp"

namespace warden::engine {

// Why an input was refused. `message` is written for the client (it ends up in a 400 error body);
// `param` names the offending field when there is one (OpenAI's error.param), else empty.
// Deliberately not constructible from one string: Result<std::string> must stay unambiguous.
struct Error {
  Error() = default;
  Error(std::string m, std::string p) : message(std::move(m)), param(std::move(p)) {}
  std::string message;
  std::string param;
};

// The engine layer's Result: base::Result with a client-facing Error.
template <class T>
using Result = base::Result<T, Error>;

// Lets Result<T>::value() throw on error (found by ADL); callers should test the result instead.
[[noreturn]] inline void throw_exception_from_error(const Error& e, const boost::source_location& loc) {
  boost::throw_exception(std::invalid_argument(e.message), loc);
}

inline Error make_error(std::string message, std::string param = {}) {
  return Error{std::move(message), std::move(param)};
}

}  // namespace warden::engine
