// The log line of one finished request: `request key=value ...` (logfmt). Values that come from the client
// (the model name, a thread id) are quoted when they are not plain tokens, so none can forge a field.
#pragma once

#include <string>
#include <string_view>

#include "gateway/runtime/request_record.hpp"

namespace warden::gateway {

// `v` bare when it is a plain token (printable ASCII without space, `=`, `"`, `\`), else quoted as a JSON
// string (`"` and `\` escaped, control characters as \n or \u00XX); "-" when empty.
std::string log_field(std::string_view v);

std::string request_log_line(const RequestRecord& r);

}  // namespace warden::gateway
