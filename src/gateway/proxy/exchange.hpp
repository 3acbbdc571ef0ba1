// The parts of the proxy's work (proxy.hpp): what it sees of the warden (ProxyContext), one proxied request
// (Exchange), what goes to the engine (Outgoing), one try at a replica (Attempt), the warden's response
// headers.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/rng.hpp"
#include "gateway/config/config.hpp"
#include "gateway/placement/placement.hpp"
#include "gateway/runtime/model_set.hpp"
#include "gateway/runtime/replica_guard.hpp"
#include "gateway/runtime/request_record.hpp"
#include "gateway/runtime/warden_metrics.hpp"
#include "gateway/stores/stats_store.hpp"
#include "net/client.hpp"
#include "net/server.hpp"
#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/usage.hpp"

namespace warden::gateway {

// What the proxy reads and changes of the rest of the warden, and nothing else.
struct ProxyContext {
  const Config& config;  // the API keys and timeouts in force (a reload changes them in place)
  ModelSet& models;      // the models served: a request's model is looked up here
  core::SplitMixRng& rng;
  ReplicaGuard& guard;     // requests waiting on a replica, and each request's outcome on it
  WardenMetrics& metrics;  // every request and admission's verdicts counted
  StatsStore& stats;       // every request of a model recorded
};

// One proxied request. Whoever holds the last reference (the handler frame, or the stream body once the
// handler returned) finishes it: its placement ends (the replica released) and the record is logged and
// counted, exactly once, however the request ends (success, upstream error, client disconnect,
// cancellation).
struct Exchange {
  using Clock = std::chrono::steady_clock;

  const ProxyContext& ctx;
  protocol::ApiKind api;
  ModelRuntime* model = nullptr;
  RequestRecord record;
  Placement placement;  // where it goes, and what became of it there
  Clock::time_point started = Clock::now();
  bool complete = false;  // the response was fully relayed

  Exchange(const ProxyContext& c, SharedHomes* shared, protocol::ApiKind a)
      : ctx(c), api(a), placement({c.rng, c.guard, c.metrics, shared}, record) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // The error answer in the API's own shape; the request ends with it.
  net::Response error_reply(const net::Request& req, const Refusal& why);
  // The engine's usage, and its verdict on the conversation (the end of its reply).
  void take_usage(const protocol::Usage& u);
  // The request ends: counted, recorded in the stats (with a model), logged.
  ~Exchange();
};

// What goes to the engine, prepared once for every attempt.
struct Outgoing {
  protocol::BodyLayout layout;  // for a second rewrite (an output cap from the engine's own figures)
  protocol::RewriteOptions options;
  protocol::RewriteResult rewritten;
  bool counting_only = false;     // count_tokens: generates nothing, routed without being counted
  bool drop_usage_chunk = false;  // the client did not ask for the usage chunk the rewrite asked for
};

// An attempt's outcome: the engine's answer (a stream's first piece read, the client's header prepared),
// or the refusal for the client and whether another replica may still be tried.
struct Attempt : PlacementTry {
  std::optional<net::UpstreamResponse> upstream;
  std::optional<net::BodyPiece> first;  // a stream's first piece, read before answering
  net::StreamReply reply;               // a stream's answer, prepared while the engine prefills
  std::chrono::steady_clock::time_point header_at;
  std::chrono::steady_clock::time_point first_at;
  // An error answer already read (to see whether it was about the context): its header and body.
  std::optional<net::http::response_header<>> read_header;
  std::optional<std::string> read_body;
  protocol::RewriteResult refit;  // the body resent with the output cap the engine's error gave
  bool refitted = false;          // sent once more with that cap already
};

// The client's header: the engine's, minus hop-by-hop fields, plus the warden's own.
net::http::response_header<> client_header(const net::Request& req, const RequestRecord& rec,
                                           const net::http::response_header<>& from);
// The warden's own fields of an answer's header: x-warden-replica, x-warden-route, and x-warden-queued and
// x-warden-expected-cached when there is something to say.
void set_placement_headers(const RequestRecord& rec, net::http::response_header<>& head);
// An upstream operation ended because net::Server cancelled the handler: the client went away. The
// request ends here (logged and counted 499), not as a failure of the replica.
void throw_if_client_left(RequestRecord& rec, const boost::system::error_code& ec);

}  // namespace warden::gateway
