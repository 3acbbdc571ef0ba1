#include "protocol/rewrite.hpp"

#include "protocol/errors.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

namespace warden::protocol {

namespace {

constexpr std::size_t npos = std::string_view::npos;

// A byte-offset scanner over a JSON text that inspect_request() has already validated. It only finds
// member boundaries; every step still checks bounds so bad input ends in an error, never a crash.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  std::size_t skip_ws(std::size_t p) const noexcept {
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) {
      ++p;
    }
    return p;
  }

  // p at the opening quote; returns the offset just past the closing quote, or npos. memchr finds the
  // next quote; it is escaped iff an odd number of backslashes precedes it.
  std::size_t skip_string(std::size_t p) const noexcept {
    ++p;
    while (p < s_.size()) {
      const void* hit = std::memchr(s_.data() + p, '"', s_.size() - p);
      if (hit == nullptr) {
        return npos;
      }
      const std::size_t q = static_cast<std::size_t>(static_cast<const char*>(hit) - s_.data());
      std::size_t backslashes = 0;
      while (q - backslashes > p && s_[q - backslashes - 1] == '\\') {
        ++backslashes;
      }
      if (backslashes % 2 == 0) {
        return q + 1;
      }
      p = q + 1;
    }
    return npos;
  }

  // p at the first byte of a value; returns the offset just past it, or npos.
  std::size_t skip_value(std::size_t p) const noexcept {
    if (p >= s_.size()) {
      return npos;
    }
    const char c = s_[p];
    if (c == '"') {
      return skip_string(p);
    }
    if (c == '{' || c == '[') {
      std::size_t depth = 0;
      while (p < s_.size()) {
        const char d = s_[p];
        if (d == '"') {
          p = skip_string(p);
          if (p == npos) {
            return npos;
          }
          continue;
        }
        if (d == '{' || d == '[') {
          ++depth;
        } else if (d == '}' || d == ']') {
          if (--depth == 0) {
            return p + 1;
          }
        }
        ++p;
      }
      return npos;
    }
    const std::size_t end = s_.find_first_of(",}] \t\r\n", p);
    return end == p ? npos : (end == npos ? s_.size() : end);
  }

  std::string_view slice(std::size_t b, std::size_t e) const noexcept { return s_.substr(b, e - b); }
  char at(std::size_t p) const noexcept { return p < s_.size() ? s_[p] : '\0'; }
  std::size_t size() const noexcept { return s_.size(); }

 private:
  std::string_view s_;
};

struct Member {
  std::string key;  // unescaped
  std::size_t value_begin = 0;
  std::size_t value_end = 0;
};

struct ObjectScan {
  std::vector<Member> members;
  std::size_t open = 0;   // offset of '{'
  std::size_t close = 0;  // offset of '}'
};

std::string unescape_key(std::string_view raw_with_quotes) {
  if (raw_with_quotes.find('\\') == npos) {
    return std::string(raw_with_quotes.substr(1, raw_with_quotes.size() - 2));
  }
  boost::system::error_code ec;
  const auto v =
      boost::json::parse(boost::json::string_view(raw_with_quotes.data(), raw_with_quotes.size()), ec);
  return (!ec && v.is_string()) ? std::string(v.get_string()) : std::string();
}

Result<ObjectScan> scan_object(const Scanner& sc, std::size_t p) {
  ObjectScan out;
  if (sc.at(p) != '{') {
    return Errc::not_json_object;
  }
  out.open = p;
  p = sc.skip_ws(p + 1);
  if (sc.at(p) == '}') {
    out.close = p;
    return out;
  }
  while (true) {
    if (sc.at(p) != '"') {
      return Errc::malformed_json;
    }
    const std::size_t key_end = sc.skip_string(p);
    if (key_end == npos) {
      return Errc::malformed_json;
    }
    Member m;
    m.key = unescape_key(sc.slice(p, key_end));
    p = sc.skip_ws(key_end);
    if (sc.at(p) != ':') {
      return Errc::malformed_json;
    }
    m.value_begin = sc.skip_ws(p + 1);
    m.value_end = sc.skip_value(m.value_begin);
    if (m.value_end == npos) {
      return Errc::malformed_json;
    }
    out.members.push_back(std::move(m));
    p = sc.skip_ws(out.members.back().value_end);
    if (sc.at(p) == ',') {
      p = sc.skip_ws(p + 1);
      continue;
    }
    if (sc.at(p) == '}') {
      out.close = p;
      return out;
    }
    return Errc::malformed_json;
  }
}

const Member* last_member(const ObjectScan& o, std::string_view key) {
  const auto it =
      std::find_if(o.members.rbegin(), o.members.rend(), [&](const Member& m) { return m.key == key; });
  return it == o.members.rend() ? nullptr : &*it;
}

struct Edit {
  std::size_t begin;
  std::size_t end;
  std::string text;
};

}  // namespace

Result<RewriteResult> rewrite_request(ApiKind api, std::string_view body, const RewriteOptions& options) {
  const Scanner sc(body);
  const std::size_t start = sc.skip_ws(0);
  auto top = scan_object(sc, start);
  if (!top) {
    return top.error();
  }
  if (sc.skip_ws(top->close + 1) != body.size()) {
    return Errc::malformed_json;
  }

  std::vector<Edit> edits;
  if (options.model) {
    const std::string quoted = json_quote(*options.model);
    for (const Member& m : top->members) {
      if (m.key == "model") {
        edits.push_back({m.value_begin, m.value_end, quoted});
      }
    }
  }

  const bool openai = api == ApiKind::openai_chat || api == ApiKind::openai_completions;
  const Member* stream = last_member(*top, "stream");
  if (options.force_include_usage && openai && stream != nullptr &&
      sc.slice(stream->value_begin, stream->value_end) == "true") {
    constexpr std::string_view kObject = R"({"include_usage":true})";
    const Member* so = last_member(*top, "stream_options");
    if (so == nullptr) {
      const std::size_t at = top->members.back().value_end;
      edits.push_back({at, at, std::string(",\"stream_options\":") + std::string(kObject)});
    } else if (sc.at(so->value_begin) != '{') {
      edits.push_back({so->value_begin, so->value_end, std::string(kObject)});
    } else {
      auto inner = scan_object(sc, so->value_begin);
      if (!inner) {
        return inner.error();
      }
      if (const Member* iu = last_member(*inner, "include_usage")) {
        edits.push_back({iu->value_begin, iu->value_end, "true"});
      } else if (inner->members.empty()) {
        edits.push_back({inner->open + 1, inner->open + 1, R"("include_usage":true)"});
      } else {
        const std::size_t at = inner->members.back().value_end;
        edits.push_back({at, at, R"(,"include_usage":true)"});
      }
    }
  }

  RewriteResult out;
  for (const Edit& e : edits) {
    out.changed = out.changed || sc.slice(e.begin, e.end) != e.text;
  }
  if (!out.changed) {
    return out;  // the input is the answer: no copy of a 200 KB prompt
  }
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  out.body.reserve(body.size() + 64);
  std::size_t pos = 0;
  for (const Edit& e : edits) {
    out.body.append(body.substr(pos, e.begin - pos));
    out.body.append(e.text);
    pos = e.end;
  }
  out.body.append(body.substr(pos));
  return out;
}

}  // namespace warden::protocol
