#include "gateway/proxy/request_log.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "protocol/error_body.hpp"

namespace warden::gateway {

std::string log_field(std::string_view v) {
  if (v.empty()) {
    return "-";
  }
  const bool plain =
      v.find_first_of(" =\"\\") == std::string_view::npos && std::none_of(v.begin(), v.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u >= 0x7f;
      });
  return plain ? std::string(v) : protocol::json_quote(v);
}

std::string request_log_line(const RequestRecord& r) {
  auto opt = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  return fmt::format(
      "request model={} endpoint={} replica={} route={} session_source={} thread={} status={} stream={} "
      "prompt_tokens={} cached_tokens={} completion_tokens={} ttfb_ms={} duration_ms={:.1f} queued={} "
      "class={} "
      "tenant={}",
      log_field(r.model), log_field(r.endpoint),
      r.replica >= 0 ? std::to_string(r.replica) : std::string("-"), log_field(r.route),
      log_field(r.session_source), log_field(r.thread), r.status, r.stream, opt(r.prompt_tokens),
      opt(r.cached_tokens), opt(r.completion_tokens),
      r.ttfb_s ? fmt::format("{:.1f}", *r.ttfb_s * 1000) : std::string("-"), r.duration_s * 1000,
      r.queued_s ? fmt::format("{:.3f}", *r.queued_s) : std::string("-"), log_field(r.work_class),
      log_field(r.tenant));
}

}  // namespace warden::gateway
