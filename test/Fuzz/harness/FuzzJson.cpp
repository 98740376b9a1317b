//===- FuzzJson.cpp - libFuzzer: the runtime's JSON parser ----------------===//
//
// runtime/lib/Json.cpp reads the header of every artifact it loads, an
// untrusted file. Any bytes: parse, and when they parse, walk the value
// (every accessor) and check that quoting a string round-trips.
//
//===----------------------------------------------------------------------===//
#include "kiln/Json.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using kiln::json::Value;

static size_t walk(const Value &v, int depth) {
  size_t n = 1;
  if (depth > 10000)
    return n;
  for (const Value &e : v.getArray())
    n += walk(e, depth + 1);
  if (v.isObject())
    for (const auto &member : v.getObject())
      n += walk(member.second, depth + 1) + member.first.size();
  if (v.isString()) {
    Value back;
    std::string error;
    if (!kiln::json::parse(kiln::json::quote(v.getString()), back, error) ||
        back.getString() != v.getString())
      std::abort(); // quote() must write what parse() reads back
  }
  return n;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Value value;
  std::string error;
  if (kiln::json::parse(text, value, error))
    (void)walk(value, 0);
  else if (error.empty())
    std::abort(); // a rejection always says why
  return 0;
}
