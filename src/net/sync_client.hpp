#pragma once
// A blocking HTTP/1.1 client for tests, tools and the load tool: one keep-alive connection to one
// host:port, driven on a private io_context (so it works from any thread, including test threads,
// and never touches the server's io_context). Same timeouts and errors as net::ClientPool.
//
//   net::SyncClient c("127.0.0.1", port);
//   auto r = c.post("/v1/chat/completions", body);                 // whole body
//   auto s = c.request(http::verb::post, "/v1/chat/completions", body, {{"X-data-parallel-rank", "1"}},
//                      [&](std::string_view piece) { return ++n < 3; });   // false = hang up now
//
// Returning false from the chunk callback closes the connection at once: the way tests simulate a client
// that disconnects mid-stream. The next request reconnects.

#include "net/client.hpp"

#include <boost/beast/http/fields.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warden::net {

struct SyncResponse {
  unsigned status = 0;
  http::fields headers;
  std::string body;      // everything received (up to the hang-up if the callback said stop)
  bool hung_up = false;  // the chunk callback returned false
  std::string header(std::string_view name) const;  // "" if absent
};

using Headers = std::vector<std::pair<std::string, std::string>>;
/// Called with each body piece as it arrives; return false to close the connection immediately.
using ChunkCallback = std::function<bool(std::string_view)>;

class SyncClient {
 public:
  SyncClient(std::string host, std::uint16_t port, ClientTimeouts timeouts = {});
  /// To `endpoint`, https when endpoint.tls, verified with `tls` (null: the system's CA store).
  SyncClient(Endpoint endpoint, std::shared_ptr<TlsContext> tls, ClientTimeouts timeouts = {});
  ~SyncClient();
  SyncClient(const SyncClient&) = delete;
  SyncClient& operator=(const SyncClient&) = delete;

  Result<SyncResponse> request(http::verb method, std::string_view target, std::string body = {},
                               const Headers& headers = {}, ChunkCallback on_chunk = {});
  Result<SyncResponse> get(std::string_view target, const Headers& headers = {}) {
    return request(http::verb::get, target, {}, headers);
  }
  /// POST with Content-Type: application/json.
  Result<SyncResponse> post(std::string_view target, std::string body, const Headers& headers = {},
                            ChunkCallback on_chunk = {}) {
    return request(http::verb::post, target, std::move(body), headers, std::move(on_chunk));
  }
  /// Drops the kept-alive connection.
  void close();
  /// Requests that reused the kept-alive connection (for keep-alive tests).
  std::uint64_t reused_requests() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warden::net
