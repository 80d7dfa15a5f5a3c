#include "support/sample_corpus.h"

#include <array>
#include <string_view>

#include "util/utf8.h"

namespace compactor::tokens {
namespace {

constexpr std::string_view kWords[] = {
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "you",
    "that",
    "he",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "I",
    "his",
    "they",
    "be",
    "at",
    "one",
    "have",
    "this",
    "from",
    "or",
    "had",
    "by",
    "not",
    "word",
    "but",
    "what",
    "some",
    "we",
    "can",
    "out",
    "other",
    "were",
    "all",
    "there",
    "when",
    "up",
    "use",
    "your",
    "how",
    "said",
    "an",
    "each",
    "she",
    "which",
    "do",
    "their",
    "time",
    "if",
    "will",
    "way",
    "about",
    "many",
    "then",
    "them",
    "write",
    "would",
    "like",
    "so",
    "these",
    "her",
    "long",
    "make",
    "thing",
    "see",
    "him",
    "two",
    "has",
    "look",
    "more",
    "day",
    "could",
    "go",
    "come",
    "did",
    "number",
    "sound",
    "no",
    "most",
    "people",
    "my",
    "over",
    "know",
    "water",
    "than",
    "call",
    "first",
    "who",
    "may",
    "down",
    "side",
    "been",
    "now",
    "find",
    "compaction",
    "session",
    "summary",
    "context",
    "tokenizer",
    "assistant",
    "repository",
    "function",
    "implementation",
    "performance",
    "configuration",
    "approximately",
    "nevertheless",
    "understanding",
    "internationalization",
    "file",
    "error",
    "output",
    "result",
    "message",
    "model",
    "user",
    "tool",
    "branch",
    "commit",
    "don't",
    "it's",
    "we're",
    "they've",
    "I'm",
    "you'll",
    "he'd",
    "can't",
    "won't",
    "O'Brien",
    "GPU",
    "API",
    "JSON",
    "HTTP",
    "README",
    "iPhone",
    "McDonald",
    "naïve",
    "café",
    "résumé",
    "Zürich",
    "São",
    "Paulo",
    "façade",
    "coöperate",
    "Ångström",
    "straße",
    "ﬁnal",
};

constexpr std::string_view kIdentParts[] = {
    "get",     "set",   "value", "count", "token", "index", "buffer", "size",    "data",
    "node",    "parse", "load",  "file",  "path",  "name",  "entry",  "session", "message",
    "id",      "len",   "str",   "json",  "ctx",   "state", "result", "error",   "config",
    "options", "cache", "key",   "make",  "build", "read",  "write",  "is",      "has",
    "to",      "from",  "max",   "min",   "num",
};

constexpr std::string_view kCjk =
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可"
    "她里后"
    "小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从"
    "动两长"
    "知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几"
    "很业最"
    "间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太"
    "水万市"
    "眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放"
    "做系计"
    "或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请"
    "交爱让"
    "認識する日本語のテキストですひらがなカタカナ漢字東京大阪한국어텍스트입니다안녕하세요감사합니"
    "다";

constexpr std::string_view kCjkPunct[] = {"。", "、", "「", "」", "，", "！",
                                          "？", "：", "（", "）", "　", "\n"};

constexpr uint32_t kEmoji[] = {0x1F600, 0x1F602, 0x1F60D, 0x1F44D, 0x1F680, 0x2764,  0x1F525,
                               0x2728,  0x1F389, 0x1F4A1, 0x1F914, 0x1F64F, 0x1F4BB, 0x1F916,
                               0x2705,  0x274C,  0x26A0,  0x1F9EA, 0x1F30D, 0x1F6A8};

// Characters that stress the split patterns: marks, Lt, Lm, Lo, No/Nl,
// U+017F (folds to s), every White_Space character, format characters,
// letters new in Unicode 15/16 (and 17, unassigned for the reference).
constexpr uint32_t kStress[] = {
    0x0301,  0x0903,  0x20DD,  0xFE0F,  0x200D,  0x02B0, 0x01C5,  0x1F88,   0x00AA,  0x05D0,
    0x0627,  0x4E00,  0x017F,  0x212A,  0x0130,  0x0131, 0x00DF,  0x00BD,   0x2163,  0x0663,
    0xFF11,  0x0085,  0x00A0,  0x1680,  0x180E,  0x2000, 0x200A,  0x200B,   0x2028,  0x2029,
    0x202F,  0x205F,  0x3000,  0xFEFF,  0x000B,  0x000C, 0x001C,  0x11380,  0x10D5D, 0x1E4D0,
    0x31350, 0x2EBF0, 0x10940, 0x16D40, 0x1E6C0, 0x0345, 0x1D7CE, 0x10FFFD, 0xE000,  0xFFFD,
    0x00AD,  0x0600,  0x2060,  '\'',    's',     'S',    't',     'T',      'r',     'R',
    'e',     'E',     'v',     'V',     'm',     'M',    'l',     'L',      'd',     'D',
    '/',     '\r',    '\n',    ' ',     ' ',     ' ',    '\t',    '1',      '2',     'a',
    'A',     '.',     '!',     '-',     '_',     '"',    '(',     '{'};

void AppendUpTo(std::string* out, std::string_view piece, size_t limit) {
  if (out->size() + piece.size() <= limit) out->append(piece);
}

std::string_view PickWord(SampleRng& rng) {
  // Rough Zipf: small indices far more often.
  size_t n = std::size(kWords);
  size_t a = rng.Below(n), b = rng.Below(n);
  return kWords[rng.Chance(60) ? std::min(a, b) : a];
}

std::string Ident(SampleRng& rng) {
  std::string s;
  int parts = 1 + static_cast<int>(rng.Below(3));
  int style = static_cast<int>(rng.Below(3));
  for (int i = 0; i < parts; ++i) {
    std::string p(kIdentParts[rng.Below(std::size(kIdentParts))]);
    if (i > 0 && style == 0) p[0] = static_cast<char>(p[0] - 32);
    if (i > 0 && style == 1) s += '_';
    if (style == 2) {
      for (char& c : p) c = static_cast<char>(c - 32);
      if (i > 0) s += '_';
    }
    s += p;
  }
  return s;
}

}  // namespace

std::string SampleEnglish(SampleRng& rng, size_t bytes) {
  std::string out;
  while (out.size() < bytes) {
    int words = 5 + static_cast<int>(rng.Below(20));
    std::string sentence;
    for (int i = 0; i < words; ++i) {
      std::string w(PickWord(rng));
      if (i == 0 && w[0] >= 'a' && w[0] <= 'z') w[0] = static_cast<char>(w[0] - 32);
      if (rng.Chance(3)) w = std::to_string(rng.Below(100000));
      if (rng.Chance(2)) {
        w.insert(w.begin(), '"');
        w.push_back('"');
      }
      if (rng.Chance(2)) w += "'s";
      if (i > 0) sentence += rng.Chance(8) ? ", " : " ";
      sentence += w;
    }
    sentence += rng.Chance(85) ? ". " : (rng.Chance(50) ? "? " : "! ");
    if (rng.Chance(12)) sentence += "\n\n";
    AppendUpTo(&out, sentence, bytes);
    if (sentence.size() > bytes) break;
    if (out.size() + 40 > bytes) break;
  }
  return out;
}

std::string SampleCode(SampleRng& rng, size_t bytes) {
  std::string out;
  int depth = 0;
  while (out.size() + 120 < bytes) {
    std::string line(static_cast<size_t>(depth) * (rng.Chance(50) ? 2 : 4), ' ');
    switch (rng.Below(9)) {
      case 0:
        line += "if (" + Ident(rng) + " != nullptr && " + Ident(rng) + ".size() > " +
                std::to_string(rng.Below(1000)) + ") {";
        ++depth;
        break;
      case 1:
        line += "for (size_t i = 0; i < " + Ident(rng) + ".size(); ++i) {";
        ++depth;
        break;
      case 2:
        line += "const auto " + Ident(rng) + " = " + Ident(rng) + "(" + Ident(rng) + ", \"" +
                std::string(PickWord(rng)) + "/" + Ident(rng) + ".json\");";
        break;
      case 3:
        line += "// " + std::string(PickWord(rng)) + " " + std::string(PickWord(rng)) + " " +
                std::string(PickWord(rng)) + ": TODO(" + Ident(rng) + ")";
        break;
      case 4:
        line += "def " + Ident(rng) + "(self, " + Ident(rng) + "=None, **kwargs):";
        break;
      case 5:
        line += "return " + Ident(rng) + "[" + std::to_string(rng.Below(64)) + "] + 0x" +
                std::to_string(rng.Below(0xFFFF)) + ";";
        break;
      case 6:
        if (depth > 0) {
          --depth;
          line = std::string(static_cast<size_t>(depth) * 2, ' ') + "}";
        }
        break;
      case 7:
        line += "$ git diff --stat src/" + Ident(rng) + "/" + Ident(rng) + ".cc | tail -n 3";
        break;
      default:
        line += Ident(rng) + " := " + Ident(rng) + "." + Ident(rng) + "(ctx, &" + Ident(rng) +
                ")\t// => " + std::to_string(rng.Below(1u << 20));
        break;
    }
    out += line;
    out += rng.Chance(3) ? "\r\n" : "\n";
    if (rng.Chance(8)) out += "\n";
  }
  return out;
}

std::string SampleJson(SampleRng& rng, size_t bytes) {
  std::string out = "{\n";
  while (out.size() + 200 < bytes) {
    out += "  \"" + Ident(rng) + "\": ";
    switch (rng.Below(5)) {
      case 0:
        out += std::to_string(rng.Below(1000000)) + "." + std::to_string(rng.Below(100));
        break;
      case 1:
        out += "\"" + std::string(PickWord(rng)) + "\\n" + std::string(PickWord(rng)) +
               " \\\"quoted\\\" \\u00e9\\t" + std::string(PickWord(rng)) + "\"";
        break;
      case 2:
        out += "[" + std::to_string(rng.Below(10)) + ", true, null, \"" + Ident(rng) + "\"]";
        break;
      case 3:
        out += "{\"type\":\"text\",\"text\":\"" + std::string(PickWord(rng)) + " " +
               std::string(PickWord(rng)) + "\",\"id\":\"toolu_" + std::to_string(rng.Next()) +
               "\"}";
        break;
      default:
        out += rng.Chance(50) ? "false" : "\"2026-11-23T05:57:25.123Z\"";
        break;
    }
    out += ",\n";
  }
  out += "  \"end\": true\n}\n";
  return out;
}

std::string SampleCjk(SampleRng& rng, size_t bytes) {
  // Decode kCjk into code points once.
  static const std::vector<std::string> kChars = [] {
    std::vector<std::string> v;
    for (size_t i = 0; i < kCjk.size();) {
      size_t len = (static_cast<uint8_t>(kCjk[i]) >= 0xF0) ? 4 : 3;
      v.emplace_back(kCjk.substr(i, len));
      i += len;
    }
    return v;
  }();
  std::string out;
  while (out.size() + 8 < bytes) {
    size_t run = 2 + rng.Below(30);
    for (size_t i = 0; i < run && out.size() + 8 < bytes; ++i) {
      out += kChars[rng.Below(kChars.size())];
    }
    out += kCjkPunct[rng.Below(std::size(kCjkPunct))];
    if (rng.Chance(5)) out += " GPT-4o " + std::to_string(rng.Below(2030)) + "年";
  }
  return out;
}

std::string SampleEmoji(SampleRng& rng, size_t bytes) {
  std::string out;
  while (out.size() + 40 < bytes) {
    switch (rng.Below(6)) {
      case 0:
        internal::AppendUtf8(out, kEmoji[rng.Below(std::size(kEmoji))]);
        break;
      case 1:  // ZWJ family with skin tone
        internal::AppendUtf8(out, 0x1F468);
        internal::AppendUtf8(out, 0x1F3FD);
        internal::AppendUtf8(out, 0x200D);
        internal::AppendUtf8(out, 0x1F4BB);
        break;
      case 2:  // flag
        internal::AppendUtf8(out, 0x1F1EF);
        internal::AppendUtf8(out, 0x1F1F5);
        break;
      case 3:  // keycap and VS16
        out += "1";
        internal::AppendUtf8(out, 0xFE0F);
        internal::AppendUtf8(out, 0x20E3);
        internal::AppendUtf8(out, 0x2764);
        internal::AppendUtf8(out, 0xFE0F);
        break;
      case 4:
        out += ' ';
        out += PickWord(rng);
        out += ' ';
        break;
      default:
        out += rng.Chance(50) ? "!" : "\n";
        break;
    }
  }
  return out;
}

std::string SampleWhitespace(SampleRng& rng, size_t bytes) {
  static constexpr uint32_t kSpaces[] = {' ',    ' ',    ' ',    '\t',   '\n',   '\r',
                                         0x0B,   0x0C,   0x85,   0xA0,   0x1680, 0x2003,
                                         0x2028, 0x2029, 0x202F, 0x3000, 0x205F};
  std::string out;
  while (out.size() + 80 < bytes) {
    size_t run = rng.Chance(70) ? 1 + rng.Below(4) : 1 + rng.Below(40);
    for (size_t i = 0; i < run; ++i) {
      internal::AppendUtf8(out,
                           kSpaces[rng.Chance(60) ? rng.Below(6) : rng.Below(std::size(kSpaces))]);
    }
    if (rng.Chance(10)) out += "\r\n";
    switch (rng.Below(4)) {
      case 0:
        out += PickWord(rng);
        break;
      case 1:
        out += std::to_string(rng.Below(99999));
        break;
      case 2:
        out += rng.Chance(50) ? "//" : "!?";
        break;
      default:
        out += "x";
        break;
    }
  }
  if (rng.Chance(50)) out += "  \n ";
  return out;
}

std::string SampleUnicode(SampleRng& rng, size_t bytes) {
  std::string out;
  while (out.size() + 8 < bytes) {
    uint32_t cp;
    if (rng.Chance(55)) {
      cp = kStress[rng.Below(std::size(kStress))];
    } else if (rng.Chance(50)) {
      cp = static_cast<uint32_t>(rng.Below(0x3000));  // dense scripts
    } else {
      do {
        cp = static_cast<uint32_t>(rng.Below(0x110000));
      } while (cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (cp == 0) cp = 'x';
    internal::AppendUtf8(out, cp);
  }
  return out;
}

std::string SampleInvalidUtf8(SampleRng& rng, size_t bytes) {
  static constexpr std::string_view kBad[] = {"\x80",
                                              "\xBF",
                                              "\xC0\xAF",
                                              "\xC3",
                                              "\xE2\x82",
                                              "\xED\xA0\x80",
                                              "\xF0\x9F\x98",
                                              "\xF5\x80",
                                              "\xFF",
                                              "\xFE\xFE",
                                              "\xF4\x90\x80\x80",
                                              "\xE0\x80\x80",
                                              "\xC2",
                                              "\xF0\x80\x80\x80",
                                              "\xE1\x80\xE1\x80"};
  std::string out;
  while (out.size() + 16 < bytes) {
    if (rng.Chance(30)) {
      out += kBad[rng.Below(std::size(kBad))];
    } else if (rng.Chance(30)) {
      internal::AppendUtf8(out, kStress[rng.Below(std::size(kStress))]);
    } else {
      out += PickWord(rng);
      out += ' ';
    }
  }
  return out;
}

std::vector<SampleDoc> SyntheticCorpus(uint64_t seed) {
  SampleRng rng(seed);
  std::vector<SampleDoc> docs;
  auto add = [&](std::string kind, std::string text) {
    docs.push_back({std::move(kind), std::move(text)});
  };
  for (int i = 0; i < 40; ++i) add("english", SampleEnglish(rng, 500 + rng.Below(12000)));
  for (int i = 0; i < 30; ++i) add("code", SampleCode(rng, 500 + rng.Below(12000)));
  for (int i = 0; i < 15; ++i) add("json", SampleJson(rng, 500 + rng.Below(12000)));
  for (int i = 0; i < 20; ++i) add("cjk", SampleCjk(rng, 200 + rng.Below(12000)));
  for (int i = 0; i < 10; ++i) add("emoji", SampleEmoji(rng, 200 + rng.Below(4000)));
  for (int i = 0; i < 25; ++i) add("whitespace", SampleWhitespace(rng, 100 + rng.Below(4000)));
  for (int i = 0; i < 60; ++i) add("unicode", SampleUnicode(rng, 10 + rng.Below(3000)));
  for (int i = 0; i < 20; ++i) add("invalid", SampleInvalidUtf8(rng, 10 + rng.Below(3000)));

  // Very long words: one piece of thousands of bytes each.
  add("long", std::string(5000, 'a'));
  add("long", std::string(3000, 'A'));
  add("long", std::string(4000, '9'));
  add("long", std::string(3000, '='));
  add("long", std::string(2000, ' ') + "x");
  add("long", std::string(1500, '\n'));
  add("long", std::string(2000, ' '));
  std::string s;
  for (int i = 0; i < 1500; ++i) s += "Ab";
  add("long", s);
  s.clear();
  for (int i = 0; i < 4000; ++i) s += static_cast<char>('a' + rng.Below(26));
  add("long", s);
  s.clear();
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 8000; ++i) s += kB64[rng.Below(64)];
  add("long", s);
  s.clear();
  for (int i = 0; i < 3000; ++i)
    internal::AppendUtf8(s, 0x4E00 + static_cast<uint32_t>(rng.Below(0x5000)));
  add("long", s);
  s = "internationalization";
  for (int i = 0; i < 200; ++i) s += "ization";
  add("long", s);
  s.clear();
  for (int i = 0; i < 2000; ++i) s += "-_";
  add("long", s);

  // Hand-written edge cases.
  // The first case is two joined literals, not a missing comma.
  for (std::string_view t : {
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
           "don't DON'T Don'T it's IT'S we're WE'RE they've THEY'VE I'm I'M you'll YOU'LL he'd "
           "HE'D",
           "it'\xC5\xBF hello'\xC5\xBF HELLO'\xC5\xBF 's 'S 'll 'x '\xC5\xBF",
           "a \n",
           "a  ",
           " \n ",
           "\r\n\r\n",
           "x\n\n\n",
           "x   ",
           "  ",
           " ",
           "\n",
           "'",
           "''s",
           "word\xEF\xBB\xBF\xEF\xBB\xBF next\xEF\xBB\xBF x",
           "<|endoftext|> <|endofprompt|> <|fim_prefix|>",
           "HTTPServer XMLHttpRequest iOS macOS ÀÉÎ àéî ǅungla",
           "e\xCC\x81te\xCC\x81 A\xCC\x8A \xCC\x81"
           "abc",
           "path/to/file.cc\n// comment\n/usr/bin/env\r\n/\n/",
           "1234567890 ١٢٣٤ ½¾ ⅫⅩ 1,000,000.00",
           "\t\tindent\n\t\t\n    four\n",
           "a\xC2\x85"
           "b !\xC2\x85 x\xC2\x85\xC2\x85y",
       }) {
    add("edge", std::string(t));
  }
  return docs;
}

std::string BenchMixed(size_t bytes) {
  SampleRng rng(20261123);
  std::string out;
  while (out.size() < bytes) {
    size_t block = 4096 + rng.Below(12288);
    size_t r = rng.Below(100);
    if (r < 40) {
      out += SampleEnglish(rng, block);
    } else if (r < 75) {
      out += SampleCode(rng, block);
    } else if (r < 85) {
      out += SampleJson(rng, block);
    } else {
      out += SampleCjk(rng, block);
    }
    out += '\n';
  }
  return out;
}

std::string BenchCjk(size_t bytes) {
  SampleRng rng(7);
  std::string out;
  while (out.size() < bytes) out += SampleCjk(rng, 8192);
  return out;
}

std::string BenchCode(size_t bytes) {
  SampleRng rng(11);
  std::string out;
  while (out.size() < bytes) out += SampleCode(rng, 8192);
  return out;
}

}  // namespace compactor::tokens
