#pragma once
// The TLS context type, declared only: configuration and option structs hold one without pulling in the
// Asio SSL headers (net/tls.hpp makes and uses them).

namespace boost::asio::ssl {
class context;
}

namespace warden::net {
using TlsContext = boost::asio::ssl::context;
}
