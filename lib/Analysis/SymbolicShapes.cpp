//===- SymbolicShapes.cpp - Dynamic dims as expressions of symbols --------===//
//
// One forward walk over @main: every result gets its dims from its operands'
// by the op's ONNX semantics (a rule per op family below). Static dims come
// from the result type itself, so a rule only has to get the dynamic ones
// right; a rule that cannot express one leaves the value without a shape and
// records the op (SymbolicShapes::whyUnknown).
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/SymbolicShapes.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kMaxTrackedElements = 64;

/// The elementwise ops whose tensor operands all align elementwise (ONNX
/// multidirectional broadcasting): broadcasting(), and the first of
/// elementwiseLike().
const char *const kBroadcastingOps[] = {
    "kiln.add", "kiln.sub", "kiln.mul", "kiln.div", "kiln.pow", "kiln.mod",
    "kiln.max", "kiln.min", "kiln.sum", "kiln.mean", "kiln.equal",
    "kiln.less", "kiln.less_or_equal", "kiln.greater",
    "kiln.greater_or_equal", "kiln.and", "kiln.or", "kiln.xor",
    "kiln.bitwise_and", "kiln.bitwise_or", "kiln.bitwise_xor",
    "kiln.bit_shift", "kiln.where", "kiln.prelu"};

/// Ops whose result follows their operands elementwise, with ONNX
/// (right-aligned) broadcasting, or whose result keeps the dims of their
/// first operand (normalizations, softmax, casts, attention's output, the
/// cache TensorScatter writes into): a dynamic result dim is the first
/// operand dim aligned with it that is not a constant.
const llvm::StringSet<> &elementwiseLike() {
  static const llvm::StringSet<> names = [] {
    llvm::StringSet<> set;
    for (const char *name : kBroadcastingOps)
      set.insert(name);
    for (const char *name : {
             "kiln.clip", "kiln.is_nan", "kiln.is_inf", "kiln.cast",
             "kiln.cast_like", "kiln.identity", "kiln.dropout",
             "kiln.batch_normalization", "kiln.instance_normalization",
             "kiln.layer_normalization", "kiln.group_normalization",
             "kiln.lp_normalization", "kiln.lrn",
             "kiln.mean_variance_normalization", "kiln.softmax",
             "kiln.log_softmax", "kiln.hardmax", "kiln.rms_norm",
             "kiln.rotary_embedding", "kiln.cum_sum", "kiln.trilu",
             "kiln.global_average_pool", "kiln.global_max_pool",
             "kiln.global_lp_pool", "kiln.global_average_pool_nhwc",
             "kiln.attention", "kiln.linear_attention",
             "kiln.quantize_linear", "kiln.dequantize_linear",
             "kiln.dynamic_quantize_linear", "kiln.fake_quant",
             "kiln.swiglu", "kiln.tensor_scatter", "kiln.silu",
             "kiln.gelu"})
      set.insert(name);
    return set;
  }();
  return names;
}

/// The ops of elementwiseLike() whose tensor operands all align elementwise
/// (kBroadcastingOps). The lowering never broadcasts a dynamic dim, so two
/// different sizes aligned in one of these must be equal at run time: a
/// constraint the runtime checks.
const llvm::StringSet<> &broadcasting() {
  static const llvm::StringSet<> names = [] {
    llvm::StringSet<> set;
    for (const char *name : kBroadcastingOps)
      set.insert(name);
    return set;
  }();
  return names;
}

/// Convolutions and pools: the batch (dim 0) comes from X; dynamic spatial
/// dims are not expressed yet.
const llvm::StringSet<> &windowOps() {
  static const llvm::StringSet<> names = {
      "kiln.conv", "kiln.conv_nhwc", "kiln.fused_conv", "kiln.fused_conv_nhwc",
      "kiln.conv_transpose", "kiln.max_pool", "kiln.average_pool",
      "kiln.lp_pool", "kiln.max_pool_nhwc", "kiln.average_pool_nhwc",
      "kiln.quantized_conv", "kiln.resize"};
  return names;
}

AffineExpr constant(MLIRContext *context, int64_t v) {
  return getAffineConstantExpr(v, context);
}

std::optional<int64_t> constantOf(AffineExpr e) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  return std::nullopt;
}

/// Multiplicative factors of `e`: a constant coefficient and the rest.
void factorize(AffineExpr e, int64_t &coefficient,
               SmallVectorImpl<AffineExpr> &factors) {
  if (auto c = dyn_cast<AffineConstantExpr>(e)) {
    coefficient *= c.getValue();
    return;
  }
  if (e.getKind() == AffineExprKind::Mul) {
    auto bin = cast<AffineBinaryOpExpr>(e);
    factorize(bin.getLHS(), coefficient, factors);
    factorize(bin.getRHS(), coefficient, factors);
    return;
  }
  factors.push_back(e);
}

/// product(numerator) / product(denominator) when the division is exact
/// (common factors cancelled, the constants dividing).
std::optional<AffineExpr> exactQuotient(MLIRContext *context,
                                        ArrayRef<AffineExpr> numerator,
                                        ArrayRef<AffineExpr> denominator) {
  int64_t num = 1, den = 1;
  SmallVector<AffineExpr> top, bottom;
  for (AffineExpr e : numerator)
    factorize(e, num, top);
  for (AffineExpr e : denominator)
    factorize(e, den, bottom);
  for (AffineExpr e : bottom) {
    auto it = llvm::find(top, e);
    if (it == top.end())
      return std::nullopt;
    top.erase(it);
  }
  if (den == 0 || num % den != 0)
    return std::nullopt;
  AffineExpr result = constant(context, num / den);
  for (AffineExpr e : top)
    result = result * e;
  return result;
}

AffineExpr product(MLIRContext *context, ArrayRef<AffineExpr> dims) {
  AffineExpr result = constant(context, 1);
  for (AffineExpr e : dims)
    result = result * e;
  return result;
}

int64_t normalize(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace

SymbolicShapes::SymbolicShapes(func::FuncOp main)
    : context(main.getContext()) {
  llvm::StringMap<unsigned> byName;
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    BlockArgument arg = main.getArgument(i);
    arguments.push_back(arg);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    SymbolicDims dims;
    bool weight = main.getArgAttr(i, "kiln.weight") != nullptr;
    auto names = main.getArgAttrOfType<ArrayAttr>(i, "kiln.dims");
    auto inputName = main.getArgAttrOfType<StringAttr>(i, "kiln.name");
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d) || weight) {
        dims.push_back(constant(context, type.getDimSize(d)));
        continue;
      }
      std::string name;
      if (names && d < int64_t(names.size()))
        if (auto s = dyn_cast<StringAttr>(names[d]))
          name = s.str();
      if (name.empty())
        name = (inputName ? inputName.str() : "input" + std::to_string(i)) +
               "_dim" + std::to_string(d);
      // The runtime's grammar: [A-Za-z_][A-Za-z0-9_.]*.
      for (char &c : name)
        if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.')
          c = '_';
      if (isdigit(static_cast<unsigned char>(name[0])))
        name = "_" + name;
      auto [it, inserted] = byName.try_emplace(name, symbolList.size());
      if (inserted)
        symbolList.push_back({name, i, d});
      dims.push_back(getAffineSymbolExpr(it->second, context));
    }
    shapes[arg] = dims;
  }
  for (Operation &op : main.getBody().front())
    visit(&op);
}

SmallVector<int64_t> SymbolicShapes::inputSymbols(unsigned argument) const {
  SmallVector<int64_t> result;
  if (argument >= arguments.size())
    return result;
  std::optional<SymbolicDims> dims = known(arguments[argument]);
  if (!dims)
    return result;
  for (AffineExpr e : *dims)
    result.push_back(isa<AffineSymbolExpr>(e)
                         ? int64_t(cast<AffineSymbolExpr>(e).getPosition())
                         : -1);
  return result;
}

void SymbolicShapes::addConstraint(AffineExpr lhs, AffineExpr rhs,
                                   Operation *op, bool equal) {
  // The runtime checks constraints before a run: an iteration number is
  // not known then (the slice is assumed within its dim, as ONNX clamps).
  if (usesLoopSymbol(lhs) || usesLoopSymbol(rhs))
    return;
  std::optional<int64_t> l = constantOf(lhs), r = constantOf(rhs);
  if ((l && r && (equal ? *l == *r : *l <= *r)) || lhs == rhs)
    return;
  for (const ShapeConstraint &c : constraintList)
    if (c.equal == equal &&
        ((c.lhs == lhs && c.rhs == rhs) ||
         (equal && c.lhs == rhs && c.rhs == lhs)))
      return;
  constraintList.push_back({lhs, rhs, op, equal});
}

std::optional<SymbolicDims> SymbolicShapes::shapeOf(Value value) const {
  return known(value);
}

std::optional<SymbolicDims> SymbolicShapes::valuesOf(Value value) const {
  return knownValues(value);
}

Operation *SymbolicShapes::whyUnknown(Value value) const {
  return unknownAt.lookup(value);
}

std::optional<SymbolicDims> SymbolicShapes::known(Value value) const {
  auto it = shapes.find(value);
  if (it != shapes.end())
    return it->second;
  // Values defined outside the walk (none in @main's body) or never seen:
  // static types still have a shape.
  if (auto type = dyn_cast<RankedTensorType>(value.getType()))
    if (type.hasStaticShape()) {
      SymbolicDims dims;
      for (int64_t d : type.getShape())
        dims.push_back(getAffineConstantExpr(d, value.getContext()));
      return dims;
    }
  return std::nullopt;
}

std::optional<SymbolicDims> SymbolicShapes::knownValues(Value value) const {
  auto it = values.find(value);
  if (it != values.end())
    return it->second;
  std::optional<SmallVector<int64_t>> ints = getKnownIntValues(value);
  if (!ints)
    return std::nullopt;
  SymbolicDims result;
  for (int64_t v : *ints) {
    if (ShapedType::isDynamic(v))
      return std::nullopt;
    result.push_back(getAffineConstantExpr(v, value.getContext()));
  }
  return result;
}

void SymbolicShapes::visit(Operation *op) {
  if (op->getNumRegions() != 0)
    visitRegions(op);
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    Value result = op->getResult(i);
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    std::optional<SymbolicDims> dims;
    if (!type.hasStaticShape())
      dims = inferResult(op, i);
    if (!type.hasStaticShape() &&
        (!dims || int64_t(dims->size()) != type.getRank())) {
      // Where the chain broke: the first operand without a shape, or here.
      Operation *at = op;
      for (Value operand : op->getOperands())
        if (isa<RankedTensorType>(operand.getType()) && !known(operand)) {
          at = unknownAt.lookup(operand);
          break;
        }
      unknownAt[result] = at ? at : op;
      continue;
    }
    SymbolicDims merged;
    for (int64_t d = 0; d < type.getRank(); ++d)
      merged.push_back(type.isDynamicDim(d)
                           ? (*dims)[d]
                           : constant(context, type.getDimSize(d)));
    shapes[result] = merged;
  }
  trackValues(op);
}

/// The output spatial dims of a Conv or pool over input dims `x` ([N, C,
/// D1, ...], or [N, D1, ..., C] for the _nhwc ops; ONNX's rule as
/// kiln::inferWindowOutputDims applies it to static sizes): floor((D + pads -
/// dilation * (k - 1) - 1) / stride) + 1, or ceil(D / stride) with
/// SAME_UPPER/SAME_LOWER, ceil instead of floor with ceil_mode. std::nullopt
/// for what the expressions cannot say (a ceil_mode window that may be
/// dropped, a kernel of unknown size) and for the ops without that rule.
/// `minimum[i]` gets the smallest input dim i that gives one output (the
/// padded input must hold the dilated kernel).
static std::optional<SymbolicDims>
windowSpatialDims(Operation *op, const SymbolicDims &x,
                  SmallVectorImpl<int64_t> &minimum) {
  StringRef name = op->getName().getStringRef();
  bool channelsLast = name.ends_with("_nhwc");
  if (channelsLast)
    name = name.drop_back(5);
  bool conv = name == "kiln.conv" || name == "kiln.fused_conv";
  bool pool = name == "kiln.max_pool" || name == "kiln.average_pool" ||
              name == "kiln.lp_pool";
  if ((!conv && !pool) || x.size() < 3)
    return std::nullopt;
  size_t n = x.size() - 2, first = channelsLast ? 1 : 2;
  auto list = [&](StringRef attr, size_t size,
                  int64_t fallback) -> std::optional<SmallVector<int64_t>> {
    auto a = op->getAttrOfType<DenseI64ArrayAttr>(attr);
    if (!a)
      return SmallVector<int64_t>(size, fallback);
    if (a.size() != int64_t(size))
      return std::nullopt;
    return SmallVector<int64_t>(a.asArrayRef());
  };
  auto ceilAttr = op->getAttrOfType<IntegerAttr>("ceil_mode");
  bool ceil = ceilAttr && ceilAttr.getInt() != 0;
  std::optional<SmallVector<int64_t>> kernel;
  if (op->getAttrOfType<DenseI64ArrayAttr>("kernel_shape")) {
    kernel = list("kernel_shape", n, 1);
  } else if (conv) {
    // OIHW, or OHWI channels last.
    auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    if (!w || w.getRank() != int64_t(n + 2))
      return std::nullopt;
    ArrayRef<int64_t> k = w.getShape().slice(channelsLast ? 1 : 2, n);
    if (llvm::any_of(k, ShapedType::isDynamic))
      return std::nullopt;
    kernel = SmallVector<int64_t>(k);
  }
  auto strides = list("strides", n, 1), dilations = list("dilations", n, 1);
  auto pads = list("pads", 2 * n, 0);
  auto autoPad = op->getAttrOfType<StringAttr>("auto_pad");
  StringRef mode = autoPad ? autoPad.getValue() : "NOTSET";
  if (!kernel || !strides || !dilations || !pads ||
      !llvm::is_contained({"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"},
                          mode) ||
      llvm::any_of(*strides, [](int64_t v) { return v < 1; }))
    return std::nullopt;
  SymbolicDims out;
  for (size_t i = 0; i < n; ++i) {
    AffineExpr in = x[first + i];
    int64_t stride = (*strides)[i];
    if (mode.starts_with("SAME")) {
      out.push_back(in.ceilDiv(stride));
      minimum.push_back(0);
      continue;
    }
    int64_t padded = mode == "VALID" ? 0 : (*pads)[i] + (*pads)[n + i];
    int64_t padEnd = mode == "VALID" ? 0 : (*pads)[n + i];
    int64_t extent = (*dilations)[i] * ((*kernel)[i] - 1) + 1;
    // ceil_mode rounds up, and drops a last window that would start in the
    // end padding: that never happens when stride <= extent - padEnd
    // (SqueezeNet's and GoogLeNet's pools), else it is not expressed.
    if (ceil && stride > extent - padEnd)
      return std::nullopt;
    AffineExpr span = in + (padded - extent);
    out.push_back((ceil ? span.ceilDiv(stride) : span.floorDiv(stride)) + 1);
    minimum.push_back(extent - padded);
  }
  return out;
}

/// An index computed from tensor dims (a library call's result size, made
/// before bufferization): tensor.dim of a known tensor, constants, and
/// + - * and floor division by constants, as an expression of the symbols.
std::optional<AffineExpr> SymbolicShapes::indexExpr(Value v,
                                                    unsigned depth) const {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 16)
    return std::nullopt;
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return constant(context, c.getSExtValue());
  StringRef name = op->getName().getStringRef();
  if (name == "tensor.dim") {
    APInt which;
    if (!matchPattern(op->getOperand(1), m_ConstantInt(&which)))
      return std::nullopt;
    std::optional<SymbolicDims> source = known(op->getOperand(0));
    if (!source || which.getZExtValue() >= source->size())
      return std::nullopt;
    return (*source)[which.getZExtValue()];
  }
  if (op->getNumOperands() != 2)
    return std::nullopt;
  std::optional<AffineExpr> a = indexExpr(op->getOperand(0), depth + 1);
  std::optional<AffineExpr> b = indexExpr(op->getOperand(1), depth + 1);
  if (!a || !b)
    return std::nullopt;
  std::optional<int64_t> bc = constantOf(*b);
  if (name == "arith.addi")
    return *a + *b;
  if (name == "arith.subi")
    return *a - *b;
  if (name == "arith.muli" && (bc || constantOf(*a)))
    return *a * *b;
  if (name == "arith.floordivsi" && bc && *bc > 0)
    return a->floorDiv(*bc);
  return std::nullopt;
}

std::optional<SymbolicDims> SymbolicShapes::inferResult(Operation *op,
                                                        unsigned index) {
  if (op->getNumRegions() != 0)
    return inferControlFlow(op, index);
  auto resultType = cast<RankedTensorType>(op->getResult(index).getType());
  int64_t rank = resultType.getRank();
  StringRef name = op->getName().getStringRef();
  // A library call's result (kiln-cpu-dnnl-calls): the tensor of a buffer
  // allocated with `tensor.dim`s of known tensors as its run-time sizes.
  if (name == "bufferization.to_tensor") {
    Operation *alloc = op->getOperand(0).getDefiningOp();
    if (!alloc || alloc->getName().getStringRef() != "memref.alloc")
      return std::nullopt;
    SymbolicDims dims;
    unsigned next = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (!resultType.isDynamicDim(d)) {
        dims.push_back(constant(context, resultType.getDimSize(d)));
        continue;
      }
      if (next >= alloc->getNumOperands())
        return std::nullopt;
      std::optional<AffineExpr> size = indexExpr(alloc->getOperand(next++));
      if (!size)
        return std::nullopt;
      dims.push_back(*size);
    }
    return dims;
  }
  auto operandDims = [&](unsigned i) -> std::optional<SymbolicDims> {
    if (i >= op->getNumOperands())
      return std::nullopt;
    return known(op->getOperand(i));
  };
  auto intAttr = [&](StringRef attr, int64_t fallback) {
    if (auto a = op->getAttrOfType<IntegerAttr>(attr))
      return a.getInt();
    return fallback;
  };
  auto axesOf = [&](unsigned operand) -> std::optional<SmallVector<int64_t>> {
    if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>("axes"))
      return SmallVector<int64_t>(attr.asArrayRef());
    if (operand < op->getNumOperands() &&
        isa<RankedTensorType>(op->getOperand(operand).getType())) {
      auto v = getKnownIntValues(op->getOperand(operand));
      if (!v || llvm::any_of(*v, ShapedType::isDynamic))
        return std::nullopt;
      return *v;
    }
    return SmallVector<int64_t>();
  };

  if (elementwiseLike().contains(name) ||
      op->hasTrait<OpTrait::Elementwise>() ||
      op->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
      op->hasTrait<OpTrait::SameOperandsAndResultType>()) {
    if (index != 0 && name == "kiln.layer_normalization") {
      // Mean and InvStdDev: X's dims with the normalized ones [axis, rank)
      // kept as 1.
      std::optional<SymbolicDims> x = operandDims(0);
      if (!x)
        return std::nullopt;
      int64_t axis = normalize(intAttr("axis", -1), x->size());
      SymbolicDims result(*x);
      for (int64_t d = std::max<int64_t>(axis, 0); d < int64_t(result.size());
           ++d)
        result[d] = constant(context, 1);
      return result;
    }
    if (index != 0 && name != "kiln.dropout")
      return std::nullopt;
    SmallVector<SymbolicDims> operands;
    for (Value operand : op->getOperands()) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      std::optional<SymbolicDims> dims = known(operand);
      if (!dims)
        return std::nullopt;
      operands.push_back(*dims);
    }
    SymbolicDims result;
    for (int64_t d = 0; d < rank; ++d) {
      std::optional<AffineExpr> chosen;
      for (const SymbolicDims &dims : operands) {
        int64_t at = d - (rank - int64_t(dims.size()));
        if (at < 0)
          continue;
        if (!constantOf(dims[at])) {
          chosen = dims[at];
          break;
        }
      }
      if (!chosen && !resultType.isDynamicDim(d))
        chosen = constant(context, resultType.getDimSize(d));
      if (!chosen)
        return std::nullopt;
      if (broadcasting().contains(name))
        for (const SymbolicDims &dims : operands) {
          int64_t at = d - (rank - int64_t(dims.size()));
          if (at >= 0 && !constantOf(dims[at]))
            addConstraint(*chosen, dims[at], op, /*equal=*/true);
        }
      result.push_back(*chosen);
    }
    return result;
  }

  if (windowOps().contains(name)) {
    std::optional<SymbolicDims> x = operandDims(0);
    if (!x || x->empty()) // (every result: MaxPool's Indices too)
      return std::nullopt;
    std::optional<SymbolicDims> spatial;
    SymbolicDims result;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == 0) {
        result.push_back((*x)[0]);
      } else if (resultType.isDynamicDim(d)) {
        // A window's spatial dims (2.. channels first, 1..rank-2 channels
        // last); the input must hold the kernel, which the runtime checks.
        int64_t first = name.ends_with("_nhwc") ? 1 : 2;
        SmallVector<int64_t> minimum;
        if (d < first || d >= first + rank - 2 ||
            (!spatial && !(spatial = windowSpatialDims(op, *x, minimum))))
          return std::nullopt;
        for (auto [i, least] : llvm::enumerate(minimum))
          if (least > 1 && !constantOf((*x)[first + i]))
            addConstraint(constant(context, least), (*x)[first + i], op);
        result.push_back((*spatial)[d - first]);
      } else {
        result.push_back(constant(context, resultType.getDimSize(d)));
      }
    }
    return result;
  }

  if (name == "kiln.gemm") {
    auto a = operandDims(0), b = operandDims(1);
    if (!a || !b || a->size() != 2 || b->size() != 2)
      return std::nullopt;
    bool transA = intAttr("transA", 0), transB = intAttr("transB", 0);
    return SymbolicDims{(*a)[transA ? 1 : 0], (*b)[transB ? 0 : 1]};
  }

  if (name == "kiln.quantized_matmul") {
    // A [..., K] times W [N, K] transposed: A's leading dims, then N.
    auto a = operandDims(0), w = operandDims(2);
    if (!a || !w || a->empty() || w->size() != 2)
      return std::nullopt;
    SymbolicDims result(a->begin(), a->end() - 1);
    result.push_back((*w)[0]);
    return result;
  }

  if (name == "kiln.matmul" || name == "kiln.fused_matmul" ||
      name == "kiln.matmul_integer" || name == "kiln.qlinear_matmul") {
    auto a = operandDims(0),
         b = operandDims(name == "kiln.qlinear_matmul" ? 3 : 1);
    if (!a || !b)
      return std::nullopt;
    SymbolicDims ad = *a, bd = *b;
    if (name == "kiln.fused_matmul" && intAttr("trans_b", 0) && bd.size() >= 2)
      std::swap(bd[bd.size() - 1], bd[bd.size() - 2]);
    bool aVector = ad.size() == 1, bVector = bd.size() == 1;
    if (aVector)
      ad.insert(ad.begin(), constant(context, 1));
    if (bVector)
      bd.push_back(constant(context, 1));
    size_t batch = std::max(ad.size(), bd.size()) - 2;
    SymbolicDims result;
    for (size_t d = 0; d < batch; ++d) {
      int64_t ai = int64_t(d) - int64_t(batch - (ad.size() - 2));
      int64_t bi = int64_t(d) - int64_t(batch - (bd.size() - 2));
      std::optional<AffineExpr> chosen;
      for (auto [dims, at] : {std::pair(&ad, ai), std::pair(&bd, bi)})
        if (at >= 0 && (!chosen || constantOf(*chosen) == 1))
          if (!constantOf((*dims)[at]) || !chosen)
            chosen = (*dims)[at];
      result.push_back(*chosen);
    }
    if (!aVector)
      result.push_back(ad[ad.size() - 2]);
    if (!bVector)
      result.push_back(bd.back());
    if (int64_t(result.size()) != rank)
      return std::nullopt;
    return result;
  }

  if (name == "kiln.transpose") {
    auto x = operandDims(0);
    if (!x)
      return std::nullopt;
    SmallVector<int64_t> perm;
    if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>("perm"))
      perm.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else
      for (int64_t d = int64_t(x->size()) - 1; d >= 0; --d)
        perm.push_back(d);
    SymbolicDims result;
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(x->size()))
        return std::nullopt;
      result.push_back((*x)[p]);
    }
    return result;
  }

  if (name == "kiln.reshape") {
    auto x = operandDims(0);
    auto target = knownValues(op->getOperand(1));
    if (!x || !target)
      return std::nullopt;
    bool allowZero = intAttr("allowzero", 0);
    SymbolicDims result;
    int64_t inferred = -1;
    for (auto [i, e] : llvm::enumerate(*target)) {
      std::optional<int64_t> c = constantOf(e);
      if (c == 0 && !allowZero) {
        if (i >= x->size())
          return std::nullopt;
        result.push_back((*x)[i]);
      } else if (c == -1) {
        inferred = i;
        result.push_back(constant(context, -1));
      } else {
        result.push_back(e);
      }
    }
    if (inferred >= 0) {
      SymbolicDims others;
      for (auto [i, e] : llvm::enumerate(result))
        if (int64_t(i) != inferred)
          others.push_back(e);
      std::optional<AffineExpr> q = exactQuotient(context, *x, others);
      if (!q)
        return std::nullopt;
      result[inferred] = *q;
    }
    return result;
  }

  if (name == "kiln.flatten") {
    auto x = operandDims(0);
    if (!x)
      return std::nullopt;
    int64_t axis = normalize(intAttr("axis", 1), x->size());
    return SymbolicDims{
        product(context, ArrayRef<AffineExpr>(*x).take_front(axis)),
        product(context, ArrayRef<AffineExpr>(*x).drop_front(axis))};
  }

  if (name == "kiln.squeeze" || name == "kiln.unsqueeze") {
    auto x = operandDims(0);
    auto axes = axesOf(1);
    if (!x || !axes)
      return std::nullopt;
    bool squeeze = name == "kiln.squeeze";
    int64_t outRank = squeeze ? int64_t(x->size()) - int64_t(axes->size())
                              : int64_t(x->size() + axes->size());
    if (squeeze && axes->empty()) {
      SymbolicDims result;
      for (AffineExpr e : *x)
        if (constantOf(e) != 1)
          result.push_back(e);
      return result;
    }
    llvm::SmallDenseSet<int64_t> marked;
    for (int64_t a : *axes)
      marked.insert(normalize(a, squeeze ? x->size() : outRank));
    SymbolicDims result;
    if (squeeze) {
      for (auto [i, e] : llvm::enumerate(*x))
        if (!marked.contains(i))
          result.push_back(e);
    } else {
      unsigned next = 0;
      for (int64_t i = 0; i < outRank; ++i)
        result.push_back(marked.contains(i) ? constant(context, 1)
                                            : (*x)[next++]);
    }
    return result;
  }

  if (name == "kiln.concat") {
    int64_t axis = normalize(intAttr("axis", 0), rank);
    SymbolicDims result;
    for (Value operand : op->getOperands()) {
      std::optional<SymbolicDims> dims = known(operand);
      if (!dims || int64_t(dims->size()) != rank)
        return std::nullopt;
      if (result.empty()) {
        result = *dims;
        continue;
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (d == axis)
          result[d] = result[d] + (*dims)[d];
        else if (constantOf(result[d]) && !constantOf((*dims)[d]))
          result[d] = (*dims)[d];
      }
    }
    return result;
  }

  if (name == "kiln.gather") {
    auto data = operandDims(0), indices = operandDims(1);
    if (!data || !indices)
      return std::nullopt;
    int64_t axis = normalize(intAttr("axis", 0), data->size());
    SymbolicDims result(data->begin(), data->begin() + axis);
    result.append(indices->begin(), indices->end());
    result.append(data->begin() + axis + 1, data->end());
    return result;
  }
  // GatherElements: the indices' shape.
  if (name == "kiln.gather_elements")
    return operandDims(1);

  if (name.starts_with("kiln.reduce_") || name == "kiln.arg_max" ||
      name == "kiln.arg_min") {
    auto x = operandDims(0);
    if (!x)
      return std::nullopt;
    bool keep = intAttr("keepdims", 1);
    SmallVector<int64_t> axes;
    if (name.starts_with("kiln.arg_")) {
      axes.push_back(intAttr("axis", 0));
    } else {
      auto a = axesOf(1);
      if (!a)
        return std::nullopt;
      axes = *a;
      if (axes.empty() && intAttr("noop_with_empty_axes", 0))
        return x;
      if (axes.empty())
        for (int64_t d = 0; d < int64_t(x->size()); ++d)
          axes.push_back(d);
    }
    llvm::SmallDenseSet<int64_t> reduced;
    for (int64_t a : axes)
      reduced.insert(normalize(a, x->size()));
    SymbolicDims result;
    for (auto [i, e] : llvm::enumerate(*x)) {
      if (!reduced.contains(i))
        result.push_back(e);
      else if (keep)
        result.push_back(constant(context, 1));
    }
    return result;
  }

  if (name == "kiln.expand") {
    auto x = operandDims(0);
    auto shape = knownValues(op->getOperand(1));
    if (!x || !shape)
      return std::nullopt;
    SymbolicDims result;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t xi = d - (rank - int64_t(x->size()));
      int64_t si = d - (rank - int64_t(shape->size()));
      AffineExpr a = xi >= 0 ? (*x)[xi] : constant(context, 1);
      AffineExpr s = si >= 0 ? (*shape)[si] : constant(context, 1);
      result.push_back(constantOf(s) == 1 ? a : s);
    }
    return result;
  }

  if (name == "kiln.constant_of_shape")
    return knownValues(op->getOperand(0));

  if (name == "kiln.tile") {
    auto x = operandDims(0);
    auto repeats = knownValues(op->getOperand(1));
    if (!x || !repeats || repeats->size() != x->size())
      return std::nullopt;
    SymbolicDims result;
    for (auto [d, r] : llvm::zip(*x, *repeats))
      result.push_back(d * r);
    return result;
  }

  if (name == "kiln.pad") {
    auto x = operandDims(0);
    auto pads = knownValues(op->getOperand(1));
    if (!x || !pads || pads->size() != 2 * x->size() ||
        (op->getNumOperands() > 3 &&
         isa<RankedTensorType>(op->getOperand(3).getType())))
      return std::nullopt;
    SymbolicDims result;
    for (size_t d = 0; d < x->size(); ++d)
      result.push_back((*x)[d] + (*pads)[d] + (*pads)[d + x->size()]);
    return result;
  }

  if (name == "kiln.slice") {
    auto x = operandDims(0);
    auto starts = knownValues(op->getOperand(1));
    auto ends = knownValues(op->getOperand(2));
    if (!x || !starts || !ends)
      return std::nullopt;
    SmallVector<int64_t> axes, steps;
    for (unsigned operand : {3u, 4u}) {
      auto &out = operand == 3 ? axes : steps;
      if (isa<RankedTensorType>(op->getOperand(operand).getType())) {
        auto v = knownValues(op->getOperand(operand));
        if (!v)
          return std::nullopt;
        for (AffineExpr e : *v) {
          std::optional<int64_t> c = constantOf(e);
          if (!c)
            return std::nullopt;
          out.push_back(*c);
        }
      }
    }
    if (axes.empty())
      for (size_t i = 0; i < starts->size(); ++i)
        axes.push_back(i);
    SymbolicDims result = *x;
    for (size_t i = 0; i < axes.size() && i < starts->size(); ++i) {
      int64_t axis = normalize(axes[i], x->size());
      if (!resultType.isDynamicDim(axis))
        continue;
      int64_t step = i < steps.size() ? steps[i] : 1;
      std::optional<int64_t> start = constantOf((*starts)[i]);
      std::optional<int64_t> end = constantOf((*ends)[i]);
      AffineExpr dim = (*x)[axis];
      if (step != 1)
        return std::nullopt;
      // The cases exporters write: [s:], [s:-k], [-k:] on a dynamic dim,
      // and bounds that are sizes ([:seq] of a position table, [past:] of a
      // cache). ONNX clamps the bounds to the dim; here the dim is assumed
      // long enough, and where that is not evident it becomes a constraint
      // the runtime checks (constraints()).
      constexpr int64_t toEnd = int64_t(1) << 31;
      AffineExpr first, last;
      if (!start)
        first = (*starts)[i]; // a size: non-negative
      else if (*start >= 0)
        first = constant(context, *start);
      else
        first = dim + constant(context, *start);
      if (!end) {
        last = (*ends)[i];
        addConstraint(last, dim, op);
      } else if (*end >= toEnd) {
        last = dim;
      } else if (*end < 0) {
        last = dim + constant(context, *end);
      } else if (constantOf(dim)) {
        last = constant(context, std::min(*end, *constantOf(dim)));
      } else {
        last = constant(context, *end);
        addConstraint(last, dim, op);
      }
      if (!start)
        addConstraint(first, last, op);
      result[axis] = last - first;
    }
    return result;
  }

  if (name == "kiln.split") {
    auto x = operandDims(0);
    if (!x)
      return std::nullopt;
    int64_t axis = normalize(intAttr("axis", 0), x->size());
    SymbolicDims result = *x;
    if (!resultType.isDynamicDim(axis)) {
      result[axis] = constant(context, resultType.getDimSize(axis));
      return result;
    }
    bool sizesGiven = op->getAttr("split") ||
                      (op->getNumOperands() > 1 &&
                       isa<RankedTensorType>(op->getOperand(1).getType()));
    if (sizesGiven)
      return std::nullopt;
    result[axis] = (*x)[axis].floorDiv(op->getNumResults());
    return result;
  }

  // Range(start, limit, delta) of scalars with a positive constant delta
  // (arange over a run-time length; the decomposed causal mask):
  // ceil((limit - start) / delta) elements, start <= limit assumed (ONNX
  // gives none otherwise) and checked at run time.
  if (name == "kiln.range") {
    auto start = knownValues(op->getOperand(0));
    auto limit = knownValues(op->getOperand(1));
    auto delta = knownValues(op->getOperand(2));
    if (!start || !limit || !delta || start->size() != 1 ||
        limit->size() != 1 || delta->size() != 1)
      return std::nullopt;
    std::optional<int64_t> step = constantOf((*delta)[0]);
    if (!step || *step <= 0)
      return std::nullopt;
    // (From 0 or below to a dim, nothing to check.)
    std::optional<int64_t> first = constantOf((*start)[0]);
    bool trivial = first && *first <= 0 && isa<AffineSymbolExpr>((*limit)[0]);
    if (!constantOf((*limit)[0] - (*start)[0]) && !trivial)
      addConstraint((*start)[0], (*limit)[0], op);
    return SymbolicDims{((*limit)[0] - (*start)[0]).ceilDiv(*step)};
  }

  return std::nullopt;
}

void SymbolicShapes::trackValues(Operation *op) {
  if (op->getNumResults() != 1)
    return;
  Value result = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || !type.hasStaticShape() || type.getRank() > 1 ||
      type.getNumElements() > kMaxTrackedElements ||
      !isa<IntegerType>(type.getElementType()))
    return;
  StringRef name = op->getName().getStringRef();
  std::optional<SymbolicDims> out;
  auto operandValues = [&](unsigned i) -> std::optional<SymbolicDims> {
    if (i >= op->getNumOperands())
      return std::nullopt;
    return knownValues(op->getOperand(i));
  };
  if (name == "kiln.shape") {
    auto dims = known(op->getOperand(0));
    if (dims) {
      int64_t r = dims->size();
      int64_t start = 0, end = r;
      if (auto a = op->getAttrOfType<IntegerAttr>("start"))
        start = std::clamp<int64_t>(normalize(a.getInt(), r), 0, r);
      if (auto a = op->getAttrOfType<IntegerAttr>("end"))
        end = std::clamp<int64_t>(normalize(a.getInt(), r), 0, r);
      out = SymbolicDims(dims->begin() + start,
                         dims->begin() + std::max(start, end));
    }
  } else if (name == "kiln.size") {
    if (auto dims = known(op->getOperand(0)))
      out = SymbolicDims{product(context, *dims)};
  } else if (name == "kiln.identity" || name == "kiln.cast" ||
             name == "kiln.squeeze" || name == "kiln.unsqueeze" ||
             name == "kiln.reshape" || name == "kiln.flatten") {
    out = operandValues(0);
  } else if (name == "kiln.concat") {
    SymbolicDims all;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto v = operandValues(i);
      if (!v) {
        all.clear();
        break;
      }
      all.append(v->begin(), v->end());
    }
    if (!all.empty())
      out = all;
  } else if (name == "kiln.gather") {
    auto data = operandValues(0);
    auto indices = operandValues(1);
    if (data && indices) {
      SymbolicDims picked;
      for (AffineExpr e : *indices) {
        std::optional<int64_t> i = constantOf(e);
        if (!i)
          return;
        int64_t at = normalize(*i, data->size());
        if (at < 0 || at >= int64_t(data->size()))
          return;
        picked.push_back((*data)[at]);
      }
      out = picked;
    }
  } else if (name == "kiln.slice") {
    auto data = operandValues(0);
    auto starts = operandValues(1), ends = operandValues(2);
    if (data && starts && ends && starts->size() == 1 && ends->size() == 1 &&
        op->getNumOperands() > 4 &&
        !isa<RankedTensorType>(op->getOperand(4).getType())) {
      std::optional<int64_t> s = constantOf((*starts)[0]);
      std::optional<int64_t> e = constantOf((*ends)[0]);
      if (s && e) {
        SliceAxis axis = clampSliceAxis(data->size(), *s, *e, 1);
        out = SymbolicDims(data->begin() + axis.start,
                           data->begin() + axis.start + axis.count);
      }
    }
  } else if (name == "kiln.equal" || name == "kiln.where") {
    // PyTorch's Where(Equal(shape, -1), 1, shape): the tracked elements are
    // sizes (never negative), so comparing one with a negative constant is
    // false; otherwise only constants compare.
    int64_t n = type.getNumElements();
    auto at = [](const SymbolicDims &v, int64_t i) {
      return v[v.size() == 1 ? 0 : i];
    };
    auto fits = [&](const std::optional<SymbolicDims> &v) {
      return v && (v->size() == 1 || int64_t(v->size()) == n);
    };
    SymbolicDims r;
    if (name == "kiln.equal") {
      auto a = operandValues(0), b = operandValues(1);
      if (!fits(a) || !fits(b))
        return;
      for (int64_t i = 0; i < n; ++i) {
        AffineExpr x = at(*a, i), y = at(*b, i);
        std::optional<int64_t> cx = constantOf(x), cy = constantOf(y);
        if (cx && cy)
          r.push_back(constant(context, *cx == *cy));
        else if ((cx && *cx < 0) || (cy && *cy < 0))
          r.push_back(constant(context, 0));
        else if (x == y)
          r.push_back(constant(context, 1));
        else
          return;
      }
    } else {
      auto c = operandValues(0), x = operandValues(1), y = operandValues(2);
      if (!fits(c) || !fits(x) || !fits(y))
        return;
      for (int64_t i = 0; i < n; ++i) {
        std::optional<int64_t> pick = constantOf(at(*c, i));
        if (!pick)
          return;
        r.push_back(*pick ? at(*x, i) : at(*y, i));
      }
    }
    out = r;
  } else if (name == "kiln.add" || name == "kiln.sub" || name == "kiln.mul" ||
             name == "kiln.div") {
    auto a = operandValues(0), b = operandValues(1);
    int64_t n = type.getNumElements();
    if (a && b && (a->size() == 1 || int64_t(a->size()) == n) &&
        (b->size() == 1 || int64_t(b->size()) == n)) {
      SymbolicDims r;
      for (int64_t i = 0; i < n; ++i) {
        AffineExpr x = (*a)[a->size() == 1 ? 0 : i];
        AffineExpr y = (*b)[b->size() == 1 ? 0 : i];
        if (name == "kiln.add")
          r.push_back(x + y);
        else if (name == "kiln.sub")
          r.push_back(x - y);
        else if (name == "kiln.mul")
          r.push_back(x * y);
        else if (std::optional<int64_t> c = constantOf(y); c && *c > 0)
          r.push_back(x.floorDiv(*c)); // sizes: non-negative, so trunc = floor
        else
          return;
      }
      out = r;
    }
  }
  if (out && int64_t(out->size()) == type.getNumElements())
    values[result] = *out;
}

//===----------------------------------------------------------------------===//
// Control flow: If, Loop and Scan
//===----------------------------------------------------------------------===//

bool SymbolicShapes::usesLoopSymbol(AffineExpr expr) const {
  bool uses = false;
  expr.walk([&](AffineExpr e) {
    if (auto symbol = dyn_cast<AffineSymbolExpr>(e))
      uses |= symbol.getPosition() >= symbolList.size();
  });
  return uses;
}

void SymbolicShapes::visitRegions(Operation *op) {
  if (isa<IfOp>(op)) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &nested : block)
          visit(&nested);
    return;
  }
  if (auto loop = dyn_cast<LoopOp>(op)) {
    Block &body = loop.getBody().front();
    unsigned position = symbolList.size() + loopSymbolList.size();
    loopSymbolList.push_back({body.getArgument(0), -1});
    values[body.getArgument(0)] = {getAffineSymbolExpr(position, context)};
    visitLoopBody(op, body, /*firstCarried=*/2, loop.getVInitial(),
                  /*firstCarriedYield=*/1);
    return;
  }
  if (auto scan = dyn_cast<ScanOp>(op)) {
    Block &body = scan.getBody().front();
    unsigned numStates = scan.getNumStates();
    ValueRange operands = scan.getInitialStateAndScanInputs();
    for (unsigned i = 0; i < scan.getNumScanInputs(); ++i) {
      BlockArgument slice = body.getArgument(numStates + i);
      std::optional<SymbolicDims> dims = known(operands[numStates + i]);
      if (!dims) {
        unknownAt[slice] = unknownAt.lookup(operands[numStates + i]);
        continue;
      }
      dims->erase(dims->begin() + scan.getScanInputAxis(i));
      shapes[slice] = *dims;
    }
    visitLoopBody(op, body, /*firstCarried=*/0,
                  operands.take_front(numStates), /*firstCarriedYield=*/0);
  }
}

void SymbolicShapes::visitLoopBody(Operation *op, Block &body,
                                   unsigned firstCarried, ValueRange initial,
                                   unsigned firstCarriedYield) {
  // A carried value has its initial value's dims in every iteration when
  // the body yields it with those dims; otherwise each of its dynamic dims
  // is a loop symbol (its size in the iteration at hand) and the body is
  // analyzed again.
  SmallVector<bool> unknownCarried(initial.size(), false);
  for (size_t round = 0; round <= initial.size(); ++round) {
    for (auto [j, value] : llvm::enumerate(initial)) {
      BlockArgument arg = body.getArgument(firstCarried + j);
      shapes.erase(arg);
      std::optional<SymbolicDims> dims = known(value);
      if (!unknownCarried[j] && dims) {
        shapes[arg] = *dims;
        continue;
      }
      auto type = cast<RankedTensorType>(arg.getType());
      SymbolicDims local;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (!type.isDynamicDim(d)) {
          local.push_back(constant(context, type.getDimSize(d)));
          continue;
        }
        local.push_back(getAffineSymbolExpr(
            symbolList.size() + loopSymbolList.size(), context));
        loopSymbolList.push_back({arg, d});
      }
      shapes[arg] = local;
    }
    for (Operation &nested : body)
      visit(&nested);
    Operation *yield = body.getTerminator();
    bool changed = false;
    for (unsigned j = 0; j < initial.size(); ++j) {
      if (unknownCarried[j])
        continue;
      std::optional<SymbolicDims> before =
          known(body.getArgument(firstCarried + j));
      std::optional<SymbolicDims> after =
          known(yield->getOperand(firstCarriedYield + j));
      if (!before || !after || *before != *after) {
        unknownCarried[j] = true;
        changed = true;
      }
    }
    if (!changed)
      return;
    body.walk([&](Operation *nested) {
      for (Value result : nested->getResults()) {
        shapes.erase(result);
        values.erase(result);
        unknownAt.erase(result);
      }
    });
  }
}

std::optional<SymbolicDims> SymbolicShapes::inferControlFlow(Operation *op,
                                                             unsigned index) {
  auto withoutLoopSymbols =
      [&](std::optional<SymbolicDims> dims) -> std::optional<SymbolicDims> {
    if (dims && llvm::any_of(*dims, [&](AffineExpr e) {
          return usesLoopSymbol(e);
        }))
      return std::nullopt;
    return dims;
  };
  if (auto ifOp = dyn_cast<IfOp>(op)) {
    // Only when both branches give the same dims (otherwise the size
    // depends on the branch taken: data-dependent).
    std::optional<SymbolicDims> a = known(ifOp.thenYield()->getOperand(index));
    std::optional<SymbolicDims> b = known(ifOp.elseYield()->getOperand(index));
    if (!a || !b || *a != *b)
      return std::nullopt;
    return a;
  }
  if (auto loop = dyn_cast<LoopOp>(op)) {
    Block &body = loop.getBody().front();
    if (index < loop.getNumCarried())
      return withoutLoopSymbols(known(body.getArgument(2 + index)));
    // A scan output: the number of iterations, then the yielded dims. The
    // number is known only when the loop cannot stop early.
    std::optional<SymbolicDims> element =
        withoutLoopSymbols(known(body.getTerminator()->getOperand(1 + index)));
    if (!element || isNone(loop.getMaxTripCount()) || !loop.cannotStopEarly())
      return std::nullopt;
    std::optional<SymbolicDims> trips = knownValues(loop.getMaxTripCount());
    if (!trips || trips->size() != 1)
      return std::nullopt;
    element->insert(element->begin(), (*trips)[0]);
    return element;
  }
  if (auto scan = dyn_cast<ScanOp>(op)) {
    Block &body = scan.getBody().front();
    unsigned numStates = scan.getNumStates();
    if (index < numStates)
      return withoutLoopSymbols(known(body.getArgument(index)));
    unsigned k = index - numStates;
    std::optional<SymbolicDims> element =
        withoutLoopSymbols(known(body.getTerminator()->getOperand(index)));
    std::optional<SymbolicDims> input =
        known(scan.getInitialStateAndScanInputs()[numStates]);
    if (!element || !input)
      return std::nullopt;
    element->insert(element->begin() + scan.getScanOutputAxis(k),
                    (*input)[scan.getScanInputAxis(0)]);
    return element;
  }
  return std::nullopt;
}

std::string SymbolicShapes::print(AffineExpr expr) const {
  // Precedence: 0 sum, 1 product/quotient, 2 atom.
  std::function<std::string(AffineExpr, int)> emit = [&](AffineExpr e,
                                                         int outer) {
    auto wrap = [&](std::string s, int own) {
      return own < outer ? "(" + s + ")" : s;
    };
    switch (e.getKind()) {
    case AffineExprKind::Constant: {
      int64_t v = cast<AffineConstantExpr>(e).getValue();
      return v < 0 ? "(0 - " + std::to_string(-v) + ")" : std::to_string(v);
    }
    case AffineExprKind::SymbolId: {
      unsigned position = cast<AffineSymbolExpr>(e).getPosition();
      if (position < symbolList.size())
        return symbolList[position].name;
      // Loop symbols (never in an artifact): for tests and messages.
      int64_t dim = loopSymbolList[position - symbolList.size()].dim;
      return dim < 0 ? std::string("iteration")
                     : "carried_dim" + std::to_string(dim);
    }
    case AffineExprKind::DimId:
      return std::string("?");
    case AffineExprKind::Add: {
      auto bin = cast<AffineBinaryOpExpr>(e);
      AffineExpr rhs = bin.getRHS();
      // a + (-c) and a + b * -1 print as subtractions.
      if (std::optional<int64_t> c = constantOf(rhs); c && *c < 0)
        return wrap(emit(bin.getLHS(), 0) + " - " + std::to_string(-*c), 0);
      if (rhs.getKind() == AffineExprKind::Mul) {
        auto mul = cast<AffineBinaryOpExpr>(rhs);
        if (constantOf(mul.getRHS()) == -1)
          return wrap(emit(bin.getLHS(), 0) + " - " + emit(mul.getLHS(), 1),
                      0);
      }
      return wrap(emit(bin.getLHS(), 0) + " + " + emit(rhs, 0), 0);
    }
    case AffineExprKind::Mul: {
      auto bin = cast<AffineBinaryOpExpr>(e);
      return wrap(emit(bin.getLHS(), 1) + " * " + emit(bin.getRHS(), 2), 1);
    }
    case AffineExprKind::FloorDiv: {
      auto bin = cast<AffineBinaryOpExpr>(e);
      return wrap(emit(bin.getLHS(), 1) + " / " + emit(bin.getRHS(), 2), 1);
    }
    case AffineExprKind::CeilDiv: {
      auto bin = cast<AffineBinaryOpExpr>(e);
      AffineExpr up = bin.getLHS() + bin.getRHS() - 1;
      return wrap(emit(up, 1) + " / " + emit(bin.getRHS(), 2), 1);
    }
    case AffineExprKind::Mod: {
      auto bin = cast<AffineBinaryOpExpr>(e);
      return wrap(emit(bin.getLHS(), 1) + " % " + emit(bin.getRHS(), 2), 1);
    }
    }
    return std::string("?");
  };
  return emit(expr, 0);
}

Value SymbolicShapes::materialize(OpBuilder &b, Location loc, AffineExpr expr,
                                  ValueRange symbolValues) {
  switch (expr.getKind()) {
  case AffineExprKind::Constant:
    return arith::ConstantIndexOp::create(
        b, loc, cast<AffineConstantExpr>(expr).getValue());
  case AffineExprKind::SymbolId:
    return symbolValues[cast<AffineSymbolExpr>(expr).getPosition()];
  case AffineExprKind::DimId:
    return {};
  default:
    break;
  }
  auto bin = cast<AffineBinaryOpExpr>(expr);
  Value lhs = materialize(b, loc, bin.getLHS(), symbolValues);
  Value rhs = materialize(b, loc, bin.getRHS(), symbolValues);
  if (!lhs || !rhs)
    return {};
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mul:
    return arith::MulIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::FloorDiv:
    return arith::FloorDivSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::CeilDiv:
    return arith::CeilDivSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mod:
    return arith::RemSIOp::create(b, loc, lhs, rhs);
  default:
    return {};
  }
}

namespace {
/// kiln-test-symbolic-shapes: prints the analysis into the IR, for lit
/// tests: each result of each op of @main gets `kiln.symbolic_shape` (one
/// string per result: "[batch, 784]", or "unknown since <op>"), and the
/// module the symbols with their defining input dims.
struct TestSymbolicShapesPass
    : PassWrapper<TestSymbolicShapesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestSymbolicShapesPass)
  StringRef getArgument() const override { return "kiln-test-symbolic-shapes"; }
  StringRef getDescription() const override {
    return "Annotate @main's ops with their symbolic shapes (for tests)";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main)
      return;
    SymbolicShapes shapes(main);
    Builder b(&getContext());
    SmallVector<Attribute> symbols;
    for (const ShapeSymbol &s : shapes.symbols())
      symbols.push_back(b.getStringAttr(s.name + " = dim " +
                                        std::to_string(s.dim) + " of arg " +
                                        std::to_string(s.argument)));
    module->setAttr("kiln.symbols", b.getArrayAttr(symbols));
    SmallVector<Attribute> constraints;
    for (const ShapeConstraint &c : shapes.constraints())
      constraints.push_back(b.getStringAttr(shapes.print(c.lhs) +
                                            (c.equal ? " == " : " <= ") +
                                            shapes.print(c.rhs) + " (" +
                                            c.op->getName().getStringRef() +
                                            ")"));
    if (!constraints.empty())
      module->setAttr("kiln.constraints", b.getArrayAttr(constraints));
    auto describe = [&](Value v) -> std::string {
      std::optional<SymbolicDims> dims = shapes.shapeOf(v);
      if (!dims) {
        Operation *at = shapes.whyUnknown(v);
        return "unknown since " +
               (at ? at->getName().getStringRef().str() : std::string("?"));
      }
      std::string text = "[";
      for (auto [i, e] : llvm::enumerate(*dims))
        text += (i ? ", " : "") + shapes.print(e);
      text += "]";
      if (std::optional<SymbolicDims> values = shapes.valuesOf(v)) {
        text += " = [";
        for (auto [i, e] : llvm::enumerate(*values))
          text += (i ? ", " : "") + shapes.print(e);
        text += "]";
      }
      return text;
    };
    main.walk([&](Operation *op) {
      if (op->getNumResults() == 0 || op == main)
        return;
      SmallVector<Attribute> texts;
      for (Value r : op->getResults())
        texts.push_back(b.getStringAttr(
            isa<RankedTensorType>(r.getType()) ? describe(r) : "-"));
      op->setAttr("kiln.symbolic_shape", b.getArrayAttr(texts));
    });
  }
};
} // namespace

void registerSymbolicShapesTestPass() {
  PassRegistration<TestSymbolicShapesPass>();
}

} // namespace kiln
