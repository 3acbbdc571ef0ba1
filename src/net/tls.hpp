#pragma once
// TLS for the listener and for upstreams, with OpenSSL through Asio.
//
// Both sides terminate TLS in a relay beside the plain HTTP code: the TLS connection is pumped to and from
// one end of a local socket pair, and the plain session (net::Server) or pooled connection (net::ClientPool)
// works on the other end exactly as on a TCP socket. The plain path is untouched (its eager writes, peeks
// and lazy deadlines work on the raw socket), and a TLS connection costs one local hop per read and write
// besides the cipher.
//
//   std::string why;
//   auto ctx = net::make_server_tls({.cert_file = "c.pem", .key_file = "k.pem"}, &why);   // null: why
//   server.set_tls(ctx);         // new connections speak TLS with it; open ones keep theirs
//
// The context type is only declared (net/tls_context.hpp): the Asio SSL headers stay out of every file that
// does not speak TLS itself.

#include "net/http.hpp"
#include "net/tls_context.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace warden::net {

/// The listener's certificate (chain, PEM) and private key (PEM).
struct ServerTlsFiles {
  std::string cert_file;
  std::string key_file;
};

/// What a client checks an upstream with, and the certificate it shows if the upstream asks for one.
struct ClientTlsFiles {
  std::string ca_file;    // PEM bundle of trusted CAs; empty: the system's store
  std::string cert_file;  // optional client certificate (PEM) ...
  std::string key_file;   // ... and its key: both or neither
};

/// Loads and checks the files (readable, PEM, the key matches the certificate), or why not ("cannot read
/// the key key.pem: No such file or directory", "the key key.pem does not match the certificate cert.pem").
base::Result<std::shared_ptr<TlsContext>> make_server_tls(const ServerTlsFiles& files);
/// A context that verifies upstreams (peer certificate against the CAs; the host name is checked per
/// connection, see start_client_tls), or why not.
base::Result<std::shared_ptr<TlsContext>> make_client_tls(const ClientTlsFiles& files);

/// Server side of a connection just accepted: the TLS handshake (bounded by `handshake_timeout`), then a
/// relay (a write to the client blocked for `write_timeout` ends it) started on the socket's executor.
/// Returns the plain end of the relay, to be served as the client's socket; an error if the handshake failed
/// (the socket is closed then).
asio::awaitable<Result<tcp::socket>> accept_tls(tcp::socket socket, std::shared_ptr<TlsContext> ctx,
                                                std::chrono::milliseconds handshake_timeout,
                                                std::chrono::milliseconds write_timeout);

/// Client side of a connection to `host` just opened: SNI, the handshake (bounded by `timeout`) with the
/// peer's certificate verified for `host` (a name, or an IP address against the certificate's IP entries),
/// then a relay (a write to the upstream blocked for `write_timeout` ends it). Returns the plain end to send
/// requests on.
asio::awaitable<Result<tcp::socket>> connect_tls(tcp::socket socket, std::shared_ptr<TlsContext> ctx,
                                                 const std::string& host,
                                                 std::chrono::milliseconds handshake_timeout,
                                                 std::chrono::milliseconds write_timeout);

}  // namespace warden::net
