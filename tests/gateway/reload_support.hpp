// What the reload tests share (gateway_reload_test.cpp, gateway_reload_models_test.cpp,
// gateway_settings_test.cpp): a stream in flight on its own thread, the config file rewritten, small
// requests with a key.
#pragma once

#include <fstream>
#include <string>
#include <thread>

#include "gateway_support.hpp"

using namespace gateway_test;

namespace reload_test {

// A streamed chat request of `tokens` tokens on its own thread (about 20 ms a token with the slow sim).
class Stream {
 public:
  Stream(int port, warden::net::Headers headers, int tokens = 150, std::string model = "m") {
    thread_ = std::thread([this, port, headers = std::move(headers), tokens, model = std::move(model)] {
      Client c(port);
      auto r =
          c.post("/v1/chat/completions", chat_body("reload while streaming", tokens, true, model), headers);
      status_ = r.status;
      whole_ = r.body.find("data: [DONE]") != std::string::npos;
    });
  }
  ~Stream() { join(); }
  void join() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  // Joins, then: the stream answered 200 and ended with [DONE].
  bool whole() {
    join();
    return status_ == 200 && whole_;
  }

 private:
  std::thread thread_;
  unsigned status_ = 0;
  bool whole_ = false;
};

// The warden's config file rewritten as Warden::start() writes it.
inline void rewrite(Warden& w, const std::string& models_yaml, const std::string& extra) {
  std::ofstream(w.dir.path / "warden.yaml") << "admin_token: secret\nmetrics: { scrape_interval: 100ms, "
                                               "scrape_timeout: 500ms, unhealthy_after: 2 }\n"
                                            << extra << "models:\n"
                                            << models_yaml;
}

inline warden::net::Headers bearer(const std::string& key) {
  return {{"Authorization", "Bearer " + key}};
}

inline unsigned small_request(int port, const std::string& key) {
  Client c(port);
  return c.post("/v1/chat/completions", chat_body("hi", 2, false), bearer(key)).status;
}

inline bool in_flight(int sim_port, int ranks) {
  double sum = 0;
  for (int r = 0; r < ranks; ++r) {
    sum += sim_running(sim_port, r);
  }
  return sum >= 1;
}

}  // namespace reload_test
