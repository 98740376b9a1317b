//===- Json.cpp - A small strict JSON parser --------------------------------===//
//
// Recursive descent over the RFC 8259 grammar. Numbers keep both a double and,
// when written as an integer literal that fits, the exact int64 (shapes and
// offsets must not pass through a double).
//
//===----------------------------------------------------------------------===//
#include "kiln/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln {
namespace json {

Value Value::makeBool(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}

Value Value::makeNumber(double d, bool isInteger, int64_t i) {
  Value v;
  v.kind_ = Kind::Number;
  v.number_ = d;
  v.isInteger_ = isInteger;
  v.integer_ = i;
  return v;
}

Value Value::makeString(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.string_ = std::move(s);
  return v;
}

Value Value::makeArray(std::vector<Value> elements) {
  Value v;
  v.kind_ = Kind::Array;
  v.array_ = std::move(elements);
  return v;
}

Value Value::makeObject(std::vector<std::pair<std::string, Value>> members) {
  Value v;
  v.kind_ = Kind::Object;
  v.object_ = std::move(members);
  return v;
}

const Value *Value::find(const std::string &key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  for (const auto &member : object_)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *Value::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null: return "null";
  case Kind::Bool: return "a boolean";
  case Kind::Number: return "a number";
  case Kind::String: return "a string";
  case Kind::Array: return "an array";
  case Kind::Object: return "an object";
  }
  return "?";
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
public:
  explicit Parser(const std::string &text) : s(text) {}

  bool run(Value &out, std::string &error) {
    skipSpace();
    if (!parseValue(out, 0)) {
      error = message;
      return false;
    }
    skipSpace();
    if (pos != s.size()) {
      fail("unexpected bytes after the JSON value");
      error = message;
      return false;
    }
    return true;
  }

private:
  const std::string &s;
  size_t pos = 0;
  std::string message;

  bool fail(const std::string &what) {
    if (message.empty())
      message = "JSON error at byte " + std::to_string(pos) + ": " + what;
    return false;
  }

  void skipSpace() {
    while (pos < s.size() &&
           (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (s.compare(pos, n, word) != 0)
      return fail("invalid literal");
    pos += n;
    return true;
  }

  bool parseValue(Value &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos >= s.size())
      return fail("unexpected end of input");
    char c = s[pos];
    switch (c) {
    case 'n':
      if (!literal("null"))
        return false;
      out = Value();
      return true;
    case 't':
      if (!literal("true"))
        return false;
      out = Value::makeBool(true);
      return true;
    case 'f':
      if (!literal("false"))
        return false;
      out = Value::makeBool(false);
      return true;
    case '"': {
      std::string str;
      if (!parseString(str))
        return false;
      out = Value::makeString(std::move(str));
      return true;
    }
    case '[':
      return parseArray(out, depth);
    case '{':
      return parseObject(out, depth);
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      return fail(std::string("unexpected character '") + c + "'");
    }
  }

  bool parseArray(Value &out, int depth) {
    ++pos; // '['
    std::vector<Value> elements;
    skipSpace();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      out = Value::makeArray(std::move(elements));
      return true;
    }
    while (true) {
      skipSpace();
      Value element;
      if (!parseValue(element, depth + 1))
        return false;
      elements.push_back(std::move(element));
      skipSpace();
      if (pos >= s.size())
        return fail("unterminated array");
      if (s[pos] == ',') {
        ++pos;
        continue;
      }
      if (s[pos] == ']') {
        ++pos;
        break;
      }
      return fail("expected ',' or ']' in an array");
    }
    out = Value::makeArray(std::move(elements));
    return true;
  }

  bool parseObject(Value &out, int depth) {
    ++pos; // '{'
    std::vector<std::pair<std::string, Value>> members;
    skipSpace();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      out = Value::makeObject(std::move(members));
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= s.size() || s[pos] != '"')
        return fail("expected a string key in an object");
      std::string key;
      if (!parseString(key))
        return false;
      for (const auto &member : members)
        if (member.first == key)
          return fail("duplicate key \"" + key + "\"");
      skipSpace();
      if (pos >= s.size() || s[pos] != ':')
        return fail("expected ':' after an object key");
      ++pos;
      skipSpace();
      Value value;
      if (!parseValue(value, depth + 1))
        return false;
      members.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (pos >= s.size())
        return fail("unterminated object");
      if (s[pos] == ',') {
        ++pos;
        continue;
      }
      if (s[pos] == '}') {
        ++pos;
        break;
      }
      return fail("expected ',' or '}' in an object");
    }
    out = Value::makeObject(std::move(members));
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(uint32_t &out) {
    if (pos + 4 > s.size())
      return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= uint32_t(c - 'A' + 10);
      else
        return fail("invalid hex digit in a \\u escape");
    }
    return true;
  }

  // One UTF-8 sequence starting at pos, validated (no overlongs, no
  // surrogates, at most U+10FFFF), copied to out.
  bool utf8Sequence(std::string &out) {
    unsigned char c = (unsigned char)s[pos];
    int len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return fail("invalid UTF-8 in a string");
    }
    if (pos + len > s.size())
      return fail("truncated UTF-8 sequence");
    for (int i = 1; i < len; ++i) {
      unsigned char cc = (unsigned char)s[pos + i];
      if ((cc & 0xC0) != 0x80)
        return fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return fail("invalid UTF-8 in a string");
    out.append(s, pos, len);
    pos += len;
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    while (true) {
      if (pos >= s.size())
        return fail("unterminated string");
      unsigned char c = (unsigned char)s[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c < 0x20)
        return fail("control character in a string");
      if (c >= 0x80) {
        if (!utf8Sequence(out))
          return false;
        continue;
      }
      if (c != '\\') {
        out += char(c);
        ++pos;
        continue;
      }
      ++pos;
      if (pos >= s.size())
        return fail("unterminated escape");
      char e = s[pos++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo = 0;
          if (pos + 2 > s.size() || s[pos] != '\\' || s[pos + 1] != 'u')
            return fail("unpaired surrogate in a \\u escape");
          pos += 2;
          if (!hex4(lo))
            return false;
          if (lo < 0xDC00 || lo > 0xDFFF)
            return fail("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool parseNumber(Value &out) {
    size_t start = pos;
    bool integer = true;
    if (s[pos] == '-')
      ++pos;
    if (pos >= s.size())
      return fail("truncated number");
    if (s[pos] == '0') {
      ++pos;
    } else if (s[pos] >= '1' && s[pos] <= '9') {
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
    } else {
      return fail("invalid number");
    }
    if (pos < s.size() && s[pos] == '.') {
      integer = false;
      ++pos;
      if (pos >= s.size() || !(s[pos] >= '0' && s[pos] <= '9'))
        return fail("expected digits after '.'");
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      integer = false;
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (pos >= s.size() || !(s[pos] >= '0' && s[pos] <= '9'))
        return fail("expected digits in an exponent");
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
    }
    std::string text = s.substr(start, pos - start);
    double d = std::strtod(text.c_str(), nullptr);
    int64_t i = 0;
    if (integer) {
      errno = 0;
      long long ll = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE)
        integer = false;
      else
        i = ll;
    }
    out = Value::makeNumber(d, integer, i);
    return true;
  }
};

} // namespace

bool parse(const std::string &text, Value &out, std::string &error) {
  Parser parser(text);
  return parser.run(out, error);
}

std::string number(double v) {
  if (std::isnan(v) || std::isinf(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20) {
        static const char digits[] = "0123456789abcdef";
        out += "\\u00";
        out += digits[c >> 4];
        out += digits[c & 15];
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
  return out;
}

} // namespace json
} // namespace kiln
