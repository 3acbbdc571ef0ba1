#pragma once
// Request inspection: the routing facts of one inference request, read from its headers and JSON body
// in one pass of the validating JSON scanner (json_scan.hpp; as strict as Boost.JSON's parser, checked
// against it by a differential fuzz test) without building a DOM or copying the body; only the few strings it
// keeps (model, keys) and the escaped text it hashes are decoded. About 50-65 us CPU for a 200 KB body.
//
//   std::vector<HeaderField> h = {{"X-Claude-Code-Session-Id", "..."}};
//   Result<RequestInfo> r = inspect_request(ApiKind::anthropic_messages, HeaderLookup{h}, body);
//   if (!r) -> 400 in the client's format (error_body.hpp), reason r.error() (Errc).
//
// Session key, first match wins (RequestInfo::session_source records which):
//   1 header X-Warden-Session            (explicit, any client)
//   2 header X-Claude-Code-Session-Id    (Claude Code)
//   3 header session-id, then session_id (Codex CLI; older builds use the underscore)
//   4 body prompt_cache_key              (Codex, OpenAI's documented cache-routing hint)
//   5 body metadata.user_id              (Claude Code: a JSON string {"device_id":..,"account_uuid":..,
//                                         "session_id":"<uuid>"}, or the legacy form
//                                         "user_<hex>_account_<uuid or empty>_session_<uuid>"; the
//                                         session uuid is the key; a user_id of neither form is ignored)
//   6 conversation fingerprint           (see below)
// Header names are matched case-insensitively; values are trimmed of spaces/tabs; empty values are
// skipped (fall through to the next source). A key longer than 256 bytes is replaced by
// "h:<16 hex of xxh3-64 of it>" so the session table never stores huge keys.
// Keys carry no source prefix, so the same uuid from the header and from the body is the same session.
//
// Conversation fingerprint (source 6): key "fp:<16 hex>", a 64-bit XXH3 over the *start* of the prompt,
// made of these top-level members when present (whatever the API, since each API uses its own subset):
//   - "system" (Anthropic), "tools", "instructions" (Responses): the whole value;
//   - "messages" (chat, Anthropic) and "input" when it is an array (Responses): the elements up to and
//     including the first one with "role": "user" (Codex sends developer/environment items first);
//   - "prompt" (completions) and "input" when it is a string: the first 4096 bytes of string content
//     (token-id arrays: the first 1024 ids).
// Values are hashed structurally (object keys, strings, numbers, literals and nesting, each tagged and
// length-delimited), so JSON whitespace and escape spelling do not matter, and every "cache_control"
// member is skipped (clients move cache breakpoints between turns). Member order inside a value does
// matter (a client serialises its history the same way every turn). Each part is hashed on its own and
// the parts combined in a fixed order, so the order of the top-level members does not matter.
// Hence identical on every turn of one conversation (later turns only append messages) and different
// between conversations that differ in system prompt, tools or first user message.
// Limits: two conversations with the same system prompt, tools and first user message collide (they
// share a home replica, which is harmless for cache locality); a client that edits or compacts its history
// (e.g. Claude Code's /compact) or changes its tools mid-conversation starts a new fingerprint; for
// completions, prompts that share their first 4096 bytes collide, and a prompt shorter than that changes
// its fingerprint every turn until it grows past 4096 bytes. If none of the parts is present the
// source is SessionSource::none and the key is empty.
//
// Client pin: header X-Warden-Replica, else X-data-parallel-rank (vLLM's own header, which a client may
// send). Decimal integer >= 0 with optional surrounding spaces; anything else is PinState::invalid (the
// gateway answers 400, as for a pin outside 0..N-1 — see ClientPin::in_range).
//
// Validation: malformed JSON (incl. invalid UTF-8, truncation, trailing bytes) -> Errc::malformed_json;
// top level not an object -> body_not_object; nesting deeper than max_depth -> too_deep;
// "model" absent or "" -> missing_model; "model" not a string -> model_not_string.
// Duplicate top-level members: the last one wins (as in vLLM's Python JSON parsing).

#include "protocol/api.hpp"
#include "protocol/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace warden::protocol {

struct HeaderField {
  std::string_view name;
  std::string_view value;
};

/// Non-owning view of request headers, built from a span of fields (case-insensitive linear search) or
/// from any callable `std::optional<std::string_view>(std::string_view name)` which must itself match
/// names case-insensitively (e.g. a lambda over Beast's http::fields::find). The source must outlive it.
class HeaderLookup {
 public:
  HeaderLookup() = default;
  HeaderLookup(std::span<const HeaderField> fields) noexcept;  // NOLINT: implicit on purpose
  template <class F>
  requires std::is_invocable_r_v < std::optional<std::string_view>,
  const F&,
      std::string_view > HeaderLookup(const F& f) noexcept  // NOLINT: implicit on purpose
      : ctx_(&f),
  fn_([](const void* c, std::string_view n) -> std::optional<std::string_view> {
    return (*static_cast<const F*>(c))(n);
  }) {}

  /// Value of the first header called `name` (any case), or nullopt.
  std::optional<std::string_view> find(std::string_view name) const;

 private:
  std::span<const HeaderField> fields_;
  const void* ctx_ = nullptr;
  std::optional<std::string_view> (*fn_)(const void*, std::string_view) = nullptr;
};

enum class SessionSource {
  warden_header,       // X-Warden-Session
  claude_code_header,  // X-Claude-Code-Session-Id
  codex_header,        // session-id / session_id
  prompt_cache_key,    // body prompt_cache_key
  metadata_user_id,    // body metadata.user_id (either form)
  fingerprint,         // hash of the prompt start
  none,                // nothing to go on (empty prompt)
};
/// "warden_header", "claude_code_header", ... (stable names for logs, stats and the admin API).
std::string_view to_string(SessionSource s) noexcept;

/// Which thread of its session a request belongs to (thread_key.cpp). An agent is a tree of threads: the
/// main thread and the subagents it starts, each with its own history (and its own prompt start).
enum class ThreadSource {
  main,               // no thread header: the session's main thread
  warden_header,      // X-Warden-Thread (explicit, any client)
  claude_code_agent,  // X-Claude-Code-Agent-Id (a Claude Code subagent)
  codex_thread,       // thread-id / thread_id different from the session key (a Codex sub-agent)
};
/// "main", "warden_header", "claude_code_agent", "codex_thread".
std::string_view to_string(ThreadSource s) noexcept;

enum class PinState { absent, valid, invalid };
enum class PinSource { none, warden_replica, data_parallel_rank };

struct ClientPin {
  PinState state = PinState::absent;
  PinSource source = PinSource::none;
  std::int64_t replica = -1;  // meaningful only when state == valid

  /// Valid and within 0..replicas-1. The gateway returns 400 when state != absent && !in_range(N).
  bool in_range(std::int64_t replicas) const noexcept {
    return state == PinState::valid && replica >= 0 && replica < replicas;
  }
};

/// Parses one pin header value: absent (nullopt) / valid / invalid.
ClientPin parse_pin(std::optional<std::string_view> value, PinSource source) noexcept;

/// A byte range [begin, end) of a body.
struct ByteSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Where the members a rewrite edits sit in a body, found by the same pass that validates it, so that
/// rewrite_request() needs no second scan of a 200 KB prompt. Keys are compared unescaped.
struct BodyLayout {
  std::vector<ByteSpan> model;             // the value of every top-level "model" member
  std::optional<ByteSpan> stream;          // the value of the last top-level "stream"
  std::optional<ByteSpan> stream_options;  // the value of the last top-level "stream_options"
  // Inside that value, when it is an object:
  std::optional<ByteSpan> include_usage;    // the value of its last "include_usage"
  std::size_t stream_options_members = 0;   // its member count
  std::size_t stream_options_last_end = 0;  // the end of its last member's value
  std::size_t top_members = 0;              // members of the top-level object
  std::size_t last_member_end = 0;          // the end of the last top-level member's value
  // The value of every top-level "max_tokens", "max_completion_tokens" and "max_output_tokens".
  std::vector<ByteSpan> max_tokens;
  // Claude Code's billing block: when the last top-level "system" is an array whose first element is
  // exactly {"type":"text","text":"x-anthropic-billing-header: ..."} (those two members, any order), the
  // bytes to drop: that element up to the start of the next one (its comma included), or the element
  // alone when it is the only one.
  std::optional<ByteSpan> billing_block;
  // The prompt's start, in the order a chat template renders it (prompt_start()): the values of the last
  // top-level "system", "tools" and "instructions", the first element of "messages" and of an "input"
  // array, and a string "input" or "prompt" (token-id arrays too).
  std::array<std::optional<ByteSpan>, 6> start_parts;
  // The last element of the last top-level "messages" array and of the last "input" array (a turn's newest
  // message or item: protocol::starts_task() reads it alone).
  std::optional<ByteSpan> last_message;
  std::optional<ByteSpan> last_input_item;
};

struct RequestInfo {
  ApiKind api = ApiKind::openai_chat;
  std::string model;
  bool stream = false;                     // top-level "stream": true (or what vLLM reads as true: lax_true)
  bool include_usage = false;              // stream_options.include_usage: true (as the client asked)
  std::optional<std::int64_t> max_tokens;  // max_tokens, max_completion_tokens or max_output_tokens

  std::string session_key;  // see the header comment; empty iff session_source == none
  SessionSource session_source = SessionSource::none;
  std::uint64_t session_hash = 0;  // XXH3-64 of session_key (0 if none): a compact table key

  // The thread (see ThreadSource). thread_id is empty for the main thread, whose thread_hash is the
  // session_hash; another thread's hash is XXH3-64 of the session key and the thread id together.
  std::string thread_id;
  ThreadSource thread_source = ThreadSource::main;
  std::uint64_t thread_hash = 0;
  // The parent thread a client names (X-Claude-Code-Parent-Agent-Id, x-codex-parent-thread-id): its hash
  // as thread_hash would be (the session_hash for the main thread); 0 when none is named.
  std::uint64_t parent_hash = 0;
  // The request offers tools (a non-empty top-level "tools"): an agent's turn. A request of a session whose
  // turns offer tools that offers none itself (a title, a summary of the session, a quota probe) is a side
  // request: it belongs to no thread.
  bool offers_tools = false;

  // XXH3-64 of the first message's bytes as sent (the first element of "messages", else of "input", or a
  // string "input"), 0 when there is none: it stays the same while a conversation grows.
  std::uint64_t first_message_hash = 0;

  ClientPin pin;

  std::uint64_t prompt_bytes = 0;  // bytes of the strings and keys in the prompt fields, as sent (escaped)
  std::uint64_t prompt_tokens_estimate = 0;  // ~ prompt_bytes / 4, at least 1 if any text

  BodyLayout layout;  // for rewrite_request()
};

struct InspectOptions {
  std::size_t max_depth = 128;  // JSON nesting limit (tool schemas nest; hostile bodies nest more)
};

/// Whether a JSON value (its text) is one vLLM's lax parser (pydantic) reads as true for a boolean field
/// such as "stream": `true`, a number equal to 1, or a string "1", "on", "t", "true", "y" or "yes" in any
/// case. The warden reads "stream" so, as the engine will.
[[nodiscard]] bool lax_true(std::string_view value);

/// Inspects one request. Never throws on bad input; see the header comment for errors.
Result<RequestInfo> inspect_request(ApiKind api, const HeaderLookup& headers, std::string_view body,
                                    const InspectOptions& options = {});

/// Validates a body as inspect_request() does and returns only its layout (Errc::body_not_object for
/// JSON that is not an object). For callers that rewrite without inspecting.
Result<BodyLayout> scan_layout(std::string_view body, const InspectOptions& options = {});

/// The text Claude Code's billing block starts with.
inline constexpr std::string_view kBillingPrefix = "x-anthropic-billing-header:";

/// A digest of the prompt's start, to see whether a client keeps it from one turn to the next: XXH3-64 of
/// the raw bytes (as sent, JSON included) of layout.start_parts in order, without the billing block when
/// `drop_billing`, up to kPromptStartBytes in all. `bytes` is how many were hashed (less than the budget
/// only for a short prompt): digests of different lengths are not comparable (a short prompt grows).
/// `head_hash` / `head_bytes` are the same digest over "system", "tools" and "instructions" alone (the part
/// of the start a compaction keeps, when it replaces the history by a summary).
struct PromptStart {
  std::uint64_t hash = 0;
  std::size_t bytes = 0;
  std::uint64_t head_hash = 0;
  std::size_t head_bytes = 0;
};
inline constexpr std::size_t kPromptStartBytes = 4096;
PromptStart prompt_start(std::string_view body, const BodyLayout& layout, bool drop_billing);

/// RequestInfo::first_message_hash of a body with this layout.
std::uint64_t first_message_hash(std::string_view body, const BodyLayout& layout);

/// Whether the body's top-level "tools" (layout.start_parts[1]) is an array with at least one element.
bool offers_tools(std::string_view body, const BodyLayout& layout);

/// Extracts the session uuid from a metadata.user_id value (either Claude Code form), or nullopt.
std::optional<std::string> session_from_user_id(std::string_view user_id);

/// A key as the session table keeps it: trimmed, nullopt when empty, "h:<16 hex>" of it past 256 bytes.
std::optional<std::string> normalize_key(std::string_view raw);

/// Fills the thread fields of `info` (thread_key.cpp) from its headers, once the session key is known.
void read_thread(const HeaderLookup& headers, RequestInfo& info);

}  // namespace warden::protocol
