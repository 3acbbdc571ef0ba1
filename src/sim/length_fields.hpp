// vLLM's sampling fields that decide how long a reply runs, read from a request body: `ignore_eos` (the
// reply runs to its max_tokens whatever the model emits) and `min_tokens` (no EOS before this many
// tokens). vLLM's own `vllm bench serve` and most load tools send them to get fixed reply lengths.
//
// Validated as vLLM does: the request model's types (pydantic, lax: ignore_eos a boolean, 0/1 or a word
// such as "true"; min_tokens an integer; null refused for both), then SamplingParams._verify_args:
// "min_tokens must be greater than or equal to 0, got N." and "min_tokens must be less than or equal to
// max_tokens=M, got N."; each a 400.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>

#include "base/result.hpp"

namespace warden::sim {

struct LengthFields {
  bool ignore_eos = false;
  std::uint32_t min_tokens = 0;
};

struct FieldError {
  std::string message;
  std::string param;
};

// `max_tokens`: the request's output limit as the server resolved it (its field, or the context left).
base::Result<LengthFields, FieldError> parse_length_fields(const boost::json::object& body, int max_tokens);

}  // namespace warden::sim
