// A deterministic stand-in for Qwen's BPE tokenizer: same text, same ids, in every process and build.
//
// Text is pre-tokenized like a GPT-style BPE (special markers, newlines, words with their leading space,
// digit groups, punctuation runs, whitespace runs); long pieces are cut into chunks so English-like text
// averages about 4 characters per token. Each piece's id is xxHash64 of its bytes mapped into the regular
// id range, so ids do not depend on any table and never on std::hash.
//
// Only generated text can be turned back into text exactly: generated tokens come from a fixed list of
// short words (see output_token), each of which tokenizes to itself, so a reply embedded in the next turn's
// history re-tokenizes to the very tokens that were generated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace warden::engine {

using TokenId = std::uint32_t;
using Tokens = std::vector<TokenId>;

// Qwen2/Qwen3 vocabulary layout: regular ids below 151643, specials above.
inline constexpr TokenId kVocabSize = 151936;
inline constexpr TokenId kEndOfText = 151643;   // <|endoftext|>
inline constexpr TokenId kImStart = 151644;     // <|im_start|>
inline constexpr TokenId kImEnd = 151645;       // <|im_end|>
inline constexpr TokenId kNewline = 198;        // "\n"
inline constexpr TokenId kDoubleNewline = 271;  // "\n\n"
// Hashed pieces land in [kFirstHashedId, kEndOfText).
inline constexpr TokenId kFirstHashedId = 1024;

// Appends the tokens of `text` to `out`. The markers <|im_start|>, <|im_end|> and <|endoftext|> written
// literally in the text become their special ids (as Hugging Face tokenizers do by default).
void tokenize_append(std::string_view text, Tokens& out);

// The tokens of `text`.
Tokens tokenize(std::string_view text);

// Number of tokens tokenize(text) would return, without hashing (cheap path for count_tokens endpoints
// and workload sizing).
std::size_t count_tokens(std::string_view text);

// Text of one token: exact for generated tokens (output vocabulary), newlines and special markers;
// other ids (hashed input pieces, which cannot be inverted) give an empty string.
std::string_view token_text(TokenId id);

// Concatenated token_text of every token.
std::string detokenize(std::span<const TokenId> tokens);

// Number of words in the output vocabulary.
std::size_t output_vocab_size();

// The token generated at position `index` of a reply, chosen by `random` (any 64-bit value, e.g. a hash
// of seed, request and index). Position 0 gives a word without a leading space ("Hello"), later positions
// give a word with one (" world"), so the reply text "Hello world ..." tokenizes back to the same ids.
TokenId output_token(std::uint64_t random, std::size_t index);

// xxHash64 of `bytes` with the tokenizer's fixed seed; exposed for tests and for other deterministic ids.
std::uint64_t stable_hash(std::string_view bytes, std::uint64_t seed = 0);

}  // namespace warden::engine
