//===- Json.h - A small strict JSON parser and writer helpers ---*- C++ -*-===//
//
// The runtime reads the artifact header with this parser so that it needs no
// JSON library. It is strict (RFC 8259): no comments, no trailing commas, no
// duplicate object keys, no bytes after the value, valid UTF-8 in strings,
// and a nesting limit, so a damaged header fails with a message instead of
// being half-understood.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_JSON_H
#define KILN_RUNTIME_JSON_H

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace json {

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Value() = default;
  static Value makeBool(bool b);
  static Value makeNumber(double d, bool isInteger, int64_t i);
  static Value makeString(std::string s);
  static Value makeArray(std::vector<Value> elements);
  static Value makeObject(std::vector<std::pair<std::string, Value>> members);

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  /// A number written without fraction or exponent that fits in int64.
  bool isInteger() const { return kind_ == Kind::Number && isInteger_; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool getBool() const { return bool_; }
  double getNumber() const { return number_; }
  int64_t getInteger() const { return integer_; }
  const std::string &getString() const { return string_; }
  const std::vector<Value> &getArray() const { return array_; }
  const std::vector<std::pair<std::string, Value>> &getObject() const {
    return object_;
  }
  /// The member named `key` of an object, or null if absent (or not an
  /// object).
  const Value *find(const std::string &key) const;

  static const char *kindName(Kind kind);

private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool isInteger_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  std::string string_;
  std::vector<Value> array_;
  std::vector<std::pair<std::string, Value>> object_;
};

/// Parses `text` as one JSON value. On failure returns false and sets
/// `error` to a message with the byte offset.
bool parse(const std::string &text, Value &out, std::string &error);

/// `s` as a JSON string literal (quotes and escapes included).
std::string quote(const std::string &s);

/// `v` as a JSON number with 9 significant digits ("%.9g"); `null` when it
/// is not finite (JSON has no NaN or infinity).
std::string number(double v);

} // namespace json
} // namespace kiln

#endif // KILN_RUNTIME_JSON_H
