#include "protocol/request.hpp"

#include "protocol/json_scan.hpp"

#include <boost/json/parse.hpp>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value: no heap allocation per request
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "base/trim.hpp"

namespace warden::protocol {

namespace {

using boost::system::error_code;

constexpr std::size_t kMaxKeyBytes = 256;         // longer session keys are replaced by their hash
constexpr std::size_t kPromptBudgetBytes = 4096;  // completions prompt / responses string input
constexpr std::size_t kMaxCaptureBytes = 1u << 20;

char lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string hex16(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = digits[v & 0xF];
    v >>= 4;
  }
  return out;
}

// Which top-level member the parser is inside.
enum class Field : std::uint8_t {
  other,
  model,
  stream,
  stream_options,
  max_tokens,
  prompt_cache_key,
  metadata,
  include_usage,  // (inside stream_options)
  // The prompt parts, in the order their digests are combined into the fingerprint (and the order of
  // BodyLayout::start_parts).
  system,
  tools,
  instructions,
  messages,
  input,
  prompt,
};
constexpr std::size_t kFirstPart = static_cast<std::size_t>(Field::system);
constexpr std::size_t kParts = static_cast<std::size_t>(Field::prompt) - kFirstPart + 1;

bool is_prompt_part(Field f) noexcept {
  return static_cast<std::size_t>(f) >= kFirstPart;
}

Field classify(std::string_view key) noexcept {
  static constexpr std::pair<std::string_view, Field> table[] = {
      {"model", Field::model},
      {"stream", Field::stream},
      {"stream_options", Field::stream_options},
      {"max_tokens", Field::max_tokens},
      {"max_completion_tokens", Field::max_tokens},
      {"max_output_tokens", Field::max_tokens},
      {"prompt_cache_key", Field::prompt_cache_key},
      {"metadata", Field::metadata},
      {"system", Field::system},
      {"tools", Field::tools},
      {"instructions", Field::instructions},
      {"messages", Field::messages},
      {"input", Field::input},
      {"prompt", Field::prompt},
  };
  for (const auto& [name, field] : table) {
    if (key == name) {
      return field;
    }
  }
  return Field::other;
}

// Where the members a rewrite edits sit: members of the top-level object (depth 1) and of its
// "stream_options" object (depth 2). Fed by the Handler from the scanner's events.
class LayoutRecorder {
 public:
  explicit LayoutRecorder(BodyLayout& layout) : layout_(layout) {}

  // An unescaped key of an object at `depth` 1 or 2.
  void key(std::string_view key, std::size_t depth) {
    Key k = Key::other;
    if (depth == 1) {
      k = classify(key);
    } else if (in_stream_options_) {
      k = key == "include_usage" ? Key::include_usage : Key::other;
    }
    key_[depth] = k;
  }

  void value_begin(std::size_t depth, std::size_t offset, char first) {
    if (depth == 1 || depth == 2) {
      value_start_[depth] = offset;
    }
    if (depth == 1) {
      in_stream_options_ = key_[1] == Key::stream_options && first == '{';
      if (key_[1] == Key::stream_options) {
        // A later "stream_options" replaces an earlier one: only the last one's inside counts.
        layout_.include_usage.reset();
        layout_.stream_options_members = 0;
        layout_.stream_options_last_end = 0;
      }
      elements_ = 0;
      element_parts_ =
          first == '[' && (key_[1] == Key::system || key_[1] == Key::messages || key_[1] == Key::input);
      if (const int part = start_part(key_[1]); part >= 0) {
        layout_.start_parts[static_cast<std::size_t>(part)].reset();
      }
      if (key_[1] == Key::system) {
        system_first_.reset();
        system_second_.reset();
      }
      if (std::optional<ByteSpan>* last = last_item(key_[1])) {
        last->reset();
      }
    } else if (depth == 2 && element_parts_) {
      ++elements_;
      if (key_[1] == Key::system && elements_ == 2) {
        system_second_ = offset;
      }
    }
  }

  // A value with `depth` containers around it ends just before `offset`.
  void value_end(std::size_t depth, std::size_t offset) {
    if (depth != 1 && depth != 2) {
      return;
    }
    const ByteSpan span{value_start_[depth], offset};
    if (depth == 1) {
      top_value_end(span);
    } else if (in_stream_options_) {
      ++layout_.stream_options_members;
      layout_.stream_options_last_end = span.end;
      if (key_[2] == Key::include_usage) {
        layout_.include_usage = span;
      }
    } else if (element_parts_) {
      element_end(span);
    }
  }

  // After the scan: the billing block's bytes, if the Handler found one as the first system element.
  void billing_found() {
    if (system_first_) {
      layout_.billing_block = ByteSpan{system_first_->begin, system_second_.value_or(system_first_->end)};
    }
  }

 private:
  using Key = Field;

  // The index in BodyLayout::start_parts (the prompt parts, in the same order), or -1.
  static int start_part(Key k) noexcept {
    return is_prompt_part(k) ? static_cast<int>(static_cast<std::size_t>(k) - kFirstPart) : -1;
  }

  // Where the last element of a top-level "messages" / "input" array is kept (nullptr for other keys).
  std::optional<ByteSpan>* last_item(Key k) noexcept {
    return k == Key::messages ? &layout_.last_message : k == Key::input ? &layout_.last_input_item : nullptr;
  }

  // An element of a top-level "system" / "messages" / "input" array ends.
  void element_end(const ByteSpan& span) {
    if (std::optional<ByteSpan>* last = last_item(key_[1])) {
      *last = span;
    }
    if (elements_ != 1) {
      return;
    }
    if (key_[1] == Key::system) {
      system_first_ = span;
    } else if (const int part = start_part(key_[1]); part >= 0) {
      layout_.start_parts[static_cast<std::size_t>(part)] = span;  // the first message / input item
    }
  }

  void top_value_end(const ByteSpan& span) {
    ++layout_.top_members;
    layout_.last_member_end = span.end;
    switch (key_[1]) {
      case Key::model:
        layout_.model.push_back(span);
        break;
      case Key::stream:
        layout_.stream = span;
        break;
      case Key::stream_options:
        layout_.stream_options = span;
        in_stream_options_ = false;
        break;
      case Key::max_tokens:
        layout_.max_tokens.push_back(span);
        break;
      default:
        // An array of messages / input items starts with its first element (recorded in value_end).
        if (const int part = start_part(key_[1]); part >= 0 && !(element_parts_ && part >= 3)) {
          layout_.start_parts[static_cast<std::size_t>(part)] = span;
        }
        break;
    }
    element_parts_ = false;
  }

  BodyLayout& layout_;
  std::array<Key, 3> key_{};
  std::array<std::size_t, 3> value_start_{};
  bool in_stream_options_ = false;            // inside the value of a top-level "stream_options" object
  bool element_parts_ = false;                // inside a top-level "system" / "messages" / "input" array
  std::size_t elements_ = 0;                  // its elements so far
  std::optional<ByteSpan> system_first_;      // the first element of the last "system" array
  std::optional<std::size_t> system_second_;  // where its second element starts
};

enum class Kind { object, array, string, number, boolean, null };

// The JsonHandler that reads a request. Depth = number of open containers: the top-level object's members
// sit at depth 1, the elements of a top-level array member at depth 2, their members at depth 3.
class Handler {
 public:
  Handler(bool fingerprint, BodyLayout& layout) : fingerprint_(fingerprint), layout_(layout) {}

  void on_value_begin(std::size_t depth, std::size_t offset, char first) {
    layout_.value_begin(depth, offset, first);
  }
  void on_value_end(std::size_t depth, std::size_t offset) { layout_.value_end(depth, offset); }

  void on_object_begin() {
    value_begin(Kind::object);
    emit_tag('{');
    ++depth_;
  }
  void on_object_end() {
    --depth_;
    emit_tag('}');
    value_end();
  }
  void on_array_begin() {
    value_begin(Kind::array);
    emit_tag('[');
    ++depth_;
  }
  void on_array_end() {
    --depth_;
    emit_tag(']');
    value_end();
  }

  // `raw` is the key's text between the quotes; `escaped` says whether it holds backslash escapes.
  void on_key(std::string_view raw, bool escaped, std::size_t depth) {
    if (escaped) {
      unescape(raw, key_);
      raw = key_;
    }
    if (depth <= 2) {
      layout_.key(raw, depth);
    }
    on_full_key(raw);
  }

  void on_string(std::string_view raw, bool escaped) {
    value_begin(Kind::string);
    emit_tag('s');
    // Unescape only when the text is used (captured or hashed): hashing the decoded text keeps the
    // fingerprint independent of how a client spells its escapes.
    std::string_view text = raw;
    if (escaped && (capture_ != Capture::none || emitting())) {
      unescape(raw, scratch_);
      text = scratch_;
    }
    if (in_system_first() && !escaped) {
      billing_string(raw);
    }
    string_bytes(text, raw.size());
    if (!budgeted_) {  // a budgeted part hashes a byte prefix only: no length that would change per turn
      emit_u64(text.size());
    }
    string_end();
    value_end();
  }

  void on_int64(std::int64_t v) {
    number([&] {
      if (depth_ == 1 && field_ == Field::max_tokens) {
        max_tokens_ = v;
      }
      return static_cast<std::uint64_t>(v);
    });
  }
  void on_double(double v) {
    number([&] {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      return bits;
    });
  }
  void on_bool(bool b) {
    value_begin(Kind::boolean);
    if (depth_ == 2 && field_ == Field::stream_options && key2_ == "include_usage") {
      include_usage_ = b;
    }
    emit_tag(b ? 't' : 'f');
    value_end();
  }
  void on_null() {
    value_begin(Kind::null);
    emit_tag('n');
    value_end();
  }

  // Results.
  enum class ModelState { absent, string, not_string };
  ModelState model_state_ = ModelState::absent;
  std::string model_;
  bool include_usage_ = false;
  std::optional<std::int64_t> max_tokens_;
  std::optional<std::string> prompt_cache_key_;
  std::optional<std::string> user_id_;
  std::uint64_t prompt_bytes_ = 0;

  // Whether the last top-level "system" starts with Claude Code's billing block (BodyLayout::billing_block).
  bool billing_block() const noexcept {
    return system_elements_ >= 1 && billing_.object && billing_.members == 2 && billing_.type_text &&
           billing_.prefix;
  }
  void finish_layout() {
    if (billing_block()) {
      layout_.billing_found();
    }
  }

  // The fingerprint, or nullopt if no prompt part had any content.
  std::optional<std::uint64_t> fingerprint() const {
    if (!fingerprint_ || hashed_values_ == 0) {
      return std::nullopt;
    }
    std::array<std::uint64_t, 2 * kParts> words{};
    for (std::size_t i = 0; i < kParts; ++i) {
      words[2 * i] = part_present_[i] ? 1 : 0;
      words[2 * i + 1] = part_digest_[i];
    }
    return XXH3_64bits(words.data(), sizeof words);
  }

 private:
  enum class Target { none, part, element };
  enum class Capture { none, model, prompt_cache_key, user_id, role };

  template <class F>
  void number(F&& value_bits) {
    value_begin(Kind::number);
    const std::uint64_t bits = value_bits();
    if (counting_) {
      prompt_bytes_ += 4;  // a token id (completions) or a number in a schema: about one token
    }
    if (emitting()) {
      ++hashed_values_;
    }
    emit_tag('i');
    emit_u64(bits);
    value_end();
  }

  // Claude Code's billing block, looked for in the first element of a top-level "system" array.
  struct Billing {
    bool object = false;
    int members = 0;
    bool type_text = false;  // "type": "text"
    bool prefix = false;     // "text": "x-anthropic-billing-header:..."
  };
  enum class BillingKey : std::uint8_t { other, type, text };

  bool in_system_first() const noexcept {
    return depth_ == 3 && field_ == Field::system && system_array_ && system_elements_ == 1;
  }
  void billing_string(std::string_view raw) {
    if (billing_key_ == BillingKey::type) {
      billing_.type_text = raw == "text";
    } else if (billing_key_ == BillingKey::text) {
      billing_.prefix = raw.starts_with(kBillingPrefix);
    }
  }

  void value_begin(Kind kind) {
    if (depth_ == 0) {
      return;  // the scanner only lets a top-level object through
    }
    if (depth_ == 2 && field_ == Field::system && system_array_ && ++system_elements_ == 1) {
      billing_.object = kind == Kind::object;
    }
    if (pending_skip_) {  // the value of a "cache_control" member: not part of the fingerprint
      pending_skip_ = false;
      skipping_ = true;
      skip_depth_ = depth_;
    }
    if (depth_ == 1) {
      member_begin(kind);
    } else if (depth_ == 2 && elements_) {
      element_begin();
    }
    capture_ = Capture::none;
    if (kind == Kind::string) {
      if (depth_ == 1 && field_ == Field::model) {
        capture_ = Capture::model;
      } else if (depth_ == 1 && field_ == Field::prompt_cache_key) {
        capture_ = Capture::prompt_cache_key;
      } else if (depth_ == 2 && field_ == Field::metadata && key2_ == "user_id") {
        capture_ = Capture::user_id;
      } else if (depth_ == 3 && elements_ && role_key_) {
        capture_ = Capture::role;
      }
      str_.clear();
    }
  }

  void member_begin(Kind kind) {
    switch (field_) {
      case Field::model:
        model_state_ = kind == Kind::string ? ModelState::string : ModelState::not_string;
        model_.clear();
        break;
      case Field::stream_options:
        include_usage_ = false;
        break;
      case Field::max_tokens:
        max_tokens_.reset();
        break;
      case Field::prompt_cache_key:
        prompt_cache_key_.reset();
        break;
      case Field::metadata:
        user_id_.reset();
        break;
      case Field::system:
        system_array_ = kind == Kind::array;
        system_elements_ = 0;
        billing_ = {};
        break;
      default:
        break;
    }
    if (!is_prompt_part(field_)) {
      return;
    }
    counting_ = true;
    elements_ = kind == Kind::array && (field_ == Field::messages || field_ == Field::input);
    budgeted_ =
        kind == Kind::string ? (field_ == Field::input || field_ == Field::prompt) : field_ == Field::prompt;
    budget_ = kPromptBudgetBytes;
    first_user_seen_ = false;
    if (fingerprint_) {
      XXH3_64bits_reset(&part_);
      target_ = elements_ ? Target::none : Target::part;  // element mode hashes elements, not brackets
    }
  }

  void element_begin() {
    role_.clear();
    if (fingerprint_ && !first_user_seen_) {
      XXH3_64bits_reset(&element_);
      target_ = Target::element;
    } else {
      target_ = Target::none;
    }
  }

  void value_end() {
    if (skipping_ && depth_ == skip_depth_) {
      skipping_ = false;
    }
    if (depth_ == 2 && elements_) {
      if (target_ == Target::element) {
        const std::uint64_t d = XXH3_64bits_digest(&element_);
        XXH3_64bits_update(&part_, &d, sizeof d);
        if (role_ == "user") {
          first_user_seen_ = true;
        }
      }
      target_ = Target::none;
    } else if (depth_ == 1) {
      if (is_prompt_part(field_)) {
        const std::size_t i = static_cast<std::size_t>(field_) - kFirstPart;
        if (fingerprint_) {
          part_digest_[i] = XXH3_64bits_digest(&part_);
          part_present_[i] = true;
        }
      }
      target_ = Target::none;
      counting_ = false;
      elements_ = false;
      budgeted_ = false;
      skipping_ = false;
      pending_skip_ = false;
    }
  }

  void on_full_key(std::string_view key) {
    if (depth_ == 1) {
      field_ = classify(key);
      return;
    }
    if (depth_ == 2 && (field_ == Field::stream_options || field_ == Field::metadata)) {
      key2_.assign(key.substr(0, 64));
    }
    if (depth_ == 3) {
      role_key_ = elements_ && key == "role";
      if (in_system_first()) {
        ++billing_.members;
        billing_key_ = key == "type"   ? BillingKey::type
                       : key == "text" ? BillingKey::text
                                       : BillingKey::other;
      }
    }
    if (counting_) {
      prompt_bytes_ += key.size();
    }
    if (emitting()) {
      if (key == "cache_control") {
        pending_skip_ = true;
        return;
      }
      emit_tag('k');
      emit(key.data(), key.size());
      emit_u64(key.size());
    }
  }

  // `raw_size`: the escaped length, counted for the estimate whether or not the text was decoded.
  void string_bytes(std::string_view s, std::size_t raw_size) {
    if (counting_) {
      prompt_bytes_ += raw_size;
    }
    if (capture_ != Capture::none && str_.size() + s.size() <= kMaxCaptureBytes) {
      str_.append(s);
    }
    if (emitting() && !s.empty()) {
      ++hashed_values_;
      emit(s.data(), s.size());
    }
  }

  void string_end() {
    switch (capture_) {
      case Capture::model:
        model_ = std::move(str_);
        break;
      case Capture::prompt_cache_key:
        prompt_cache_key_ = std::move(str_);
        break;
      case Capture::user_id:
        user_id_ = std::move(str_);
        break;
      case Capture::role:
        role_ = std::move(str_);
        break;
      case Capture::none:
        break;
    }
    str_.clear();
    capture_ = Capture::none;
  }

  bool emitting() const noexcept { return target_ != Target::none && !skipping_; }

  void emit(const void* p, std::size_t n) {
    if (!emitting()) {
      return;
    }
    if (budgeted_) {
      n = std::min(n, budget_);
      budget_ -= n;
    }
    if (n == 0) {
      return;
    }
    XXH3_64bits_update(target_ == Target::element ? &element_ : &part_, p, n);
  }
  void emit_tag(char tag) { emit(&tag, 1); }
  void emit_u64(std::uint64_t v) { emit(&v, sizeof v); }

  const bool fingerprint_;
  LayoutRecorder layout_;
  int depth_ = 0;
  Field field_ = Field::other;
  std::string key_;      // an unescaped key
  std::string scratch_;  // an unescaped string value
  std::string key2_;     // last key at depth 2 (inside stream_options / metadata)
  bool role_key_ = false;
  bool system_array_ = false;  // the current top-level "system" is an array
  std::size_t system_elements_ = 0;
  Billing billing_;
  BillingKey billing_key_ = BillingKey::other;
  Capture capture_ = Capture::none;
  std::string str_;
  std::string role_;

  // Prompt-part hashing.
  bool counting_ = false;
  bool elements_ = false;  // the current member is an array of messages / input items
  bool first_user_seen_ = false;
  bool budgeted_ = false;
  std::size_t budget_ = 0;
  bool pending_skip_ = false;
  bool skipping_ = false;
  int skip_depth_ = 0;
  Target target_ = Target::none;
  std::uint64_t hashed_values_ = 0;
  std::array<std::uint64_t, kParts> part_digest_{};
  std::array<bool, kParts> part_present_{};
  // Set by XXH3_64bits_reset() before each use: not zeroed up front (over a KiB per request).
  XXH3_state_t part_;
  XXH3_state_t element_;
};

}  // namespace

std::optional<std::string> normalize_key(std::string_view raw) {
  const std::string_view v = base::trim(raw);
  if (v.empty()) {
    return std::nullopt;
  }
  if (v.size() > kMaxKeyBytes) {
    return "h:" + hex16(XXH3_64bits(v.data(), v.size()));
  }
  return std::string(v);
}

HeaderLookup::HeaderLookup(std::span<const HeaderField> fields) noexcept : fields_(fields) {}

std::optional<std::string_view> HeaderLookup::find(std::string_view name) const {
  if (fn_ != nullptr) {
    return fn_(ctx_, name);
  }
  for (const auto& f : fields_) {
    if (iequals(f.name, name)) {
      return f.value;
    }
  }
  return std::nullopt;
}

std::string_view to_string(SessionSource s) noexcept {
  switch (s) {
    case SessionSource::warden_header:
      return "warden_header";
    case SessionSource::claude_code_header:
      return "claude_code_header";
    case SessionSource::codex_header:
      return "codex_header";
    case SessionSource::prompt_cache_key:
      return "prompt_cache_key";
    case SessionSource::metadata_user_id:
      return "metadata_user_id";
    case SessionSource::fingerprint:
      return "fingerprint";
    case SessionSource::none:
      return "none";
  }
  return "none";
}

ClientPin parse_pin(std::optional<std::string_view> value, PinSource source) noexcept {
  ClientPin pin;
  if (!value) {
    return pin;
  }
  pin.source = source;
  pin.state = PinState::invalid;
  const std::string_view v = base::trim(*value);
  // Up to 9 digits: no overflow, and far beyond any replica count.
  if (v.empty() || v.size() > 9 ||
      !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return pin;
  }
  std::int64_t n = 0;
  for (char c : v) {
    n = n * 10 + (c - '0');
  }
  pin.state = PinState::valid;
  pin.replica = n;
  return pin;
}

std::optional<std::string> session_from_user_id(std::string_view user_id) {
  const std::string_view v = base::trim(user_id);
  if (v.starts_with('{')) {
    error_code ec;
    boost::json::parse_options opt;
    opt.max_depth = 8;
    const boost::json::value jv =
        boost::json::parse(boost::json::string_view(v.data(), v.size()), ec, {}, opt);
    if (ec || !jv.is_object()) {
      return std::nullopt;
    }
    const auto* sid = jv.as_object().if_contains("session_id");
    if (sid == nullptr || !sid->is_string()) {
      return std::nullopt;
    }
    return normalize_key(std::string_view(sid->as_string()));
  }
  constexpr std::string_view marker = "_session_";
  const auto pos = v.rfind(marker);
  if (!v.starts_with("user_") || pos == std::string_view::npos) {
    return std::nullopt;
  }
  return normalize_key(v.substr(pos + marker.size()));
}

Result<RequestInfo> inspect_request(ApiKind api, const HeaderLookup& headers, std::string_view body,
                                    const InspectOptions& options) {
  RequestInfo info;
  info.api = api;

  static constexpr std::pair<std::string_view, SessionSource> header_sources[] = {
      {"x-warden-session", SessionSource::warden_header},
      {"x-claude-code-session-id", SessionSource::claude_code_header},
      {"session-id", SessionSource::codex_header},
      {"session_id", SessionSource::codex_header},
  };
  for (const auto& [name, source] : header_sources) {
    if (const auto v = headers.find(name)) {
      if (auto key = normalize_key(*v)) {
        info.session_key = std::move(*key);
        info.session_source = source;
        break;
      }
    }
  }

  if (const auto v = headers.find("x-warden-replica")) {
    info.pin = parse_pin(v, PinSource::warden_replica);
  } else {
    info.pin = parse_pin(headers.find("x-data-parallel-rank"), PinSource::data_parallel_rank);
  }

  // Only hash the prompt when no header already names the session (a body key may still win later).
  Handler h(info.session_source == SessionSource::none, info.layout);
  if (const Errc e = scan_json_object(body, options.max_depth, h); e != Errc::ok) {
    return e;
  }
  h.finish_layout();
  switch (h.model_state_) {
    case Handler::ModelState::absent:
      return Errc::missing_model;
    case Handler::ModelState::not_string:
      return Errc::model_not_string;
    case Handler::ModelState::string:
      if (h.model_.empty()) {
        return Errc::missing_model;
      }
      break;
  }
  info.model = std::move(h.model_);
  info.stream =
      info.layout.stream &&
      lax_true(body.substr(info.layout.stream->begin, info.layout.stream->end - info.layout.stream->begin));
  info.include_usage = h.include_usage_;
  info.max_tokens = h.max_tokens_;
  info.prompt_bytes = h.prompt_bytes_;
  info.prompt_tokens_estimate = (h.prompt_bytes_ + 3) / 4;

  if (info.session_source == SessionSource::none && h.prompt_cache_key_) {
    if (auto key = normalize_key(*h.prompt_cache_key_)) {
      info.session_key = std::move(*key);
      info.session_source = SessionSource::prompt_cache_key;
    }
  }
  if (info.session_source == SessionSource::none && h.user_id_) {
    if (auto key = session_from_user_id(*h.user_id_)) {
      info.session_key = std::move(*key);
      info.session_source = SessionSource::metadata_user_id;
    }
  }
  if (info.session_source == SessionSource::none) {
    if (const auto fp = h.fingerprint()) {
      info.session_key = "fp:" + hex16(*fp);
      info.session_source = SessionSource::fingerprint;
    }
  }
  if (!info.session_key.empty()) {
    info.session_hash = XXH3_64bits(info.session_key.data(), info.session_key.size());
  }
  read_thread(headers, info);
  info.offers_tools = offers_tools(body, info.layout);
  info.first_message_hash = first_message_hash(body, info.layout);
  return info;
}

Result<BodyLayout> scan_layout(std::string_view body, const InspectOptions& options) {
  BodyLayout layout;
  Handler h(false, layout);
  if (const Errc e = scan_json_object(body, options.max_depth, h); e != Errc::ok) {
    return e;
  }
  h.finish_layout();
  return layout;
}

PromptStart prompt_start(std::string_view body, const BodyLayout& layout, bool drop_billing) {
  constexpr std::size_t kHeadParts = 3;  // "system", "tools", "instructions": start_parts[0..2]
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  std::size_t budget = kPromptStartBytes;
  auto feed = [&](std::size_t begin, std::size_t end) {
    const std::size_t n = std::min(end - begin, budget);
    if (n > 0) {
      XXH3_64bits_update(&state, body.data() + begin, n);
      budget -= n;
    }
  };
  PromptStart out;
  for (std::size_t i = 0; i < layout.start_parts.size(); ++i) {
    if (i == kHeadParts) {
      out.head_hash = XXH3_64bits_digest(&state);
      out.head_bytes = kPromptStartBytes - budget;
    }
    const std::optional<ByteSpan>& part = layout.start_parts[i];
    if (!part || budget == 0) {
      continue;
    }
    const std::uint8_t tag = static_cast<std::uint8_t>(i);  // which part: "system" text is not "input" text
    XXH3_64bits_update(&state, &tag, 1);
    const std::optional<ByteSpan>& cut = layout.billing_block;
    if (i == 0 && drop_billing && cut && cut->begin >= part->begin && cut->end <= part->end) {
      feed(part->begin, cut->begin);
      feed(cut->end, part->end);
    } else {
      feed(part->begin, part->end);
    }
  }
  out.hash = XXH3_64bits_digest(&state);
  out.bytes = kPromptStartBytes - budget;
  return out;
}

bool lax_true(std::string_view value) {
  if (value == "true") {
    return true;
  }
  if (value.empty() || value.front() == '{' || value.front() == '[') {
    return false;
  }
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(value, ec);
  if (ec) {
    return false;
  }
  if (v.is_number()) {
    const double d = v.to_number<double>(ec);
    return !ec && d == 1.0;
  }
  if (!v.is_string()) {
    return false;
  }
  static constexpr std::string_view kTrue[] = {"1", "on", "t", "true", "y", "yes"};
  const std::string_view text = v.get_string();
  return std::any_of(std::begin(kTrue), std::end(kTrue),
                     [&](std::string_view t) { return iequals(text, t); });
}

std::uint64_t first_message_hash(std::string_view body, const BodyLayout& layout) {
  constexpr std::size_t kMessages = 3;  // start_parts: system, tools, instructions, messages, input, prompt
  const std::optional<ByteSpan>& first =
      layout.start_parts[kMessages] ? layout.start_parts[kMessages] : layout.start_parts[kMessages + 1];
  if (!first || first->end > body.size() || first->begin >= first->end) {
    return 0;
  }
  const std::uint64_t hash = XXH3_64bits(body.data() + first->begin, first->end - first->begin);
  return hash == 0 ? 1 : hash;
}

bool offers_tools(std::string_view body, const BodyLayout& layout) {
  const std::optional<ByteSpan>& tools = layout.start_parts[1];
  if (!tools) {
    return false;
  }
  // An array with at least one element: anything but `[`, blanks and `]` inside it.
  const std::string_view v = body.substr(tools->begin, tools->end - tools->begin);
  return v.starts_with('[') && v.find_first_not_of(" \t\r\n[]") != std::string_view::npos;
}

}  // namespace warden::protocol
