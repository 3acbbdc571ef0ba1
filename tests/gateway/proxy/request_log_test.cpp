// The request log line: a value from the client (a model name, a thread id) cannot forge another field
// or break the line.
#include "gateway/proxy/request_log.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace warden::gateway;

namespace {

// The line's fields as a logfmt reader takes them (the first word, "request", aside): bare or quoted
// values with \" and \\ escapes. A key seen twice is a forged field.
std::multimap<std::string, std::string> fields_of(const std::string& line) {
  std::multimap<std::string, std::string> out;
  std::size_t i = line.find(' ');
  while (i != std::string::npos && i < line.size()) {
    ++i;
    const std::size_t eq = line.find('=', i);
    if (eq == std::string::npos) {
      break;
    }
    const std::string key = line.substr(i, eq - i);
    std::string value;
    i = eq + 1;
    if (i < line.size() && line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        value += line[i] == '\\' && i + 1 < line.size() ? line[++i] : line[i];
      }
      ++i;
    } else {
      const std::size_t end = std::min(line.find(' ', i), line.size());
      value = line.substr(i, end - i);
      i = end;
    }
    out.emplace(key, value);
    i = i < line.size() ? i : std::string::npos;
  }
  return out;
}

}  // namespace

TEST(RequestLog, ClientValuesCannotForgeFields) {
  RequestRecord r;
  r.model = "m status=200";
  r.endpoint = "/v1/messages";
  r.replica = 1;
  r.route = "sticky";
  r.thread = "agent\" replica=7 status=200 x=\"";
  r.status = 502;
  r.work_class = "interactive";
  r.tenant = "team a status=200";
  const std::string line = request_log_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  const auto f = fields_of(line);
  for (const char* key : {"model", "replica", "status", "thread", "route"}) {
    EXPECT_EQ(f.count(key), 1u) << key << " in " << line;
  }
  EXPECT_EQ(f.find("status")->second, "502") << line;
  EXPECT_EQ(f.find("replica")->second, "1") << line;
  EXPECT_EQ(f.find("model")->second, "m status=200") << line;
  EXPECT_EQ(f.find("thread")->second, "agent\" replica=7 status=200 x=\"") << line;
  EXPECT_EQ(f.count("x"), 0u) << line;
  EXPECT_EQ(f.find("class")->second, "interactive") << line;
  EXPECT_EQ(f.find("tenant")->second, "team a status=200") << line;
}

TEST(RequestLog, PlainTokensStayBareAndEmptyIsADash) {
  EXPECT_EQ(log_field("main"), "main");
  EXPECT_EQ(log_field("header:x-claude-code-session-id"), "header:x-claude-code-session-id");
  EXPECT_EQ(log_field(""), "-");
  EXPECT_EQ(log_field("a b"), "\"a b\"");
  EXPECT_EQ(log_field("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(log_field(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(log_field("a\nb"), "\"a\\nb\"");  // one line stays one line
}
