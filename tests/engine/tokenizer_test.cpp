#include "engine/tokenizer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace warden::engine {
namespace {

// Pinned ids: if hashing, seeds or the pre-tokenizer change, prompts tokenize differently across builds
// and every cached prefix a warden observed becomes a miss. Update only on purpose.
TEST(Tokenizer, FixedIdsForFixedText) {
  const Tokens expected{142764, 101501, 134779, 76655, 198,   151644, 126187,
                        46549,  69529,  116603, 74125, 29889, 4298};
  EXPECT_EQ(tokenize("Hello, world!\n<|im_start|>user 42 internationalization"), expected);
}

TEST(Tokenizer, SpecialMarkersAndNewlines) {
  const Tokens t = tokenize("<|im_start|>user\nhi<|im_end|>\n\n<|endoftext|>");
  ASSERT_EQ(t.size(), 7U);
  EXPECT_EQ(t[0], kImStart);
  EXPECT_EQ(t[2], kNewline);
  EXPECT_EQ(t[4], kImEnd);
  EXPECT_EQ(t[5], kDoubleNewline);
  EXPECT_EQ(t[6], kEndOfText);
  EXPECT_EQ(t[1], tokenize("user")[0]);
  EXPECT_EQ(t[3], tokenize("hi")[0]);
  // Markers stay whole after a space or inside punctuation.
  EXPECT_EQ(tokenize("a <|im_end|>"), (Tokens{tokenize("a")[0], tokenize(" ")[0], kImEnd}));
  EXPECT_EQ(tokenize("a.<|im_end|>."),
            (Tokens{tokenize("a")[0], tokenize(".")[0], kImEnd, tokenize(".")[0]}));
  Tokens unfinished{tokenize("<|")[0]};
  tokenize_append("im_start", unfinished);
  EXPECT_EQ(tokenize("<|im_start"), unfinished);  // not a marker: ordinary pieces
  // Three newlines: one double, one single.
  EXPECT_EQ(tokenize("\n\n\n"), (Tokens{kDoubleNewline, kNewline}));
}

TEST(Tokenizer, LeadingSpaceBelongsToTheWord) {
  EXPECT_EQ(tokenize(" hello").size(), 1U);
  EXPECT_NE(tokenize(" hello"), tokenize("hello"));
  // "a  b": the extra space stands alone, the last one joins "b".
  const Tokens t = tokenize("a  b");
  ASSERT_EQ(t.size(), 3U);
  EXPECT_EQ(t[2], tokenize(" b")[0]);
  EXPECT_EQ(t[1], tokenize(" ")[0]);
}

TEST(Tokenizer, LongWordsAreCutLikeBpe) {
  EXPECT_EQ(count_tokens("internationalization"), 3U);  // 20 bytes, at most 7 per piece
  EXPECT_EQ(count_tokens(" the"), 1U);
  EXPECT_EQ(count_tokens("2026"), 4U);  // single digits, as Qwen
}

TEST(Tokenizer, AboutFourCharactersPerTokenOnEnglish) {
  const std::string text =
      "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
      "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, "
      "it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had "
      "everything before us, we had nothing before us, we were all going direct to Heaven, we were all going "
      "direct the other way - in short, the period was so far like the present period, that some of its "
      "noisiest authorities insisted on its being received, for good or for evil, in the superlative degree "
      "of comparison only.";
  const double ratio = static_cast<double>(text.size()) / static_cast<double>(count_tokens(text));
  EXPECT_GT(ratio, 3.5);
  EXPECT_LT(ratio, 4.6);
}

TEST(Tokenizer, CountMatchesTokenizeAndIdsStayInVocabulary) {
  std::uint64_t x = 12345;
  for (int round = 0; round < 200; ++round) {
    std::string s;
    const int len = round * 3;
    for (int i = 0; i < len; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      s.push_back(static_cast<char>(x >> 56U));  // arbitrary bytes, incl. NUL and invalid UTF-8
    }
    const Tokens t = tokenize(s);
    EXPECT_EQ(t.size(), count_tokens(s));
    for (TokenId id : t) {
      ASSERT_LT(id, kVocabSize);
    }
  }
}

TEST(Tokenizer, SameTextSameIdsAcrossCalls) {
  const std::string s = "The cache keeps hashes until the block is reused.";
  EXPECT_EQ(tokenize(s), tokenize(s));
  Tokens appended{7};
  tokenize_append(s, appended);
  EXPECT_EQ(Tokens(appended.begin() + 1, appended.end()), tokenize(s));
}

TEST(Tokenizer, GeneratedTokensRoundTrip) {
  ASSERT_GT(output_vocab_size(), 100U);
  std::uint64_t x = 99;
  for (int reply = 0; reply < 50; ++reply) {
    Tokens out;
    for (std::size_t i = 0; i < 300; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      out.push_back(output_token(x, i));
    }
    const std::string text = detokenize(out);
    EXPECT_FALSE(text.empty());
    EXPECT_NE(text[0], ' ');  // a reply starts without a leading space
    EXPECT_EQ(tokenize(text), out) << text;
  }
}

TEST(Tokenizer, TokenTextOfKnownIds) {
  EXPECT_EQ(token_text(kImStart), "<|im_start|>");
  EXPECT_EQ(token_text(kNewline), "\n");
  EXPECT_EQ(token_text(tokenize(" the")[0]), " the");  // output vocabulary word
  EXPECT_EQ(token_text(tokenize("zyxwv")[0]), "");     // hashed input piece: not invertible
}

}  // namespace
}  // namespace warden::engine
