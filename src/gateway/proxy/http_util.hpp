// Small HTTP helpers of the proxy: which headers are forwarded, client API keys, target splitting.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "net/http.hpp"

namespace warden::gateway {

// Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the proxy sets itself: never copied across.
bool is_hop_by_hop(std::string_view name);
/// The same for a name Beast knows (field::unknown is never hop-by-hop here: use the string form).
bool is_hop_by_hop(net::http::field f);
// The warden's own request headers (pin and session): consumed here, not sent to the engine.
bool is_warden_request_header(std::string_view name);
// Header names listed in a Connection header value ("close, X-Foo" → {"close", "x-foo"}), lower-cased.
std::vector<std::string> connection_tokens(std::string_view value);

// Appends the request headers for the upstream to a serialized header block as "Name: value\r\n"
// lines, minus hop-by-hop, Connection-listed and warden headers.
// `drop_session_id`: the client's X-Session-ID stays behind (the warden sends its own).
void append_request_headers(const net::Request& from, std::string& out, bool drop_session_id = false);
// Copies an upstream response header for the client, minus hop-by-hop and Connection-listed headers.
void copy_response_headers(const net::http::response_header<>& from, net::http::response_header<>& to);

// True if `keys` is empty or the request carries one of them (Authorization: Bearer K or x-api-key: K).
// Checked from the header alone (net::ServerOptions::on_header), before the body is read.
bool api_key_ok(const net::http::request_header<>& req, const std::vector<std::string>& keys);
// The admin token check: Authorization: Bearer TOKEN (an empty configured token never matches).
bool bearer_matches(const net::Request& req, std::string_view token);

// "/v1/messages?beta=true" → "/v1/messages".
std::string_view path_of(std::string_view target);

}  // namespace warden::gateway
