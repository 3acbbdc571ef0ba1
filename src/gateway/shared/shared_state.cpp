#include "gateway/shared/shared_state.hpp"

#include <fmt/format.h>
#include <hiredis.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace warden::gateway {

namespace asio = net::asio;

namespace {

using namespace std::chrono_literals;

// While Redis is unreachable the thread tries again this often (each try is one connect timeout at most).
constexpr auto kReconnectEvery = 1s;

timeval to_timeval(std::chrono::milliseconds d) {
  return timeval{static_cast<time_t>(d.count() / 1000), static_cast<suseconds_t>((d.count() % 1000) * 1000)};
}

RedisReply copy_reply(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::string;
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::status;
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::error;
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::array;
      for (std::size_t i = 0; i < r->elements; ++i) {
        out.elements.push_back(copy_reply(r->element[i]));
      }
      break;
    default:
      out.type = RedisReply::Type::nil;
  }
  if (r->str != nullptr && (out.type == RedisReply::Type::string || out.type == RedisReply::Type::status ||
                            out.type == RedisReply::Type::error)) {
    out.text.assign(r->str, r->len);
  }
  return out;
}

// A request waiting in ask(): the timer ends its wait, the answer or the bound, whichever comes first.
struct Pending {
  explicit Pending(const asio::any_io_executor& io) : timer(io) {}
  asio::steady_timer timer;
  std::optional<RedisReplies> replies;
  bool answered = false;
  bool abandoned = false;
};

}  // namespace

SharedState::SharedState(asio::any_io_executor io, SharedStateConfig config, std::string warden_id)
    : io_(std::move(io)), config_(std::move(config)), warden_id_(std::move(warden_id)) {}

SharedState::~SharedState() {
  stop();
}

void SharedState::start(std::function<void()> on_up) {
  on_up_ = std::move(on_up);
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void SharedState::stop() {
  *alive_ = false;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void SharedState::enqueue(Job job, bool urgent) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      if (urgent) {
        queue_.push_front(std::move(job));
      } else {
        queue_.push_back(std::move(job));
      }
      job.done = nullptr;
    }
  }
  if (job.done) {
    job.done(std::nullopt);  // stopping: nothing is sent any more
  }
  cv_.notify_one();
}

asio::awaitable<std::optional<RedisReplies>> SharedState::ask(std::vector<RedisCommand> commands,
                                                              std::string op) {
  const auto started = Clock::now();
  Answer answer = co_await attempt(std::move(commands), started + config_.lookup_timeout);
  observe(op, answer.result, Clock::now() - started);
  co_return std::move(answer.replies);
}

asio::awaitable<SharedState::Answer> SharedState::attempt(std::vector<RedisCommand> commands,
                                                          Clock::time_point deadline) {
  if (!up_.load()) {
    co_return Answer{};
  }
  auto pending = std::make_shared<Pending>(io_);
  enqueue(Job{std::move(commands), deadline,
              [pending, io = io_](std::optional<RedisReplies> r) {
                asio::post(io, [pending, r = std::move(r)]() mutable {
                  if (!pending->abandoned) {
                    pending->answered = true;
                    pending->replies = std::move(r);
                    pending->timer.cancel();
                  }
                });
              }},
          true);
  pending->timer.expires_at(deadline);
  boost::system::error_code ec;
  co_await pending->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  pending->abandoned = true;
  const char* result = !pending->answered ? "timeout" : pending->replies ? "ok" : "error";
  co_return Answer{std::move(pending->replies), result};
}

void SharedState::send(std::vector<RedisCommand> commands, RedisDone done, bool urgent) {
  auto finish = [io = io_, alive = alive_, done = std::move(done)](std::optional<RedisReplies> r) {
    if (done) {
      asio::post(io, [alive, done, r = std::move(r)]() mutable {
        if (*alive) {
          done(std::move(r));
        }
      });
    }
  };
  if (!up_.load()) {
    finish(std::nullopt);
    return;
  }
  enqueue(Job{std::move(commands), Clock::time_point::max(), std::move(finish)}, urgent);
}

void SharedState::observe(const std::string& op, const std::string& result, Clock::duration took) {
  ++asks_[{op, result}];
  if (result == "down") {
    return;
  }
  const double seconds = std::chrono::duration<double>(took).count();
  Histogram& h = latency_[op];
  for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    h.counts[i] += seconds <= kLatencyBuckets[i] ? 1 : 0;
  }
  h.sum += seconds;
  ++h.count;
}

// The Redis thread: (re)connects, then runs queued pipelines in order until stop().
void SharedState::run() {
  while (true) {
    if (ctx_ == nullptr) {
      if (auto connected = connect(); connected) {
        set_up(true, "");
      } else {
        ++errors_;
        set_up(false, connected.error());
        fail_queued();
        std::unique_lock lock(mutex_);
        if (cv_.wait_for(lock, kReconnectEvery, [this] { return stopping_; })) {
          break;
        }
        continue;
      }
    }
    Job job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        break;  // stopping, and everything queued was sent
      }
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (Clock::now() > job.deadline) {
      job.done(std::nullopt);
      continue;
    }
    auto replies = execute(job.commands);
    if (!replies) {
      ++errors_;
      redisFree(ctx_);
      ctx_ = nullptr;
      set_up(false, replies.error());
      job.done(std::nullopt);
      continue;
    }
    job.done(std::move(*replies));
  }
  if (ctx_ != nullptr) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
  fail_queued();
}

base::Result<void> SharedState::connect() {
  const RedisUrl& url = config_.redis;
  ctx_ = redisConnectWithTimeout(url.host.c_str(), url.port, to_timeval(config_.connect_timeout));
  if (ctx_ == nullptr || ctx_->err != 0) {
    std::string why = ctx_ != nullptr ? ctx_->errstr : "out of memory";
    redisFree(ctx_);
    ctx_ = nullptr;
    return base::Failure{std::move(why)};
  }
  redisSetTimeout(ctx_, to_timeval(config_.command_timeout));
  std::vector<RedisCommand> hello;
  if (!url.password.empty()) {
    hello.push_back(url.user.empty() ? RedisCommand{"AUTH", url.password}
                                     : RedisCommand{"AUTH", url.user, url.password});
  }
  hello.push_back({"SELECT", std::to_string(url.db)});
  auto replies = execute(hello);
  std::string why = replies ? std::string() : replies.error();
  for (std::size_t i = 0; replies && why.empty() && i < replies->size(); ++i) {
    if ((*replies)[i].type == RedisReply::Type::error) {
      why = (*replies)[i].text;
    }
  }
  if (!why.empty()) {
    redisFree(ctx_);
    ctx_ = nullptr;
    return base::Failure{std::move(why)};
  }
  return {};
}

base::Result<RedisReplies> SharedState::execute(const std::vector<RedisCommand>& commands) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const RedisCommand& c : commands) {
    argv.clear();
    lengths.clear();
    for (const std::string& a : c) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lengths.data());
  }
  RedisReplies out;
  out.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
      return base::Failure{ctx_->errstr[0] != '\0' ? ctx_->errstr : "no reply"};
    }
    out.push_back(copy_reply(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
    if (out.back().type == RedisReply::Type::error) {
      ++errors_;
    }
  }
  return out;
}

// Logged once per change, not per request; the gateway republishes its homes on the way up.
void SharedState::set_up(bool up, const std::string& why) {
  if (up == worker_up_ && transitions_.load() > 0) {
    return;
  }
  worker_up_ = up;
  ++transitions_;
  up_.store(up);
  if (up) {
    spdlog::info("shared state: redis {} is up; routing with the other wardens", config_.redis.text);
    asio::post(io_, [alive = alive_, this] {
      if (*alive && on_up_) {
        on_up_();
      }
    });
  } else {
    spdlog::warn("shared state: redis {} is down ({}); routing with this warden's own state",
                 config_.redis.text, why);
  }
}

void SharedState::fail_queued() {
  std::deque<Job> failed;
  {
    std::lock_guard lock(mutex_);
    failed.swap(queue_);
  }
  for (Job& job : failed) {
    job.done(std::nullopt);
  }
}

std::string SharedState::render_metrics() const {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out,
                 "# HELP lm_warden_shared_state_up Whether Redis (state.redis) is reachable: 1 up, 0 down.\n"
                 "# TYPE lm_warden_shared_state_up gauge\nlm_warden_shared_state_up {}\n",
                 up_.load() ? 1 : 0);
  fmt::format_to(
      out,
      "# HELP lm_warden_shared_state_errors_total Failed connects, commands and error replies.\n"
      "# TYPE lm_warden_shared_state_errors_total counter\nlm_warden_shared_state_errors_total {}\n",
      errors_.load());
  fmt::format_to(out,
                 "# HELP lm_warden_shared_state_resyncs_total Times the homes were published again after "
                 "Redis came back.\n# TYPE lm_warden_shared_state_resyncs_total counter\n"
                 "lm_warden_shared_state_resyncs_total {}\n",
                 resyncs_);
  fmt::format_to(out,
                 "# HELP lm_warden_shared_state_requests_total Requests that asked Redis, by step and "
                 "outcome (ok, error, timeout, down; locked: a lookup placed without the placement lock).\n# "
                 "TYPE lm_warden_shared_state_requests_total counter\n");
  for (const auto& [key, n] : asks_) {
    fmt::format_to(out, "lm_warden_shared_state_requests_total{{op=\"{}\",result=\"{}\"}} {}\n", key.first,
                   key.second, n);
  }
  fmt::format_to(out,
                 "# HELP lm_warden_shared_state_lookup_seconds How long a request waited for Redis.\n"
                 "# TYPE lm_warden_shared_state_lookup_seconds histogram\n");
  for (const auto& [op, h] : latency_) {
    for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      fmt::format_to(out, "lm_warden_shared_state_lookup_seconds_bucket{{op=\"{}\",le=\"{}\"}} {}\n", op,
                     kLatencyBuckets[i], h.counts[i]);
    }
    fmt::format_to(out, "lm_warden_shared_state_lookup_seconds_bucket{{op=\"{}\",le=\"+Inf\"}} {}\n", op,
                   h.count);
    fmt::format_to(out, "lm_warden_shared_state_lookup_seconds_sum{{op=\"{}\"}} {}\n", op, h.sum);
    fmt::format_to(out, "lm_warden_shared_state_lookup_seconds_count{{op=\"{}\"}} {}\n", op, h.count);
  }
  return o;
}

}  // namespace warden::gateway
