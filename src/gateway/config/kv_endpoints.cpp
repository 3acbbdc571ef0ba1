#include "gateway/config/kv_endpoints.hpp"

#include <fmt/format.h>

#include "base/parse.hpp"

namespace warden::gateway {

namespace {

struct TcpParts {
  std::string_view host;
  int port = 0;
};

base::Result<TcpParts> tcp_parts(std::string_view text) {
  std::string_view rest = text.substr(6);  // after tcp://
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return base::Failure{"expected tcp://HOST:PORT"};
  }
  const auto port = base::parse_integer<int>(rest.substr(colon + 1));
  if (!port || *port < 1 || *port > 65535) {
    return base::Failure{"its port must be a number from 1 to 65535"};
  }
  return TcpParts{rest.substr(0, colon), *port};
}

}  // namespace

base::Result<void> check_kv_endpoint(std::string_view text) {
  if (text.starts_with("ipc://") && text.size() > 6) {
    return {};
  }
  if (!text.starts_with("tcp://")) {
    return base::Failure{"expected tcp://HOST:PORT or ipc://PATH"};
  }
  auto parts = tcp_parts(text);
  if (!parts) {
    return parts.error();
  }
  const std::string_view host = parts->host;
  if (host == "*" || host == "0.0.0.0" || host == "[::]" || host == "::") {
    return base::Failure{"a wildcard host is where the engine binds; name the engine's host to connect to"};
  }
  return {};
}

base::Result<std::string> kv_rank_endpoint(std::string_view endpoint, int rank) {
  if (rank == 0) {
    return base::Result<std::string>(boost::system::in_place_value, endpoint);
  }
  if (!endpoint.starts_with("tcp://")) {
    return base::Failure{
        "only a tcp:// endpoint serves several data-parallel ranks (rank r on its port + r)"};
  }
  auto parts = tcp_parts(endpoint);
  if (!parts) {
    return base::Failure{parts.error()};
  }
  if (parts->port + rank > 65535) {
    return base::Failure{fmt::format("rank {} would publish past port 65535", rank)};
  }
  return base::Result<std::string>(boost::system::in_place_value,
                                   fmt::format("tcp://{}:{}", parts->host, parts->port + rank));
}

}  // namespace warden::gateway
