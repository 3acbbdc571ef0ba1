// One proxied request's end and its answers' headers (exchange.hpp).
#include "gateway/proxy/exchange.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/proxy/http_util.hpp"
#include "gateway/proxy/request_log.hpp"
#include "protocol/error_body.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;

namespace {

// How long admission held the request, on every answer to one it held.
void set_queued_header(const RequestRecord& rec, http::response_header<>& head) {
  if (rec.queued_s) {
    head.set("x-warden-queued", fmt::format("{:.3f}", *rec.queued_s));
  }
}

// What the warden expected the replica to serve from cache: `x-warden-expected-cached: 12544; block=1568;
// exact` (exact: from the replica's KV cache events, else the estimate), for a load tool to compare with the
// usage the engine reports.
void set_expected_header(const RequestRecord& rec, http::response_header<>& head) {
  if (rec.expected_cached) {
    head.set("x-warden-expected-cached",
             fmt::format("{}; block={}{}", *rec.expected_cached, rec.expected_block,
                         rec.expected_exact ? "; exact" : ""));
  }
}

}  // namespace

// The error answer in the API's own shape; the request ends with it.
net::Response Exchange::error_reply(const net::Request& req, const Refusal& why) {
  record.status = static_cast<int>(why.status);
  complete = true;
  net::Response r = net::make_response(
      req, why.status, protocol::format_error(api, static_cast<int>(why.status), why.message, why.code));
  if (record.replica >= 0) {
    r.set("x-warden-replica", std::to_string(record.replica));
    r.set("x-warden-route", record.route);
  }
  if (why.retry_after_s) {
    r.set(http::field::retry_after, std::to_string(*why.retry_after_s));
  }
  set_queued_header(record, r.base());
  return r;
}

void Exchange::take_usage(const protocol::Usage& u) {
  record.prompt_tokens = u.prompt_tokens;
  record.cached_tokens = u.cached_tokens;
  record.completion_tokens = u.completion_tokens;
  if (u.end) {
    placement.answered(*u.end == protocol::ReplyEnd::text);
  }
}

Exchange::~Exchange() {
  try {
    placement.end();
    if (!complete && record.status == 200) {
      record.status = 499;  // the client went away before the end of the response
    }
    record.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
    ctx.metrics.request_done(record);
    if (!record.model.empty()) {
      ctx.stats.record(record.model, unix_seconds_now(), record);
    }
    if (spdlog::should_log(spdlog::level::info)) {  // the line is built only for a log that keeps it
      spdlog::info("{}", request_log_line(record));
    }
  } catch (...) {
    // A destructor must not throw; logging failures are not worth a crash.
  }
}

// The client's header: the engine's, minus hop-by-hop fields, plus the warden's own.
http::response_header<> client_header(const net::Request& req, const RequestRecord& rec,
                                      const http::response_header<>& from) {
  http::response_header<> head;
  head.result(from.result());
  head.version(req.version());
  copy_response_headers(from, head);
  set_placement_headers(rec, head);
  return head;
}

void set_placement_headers(const RequestRecord& rec, http::response_header<>& head) {
  head.set("x-warden-replica", std::to_string(rec.replica));
  head.set("x-warden-route", rec.route);
  set_queued_header(rec, head);
  set_expected_header(rec, head);
}

void throw_if_client_left(RequestRecord& rec, const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted) {
    rec.status = 499;
    throw boost::system::system_error(ec);
  }
}

}  // namespace warden::gateway
