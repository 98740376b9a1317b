//===- ShapeExpr.h - Symbolic dims of an artifact's inputs and outputs -*- C++ -*-===//
//
// A dynamic artifact (docs/artifact.md, "Symbolic dims") names its symbols
// in the header's "symbols"; an input dim may be one of them, an output dim
// an expression over them: non-negative integer literals, symbol names,
// binary + - * / % (/ floor division, % the non-negative remainder, both
// with a positive divisor) with the usual precedence, and parentheses, e.g.
// "batch * seq" or "(h + 2 - 3) / 2 + 1".
//
// The reader and the writer both parse with parseShapeExpr, so they accept
// the same texts; the runtime evaluates the parsed form (postfix steps) once
// per run with the symbols' values. Plain C++17, no exceptions thrown.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_SHAPEEXPR_H
#define KILN_RUNTIME_SHAPEEXPR_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// A parsed dim expression, in postfix order (evaluated with a stack).
struct ShapeExpr {
  enum class Op : uint8_t { Const, Symbol, Add, Sub, Mul, Div, Mod };
  struct Step {
    Op op;
    int64_t value; ///< Const: the literal; Symbol: the index in "symbols"
  };
  std::vector<Step> steps;
  std::string text; ///< as written in the header

  bool empty() const { return steps.empty(); }
  /// The expression is one symbol name (what an input dim may be); its
  /// index goes to `index`.
  bool isSymbol(int64_t &index) const;
  /// Its value for the symbols' `values` (one per symbol). False with
  /// `error` set ("divides by zero", "is negative", "overflows", ...) when
  /// it has none; a negative final value is an error too.
  bool evaluate(const int64_t *values, size_t numValues, int64_t &out,
                std::string &error) const;
};

/// "lhs <= rhs" over the symbols: what the model's shapes assume of the
/// symbols' values (e.g. "seq <= 128": a position table of 128 rows sliced
/// by the sequence length); the runtime checks it on every call.
struct ShapeConstraint {
  ShapeExpr lhs, rhs;
  bool equal = false; ///< "lhs == rhs" rather than "lhs <= rhs"
  std::string text;
  /// False with `error` set when it does not hold (or cannot be evaluated).
  bool check(const int64_t *values, size_t numValues, std::string &error) const;
};

/// Parses "lhs <= rhs" or "lhs == rhs" (two expressions as parseShapeExpr
/// takes them).
bool parseShapeConstraint(const std::string &text,
                          const std::vector<std::string> &symbols,
                          ShapeConstraint &out, std::string &error);

/// Whether `name` is a valid symbol name: [A-Za-z_][A-Za-z0-9_.]*.
bool isShapeSymbolName(const std::string &name);

/// Parses `text` over `symbols` into `out` (out.text = text). False with
/// `error` naming the fault and its byte offset (an unknown symbol, a
/// missing operand, a literal too large, unbalanced or too deeply nested
/// parentheses, trailing text).
bool parseShapeExpr(const std::string &text,
                    const std::vector<std::string> &symbols, ShapeExpr &out,
                    std::string &error);

/// Checks a "symbols" list: valid, distinct names. "" or a message.
std::string checkShapeSymbols(const std::vector<std::string> &symbols);

} // namespace kiln

#endif // KILN_RUNTIME_SHAPEEXPR_H
