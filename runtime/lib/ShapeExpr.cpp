//===- ShapeExpr.cpp - Symbolic dims: parsing and evaluation --------------===//
//
// A recursive-descent parser of the grammar in ShapeExpr.h (nesting is
// bounded so no header can exhaust the stack), emitting postfix steps; the
// evaluator checks every operation for overflow.
//
//===----------------------------------------------------------------------===//
#include "kiln/ShapeExpr.h"

#include <set>

namespace kiln {

namespace {

constexpr int kMaxDepth = 64; // nested parentheses

bool isAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }

struct Parser {
  const std::string &text;
  const std::vector<std::string> &symbols;
  std::vector<ShapeExpr::Step> &steps;
  std::string error;
  size_t pos = 0;
  int depth = 0;

  bool fail(const std::string &what) {
    if (error.empty())
      error = what + " at offset " + std::to_string(pos);
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
      ++pos;
  }
  bool atOp(const char *ops, char &op) {
    skipSpace();
    if (pos < text.size())
      for (const char *o = ops; *o; ++o)
        if (text[pos] == *o) {
          op = *o;
          return true;
        }
    return false;
  }

  bool primary() {
    skipSpace();
    if (pos >= text.size())
      return fail("expected a number, a symbol or '(', found the end");
    char c = text[pos];
    if (c == '(') {
      if (++depth > kMaxDepth)
        return fail("parentheses nested deeper than " +
                    std::to_string(kMaxDepth));
      ++pos;
      if (!sum())
        return false;
      skipSpace();
      if (pos >= text.size() || text[pos] != ')')
        return fail("expected ')'");
      ++pos;
      --depth;
      return true;
    }
    if (isDigit(c)) {
      int64_t v = 0;
      size_t start = pos;
      while (pos < text.size() && isDigit(text[pos])) {
        int d = text[pos] - '0';
        if (v > (INT64_MAX - d) / 10) {
          pos = start;
          return fail("integer literal too large");
        }
        v = v * 10 + d;
        ++pos;
      }
      if (pos < text.size() && (isAlpha(text[pos]) || text[pos] == '.'))
        return fail("a number followed by a name");
      steps.push_back({ShapeExpr::Op::Const, v});
      return true;
    }
    if (isAlpha(c)) {
      size_t start = pos;
      while (pos < text.size() &&
             (isAlpha(text[pos]) || isDigit(text[pos]) || text[pos] == '.'))
        ++pos;
      std::string name = text.substr(start, pos - start);
      for (size_t i = 0; i < symbols.size(); ++i)
        if (symbols[i] == name) {
          steps.push_back({ShapeExpr::Op::Symbol, int64_t(i)});
          return true;
        }
      pos = start;
      return fail("unknown symbol '" + name + "'");
    }
    if (c == '-')
      return fail("unexpected '-' (no negative numbers or unary minus)");
    return fail(std::string("unexpected '") + c + "'");
  }

  bool product() {
    if (!primary())
      return false;
    char op;
    while (atOp("*/%", op)) {
      ++pos;
      if (!primary())
        return false;
      steps.push_back({op == '*'   ? ShapeExpr::Op::Mul
                       : op == '/' ? ShapeExpr::Op::Div
                                   : ShapeExpr::Op::Mod,
                       0});
    }
    return true;
  }

  bool sum() {
    if (!product())
      return false;
    char op;
    while (atOp("+-", op)) {
      ++pos;
      if (!product())
        return false;
      steps.push_back(
          {op == '+' ? ShapeExpr::Op::Add : ShapeExpr::Op::Sub, 0});
    }
    return true;
  }
};

} // namespace

bool isShapeSymbolName(const std::string &name) {
  if (name.empty() || !isAlpha(name[0]))
    return false;
  for (char c : name)
    if (!isAlpha(c) && !isDigit(c) && c != '.')
      return false;
  return true;
}

std::string checkShapeSymbols(const std::vector<std::string> &symbols) {
  std::set<std::string> seen;
  for (const std::string &s : symbols) {
    if (!isShapeSymbolName(s))
      return "symbol \"" + s + "\" is not a name ([A-Za-z_][A-Za-z0-9_.]*)";
    if (!seen.insert(s).second)
      return "symbol '" + s + "' is listed twice";
  }
  return "";
}

bool parseShapeExpr(const std::string &text,
                    const std::vector<std::string> &symbols, ShapeExpr &out,
                    std::string &error) {
  out.steps.clear();
  out.text = text;
  Parser p{text, symbols, out.steps, std::string()};
  bool ok = p.sum();
  if (ok) {
    p.skipSpace();
    if (p.pos < text.size())
      ok = p.fail(std::string("unexpected '") + text[p.pos] + "'");
  }
  if (!ok) {
    error = "bad expression \"" + text + "\": " + p.error;
    out.steps.clear();
  }
  return ok;
}

bool ShapeExpr::isSymbol(int64_t &index) const {
  if (steps.size() != 1 || steps[0].op != Op::Symbol)
    return false;
  index = steps[0].value;
  return true;
}

bool ShapeExpr::evaluate(const int64_t *values, size_t numValues, int64_t &out,
                         std::string &error) const {
  // The stack never holds more than the steps; small ones stay local.
  int64_t local[16];
  std::vector<int64_t> heap;
  int64_t *stack = local;
  if (steps.size() > 16) {
    heap.resize(steps.size());
    stack = heap.data();
  }
  size_t top = 0;
  for (const Step &s : steps) {
    if (s.op == Op::Const) {
      stack[top++] = s.value;
      continue;
    }
    if (s.op == Op::Symbol) {
      if (s.value < 0 || size_t(s.value) >= numValues) {
        error = "names a symbol without a value";
        return false;
      }
      stack[top++] = values[s.value];
      continue;
    }
    if (top < 2) { // parseShapeExpr never makes such a program
      error = "is malformed";
      return false;
    }
    int64_t b = stack[--top], a = stack[top - 1], r = 0;
    bool overflow = false;
    switch (s.op) {
    case Op::Add:
      overflow = __builtin_add_overflow(a, b, &r);
      break;
    case Op::Sub:
      overflow = __builtin_sub_overflow(a, b, &r);
      break;
    case Op::Mul:
      overflow = __builtin_mul_overflow(a, b, &r);
      break;
    case Op::Div:
    case Op::Mod: {
      if (b <= 0) {
        error = b == 0 ? "divides by zero"
                       : "divides by a negative value (" +
                             std::to_string(b) + ")";
        return false;
      }
      int64_t q = a / b, m = a % b; // b > 0: no overflow
      if (m < 0) {                   // floor, non-negative remainder
        q -= 1;
        m += b;
      }
      r = s.op == Op::Div ? q : m;
      break;
    }
    default:
      break;
    }
    if (overflow) {
      error = "overflows int64";
      return false;
    }
    stack[top - 1] = r;
  }
  if (top != 1) {
    error = "is malformed";
    return false;
  }
  out = stack[0];
  if (out < 0) {
    error = "is negative (" + std::to_string(out) + ")";
    return false;
  }
  return true;
}

bool parseShapeConstraint(const std::string &text,
                          const std::vector<std::string> &symbols,
                          ShapeConstraint &out, std::string &error) {
  size_t le = text.find("<="), eq = text.find("==");
  size_t at = le == std::string::npos ? eq : le;
  if (at == std::string::npos || (le != std::string::npos &&
                                  eq != std::string::npos) ||
      text.find(text.substr(at, 2), at + 2) != std::string::npos) {
    error = "expected one 'lhs <= rhs' or 'lhs == rhs'";
    return false;
  }
  out.equal = at == eq;
  std::string err;
  if (!parseShapeExpr(text.substr(0, at), symbols, out.lhs, err)) {
    error = "left side: " + err;
    return false;
  }
  if (!parseShapeExpr(text.substr(at + 2), symbols, out.rhs, err)) {
    error = "right side: " + err;
    return false;
  }
  out.text = text;
  return true;
}

bool ShapeConstraint::check(const int64_t *values, size_t numValues,
                            std::string &error) const {
  int64_t l = 0, r = 0;
  if (!lhs.evaluate(values, numValues, l, error) ||
      !rhs.evaluate(values, numValues, r, error))
    return false;
  if (equal ? l != r : l > r) {
    error = std::to_string(l) + (equal ? " != " : " > ") + std::to_string(r);
    return false;
  }
  return true;
}

} // namespace kiln
