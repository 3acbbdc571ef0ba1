#include "net/server.hpp"

#include "net/read_deadline.hpp"

#include "net/buffered_parse.hpp"
#include "net/eager_write.hpp"
#include "protocol/error_body.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>

namespace warden::net {

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Pipelined bytes a client may send while its previous request is being answered; more is abuse.
constexpr std::size_t kMaxPipelinedBytes = 64u << 10;
// Read sizes: one system call for a typical request header, a few for a 200 KB agent prompt.
constexpr std::size_t kHeaderReadBytes = 4u << 10;
constexpr std::size_t kBodyReadBytes = 256u << 10;
// Request bodies this large hand their memory back to the system when they go (give_back).
constexpr std::size_t kGiveBackBytes = 1u << 20;

// Frees `body`, a large one's pages first handed back to the system (the page-aligned inside of its buffer,
// as malloc_trim() does with free memory). serve keeps blocks of up to 64 MiB on the heap and the heap while
// busy (app/serve_command.cpp: page faults on every agent request otherwise); a large body's memory freed
// there stayed the process's, reused only by blocks that fit in it: bodies that came and went, with bodies
// of other sizes after them, held memory that the in-flight budget no longer counted.
void give_back(std::string& body) noexcept {
  if (body.capacity() >= kGiveBackBytes) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto at = reinterpret_cast<std::uintptr_t>(body.data());
    const std::uintptr_t begin = (at + page - 1) & ~(page - 1);
    const std::uintptr_t end = (at + body.capacity()) & ~(page - 1);
    if (end > begin) {
      ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    }
  }
  std::string().swap(body);
}

// A request's body goes with give_back() however the request ends.
struct BodyGoesBack {
  std::string& body;
  ~BodyGoesBack() { give_back(body); }
};

std::string openai_error(std::string_view message, std::string_view type, unsigned code) {
  return protocol::openai_error_body(
      {.message = message, .type = type, .status_code = static_cast<int>(code)});
}

Response plain_error(unsigned version, unsigned status, std::string_view message) {
  Response res{static_cast<http::status>(status), version};
  res.set(http::field::content_type, "application/json");
  res.body() = openai_error(message, protocol::openai_error_type(static_cast<int>(status)), status);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

// The request a refusal answers: the parsed header, or when the parser gave up before it (a header
// too large, a malformed one) one with the target from the raw request line, so that the error can
// still come in the format the path implies.
http::request_header<> header_for_error(const http::request_header<>& parsed, const beast::flat_buffer& raw) {
  http::request_header<> h = parsed;
  if (!h.target().empty()) {
    return h;
  }
  h.version(11);
  const std::string_view bytes{static_cast<const char*>(raw.data().data()), raw.size()};
  const std::string_view line = bytes.substr(0, std::min(bytes.find("\r\n"), std::size_t{8192}));
  const auto sp = line.find(' ');
  if (sp != std::string_view::npos) {
    const std::string_view rest = line.substr(sp + 1);
    h.target(rest.substr(0, rest.find(' ')));
  }
  return h;
}

// RFC 9112 §6: a request body is framed by Content-Length, or by chunked as its only transfer coding. Both
// at once (a smuggling attempt: two parsers may split the bytes differently) is malformed; any other coding
// is one the server does not implement. And §3.2: one Host, not empty. Nullopt when the framing is sound.
struct FramingFault {
  unsigned status;
  std::string message;
};
std::optional<FramingFault> framing_fault(const http::request_header<>& request) {
  // RFC 9112, 3.2: an HTTP/1.1 request has exactly one Host, and it is not empty (a proxy or a virtual
  // host behind the server would otherwise pick one of two, or none, differently from the server).
  const auto hosts = request.count(http::field::host);
  if (hosts > 1) {
    return FramingFault{400, "more than one Host header"};
  }
  if (request.version() >= 11 && (hosts == 0 || request[http::field::host].empty())) {
    return FramingFault{400, "an HTTP/1.1 request needs one Host header with a value"};
  }
  if (request.find(http::field::transfer_encoding) == request.end()) {
    return std::nullopt;
  }
  if (request.find(http::field::content_length) != request.end()) {
    return FramingFault{400, "Transfer-Encoding and Content-Length together"};
  }
  std::string codings;
  std::size_t count = 0;
  bool chunked_only = true;
  const auto [first, last] = request.equal_range(http::field::transfer_encoding);
  for (auto f = first; f != last; ++f) {
    for (const auto token : http::token_list{f->value()}) {
      chunked_only = chunked_only && beast::iequals(token, "chunked");
      codings += (count++ == 0 ? "" : ", ") + std::string(token);
    }
  }
  if (chunked_only && count == 1) {
    return std::nullopt;
  }
  return FramingFault{501, "Transfer-Encoding '" + codings.substr(0, 200) +
                               "' is not supported: a request body is sent with Content-Length or chunked"};
}

// A request header's fields as they came, in order.
using FieldList = std::vector<std::pair<std::string, std::string>>;

FieldList copy_fields(const http::request_header<>& request) {
  FieldList out;
  for (const auto& f : request) {
    out.emplace_back(std::string(f.name_string()), std::string(f.value()));
  }
  return out;
}

// Fields after a chunked body (trailers) are dropped: Beast's parser adds them to the header, where they
// would be forwarded, or read for routing and authentication, as if the client had sent them up front. A
// trailer that repeats a header's name is inserted next to it, not at the end: the header is restored
// from its copy taken before the body (`fields`) rather than cut at a count.
void drop_trailers(http::request_header<>& request, const FieldList& fields) {
  if (static_cast<std::size_t>(std::distance(request.begin(), request.end())) == fields.size()) {
    return;  // no trailer
  }
  while (request.begin() != request.end()) {
    request.erase(request.begin());
  }
  for (const auto& [name, value] : fields) {
    request.insert(name, value);
  }
}

// The header as bytes, so that it can go out in one write with the first chunk.
std::string serialize_header(http::response<http::empty_body>& head) {
  http::response_serializer<http::empty_body> sr{head};
  sr.split(true);
  std::string out;
  boost::system::error_code ec;
  while (!ec && !sr.is_header_done()) {
    sr.next(ec, [&](boost::system::error_code& vec, const auto& buffers) {
      vec = {};
      out += beast::buffers_to_string(buffers);
      sr.consume(beast::buffer_bytes(buffers));
    });
  }
  return out;
}

}  // namespace

namespace {

// A response to HEAD carries the header GET would get and no content (RFC 9110, 9.3.2): a body sent after
// it would read as the start of the next response to a keep-alive client.
void drop_content_for_head(Response& res) {
  if (!res.has_content_length() && !res.chunked()) {
    res.content_length(res.body().size());
  }
  res.body().clear();
}

}  // namespace

void prepare_header(StreamReply& reply, bool keep_alive) {
  http::response<http::empty_body> head{std::move(reply.header)};
  head.erase(http::field::content_length);
  head.chunked(true);
  reply.keep_alive = keep_alive && head.keep_alive();
  head.keep_alive(reply.keep_alive);
  reply.header_text = serialize_header(head);
  reply.header = std::move(head.base());
}

namespace {

class SessionWriter final : public StreamWriter {
 public:
  /// `pending_header`: a serialized header not sent yet (it goes out with the first write), or empty.
  SessionWriter(beast::tcp_stream& stream, std::chrono::milliseconds timeout, std::string pending_header)
      : stream_(stream), timeout_(timeout), header_(std::move(pending_header)) {}

  // The coroutine itself, not a wrapper around it: one frame per write.
  asio::awaitable<boost::system::error_code> write(std::string_view data) override {
    return send(data, false);
  }
  asio::awaitable<boost::system::error_code> write_last(std::string_view data) override {
    return send(data, true);
  }
  void abort() noexcept override { aborted_ = true; }
  bool failed() const noexcept override { return failed_; }
  bool cut() const noexcept override { return cut_; }
  std::uint64_t bytes_written() const noexcept override { return bytes_; }
  void mark_failed() noexcept { failed_ = true; }
  void mark_cut() noexcept { cut_ = true; }
  bool finished() const noexcept { return finished_; }
  bool aborted() const noexcept { return aborted_; }

 private:
  // One gathered write: [pending header] [chunk size line, data, CRLF] [terminating chunk].
  asio::awaitable<boost::system::error_code> send(std::string_view data, bool last) {
    static constexpr std::string_view kCrlf = "\r\n";
    static constexpr std::string_view kCrlfLast = "\r\n0\r\n\r\n";
    static constexpr std::string_view kLast = "0\r\n\r\n";
    if (failed_ || finished_ || aborted_) {
      co_return asio::error::broken_pipe;
    }
    if (data.empty() && !last) {
      co_return boost::system::error_code{};  // an empty chunk would end the body
    }
    char size_line[24];
    const int size_len =
        data.empty() ? 0 : std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
    std::string_view tail = data.empty() ? (last ? kLast : std::string_view{}) : (last ? kCrlfLast : kCrlf);
    const std::array<asio::const_buffer, 4> buffers{
        asio::buffer(header_), asio::buffer(size_line, static_cast<std::size_t>(size_len)),
        asio::buffer(data.data(), data.size()), asio::buffer(tail.data(), tail.size())};
    std::size_t done = 0;
    boost::system::error_code ec;
    if (!write_now(stream_, buffers, done, ec)) {
      ec = co_await write_rest(stream_, buffers, done, timeout_);
    }
    std::string().swap(header_);
    if (ec) {
      failed_ = true;
      co_return ec;
    }
    bytes_ += data.size();
    finished_ = last;
    co_return boost::system::error_code{};
  }

  beast::tcp_stream& stream_;
  std::chrono::milliseconds timeout_;
  std::string header_;
  bool failed_ = false;
  bool finished_ = false;
  bool aborted_ = false;
  bool cut_ = false;
  std::uint64_t bytes_ = 0;
};

}  // namespace

Response make_response(const Request& req, unsigned status, std::string body, std::string_view content_type) {
  Response res{static_cast<http::status>(status), req.version()};
  if (!content_type.empty()) {
    res.set(http::field::content_type, content_type);
  }
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

StreamReply sse_reply(const Request& req, unsigned status) {
  StreamReply s;
  s.header.result(static_cast<http::status>(status));
  s.header.version(req.version());
  s.header.set(http::field::content_type, "text/event-stream; charset=utf-8");
  s.header.set(http::field::cache_control, "no-cache");
  if (!req.keep_alive()) {
    s.header.set(http::field::connection, "close");
  }
  return s;
}

// Watches a client's socket while its request is handled (armed from the handler's start to the end of
// the response). EOF or an error there means the client is gone: terminal cancellation is emitted on the
// session coroutine's slot, so whatever the handler or stream body is suspended in (an upstream read, a
// timer, a Notifier) completes with operation_aborted and its next co_await throws. A plain callback
// rather than a coroutine raced with `||`: the parallel group cost four handler hops (each one a reactor
// poll) per request. Bytes the client sends meanwhile (a pipelined next request) are kept in `buffer`.
struct Server::DisconnectWatch {
  asio::cancellation_signal signal;      // bound to the session coroutine
  tcp::socket* socket = nullptr;         // null once the session is gone
  beast::flat_buffer* buffer = nullptr;  // the session's read buffer
  std::uint64_t generation = 0;          // bumped by disarm(): a late callback of an older wait is ignored
  bool armed = false;                    // between the handler's start and the end of the response
  bool waiting = false;                  // the peeking receive is pending
  bool fired = false;
  char peeked = 0;  // target of the peeking receive

  // Registers once the handler first suspends (for a proxy: after the request went upstream), so that
  // the registration is not on the way of the request. A peeking receive rather than async_wait: Asio
  // queues a receive on a drained socket without a system call (at most one recv), while a wait
  // re-registers the socket with an epoll_ctl every time. A client that left meanwhile is seen then.
  static void arm(asio::io_context& ioc, const std::shared_ptr<DisconnectWatch>& self) {
    self->armed = true;
    asio::post(ioc, [self, gen = self->generation] {
      if (gen == self->generation && self->armed && self->socket && !self->waiting) {
        wait(self);
      }
    });
  }
  void disarm() noexcept {
    ++generation;
    if (waiting && socket) {
      boost::system::error_code ignored;
      socket->cancel(ignored);  // only the wait is pending between requests
    }
    waiting = false;
    armed = false;
  }

 private:
  static void wait(const std::shared_ptr<DisconnectWatch>& self) {
    self->waiting = true;
    // MSG_PEEK: the byte stays in the socket, so a wait cancelled after it completed loses nothing.
    self->socket->async_receive(
        asio::buffer(&self->peeked, 1), tcp::socket::message_peek,
        [self, gen = self->generation](const boost::system::error_code& ec, std::size_t n) {
          on_ready(self, gen, ec, n);
        });
  }
  static void on_ready(const std::shared_ptr<DisconnectWatch>& self, std::uint64_t gen,
                       const boost::system::error_code& ec, std::size_t n) {
    if (gen != self->generation || !self->armed || !self->socket) {
      return;  // disarmed, or the session is gone
    }
    self->waiting = false;
    if (!ec && n > 0) {
      boost::system::error_code ec2;
      const std::size_t avail = self->socket->available(ec2);
      if (!ec2 && avail > 0 && self->buffer->size() + avail <= kMaxPipelinedBytes) {
        const std::size_t n = self->socket->read_some(self->buffer->prepare(avail), ec2);
        if (!ec2) {
          self->buffer->commit(n);
          wait(self);
          return;
        }
      }
    }
    // Readable with nothing to read (EOF), an error, or too much pipelined: the client is gone.
    self->armed = false;
    self->fired = true;
    self->signal.emit(asio::cancellation_type::terminal);
  }
};

// One client connection, in the order a request goes through it: read_request(), run_handler(), then
// write_whole() or write_stream(). Failures of the handler or a stream body are judged in one place,
// failed(). Lives in the frame of Server::session(); registered with the server for stop().
class Server::Connection {
 public:
  Connection(Server& server, tcp::socket socket, const tcp::endpoint& remote, std::uint64_t id,
             std::shared_ptr<DisconnectWatch> watch);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Answers requests until the client or the server ends the connection.
  asio::awaitable<void> run();
  /// Fails every pending read and write; a stream in flight is cut with a moment to say so (stop()).
  void stop() noexcept;

 private:
  using Parser = http::request_parser<http::string_body>;

  asio::awaitable<bool> read_request(Parser& parser);
  asio::awaitable<bool> read_header(Parser& parser, boost::system::error_code& ec);
  asio::awaitable<boost::system::error_code> read_body(Parser& parser, bool& over_budget);
  bool grow_body(Parser& parser);
  bool draw_body(std::size_t bytes);
  void drop_body(Parser& parser);
  HeaderVerdict admit_header(const http::request_header<>& request, std::uint64_t body);
  Response server_error(const http::request_header<>& request, unsigned status, std::string_view message,
                        std::string_view code) const;
  void begin_request(std::size_t body_bytes);
  void end_request();
  asio::awaitable<boost::system::error_code> read_some(std::size_t bytes);
  asio::awaitable<bool> send_continue();
  std::optional<Response> read_error_reply(const boost::system::error_code& ec, const Parser& parser,
                                           bool in_body) const;
  Response too_large(const http::request_header<>& request) const;
  asio::awaitable<void> send_and_close(Response& res);
  asio::awaitable<void> linger();
  asio::awaitable<bool> run_handler(Request& req, std::optional<Reply>& reply);
  bool failed(const std::exception_ptr& error, const Request& req, bool in_body);
  bool client_gone();
  asio::awaitable<bool> write_whole(Response& res, bool keep_alive);
  asio::awaitable<bool> write_stream(StreamReply& reply, const Request& req, bool keep_alive);
  void shutdown_send() noexcept;
  void close() noexcept;

  Server& server_;
  const ServerOptions& opts_;
  ConnectionInfo info_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::shared_ptr<DisconnectWatch> watch_;
  std::list<Connection*>::iterator registered_;
  ReadDeadline deadline_{stream_.socket()};
  bool over_limit_ = false;          // beyond max_connections: its request is refused
  std::size_t body_limit_ = 0;       // what the request's body may be (on_header's allowance)
  bool busy_ = false;                // a request is in flight
  std::size_t body_reserved_ = 0;    // its share of the in-flight body budget
  bool body_on_budget_ = false;      // its body draws on that budget as it arrives (chunked)
  FieldList header_copy_;            // a chunked request's header, before any trailer came
  SessionWriter* writer_ = nullptr;  // while a stream body runs
};

Server::Connection::Connection(Server& server, tcp::socket socket, const tcp::endpoint& remote,
                               std::uint64_t id, std::shared_ptr<DisconnectWatch> watch)
    : server_(server), opts_(server.opts_), stream_(std::move(socket)), watch_(std::move(watch)) {
  info_.id = id;
  info_.remote = remote;
  registered_ = server_.connections_.insert(server_.connections_.end(), this);
  ++server_.stats_.connections_open;
  // A connection still in its TLS handshake holds a socket and a coroutine as much as an open one.
  over_limit_ = server_.stats_.connections_open + server_.handshaking_ > opts_.max_connections;
  watch_->socket = &stream_.socket();
  watch_->buffer = &buffer_;
}

Server::Connection::~Connection() {
  end_request();
  watch_->disarm();
  watch_->socket = nullptr;
  watch_->buffer = nullptr;
  server_.connections_.erase(registered_);
  --server_.stats_.connections_open;
}

void Server::Connection::close() noexcept {
  boost::system::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

// How long a stream body cut by stop() has to write its last event before its socket is closed.
constexpr auto kCutBound = std::chrono::milliseconds(500);

void Server::Connection::stop() noexcept {
  if (writer_ == nullptr || writer_->failed()) {
    close();
    return;
  }
  writer_->mark_cut();
  watch_->signal.emit(asio::cancellation_type::terminal);
  auto timer = std::make_shared<asio::steady_timer>(server_.ioc_, kCutBound);
  timer->async_wait([timer, watch = watch_](const boost::system::error_code&) {
    if (watch->socket != nullptr) {
      boost::system::error_code ignored;
      watch->socket->shutdown(tcp::socket::shutdown_both, ignored);
      watch->socket->close(ignored);
    }
  });
}

void Server::Connection::shutdown_send() noexcept {
  boost::system::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> Server::Connection::run() {
  for (std::uint64_t index = 0; !server_.stopped_; ++index) {
    end_request();  // the previous one was answered
    info_.request_index = index;
    Parser parser;
    if (!co_await read_request(parser)) {
      co_return;
    }
    Request req = parser.release();
    const BodyGoesBack body_goes_back{req.body()};
    if (buffer_.size() == 0) {
      buffer_.shrink_to_fit();  // an idle keep-alive connection should hold no read buffer
    }
    ++server_.stats_.requests;
    const bool keep_alive = req.keep_alive();
    std::optional<Reply> reply;
    if (!co_await run_handler(req, reply)) {
      co_return;
    }
    if (auto* res = std::get_if<Response>(&*reply)) {
      if (req.method() == http::verb::head) {
        drop_content_for_head(*res);
      }
      if (!co_await write_whole(*res, keep_alive)) {
        co_return;
      }
      continue;
    }
    if (!co_await write_stream(std::get<StreamReply>(*reply), req, keep_alive)) {
      co_return;
    }
    stream_.expires_never();
  }
}

// Reads the next request into `parser`: plain socket reads fed to it (what is buffered first: a pipelined
// request) under a lazy deadline, cheaper per request than Beast's composed read and its timer. False:
// the connection is over (a client error answered, or EOF, a timeout, a reset, stop()).
asio::awaitable<bool> Server::Connection::read_request(Parser& parser) {
  // The parser adds trailers to the header's fields: the header is copied at the first chunk header,
  // before any trailer.
  header_copy_.clear();
  bool copied = false;
  auto copy_header = [this, &parser, &copied](std::uint64_t, beast::string_view, boost::system::error_code&) {
    if (!std::exchange(copied, true)) {
      header_copy_ = copy_fields(parser.get().base());
    }
  };
  parser.on_chunk_header(copy_header);
  boost::system::error_code ec;
  if (!co_await read_header(parser, ec)) {
    co_return false;
  }
  if (!ec && parser.get().version() >= 11 &&
      beast::iequals(parser.get()[http::field::expect], "100-continue") && !parser.is_done() &&
      !co_await send_continue()) {
    co_return false;
  }
  const bool in_body = !ec;  // the errors of the body's reads are answered as such
  bool over_budget = false;
  if (in_body) {
    ec = co_await read_body(parser, over_budget);
  }
  if (over_budget || ec) {
    drop_body(parser);
  }
  if (over_budget) {
    Response refusal = server_error(parser.get().base(), 503,
                                    "Too many request bytes in flight; retry shortly", "overloaded");
    co_await send_and_close(refusal);
    co_return false;
  }
  if (ec) {
    if (auto answer = read_error_reply(ec, parser, in_body)) {
      co_await send_and_close(*answer);
    }
    co_return false;
  }
  deadline_.clear();
  if (parser.chunked()) {
    drop_trailers(parser.get().base(), header_copy_);
  }
  co_return true;
}

// The body, as it comes. Every byte draws on the in-flight budget as it arrives (draw_body): a chunked
// body, which declares no size, is counted as one with a Content-Length. `over_budget`: it went over.
asio::awaitable<boost::system::error_code> Server::Connection::read_body(Parser& parser, bool& over_budget) {
  if (parser.content_length()) {
    buffer_.reserve(
        std::min<std::size_t>(static_cast<std::size_t>(*parser.content_length()), kBodyReadBytes));
  }
  // The body usually came in with the header: parsed from the buffer without another read.
  boost::system::error_code ec;
  over_budget = !grow_body(parser);
  if (!over_budget) {
    ec = put_buffered(parser, buffer_);
  }
  if (!ec && !over_budget && !parser.is_done()) {
    deadline_.expires_after(opts_.read_timeout);
  }
  while (!ec && !over_budget && !parser.is_done()) {
    const std::uint64_t left = parser.content_length_remaining().value_or(kBodyReadBytes);
    ec = co_await read_some(static_cast<std::size_t>(std::clamp<std::uint64_t>(left, 512, kBodyReadBytes)));
    over_budget = !ec && !grow_body(parser);
    if (!ec && !over_budget) {
      ec = put_buffered(parser, buffer_);
    }
  }
  co_return ec;
}

// Before the parser takes the buffered bytes of a chunked body: they draw on the budget as they arrive (a
// Content-Length body reserved its whole size from the header). False: they would take the bodies in flight
// over the budget. Past its first read the body's buffer is its whole allowance at once, as a Content-Length
// body's is its size: address space, which takes memory only as bytes are written into it, so the body holds
// what it drew. (Grown by doubling, each copy left the old buffer behind, freed but still the process's,
// where the budget no longer counted it: 20 bodies of 30 MiB held 409 MiB against a budget of 256 MiB.)
bool Server::Connection::grow_body(Parser& parser) {
  if (!body_on_budget_) {
    return true;
  }
  std::string& body = parser.get().body();
  const std::size_t needed = body.size() + buffer_.size();  // at most a few framing bytes more than arrive
  if (!draw_body(std::min(needed, body_limit_))) {
    return false;
  }
  if (needed <= body.capacity()) {
    return true;
  }
  try {
    // A body that came in one read (most do) gets exactly its size.
    body.reserve(body.empty() ? needed : std::max(needed, body_limit_));
  } catch (const std::bad_alloc&) {
    return false;  // no address space left (a strict overcommit policy): refused as over the budget
  }
  return true;
}

// A request refused while its body was read: its bytes and its share of the budget go at once, not after
// the lingering close that follows (a client still sending would hold them for linger_timeout).
void Server::Connection::drop_body(Parser& parser) {
  give_back(parser.get().body());
  end_request();
}

// Takes a chunked body's first `bytes` into its share of the in-flight budget. False: they would take
// the bodies in flight over it.
bool Server::Connection::draw_body(std::size_t bytes) {
  if (!body_on_budget_ || bytes <= body_reserved_) {
    return true;
  }
  const std::size_t more = bytes - body_reserved_;
  if (server_.inflight_body_bytes_ + more > opts_.max_inflight_body_bytes) {
    return false;
  }
  server_.inflight_body_bytes_ += more;
  body_reserved_ = bytes;
  return true;
}

// The header of the next request, then the checks made before any body is read: its size against the
// limit (413), and the judgement of admit_header() (a refusal answered here). False: the connection is over.
asio::awaitable<bool> Server::Connection::read_header(Parser& parser, boost::system::error_code& ec) {
  parser.header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
  parser.body_limit(opts_.max_body_bytes);
  body_limit_ = opts_.max_body_bytes;
  // A keep-alive connection may wait idle_timeout for its next request; once its first bytes are in,
  // the header has read_timeout, as on a new connection.
  bool idle = info_.request_index > 0 && buffer_.size() == 0;
  deadline_.expires_after(idle ? opts_.idle_timeout : opts_.read_timeout);
  while (true) {
    ec = put_buffered(parser, buffer_);
    if (ec || parser.is_header_done()) {
      break;
    }
    ec = co_await read_some(kHeaderReadBytes);
    if (ec) {
      break;
    }
    if (idle && buffer_.size() > 0) {
      idle = false;
      deadline_.expires_after(opts_.read_timeout);
    }
  }
  if (!ec && parser.content_length() && *parser.content_length() > opts_.max_body_bytes) {
    ec = http::error::body_limit;
  }
  if (!ec) {
    const std::uint64_t body = parser.content_length().value_or(0);
    auto verdict = admit_header(parser.get().base(), body);
    if (auto* refusal = std::get_if<Response>(&verdict)) {
      co_await send_and_close(*refusal);
      co_return false;
    }
    const BodyAllowance& allowed = std::get<BodyAllowance>(verdict);
    parser.body_limit(allowed.max_bytes);  // a chunked body is held to it as it comes
    body_on_budget_ = allowed.shared_budget && !parser.content_length();  // reserved whole below otherwise
    begin_request(allowed.shared_budget ? static_cast<std::size_t>(body) : 0);
  }
  co_return true;
}

// Judged from the header alone, before its body is read: refused if its body's framing is unsound, the
// server drains, this connection is over max_connections, on_header says no, the body is over what
// on_header allows it (413), or it would take the in-flight bodies over their budget. The budget is
// weighed last: a request refused for any other reason never holds a share of it.
HeaderVerdict Server::Connection::admit_header(const http::request_header<>& request, std::uint64_t body) {
  if (auto fault = framing_fault(request)) {
    return server_error(request, fault->status, fault->message,
                        fault->status == 501 ? "not_implemented" : "malformed");
  }
  if (server_.draining_) {
    return server_error(request, 503, "The server is shutting down; retry on another instance", "draining");
  }
  if (over_limit_) {
    return server_error(request, 503, "Too many open connections; retry shortly", "overloaded");
  }
  BodyAllowance allowed{opts_.max_body_bytes, true};
  if (opts_.on_header) {
    auto verdict = opts_.on_header(request);
    if (auto* answer = std::get_if<Response>(&verdict)) {
      answer->keep_alive(false);
      answer->prepare_payload();
      return verdict;
    }
    allowed = std::get<BodyAllowance>(verdict);
    allowed.max_bytes = std::min(allowed.max_bytes, opts_.max_body_bytes);
  }
  body_limit_ = allowed.max_bytes;
  if (body > allowed.max_bytes) {
    return too_large(request);
  }
  if (allowed.shared_budget && body > 0 &&
      server_.inflight_body_bytes_ + body > opts_.max_inflight_body_bytes) {
    return server_error(request, 503, "Too many request bytes in flight; retry shortly", "overloaded");
  }
  return allowed;
}

Response Server::Connection::server_error(const http::request_header<>& request, unsigned status,
                                          std::string_view message, std::string_view code) const {
  Response res = opts_.make_error ? opts_.make_error(request, status, message, code)
                                  : plain_error(request.version() ? request.version() : 11, status, message);
  if (status == 503 || status == 429) {
    res.set(http::field::retry_after, "1");
  }
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

void Server::Connection::begin_request(std::size_t body_bytes) {
  busy_ = true;
  ++server_.busy_;
  body_reserved_ = body_bytes;
  server_.inflight_body_bytes_ += body_bytes;
}

void Server::Connection::end_request() {
  if (busy_) {
    busy_ = false;
    server_.request_done(std::exchange(body_reserved_, 0));
  }
}

// One read into the buffer; a passed deadline reads as Beast's timeout.
asio::awaitable<boost::system::error_code> Server::Connection::read_some(std::size_t bytes) {
  auto [ec, n] = co_await stream_.socket().async_read_some(buffer_.prepare(bytes), use_tuple);
  buffer_.commit(n);
  if (ec == asio::error::operation_aborted && deadline_.expired()) {
    ec = beast::error::timeout;
  }
  co_return ec;
}

asio::awaitable<bool> Server::Connection::send_continue() {
  stream_.expires_after(opts_.write_timeout);
  static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
  auto [ec, n] = co_await asio::async_write(stream_, asio::buffer(cont.data(), cont.size()), use_tuple);
  co_return !ec;
}

// What a request that could not be read is answered (the connection closes after it): nothing for EOF,
// a timeout, a reset or stop().
std::optional<Response> Server::Connection::read_error_reply(const boost::system::error_code& ec,
                                                             const Parser& parser, bool in_body) const {
  if (ec == http::error::header_limit && !in_body) {
    return server_error(header_for_error(parser.get().base(), buffer_), 431,
                        "Request header fields too large", "header_too_large");
  }
  if (ec == http::error::body_limit) {
    return too_large(parser.get().base());
  }
  if (is_parse_error(ec)) {
    return in_body ? server_error(parser.get().base(), 400, "Malformed HTTP request body", "malformed")
                   : server_error(header_for_error(parser.get().base(), buffer_), 400,
                                  "Malformed HTTP request", "malformed");
  }
  return std::nullopt;
}

Response Server::Connection::too_large(const http::request_header<>& request) const {
  Response res = opts_.make_too_large ? opts_.make_too_large(request, body_limit_, false)
                                      : plain_error(request.version(), 413, "Request body too large");
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

asio::awaitable<void> Server::Connection::send_and_close(Response& res) {
  stream_.expires_after(opts_.write_timeout);
  co_await http::async_write(stream_, res, use_tuple);
  shutdown_send();
  co_await linger();
}

// A lingering close, as nginx does it: after a refusal decided before the body was read, what the client
// still sends is read and dropped until it closes (or linger_timeout passes). Closing with unread bytes
// makes the kernel send a reset, which a client still writing its body (Python's urllib) sees as a broken
// pipe before it reads the answer.
asio::awaitable<void> Server::Connection::linger() {
  if (opts_.linger_timeout.count() <= 0) {
    co_return;
  }
  deadline_.expires_after(opts_.linger_timeout);
  std::array<char, 16384> sink;
  while (!server_.stopped_) {
    auto [ec, n] = co_await stream_.socket().async_read_some(asio::buffer(sink), use_tuple);
    if (ec) {
      break;
    }
  }
  deadline_.disarm();
}

// Runs the handler with the disconnect watch armed: from here to the end of the response a client that
// goes away cancels the handler or stream body, and operation_aborted escaping them means exactly that.
// False: the client is gone. An error of the handler is answered 500.
asio::awaitable<bool> Server::Connection::run_handler(Request& req, std::optional<Reply>& reply) {
  DisconnectWatch::arm(server_.ioc_, watch_);
  std::exception_ptr error;
  try {
    // Not `reply.emplace(co_await ...)`: GCC 12 miscompiles co_await inside some full expressions.
    Reply r = co_await server_.handler_(req, info_);
    reply.emplace(std::move(r));
  } catch (...) {
    error = std::current_exception();
  }
  if ((error && failed(error, req, false)) || client_gone()) {
    co_return false;
  }
  if (!reply) {
    reply.emplace(make_response(req, 500, openai_error("Internal server error", "InternalServerError", 500)));
  }
  co_return true;
}

// The one judge of an exception out of a handler or a stream body: true if it means the client went away
// (counted as a disconnect), else it is a handler error, counted and logged. Exceptions that are not
// std::exception propagate and end the connection.
bool Server::Connection::failed(const std::exception_ptr& error, const Request& req, bool in_body) {
  std::string what;
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) {
      ++server_.stats_.client_disconnects;
      return true;
    }
    what = e.what();
  } catch (const std::exception& e) {
    what = e.what();
  }
  ++server_.stats_.handler_errors;
  if (in_body) {
    spdlog::error("stream body {}: {}", std::string(req.target()), what);
  } else {
    spdlog::error("handler {} {}: {}", std::string(req.method_string()), std::string(req.target()), what);
  }
  return false;
}

// The disconnect watch saw the client leave (counted as a disconnect).
bool Server::Connection::client_gone() {
  if (watch_->fired) {
    ++server_.stats_.client_disconnects;
    return true;
  }
  return false;
}

// A whole response, eagerly written. False: the connection is over.
asio::awaitable<bool> Server::Connection::write_whole(Response& res, bool keep_alive) {
  keep_alive = keep_alive && res.keep_alive() && !server_.draining_;
  res.keep_alive(keep_alive);
  http::response_serializer<http::string_body> sr{res};
  const auto ec = co_await eager_write_message(stream_, sr, opts_.write_timeout);
  watch_->disarm();
  if (ec) {
    co_return false;
  }
  if (!keep_alive) {
    shutdown_send();
    co_return false;
  }
  co_return true;
}

// A streamed response: the header (now, or with the first chunk), the body's chunks, the terminating
// chunk. False: the connection is over.
asio::awaitable<bool> Server::Connection::write_stream(StreamReply& reply, const Request& req,
                                                       bool keep_alive) {
  if (reply.header_text.empty()) {
    prepare_header(reply, keep_alive);
  }
  keep_alive = keep_alive && reply.keep_alive;
  std::string pending_header = std::move(reply.header_text);
  if (!reply.header_with_first_chunk) {
    const auto ec = co_await eager_write(stream_, asio::buffer(pending_header), opts_.write_timeout);
    if (ec) {
      co_return false;
    }
    pending_header.clear();
  }
  SessionWriter writer(stream_, opts_.write_timeout, std::move(pending_header));
  std::exception_ptr error;
  writer_ = &writer;
  try {
    if (reply.body) {
      co_await reply.body(writer);
    }
  } catch (...) {
    error = std::current_exception();
  }
  writer_ = nullptr;
  if (error) {
    if (failed(error, req, true)) {
      co_return false;
    }
    writer.mark_failed();
  }
  if (client_gone() || writer.failed()) {
    co_return false;  // a broken stream cannot be terminated cleanly
  }
  if (writer.aborted() || writer.cut()) {
    watch_->disarm();
    shutdown_send();  // FIN after the bytes written: the client reads them, then an unterminated body
    co_return false;
  }
  boost::system::error_code ec;
  if (!writer.finished()) {
    ec = co_await writer.write_last({});
  }
  watch_->disarm();
  if (ec || !keep_alive || server_.draining_) {
    shutdown_send();
    co_return false;
  }
  co_return true;
}

Server::Server(asio::io_context& ioc, ServerOptions opts, Handler handler)
    : ioc_(ioc), opts_(std::move(opts)), handler_(std::move(handler)), acceptor_(ioc) {}

Server::~Server() = default;

Result<tcp::endpoint> Server::listen() {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(opts_.host, ec);
  if (ec) {
    // Accept "localhost" and similar names by resolving them once.
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(opts_.host, std::to_string(opts_.port), ec);
    if (ec || results.empty()) {
      return ec ? ec : make_error_code(asio::error::host_not_found);
    }
    addr = results.begin()->endpoint().address();
  }
  tcp::endpoint ep{addr, opts_.port};
  acceptor_.open(ep.protocol(), ec);
  if (ec) {
    return ec;
  }
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (opts_.reuse_port) {
    using reuse_port = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
    acceptor_.set_option(reuse_port(true), ec);
  }
  acceptor_.bind(ep, ec);
  if (ec) {
    return ec;
  }
  acceptor_.listen(opts_.backlog, ec);
  if (ec) {
    return ec;
  }
  return acceptor_.local_endpoint();
}

asio::awaitable<void> Server::run() {
  while (!stopped_) {
    auto [ec, sock] = co_await acceptor_.async_accept(use_tuple);
    if (ec) {
      if (stopped_ || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) {
        co_return;
      }
      // EMFILE and friends: back off briefly instead of spinning.
      accept_failed(ec);
      asio::steady_timer t(ioc_, std::chrono::milliseconds(50));
      co_await t.async_wait(use_tuple);
      continue;
    }
    boost::system::error_code ignored;
    if (stats_.connections_open + handshaking_ >= 2 * opts_.max_connections) {
      sock.close(ignored);  // far over the bound: not even a 503 (each costs a coroutine and a buffer)
      continue;
    }
    sock.set_option(tcp::no_delay(true), ignored);
    std::uint64_t id = next_id_++;
    ++stats_.connections_accepted;
    auto watch = std::make_shared<DisconnectWatch>();
    auto slot = watch->signal.slot();
    asio::co_spawn(ioc_, session(std::move(sock), id, watch, tls_),
                   asio::bind_cancellation_slot(slot, [id, watch](std::exception_ptr e) {
                     if (e) {
                       try {
                         std::rethrow_exception(e);
                       } catch (const boost::system::system_error& ex) {
                         if (ex.code() != asio::error::operation_aborted) {  // aborted: client gone
                           spdlog::error("connection {}: {}", id, ex.what());
                         }
                       } catch (const std::exception& ex) {
                         spdlog::error("connection {}: {}", id, ex.what());
                       }
                     }
                   }));
  }
}

// While descriptors are exhausted every accept fails, 20 times a second: one line a second at most, with
// how many failed since the last one.
void Server::accept_failed(const boost::system::error_code& ec) {
  ++stats_.accept_failures;
  ++accept_failures_unlogged_;
  const auto now = std::chrono::steady_clock::now();
  if (now - accept_logged_at_ < std::chrono::seconds(1)) {
    return;
  }
  if (accept_failures_unlogged_ == 1) {
    spdlog::warn("accept failed: {}", ec.message());
  } else {
    spdlog::warn("accept failed: {} ({} times since the last report)", ec.message(),
                 accept_failures_unlogged_);
  }
  accept_failures_unlogged_ = 0;
  accept_logged_at_ = now;
}

void Server::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  // Closing the sockets fails every pending read/write and the disconnect watchers, which cancels
  // in-flight handlers; stream bodies are cancelled and their sockets closed a moment later.
  for (Connection* c : connections_) {
    c->stop();
  }
}

void Server::drain(std::function<void()> drained) {
  if (stopped_ || draining_) {
    return;
  }
  draining_ = true;
  drained_ = std::move(drained);
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  if (opts_.on_drain) {
    opts_.on_drain();
  }
  check_drained();
}

void Server::request_done(std::size_t body_bytes) {
  inflight_body_bytes_ -= body_bytes;
  --busy_;
  check_drained();
}

void Server::check_drained() {
  if (draining_ && busy_ == 0 && drained_) {
    asio::post(ioc_, std::exchange(drained_, nullptr));
  }
}

// A TLS handshake takes a few round trips: a client still at it after this long is gone or stalling, and
// a handshake in flight is not among the connections stop() closes, so this also bounds how long one
// delays the end of a shutdown.
constexpr std::chrono::milliseconds kHandshakeBound{10'000};

namespace {

// What a connection to the TLS listener sent first: a TLS record opening a handshake (0x16), something
// else (plain HTTP to the https port), or nothing within `bound`.
enum class Opening { tls, other, nothing };

asio::awaitable<Opening> peek_opening(tcp::socket& socket, std::chrono::milliseconds bound) {
  using namespace asio::experimental::awaitable_operators;
  unsigned char first = 0;
  asio::steady_timer timer(socket.get_executor(), bound);
  auto r = co_await (socket.async_receive(asio::buffer(&first, 1), tcp::socket::message_peek, use_tuple) ||
                     timer.async_wait(use_tuple));
  if (r.index() != 0) {
    co_return Opening::nothing;
  }
  const auto [ec, n] = std::get<0>(r);
  if (ec || n == 0) {
    co_return Opening::nothing;
  }
  co_return first == 0x16 ? Opening::tls : Opening::other;
}

// nginx's answer to plain HTTP on an https port, in plain text (the client speaks no TLS to read more).
asio::awaitable<void> refuse_plain_http(tcp::socket& socket, std::chrono::milliseconds bound) {
  using namespace asio::experimental::awaitable_operators;
  static constexpr std::string_view kAnswer =
      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 59\r\nConnection: "
      "close\r\n\r\n"
      "This port speaks HTTPS: the plain HTTP request was refused\n";
  asio::steady_timer timer(socket.get_executor(), bound);
  co_await (asio::async_write(socket, asio::buffer(kAnswer.data(), kAnswer.size()), use_tuple) ||
            timer.async_wait(use_tuple));
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

}  // namespace

void Server::tls_failed(std::uint64_t id, const tcp::endpoint& remote, std::string_view kind,
                        std::string_view why) {
  ++stats_.tls_handshake_failures;
  if (opts_.on_tls_failure) {
    opts_.on_tls_failure(kind);
  }
  ++tls_failures_unlogged_;
  const auto now = std::chrono::steady_clock::now();
  if (now - tls_logged_at_ < std::chrono::seconds(1)) {
    return;  // a flood of them is one line a second
  }
  spdlog::info("connection {} from {}: no TLS connection ({}: {}){}", id, remote.address().to_string(), kind,
               why,
               tls_failures_unlogged_ > 1 ? fmt::format("; {} since the last report", tls_failures_unlogged_)
                                          : std::string());
  tls_failures_unlogged_ = 0;
  tls_logged_at_ = now;
}

// A TLS connection is served on the plain end of its relay (net/tls.hpp) once its handshake is done.
asio::awaitable<void> Server::session(tcp::socket socket, std::uint64_t id,
                                      std::shared_ptr<DisconnectWatch> watch,
                                      std::shared_ptr<TlsContext> tls) {
  boost::system::error_code ignored;
  const tcp::endpoint remote = socket.remote_endpoint(ignored);
  if (tls) {
    // Counted against max_connections from accept on, until the connection is open or gone.
    // (Not a guard object: a frame destroyed unresumed at shutdown must not touch the server.)
    ++handshaking_;
    const auto bound = std::min(opts_.read_timeout, kHandshakeBound);
    const Opening opening = co_await peek_opening(socket, bound);
    if (opening != Opening::tls) {
      if (opening == Opening::other) {
        co_await refuse_plain_http(socket, opts_.write_timeout);
      }
      --handshaking_;
      tls_failed(id, remote, opening == Opening::other ? "plain_http" : "handshake",
                 opening == Opening::other ? "its first bytes were not a TLS handshake"
                                           : "closed or silent before its handshake");
      co_return;
    }
    auto plain = co_await accept_tls(std::move(socket), std::move(tls), bound, opts_.write_timeout);
    --handshaking_;
    if (!plain) {
      tls_failed(id, remote, "handshake", plain.error().message());
      co_return;
    }
    socket = std::move(*plain);
    if (stopped_) {
      co_return;
    }
  }
  Connection connection(*this, std::move(socket), remote, id, std::move(watch));
  co_await connection.run();
}

}  // namespace warden::net
