// Overload bounds with real processes: a request on a connection beyond max_connections, or one whose
// body would take the bodies in flight over max_inflight_body_size, is refused from its header with 503,
// Retry-After and the client's error format, and the connection is closed.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "engine_stand_ins.hpp"
#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

// The header of a POST of `target` announcing `content_length` body bytes.
std::string post_header(const std::string& target, std::size_t content_length,
                        const std::string& extra = "") {
  return "POST " + target +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nanthropic-version: "
         "2023-06-01\r\n" +
         extra + "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
}

// The header of a chunked POST of `target`, and one chunk of `data`.
std::string chunked_header(const std::string& target) {
  return "POST " + target +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nanthropic-version: "
         "2023-06-01\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
}

std::string chunk(std::string_view data) {
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

void expect_overloaded(const std::string& raw, bool anthropic) {
  expect_raw_error(raw, 503, anthropic);
  EXPECT_NE(raw.find("\r\nRetry-After: 1\r\n"), std::string::npos) << raw;
}

}  // namespace

// With max_connections open (idle keep-alive, each counted since it was answered), a request on one
// more connection gets 503 in its client's format; the open ones keep serving, and a connection that
// closes makes room for a new one.
TEST(GatewayOverload, ARequestBeyondMaxConnectionsGets503InTheClientsFormat) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "max_connections: 2\n");
  Client a(w.port);
  std::optional<Client> b(w.port);
  ASSERT_EQ(a.get("/health").status, 200u);
  ASSERT_EQ(b->get("/health").status, 200u);
  const std::string body = chat_body("one too many", 4, false);
  expect_overloaded(test_support::raw_exchange(w.port, post_header("/v1/messages", body.size()) + body, 10s),
                    true);
  expect_overloaded(
      test_support::raw_exchange(w.port, post_header("/v1/chat/completions", body.size()) + body, 10s),
      false);
  EXPECT_EQ(a.post("/v1/chat/completions", body).status, 200u);
  EXPECT_EQ(b->post("/v1/chat/completions", body).status, 200u);
  b.reset();
  EXPECT_TRUE(wait_until([&] {
    Client c(w.port);
    auto r = c.raw().post("/v1/chat/completions", body);
    return r && r->status == 200;
  }));
}

// A body held in flight (its header in, half of it sent) takes most of a 1 MiB budget: a request whose
// Content-Length would go over it is answered 503 from its header, although its body never comes; a
// small one still fits, and once the held body is done the budget is free again.
TEST(GatewayOverload, ABodyOverTheInflightBudgetGets503BeforeItIsRead) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "max_inflight_body_size: 1MiB\n");
  const std::string held_body = padded_chat_body(900'000, false);
  RawStream held(w.port);
  // 100 Continue comes once the header passed its checks: the body's bytes are counted from then on.
  held.send(post_header("/v1/chat/completions", held_body.size(), "Expect: 100-continue\r\n"));
  ASSERT_TRUE(held.read_until("HTTP/1.1 100 Continue\r\n\r\n", 10s)) << held.received();
  held.send(std::string_view(held_body).substr(0, held_body.size() / 2));

  const std::string over = padded_chat_body(200'000, false);
  const auto started = std::chrono::steady_clock::now();
  expect_overloaded(test_support::raw_exchange(w.port, post_header("/v1/messages", over.size()), 10s), true);
  expect_overloaded(test_support::raw_exchange(w.port, post_header("/v1/chat/completions", over.size()), 10s),
                    false);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "answered from the header";
  Client small(w.port);
  EXPECT_EQ(small.post("/v1/chat/completions", chat_body("small", 4, false)).status, 200u);

  held.send(std::string_view(held_body).substr(held_body.size() / 2));
  EXPECT_TRUE(held.read_until("HTTP/1.1 200 ", 20s)) << held.received();
  EXPECT_EQ(small.post("/v1/chat/completions", over).status, 200u);
}

// A chunked body draws on the budget as its bytes arrive, as a Content-Length one does from its header:
// with 900 KB of a chunked body held in flight under a 1 MiB budget, a Content-Length request of 200 KB
// and a chunked one are both answered 503 (the chunked one once its bytes go over); once the held body is
// done, both fit again.
TEST(GatewayOverload, AChunkedBodyDrawsOnTheInflightBudgetAsItArrives) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "max_inflight_body_size: 1MiB\n");
  const std::string held_body = padded_chat_body(900'000, false);
  const std::size_t cut = held_body.size() - 16;
  const std::string over = padded_chat_body(200'000, false);
  const std::string over_with_length =
      post_header("/v1/chat/completions", over.size(), "Connection: close\r\n");
  // The held bytes count once the warden has read them. A probe read first holds its 200 KB while the
  // held body grows past what is left: the held one is refused (as it should be), and is sent again.
  std::unique_ptr<RawStream> held;
  bool refused_beside = false;
  for (int attempt = 0; attempt < 5 && !refused_beside; ++attempt) {
    held = std::make_unique<RawStream>(w.port);
    held->send(chunked_header("/v1/chat/completions") + chunk(std::string_view(held_body).substr(0, cut)));
    ASSERT_TRUE(wait_until([&] {
      refused_beside =
          test_support::raw_status(test_support::raw_exchange(w.port, over_with_length + over, 10s)) == 503;
      return refused_beside || held->read_until("HTTP/1.1 503 ", 0ms);
    }));
  }
  EXPECT_TRUE(refused_beside) << "a Content-Length body beside a held chunked one";
  expect_overloaded(
      test_support::raw_exchange(w.port, chunked_header("/v1/messages") + chunk(over) + "0\r\n\r\n", 10s),
      true);
  Client small(w.port);
  EXPECT_EQ(small.post("/v1/chat/completions", chat_body("small", 4, false)).status, 200u);

  held->send(chunk(std::string_view(held_body).substr(cut)) + "0\r\n\r\n");
  EXPECT_TRUE(held->read_until("HTTP/1.1 200 ", 20s)) << held->received();
  const std::string chunked_over = test_support::raw_exchange(
      w.port, chunked_header("/v1/chat/completions") + chunk(over) + "0\r\n\r\n", 20s);
  EXPECT_EQ(test_support::raw_status(chunked_over), 200) << chunked_over.substr(0, 400);
}

// Eight connections without a credential, each declaring a 32 MiB body (between them the whole default
// budget of 256 MiB) on a path that is not an inference POST and sending 1 KB of it, then two inference
// POSTs without a key, hold no share of the in-flight budget: each is refused from its header (413 over
// the small body limit of the admin API, /health and the console; 401 without a key), and keyed inference
// beside them is answered 200.
TEST(GatewayOverload, RequestsWithoutACredentialHoldNoShareOfTheBodyBudget) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "api_keys: [client-key]\n");
  const std::string declared = std::to_string(32u << 20);
  const std::vector<std::tuple<std::string, std::string, int>> requests = {
      {"GET", "/health", 413},
      {"GET", "/", 413},
      {"POST", "/no/such/path", 413},
      {"PATCH", "/api/models/m/routing", 413},
      {"POST", "/api/reload", 413},
      {"GET", "/v1/chat/completions", 413},
      {"POST", "/health", 413},
      {"PUT", "/api/models/m/routing", 413},
      {"POST", "/v1/chat/completions", 401},
      {"POST", "/v1/messages", 401},
  };
  std::vector<std::unique_ptr<RawStream>> held;
  for (const auto& [method, target, status] : requests) {
    held.push_back(std::make_unique<RawStream>(w.port));
    held.back()->send(method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + declared +
                      "\r\n\r\n" + std::string(1024, ' '));
  }
  for (std::size_t i = 0; i < held.size(); ++i) {
    EXPECT_TRUE(held[i]->read_until("\r\n\r\n", 3s)) << std::get<1>(requests[i]);
    EXPECT_EQ(test_support::raw_status(held[i]->received()), std::get<2>(requests[i]))
        << std::get<1>(requests[i]) << "\n"
        << held[i]->received();
  }
  Client keyed(w.port);
  const auto r = keyed.post("/v1/chat/completions", chat_body("beside them", 4, false),
                            {{"Authorization", "Bearer client-key"}});
  EXPECT_EQ(r.status, 200u) << r.body;
}

// Bodies of either framing hold the memory the budget counts and little more: rounds of 16 bodies of 7.5 MiB
// sent at once under a 64 MiB budget (with a Content-Length, chunked, both), the admitted ones held by an
// engine that never answers, each round ended before the next. The warden's peak memory stays within its
// idle size + the budget + 32 MiB (about 75 MiB over idle is measured; 190 MiB before: chunked bodies grown
// by doubling their buffer left each freed copy behind, and a round's bodies left memory that the next
// round's, of another size, did not reuse).
TEST(GatewayOverload, BodiesOfEitherFramingHoldNoMoreMemoryThanTheBudget) {
  FaultyEngine engine(FaultyEngine::Fault::hang, kServed);
  Warden w("  - name: m\n    served_model_name: " + kServed +
               "\n    replicas: { urls: [http://127.0.0.1:" + std::to_string(engine.port()) + "] }\n",
           "max_inflight_body_size: 64MiB\nmax_body_size: 8MiB\n");
  const std::string in_flight = R"(lm_warden_requests_in_flight{model="m",replica="0"})";
  ASSERT_EQ(metric_value(w.port, in_flight), 0);  // up, and /metrics has been built once
  const long idle = proc_status_kib(w.proc->pid(), "VmRSS");
  const std::string body = padded_chat_body(7'500'000, false);
  const std::string chunked = [&] {
    std::string out = chunked_header("/v1/chat/completions");
    for (std::size_t at = 0; at < body.size(); at += 1u << 20) {
      out += chunk(std::string_view(body).substr(at, 1u << 20));
    }
    return out + "0\r\n\r\n";
  }();
  const std::string with_length =
      post_header("/v1/chat/completions", body.size(), "Connection: close\r\n") + body;
  constexpr int kBodies = 16;
  for (const std::vector<const std::string*>& in_turn :
       {std::vector{&with_length}, std::vector{&chunked}, std::vector{&chunked, &with_length},
        std::vector{&with_length}, std::vector{&chunked}}) {
    const int before = engine.inference_requests();
    std::vector<std::unique_ptr<RawStream>> clients;
    std::vector<std::thread> senders;
    for (int i = 0; i < kBodies; ++i) {
      clients.push_back(std::make_unique<RawStream>(w.port));
      senders.emplace_back([&, i] { clients[i]->send(*in_turn[i % in_turn.size()]); });
    }
    for (auto& t : senders) {
      t.join();
    }
    // Each body is refused (503), or admitted and held by the engine.
    std::vector<bool> refused(kBodies, false);
    ASSERT_TRUE(wait_until(
        [&] {
          int answered = 0;
          for (int i = 0; i < kBodies; ++i) {
            refused[i] = refused[i] || clients[i]->read_until("HTTP/1.1 503 ", 0ms);
            answered += refused[i] ? 1 : 0;
          }
          return answered + engine.inference_requests() - before >= kBodies;
        },
        30s));
    EXPECT_GE(engine.inference_requests() - before, 6) << "about 8 bodies of 7.5 MiB fit in 64 MiB";
    clients.clear();  // the clients leave: the warden ends their requests
    ASSERT_TRUE(wait_until([&] { return metric_value(w.port, in_flight) == 0; }, 20s));
  }
  const long peak = proc_status_kib(w.proc->pid(), "VmHWM");
  EXPECT_LE(peak - idle, (64 + 32) << 10) << "idle " << idle << " KiB, peak " << peak << " KiB";
}
