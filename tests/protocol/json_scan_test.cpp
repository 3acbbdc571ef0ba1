#include "protocol/json_scan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace warden::protocol {
namespace {

// Writes every event as a short token, so a test can compare the whole event sequence at once.
class Trace {
 public:
  void on_value_begin(std::size_t depth, std::size_t offset, char first) {
    out_ += "<" + std::to_string(depth) + "@" + std::to_string(offset) + first + " ";
  }
  void on_value_end(std::size_t depth, std::size_t offset) {
    out_ += ">" + std::to_string(depth) + "@" + std::to_string(offset) + " ";
  }
  void on_object_begin() { out_ += "{ "; }
  void on_object_end() { out_ += "} "; }
  void on_array_begin() { out_ += "[ "; }
  void on_array_end() { out_ += "] "; }
  void on_key(std::string_view raw, bool escaped, std::size_t depth) {
    out_ += "k" + std::to_string(depth) + (escaped ? "e:" : ":") + std::string(raw) + " ";
  }
  void on_string(std::string_view raw, bool escaped) {
    out_ += std::string(escaped ? "se:" : "s:") + std::string(raw) + " ";
  }
  void on_int64(std::int64_t v) { out_ += "i:" + std::to_string(v) + " "; }
  void on_double(double v) { out_ += "d:" + std::to_string(v) + " "; }
  void on_bool(bool b) { out_ += b ? "true " : "false "; }
  void on_null() { out_ += "null "; }

  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

static_assert(JsonHandler<Trace>);

Errc scan(std::string_view text, std::size_t max_depth = 16) {
  Trace t;
  return scan_json_object(text, max_depth, t);
}

std::string trace(std::string_view text) {
  Trace t;
  EXPECT_EQ(scan_json_object(text, 16, t), Errc::ok) << text;
  return t.str();
}

TEST(JsonScan, EventsInDocumentOrderWithDepthsAndOffsets) {
  EXPECT_EQ(trace(R"({"a":[1,"x"],"b":{}})"),
            "<0@0{ { k1:a <1@5[ [ <2@61 i:1 >2@7 <2@8\" s:x >2@11 ] >1@12 k1:b <1@17{ { } >1@19 } >0@20 ");
}

TEST(JsonScan, WhitespaceAroundTokensIsSkippedAndNotPartOfSpans) {
  EXPECT_EQ(trace(" {\n\t\"a\" : true ,\r\"b\":null } \n"),
            "<0@1{ { k1:a <1@10t true >1@14 k1:b <1@21n null >1@25 } >0@27 ");
}

TEST(JsonScan, EmptyContainers) {
  EXPECT_EQ(trace("{}"), "<0@0{ { } >0@2 ");
  EXPECT_EQ(trace(R"({"a":[]})"), "<0@0{ { k1:a <1@5[ [ ] >1@7 } >0@8 ");
}

TEST(JsonScan, StringsArriveRawWithAnEscapedFlag) {
  EXPECT_EQ(trace(R"({"k\n":"a\"b\u00e9"})"), "<0@0{ { k1e:k\\n <1@7\" se:a\\\"b\\u00e9 >1@19 } >0@20 ");
  EXPECT_EQ(trace("{\"k\":\"caf\xC3\xA9\"}"), "<0@0{ { k1:k <1@5\" s:caf\xC3\xA9 >1@12 } >0@13 ");
}

TEST(JsonScan, LongPlainStringsCrossTheWideSkip) {
  const std::string text(100, 'x');
  const std::string body = R"({"a":")" + text + "\\n" + text + R"("})";
  EXPECT_EQ(trace(body), "<0@0{ { k1:a <1@5\" se:" + text + "\\n" + text + " >1@209 } >0@210 ");
}

TEST(JsonScan, Numbers) {
  EXPECT_EQ(trace(R"({"a":-0,"b":12,"c":1.5,"d":2e3,"e":-1E-2})"),
            "<0@0{ { k1:a <1@5- i:0 >1@7 k1:b <1@121 i:12 >1@14 k1:c <1@191 d:1.500000 >1@22 "
            "k1:d <1@272 d:2000.000000 >1@30 k1:e <1@35- d:-0.010000 >1@40 } >0@41 ");
  // Beyond int64: a double; beyond a double: infinity (valid JSON all the same).
  EXPECT_EQ(trace(R"({"a":99999999999999999999})"),
            "<0@0{ { k1:a <1@59 d:100000000000000000000.000000 >1@25 } >0@26 ");
  EXPECT_EQ(trace(R"({"a":1e999})"), "<0@0{ { k1:a <1@51 d:inf >1@10 } >0@11 ");
}

TEST(JsonScan, MalformedNumbers) {
  for (const char* body : {R"({"a":01})", R"({"a":-})", R"({"a":1.})", R"({"a":.5})", R"({"a":1e})",
                           R"({"a":1e+})", R"({"a":+1})", R"({"a":0x10})", R"({"a":1e2147483648})"}) {
    EXPECT_EQ(scan(body), Errc::malformed_json) << body;
  }
  EXPECT_EQ(scan(R"({"a":1e2147483647})"), Errc::ok);
}

TEST(JsonScan, TopLevelMustBeAnObject) {
  for (const char* body : {"[]", "\"s\"", "1", "-1", "true", "false", "null"}) {
    EXPECT_EQ(scan(body), Errc::body_not_object) << body;
  }
  for (const char* body : {"", "   ", "x", "'a'", "}"}) {
    EXPECT_EQ(scan(body), Errc::malformed_json) << body;
  }
}

TEST(JsonScan, MalformedStructure) {
  for (const char* body :
       {"{", R"({"a")", R"({"a":})", R"({"a":1,})", R"({"a":1 "b":2})", R"({a:1})", R"({"a":[1,]})",
        R"({"a":[1 2]})", R"({"a":[1})", R"({"a":1])", R"({"a":tru})", R"({"a":nul})", R"({"a":True})",
        R"({'a':1})", R"({"a":1}/*c*/)", R"({"a":1} // c)", R"({"a" 1})"}) {
    EXPECT_EQ(scan(body), Errc::malformed_json) << body;
  }
}

TEST(JsonScan, TrailingBytes) {
  EXPECT_EQ(scan("{} "), Errc::ok);
  for (const char* body : {"{}x", "{}{}", "{},", "{} 1", R"({"a":1}})"}) {
    EXPECT_EQ(scan(body), Errc::malformed_json) << body;
  }
  EXPECT_EQ(scan(std::string_view("{}\0", 3)), Errc::malformed_json);
}

TEST(JsonScan, Escapes) {
  EXPECT_EQ(scan(R"({"a":"\" \\ \/ \b \f \n \r \t \u0041 \ud83d\ude00"})"), Errc::ok);
  for (const char* body :
       {R"({"a":"\x"})", R"({"a":"\'"})", R"({"a":"\u12"})", R"({"a":"\u12g4"})", R"({"a":"\ud83d"})",
        R"({"a":"\ud83d\u0041"})", R"({"a":"\ude00"})", R"({"a":"\ud83d\n"})", R"({"a":"\)", R"({"\q":1})"}) {
    EXPECT_EQ(scan(body), Errc::malformed_json) << body;
  }
}

TEST(JsonScan, ControlBytesAndInvalidUtf8InStrings) {
  EXPECT_EQ(scan("{\"a\":\"x\ny\"}"), Errc::malformed_json);
  EXPECT_EQ(scan("{\"a\":\"x\ty\"}"), Errc::malformed_json);
  EXPECT_EQ(scan(std::string_view("{\"a\":\"\0\"}", 8)), Errc::malformed_json);
  EXPECT_EQ(scan("{\"a\":\"\x7F\"}"), Errc::ok);  // DEL is not a control byte to JSON
  for (const char* body : {
           "{\"a\":\"\xFF\"}",              // never valid
           "{\"a\":\"\xC3\"}",              // truncated sequence
           "{\"a\":\"\xC0\xAF\"}",          // overlong
           "{\"a\":\"\xED\xA0\x80\"}",      // a surrogate encoded directly
           "{\"a\":\"\xF4\x90\x80\x80\"}",  // beyond U+10FFFF
           "{\"\xFF\":1}",                  // in a key
       }) {
    EXPECT_EQ(scan(body), Errc::malformed_json) << body;
  }
  // Invalid bytes far into a long string: past the 16- and 8-byte skips.
  EXPECT_EQ(scan("{\"a\":\"" + std::string(37, 'x') + "\xFF\"}"), Errc::malformed_json);
  EXPECT_EQ(scan("{\"a\":\"" + std::string(37, 'x') + "\x01\"}"), Errc::malformed_json);
}

TEST(JsonScan, UnterminatedStringIsMalformed) {
  EXPECT_EQ(scan(R"({"a":"abc)"), Errc::malformed_json);
  EXPECT_EQ(scan("{\"a\":\"" + std::string(40, 'x')), Errc::malformed_json);
}

TEST(JsonScan, DepthLimitCountsOpenContainers) {
  // max_depth containers are fine, one more is too deep (the top-level object counts).
  const auto nested = [](std::size_t arrays) {
    return R"({"a":)" + std::string(arrays, '[') + std::string(arrays, ']') + "}";
  };
  EXPECT_EQ(scan(nested(3), 4), Errc::ok);
  EXPECT_EQ(scan(nested(4), 4), Errc::too_deep);
  EXPECT_EQ(scan("{}", 1), Errc::ok);
  EXPECT_EQ(scan(R"({"a":{}})", 1), Errc::too_deep);
  // Deep input is refused without recursion.
  EXPECT_EQ(scan(nested(100000), 128), Errc::too_deep);
}

TEST(JsonScan, UnescapeDecodesEveryEscape) {
  std::string out = "stale";
  unescape(R"(a\"b\\c\/d\be\ff\ng\rh\ti)", out);
  EXPECT_EQ(out, "a\"b\\c/d\be\ff\ng\rh\ti");
  unescape(R"(\u0041\u00e9\u20ac\ud83d\ude00)", out);
  EXPECT_EQ(out, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  unescape("plain", out);
  EXPECT_EQ(out, "plain");
  unescape("", out);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace warden::protocol
