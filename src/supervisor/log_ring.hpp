// Captured engine output: bytes from the stdout/stderr pipes split into lines, the last `capacity`
// lines kept. Lines are cut at `max_line_bytes` and made valid UTF-8 so they can go into JSON as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace warden::supervisor {

// Shown instead of a secret, in the log ring and in a displayed command line.
inline constexpr std::string_view kRedacted = "***";

enum class LogStream { out, err, warden };  // warden = the supervisor's own notes ("started pid 42")
std::string_view to_string(LogStream s);

struct LogLine {
  std::int64_t unix_ms = 0;
  LogStream stream = LogStream::out;
  std::string text;
};

class LogRing {
 public:
  explicit LogRing(std::size_t capacity = 1000, std::size_t max_line_bytes = 8192);

  // Appends the complete lines in `bytes`; an unfinished line waits for the rest (per stream).
  void feed(LogStream s, std::string_view bytes, std::int64_t unix_ms);
  // End of a stream: its unfinished line (if any) becomes a line.
  void flush(LogStream s, std::int64_t unix_ms);
  void note(std::string text, std::int64_t unix_ms);
  // From now on every occurrence of one of `secrets` in a line is kept as "***" (an engine may print its
  // own arguments, such as vLLM's "non-default args").
  void redact(std::vector<std::string> secrets);
  // The last `n` lines, oldest first.
  std::vector<LogLine> tail(std::size_t n) const;
  std::size_t size() const { return lines_.size(); }
  std::uint64_t total_lines() const { return total_; }

 private:
  void push(LogStream s, std::string text, std::int64_t unix_ms);
  std::string& partial(LogStream s) { return s == LogStream::err ? err_partial_ : out_partial_; }

  std::size_t capacity_;
  std::size_t max_line_bytes_;
  std::deque<LogLine> lines_;
  std::vector<std::string> secrets_;
  std::string out_partial_;
  std::string err_partial_;
  std::uint64_t total_ = 0;
};

// Replaces invalid UTF-8 sequences and control characters (other than tab) with '?'.
std::string sanitize_line(std::string_view text);

}  // namespace warden::supervisor
