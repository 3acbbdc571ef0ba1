// One client cannot slow everyone, with real processes: a warden with two models, each on its own
// `lm-warden sim`, and a small chat on model b timed one request after another, idle and then beside
// (1) a client flooding model a with new session ids, each made shared (first messages A, B, A), and
// (2) four clients reading model a's largest sessions page in a loop over sessions with 33 threads each.
// Each was found to take the I/O thread from everyone (chat p50 x461 beside the flood once the shared-id
// table was full, x900 beside the readers; then x2.2 beside the readers spinning on 429 answers). The
// bound is the issue's, the chat's p50 beside the load within 2x of idle, and 1.5x beside the readers, who
// now wait their turn and are never refused. So that a loaded 2-core machine passes, idle and loaded are
// measured in turns (rounds of idle then loaded requests, each p50 over all its rounds), so the machine's
// own load falls on both alike; it prints the p50s and their ratio.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// `n` small chat requests to model b, one after another on one connection: each one's time in `took` (ms).
void time_chats(int port, int n, const std::string& tag, std::vector<double>& took) {
  Client c(port);
  for (int i = 0; i < n; ++i) {
    const auto start = Clock::now();
    const auto r = c.post("/v1/chat/completions", chat_body("hi", 1, false, "b"),
                          {{"X-Warden-Session", tag + std::to_string(took.size())}});
    took.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    EXPECT_EQ(r.status, 200u) << r.body;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct P50s {
  double idle = 0;
  double loaded = 0;
};

// The chat's p50 idle and beside `load` run on `threads` threads, in kRounds turns of kPerRound requests
// each: idle, then loaded once the load has done `before` rounds in all (`rounds` counts them).
template <class Load>
P50s p50s_beside(int port, int threads, long before, const std::string& tag, std::atomic<long>& rounds,
                 Load load) {
  constexpr int kRounds = 4;
  constexpr int kPerRound = 150;
  std::vector<double> idle;
  std::vector<double> loaded;
  for (int round = 0; round < kRounds; ++round) {
    time_chats(port, kPerRound, tag + "idle-", idle);
    std::atomic<bool> stop{false};
    std::vector<std::thread> loaders;
    for (int t = 0; t < threads; ++t) {
      loaders.emplace_back([&, t] { load(t, stop); });
    }
    EXPECT_TRUE(wait_until([&] { return rounds.load() >= before; }, 30s)) << rounds.load() << " rounds";
    time_chats(port, kPerRound, tag, loaded);
    stop = true;
    for (auto& t : loaders) {
      t.join();
    }
  }
  return {median(idle), median(loaded)};
}

}  // namespace

TEST(GatewayFlood, AnotherModelsChatKeepsItsPaceBesideAFloodOfSharedIdsOrSessionsReads) {
  auto sim_a = start_sim(1);
  auto sim_b = start_sim(1);
  Warden w(dp_model(sim_a->port(), 1, "{ affinity: true }", "a") +
           dp_model(sim_b->port(), 1, "{ affinity: true }", "b"));
  std::vector<double> warm;
  time_chats(w.port, 50, "warm-", warm);  // connections, first scrapes, the allocator's first blocks

  // (1) New session ids on model a, each with first messages A, B, A: every id is found shared. Timed from
  // the 2,000th id on (a test cannot reach the table's bound of 1M ids, where the cost once grew: the
  // benchmark core_bench measures that).
  std::atomic<long> flooded{0};
  std::atomic<long> flood_failures{0};
  const P50s flood = p50s_beside(w.port, 1, 2'000, "flood-", flooded, [&](int, std::atomic<bool>& stop) {
    Client c(w.port);
    while (!stop && flooded < 400'000) {
      const long id = flooded.load();
      for (const char* first : {"A", "B", "A"}) {
        const auto r = c.post("/v1/chat/completions", chat_body(first, 1, false, "a"),
                              {{"X-Warden-Session", "flood-id-" + std::to_string(id)}});
        flood_failures += r.status == 200 ? 0 : 1;
      }
      ++flooded;
    }
  });
  EXPECT_EQ(flood_failures.load(), 0);

  // (2) 300 sessions of 33 threads on model a, then four clients reading its largest page in a loop: each
  // read waits its turn and gets its page (none refused: four waiting fill 0.4 s of the 2 s a read may wait).
  std::vector<std::thread> fillers;
  for (int f = 0; f < 4; ++f) {
    fillers.emplace_back([&, f] {
      Client c(w.port);
      for (int s = f; s < 300; s += 4) {
        for (int t = 0; t < 33; ++t) {
          warden::net::Headers h{{"X-Warden-Session", "s" + std::to_string(s)}};
          if (t > 0) {
            h.emplace_back("X-Warden-Thread", "s" + std::to_string(s) + "-t" + std::to_string(t));
          }
          c.post("/v1/chat/completions", chat_body("hello", 1, false, "a"), h);
        }
      }
    });
  }
  for (auto& t : fillers) {
    t.join();
  }
  std::atomic<long> reads{0};
  std::atomic<long> pages{0};
  std::atomic<long> page_bytes{0};
  std::atomic<long> refused{0};
  const auto read_start = Clock::now();
  const P50s readers = p50s_beside(w.port, 4, 8, "read-", reads, [&](int, std::atomic<bool>& stop) {
    Client c(w.port);
    while (!stop) {
      const auto r = c.get("/api/models/a/sessions?limit=100");
      pages += r.status == 200 ? 1 : 0;
      page_bytes = std::max(page_bytes.load(), static_cast<long>(r.body.size()));
      refused += r.status == 200 ? 0 : 1;
      ++reads;
    }
  });
  const double read_s = std::chrono::duration<double>(Clock::now() - read_start).count();
  EXPECT_EQ(refused.load(), 0) << "a reader that waits its turn is never refused";
  EXPECT_GT(page_bytes.load(), 400'000) << "the largest page, over full thread tables";
  // Half the time the readers were at work (the other half the chat ran idle): 10 pages a second then.
  EXPECT_LE(static_cast<double>(pages.load()), 10 * read_s + 4) << read_s << " s";

  std::printf(
      "chat p50 on model b: beside a flood of shared ids (%ld ids) %.2f ms against %.2f ms idle (x%.2f); "
      "beside 4 sessions readers (%ld reads, %ld pages of %ld bytes in %.1f s) %.2f ms against %.2f ms "
      "idle (x%.2f)\n",
      flooded.load(), flood.loaded, flood.idle, flood.loaded / flood.idle, reads.load(), pages.load(),
      page_bytes.load(), read_s, readers.loaded, readers.idle, readers.loaded / readers.idle);
  EXPECT_LE(flood.loaded, 2 * flood.idle);
  // Readers waiting their turn cost nothing: tighter than the 2x (x1.00-1.06 measured; readers
  // spinning on 429 answers measured x1.35-2.13, median x1.87, of 8 runs).
  EXPECT_LE(readers.loaded, 1.5 * readers.idle);
}
