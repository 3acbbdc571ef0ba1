// The ZMQ endpoints of a model's `kv_events:` (docs/config.md): what the warden connects its SUB and
// replay DEALER sockets to, and vLLM's rule for the ranks of a data-parallel server (rank r on the port
// + r). Plain text checks, no sockets.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hpp"

namespace warden::gateway {

// Nothing if the warden can connect to `text`, else why not: tcp://HOST:PORT (IPv6 as tcp://[::1]:PORT) or
// ipc://PATH. A wildcard host (`*`, `0.0.0.0`, `::`) is the engine's side of the line, not an address to
// connect to.
base::Result<void> check_kv_endpoint(std::string_view text);

// DP rank `rank`'s endpoint (vLLM's offset_endpoint_port): a tcp:// port plus the rank; an ipc:// path
// serves rank 0 only.
base::Result<std::string> kv_rank_endpoint(std::string_view endpoint, int rank);

}  // namespace warden::gateway
