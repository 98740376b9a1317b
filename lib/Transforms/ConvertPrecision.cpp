//===- ConvertPrecision.cpp - fp32 graphs computed in fp16 or bf16 --------===//
//
// kiln-convert-precision: the mixed-precision rewrite behind kiln-compile
// --precision=fp16|bf16. The ops of a function body are visited in order;
// each kiln op that computes float32 results and is not kept is converted in
// place: its float32 operands are replaced by half values (constants
// converted at compile time, kiln.cast otherwise) and its result types get
// the half element type, checked with the op's own type inference and
// verifier, so any op whose ONNX semantics allow the half type converts
// without a table of ops. Users of a converted result that stay in float32
// read a kiln.cast back to float32, one per value. Ops without float results
// (Shape, comparisons, ArgMax, casts to other types) read the half value
// directly where their verifier accepts it: widening is exact, so they see
// the same numbers they would through a cast.
//
// The lowering computes f16/bf16 elementwise ops in f32 registers and
// accumulates matmuls and reductions in f32, so what the half type changes
// is the storage of every intermediate and weight (rounded once per op) and
// the memory traffic; the default keep classes are the ops whose results
// are sensitive to that rounding (docs/passes/kiln-convert-precision.md).
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNCONVERTPRECISION
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// ONNX op type -> kiln op name ("Softmax" -> "kiln.softmax"), so keep-ops
/// accepts the names a user reads in the ONNX graph.
const llvm::StringMap<std::string> &getOnnxOpNames() {
  static const llvm::StringMap<std::string> names = [] {
    llvm::StringMap<std::string> m;
#define KILN_ONNX_OP(Onnx, Cpp, N)                                             \
  m[#Onnx] = kiln::Cpp::getOperationName().str();
#include "kiln/Dialect/OnnxOps.def"
    return m;
  }();
  return names;
}

/// The quantization ops' float side (scales, dequantized values) belongs to
/// their own rewrites; they are never converted.
bool isQuantOp(Operation *op) {
  static const llvm::StringSet<> names = [] {
    llvm::StringSet<> s;
#define KILN_ONNX_OP(Onnx, Cpp, N) s.insert(kiln::Cpp::getOperationName());
#include "kiln/Dialect/KilnQuantOps.def"
    return s;
  }();
  return names.contains(op->getName().getStringRef());
}

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// Every ONNX node name in `loc` (a fused op's location lists each node it
/// was made from).
SmallVector<StringRef> getNodeNames(Location loc) {
  SmallVector<StringRef> names;
  loc->walk([&](Location l) {
    if (auto name = dyn_cast<NameLoc>(l))
      names.push_back(name.getName().getValue());
    return WalkResult::advance();
  });
  return names;
}

bool isConstant(Value v) {
  return v.getDefiningOp<kiln::ConstantOp>() != nullptr;
}

/// The default keep classes (see the pass description); the class's name,
/// or "" when `op` belongs to none.
StringRef getKeepClass(Operation *op) {
  if (isa<SoftmaxOp, LogSoftmaxOp, AttentionOp>(op))
    return "softmax";
  if (isa<BatchNormalizationOp, InstanceNormalizationOp, LayerNormalizationOp,
          GroupNormalizationOp, LpNormalizationOp,
          MeanVarianceNormalizationOp, RMSNormOp>(op))
    return "normalization";
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceSumSquareOp, ReduceProdOp,
          ReduceL1Op, ReduceL2Op, ReduceLogSumOp, ReduceLogSumExpOp, CumSumOp,
          GlobalAveragePoolOp, GlobalAveragePoolNhwcOp, LinearAttentionOp>(op))
    return "reduction";
  // A residual add: both operands are activations (not constants) with the
  // result's shape. A bias (constant) or a broadcast mask is not one.
  if (auto add = dyn_cast<AddOp>(op)) {
    // Compared by shape: an operand may already have been converted.
    auto shape = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getShape();
    };
    if (!isConstant(add.getA()) && !isConstant(add.getB()) &&
        shape(add.getA()) == shape(add.getResult()) &&
        shape(add.getB()) == shape(add.getResult()))
      return "residual-add";
  }
  // The epilogue fusion folds residual adds into the matmul/conv; such an op
  // holds one (the pipeline runs this pass before that fusion).
  Value residual;
  if (auto m = dyn_cast<FusedMatMulOp>(op))
    residual = m.getResidual();
  else if (auto c = dyn_cast<FusedConvOp>(op))
    residual = c.getResidual();
  else if (auto c = dyn_cast<FusedConvNhwcOp>(op))
    residual = c.getResidual();
  if (residual && !isa<NoneType>(residual.getType()))
    return "residual-add";
  return "";
}

struct ConvertPrecisionPass
    : kiln::impl::KilnConvertPrecisionBase<ConvertPrecisionPass> {
  using Base::Base;

  kiln::Statistic numConverted{this, "ops-converted",
                               "Ops converted to the half type"};
  kiln::Statistic numKept{this, "ops-kept",
                          "Float32 ops kept in float32 by a keep rule"};
  kiln::Statistic numConstants{this, "constants-converted",
                               "Float32 constants converted to the half type"};
  kiln::Statistic numOverflowed{
      this, "constants-overflowed",
      "Converted constants with finite elements beyond the half range"};
  kiln::Statistic numCasts{this, "casts-inserted",
                           "kiln.cast ops inserted at precision boundaries"};
  kiln::Statistic numPairs{this, "cast-pairs-removed",
                           "half -> f32 -> half cast pairs cancelled"};

  LogicalResult initialize(MLIRContext *context) override {
    if (precision != "fp16" && precision != "bf16")
      return emitError(UnknownLoc::get(context))
             << "kiln-convert-precision: precision must be fp16 or bf16, got '"
             << precision << "'";
    classes.clear();
    SmallVector<StringRef> parts;
    StringRef(keepClasses).split(parts, ',', -1, /*KeepEmpty=*/false);
    for (StringRef part : parts) {
      part = part.trim();
      if (part == "none")
        continue;
      if (part != "softmax" && part != "normalization" && part != "reduction" &&
          part != "residual-add")
        return emitError(UnknownLoc::get(context))
               << "kiln-convert-precision: unknown keep class '" << part
               << "' (the classes are softmax, normalization, reduction, "
                  "residual-add, or none)";
      classes.insert(part);
    }
    keptOpNames.clear();
    for (const std::string &name : keepOps) {
      StringRef n = StringRef(name).trim();
      const auto &onnx = getOnnxOpNames();
      auto it = onnx.find(n);
      std::string full;
      if (it != onnx.end())
        full = it->second;
      else if (n.starts_with("kiln."))
        full = n.str();
      else
        full = ("kiln." + n).str();
      if (!RegisteredOperationName::lookup(full, context))
        return emitError(UnknownLoc::get(context))
               << "kiln-convert-precision: keep-ops: '" << n
               << "' is neither an ONNX op type Kiln imports nor a kiln op";
      keptOpNames.insert(full);
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    MLIRContext *context = &getContext();
    half = precision == "bf16" ? FloatType(BFloat16Type::get(context))
                               : FloatType(Float16Type::get(context));
    halfOfValue.clear();
    f32OfValue.clear();
    converted.clear();
    created.clear();
    replacedConstants.clear();
    bypassed.clear();
    keepNodeSet.clear();
    keepNodeSet.insert(keepNodes.begin(), keepNodes.end());
    onlyNodeSet.clear();
    onlyNodeSet.insert(onlyNodes.begin(), onlyNodes.end());

    Block &body = func.getBody().front();
    if (convertIO)
      convertArguments(func);

    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (tryConvert(op))
        continue;
      fixUpUser(op);
      // The ops in If/Loop/Scan regions stay float32 (this pass converts
      // the function's own block): they read float32 copies of the values
      // converted around them.
      op->walk([&](Operation *nested) {
        if (nested != op)
          fixUpUser(nested);
      });
    }
    if (convertIO)
      func.setType(FunctionType::get(
          context, body.getArgumentTypes(),
          body.getTerminator()->getOperandTypes()));
    cleanUp(body);
  }

private:
  /// `type` with the half element type.
  Type toHalf(Type type) const {
    return cast<RankedTensorType>(type).clone(half);
  }

  /// The half version of the float32 value `v`.
  Value getHalf(Value v) {
    if (converted.contains(v))
      return v;
    auto it = halfOfValue.find(v);
    if (it != halfOfValue.end())
      return it->second;
    OpBuilder b(v.getContext());
    Value result;
    if (auto constant = v.getDefiningOp<kiln::ConstantOp>()) {
      b.setInsertionPointAfter(constant);
      result = convertConstant(b, constant);
    }
    // A cast up from the half type: its input is the half value (exact).
    if (!result)
      if (auto up = v.getDefiningOp<kiln::CastOp>())
        if (getElementTypeOrSelf(up.getInput().getType()) == half) {
          result = up.getInput();
          bypassed.insert(up);
          ++numPairs;
        }
    if (!result) {
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
      result = createCast(b, v, half);
    }
    halfOfValue[v] = result;
    return result;
  }

  /// The float32 version of the converted (half) value `v`.
  Value getF32(Value v) {
    auto it = f32OfValue.find(v);
    if (it != f32OfValue.end())
      return it->second;
    OpBuilder b(v.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    Value result = createCast(b, v, b.getF32Type());
    f32OfValue[v] = result;
    return result;
  }

  Value createCast(OpBuilder &b, Value v, Type element) {
    auto type = cast<RankedTensorType>(v.getType()).clone(element);
    auto castOp = kiln::CastOp::create(b, v.getLoc(), type, v,
                                       TypeAttr::get(element),
                                       b.getI64IntegerAttr(1));
    created.insert(castOp);
    return castOp.getResult();
  }

  /// A large float32 tensor's bytes rounded to bfloat16 (nearest, ties to
  /// even; NaN stays a quiet NaN with its sign and upper payload), as
  /// `type`; null when `value` is not a non-splat f32 blob of at least 4096
  /// elements (the element-by-element path takes those). Rounding the bits
  /// is what APFloat does for bf16, whose exponent range is float32's, and
  /// about a hundred times faster: the 30-layer decoder's 134M weights took
  /// 13.5 s of its compile element by element.
  ElementsAttr convertToBf16Bits(ElementsAttr value, RankedTensorType type,
                                 StringRef name) {
    if (!value.getElementType().isF32() || value.getNumElements() < 4096)
      return {};
    ArrayRef<char> data = weightBytes(value, 4);
    if (data.empty())
      return {};
    int64_t n = value.getNumElements();
    std::vector<char> out(size_t(n) * 2);
    bool overflowed = false;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, data.data() + 4 * i, 4);
      uint16_t h;
      if ((u & 0x7fffffffu) > 0x7f800000u) {
        h = uint16_t((u >> 16) | 0x0040u); // NaN: quiet
      } else {
        uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
        h = uint16_t(rounded >> 16);
        // A finite float32 rounded up to infinity.
        overflowed |= (u & 0x7f800000u) != 0x7f800000u &&
                      (h & 0x7fffu) == 0x7f80u;
      }
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
    if (overflowed)
      ++numOverflowed;
    AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(out), alignof(std::max_align_t));
    return DenseResourceElementsAttr::get(type, name, std::move(blob));
  }

  /// `constant` (float32) in the half type, or null when its elements
  /// cannot be read (an elided blob).
  Value convertConstant(OpBuilder &b, kiln::ConstantOp constant) {
    auto type = cast<RankedTensorType>(toHalf(constant.getType()));
    std::string name = "converted";
    if (auto resource =
            dyn_cast<DenseResourceElementsAttr>(constant.getValue()))
      name = resource.getRawHandle().getKey().str();
    else if (auto loc = constant->getLoc()->findInstanceOf<NameLoc>())
      name = loc.getName().str();
    name += precision == "bf16" ? ".bf16" : ".fp16";
    for (char &c : name)
      if (!llvm::isAlnum(c) && c != '_' && c != '.')
        c = '_';
    ElementsAttr converted = precision == "bf16"
                                 ? convertToBf16Bits(constant.getValue(), type,
                                                     name)
                                 : ElementsAttr();
    if (!converted) {
      std::optional<fold::ConstTensor> value =
          fold::ConstTensor::read(constant.getValue());
      if (!value)
        return nullptr;
      fold::ConstTensor result = value->isSplat()
                                     ? fold::ConstTensor::getSplat(type)
                                     : fold::ConstTensor::getDense(type);
      int64_t n = value->isSplat() ? 1 : value->getNumElements();
      bool overflowed = false;
      for (int64_t i = 0; i < n; ++i) {
        double x = value->getFloat(i);
        double r = fold::roundToType(half, x);
        overflowed |= std::isfinite(x) && !std::isfinite(r);
        result.setFloat(i, r);
      }
      if (overflowed)
        ++numOverflowed;
      converted = result.toAttr(name);
    }
    replacedConstants.insert(constant);
    auto newConstant = kiln::ConstantOp::create(b, constant.getLoc(), type,
                                                converted);
    created.insert(newConstant);
    ++numConstants;
    return newConstant.getResult();
  }

  /// Whether `v` is a float32 constant whose every element the half type
  /// holds exactly.
  bool isExactInHalf(Value v) {
    auto constant = v.getDefiningOp<kiln::ConstantOp>();
    if (!constant)
      return false;
    std::optional<fold::ConstTensor> value =
        fold::ConstTensor::read(constant.getValue());
    if (!value)
      return false;
    int64_t n = value->isSplat() ? 1 : value->getNumElements();
    for (int64_t i = 0; i < n; ++i) {
      double x = value->getFloat(i);
      if (fold::roundToType(half, x) != x && !std::isnan(x))
        return false;
    }
    return true;
  }

  /// Whether `op` is kept in float32 by a rule.
  bool isKept(Operation *op) {
    SmallVector<StringRef> nodes = getNodeNames(op->getLoc());
    auto inSet = [&](const llvm::StringSet<> &set) {
      return llvm::any_of(nodes, [&](StringRef n) { return set.contains(n); });
    };
    if (!onlyNodeSet.empty() && !inSet(onlyNodeSet))
      return true;
    if (inSet(keepNodeSet))
      return true;
    if (keptOpNames.contains(op->getName().getStringRef()))
      return true;
    StringRef cls = getKeepClass(op);
    return !cls.empty() && classes.contains(cls);
  }

  /// Whether `op` computes float32 results the pass may convert.
  bool isCandidate(Operation *op) {
    if (op->getDialect() == nullptr ||
        op->getDialect()->getNamespace() != "kiln" || op->getNumRegions() ||
        isa<kiln::ConstantOp, kiln::CastOp, kiln::CastLikeOp, ResizeOp,
            RangeOp>(op) ||
        isQuantOp(op) || !isa<InferTypeOpInterface>(op))
      return false;
    bool anyF32Result = false;
    for (Type t : op->getResultTypes()) {
      if (isF32Tensor(t))
        anyF32Result = true;
      else if (isFloatTensor(t))
        return false;
    }
    if (!anyF32Result)
      return false;
    // Float operands: float32, or half values this pass made.
    for (Value v : op->getOperands())
      if (isFloatTensor(v.getType()) && !isF32Tensor(v.getType()) &&
          !converted.contains(v))
        return false;
    return true;
  }

  /// Re-infers `op`'s result types from its (changed) operands and checks
  /// the op; on success the results have the inferred element types, with
  /// the old shapes (which may be more static than inference's).
  bool retype(Operation *op, bool allowResultChange) {
    auto iface = cast<InferTypeOpInterface>(op);
    SmallVector<Type> inferred;
    {
      ScopedDiagnosticHandler silence(op->getContext(),
                                      [](Diagnostic &) { return success(); });
      if (failed(iface.inferReturnTypes(
              op->getContext(), op->getLoc(), op->getOperands(),
              op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
              op->getRegions(), inferred)) ||
          inferred.size() != op->getNumResults())
        return false;
    }
    SmallVector<Type> oldTypes(op->getResultTypes());
    for (auto [result, type] : llvm::zip(op->getResults(), inferred)) {
      Type oldElement = getElementTypeOrSelf(result.getType());
      Type newElement = getElementTypeOrSelf(type);
      if (oldElement == newElement)
        continue;
      if (!allowResultChange || !oldElement.isF32() || newElement != half)
        return false;
      result.setType(cast<RankedTensorType>(result.getType()).clone(half));
    }
    ScopedDiagnosticHandler silence(op->getContext(),
                                    [](Diagnostic &) { return success(); });
    if (succeeded(verify(op, /*verifyRecursively=*/false)))
      return true;
    for (auto [result, type] : llvm::zip(op->getResults(), oldTypes))
      result.setType(type);
    return false;
  }

  bool tryConvert(Operation *op) {
    if (!isCandidate(op))
      return false;
    if (isKept(op)) {
      ++numKept;
      return false;
    }
    SmallVector<Value> oldOperands(op->getOperands());
    for (OpOperand &operand : op->getOpOperands())
      if (isF32Tensor(operand.get().getType()))
        operand.set(getHalf(operand.get()));
    if (!retype(op, /*allowResultChange=*/true) ||
        llvm::none_of(op->getResultTypes(), [&](Type t) {
          return getElementTypeOrSelf(t) == half;
        })) {
      op->setOperands(oldOperands);
      return false;
    }
    for (Value result : op->getResults())
      if (getElementTypeOrSelf(result.getType()) == half)
        converted.insert(result);
    ++numConverted;
    return true;
  }

  /// `op` stays as it is: it reads float32 where it read converted values,
  /// unless it has no float results and accepts the half values as they are.
  void fixUpUser(Operation *op) {
    // convert-io: the outputs are returned in the half type.
    if (convertIO && isa<func::ReturnOp>(op)) {
      for (OpOperand &operand : op->getOpOperands())
        if (isF32Tensor(operand.get().getType()))
          operand.set(getHalf(operand.get()));
      return;
    }
    bool readsConverted = llvm::any_of(
        op->getOperands(), [&](Value v) { return converted.contains(v); });
    if (!readsConverted)
      return;
    bool floatResults = llvm::any_of(op->getResultTypes(), isFloatTensor);
    if (!floatResults && op->getDialect() &&
        op->getDialect()->getNamespace() == "kiln" &&
        isa<InferTypeOpInterface>(op) && !op->getNumRegions()) {
      // Its other float32 operands may come along when they are constants
      // the half type holds exactly (a comparison with 0): the result is
      // then the same as in float32.
      SmallVector<Value> oldOperands(op->getOperands());
      bool exact = true;
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isF32Tensor(operand.get().getType()))
          continue;
        if (!isExactInHalf(operand.get())) {
          exact = false;
          break;
        }
        operand.set(getHalf(operand.get()));
      }
      if (exact && retype(op, /*allowResultChange=*/false))
        return;
      op->setOperands(oldOperands);
    }
    // A cast to another float type reads the half value directly: widening
    // is exact, and a cast to the half type itself folds away.
    if (auto c = dyn_cast<kiln::CastOp>(op)) {
      if (isa<FloatType>(c.getTo()))
        return;
    }
    for (OpOperand &operand : op->getOpOperands())
      if (converted.contains(operand.get()))
        operand.set(getF32(operand.get()));
  }

  /// convert-io: float32 arguments become half.
  void convertArguments(func::FuncOp func) {
    Block &body = func.getBody().front();
    for (BlockArgument arg : body.getArguments())
      if (isF32Tensor(arg.getType())) {
        arg.setType(toHalf(arg.getType()));
        converted.insert(arg);
      }
  }

  /// Removes casts made for candidates that did not convert, cancels
  /// half -> f32 -> half pairs and folds casts to the same type.
  void cleanUp(Block &body) {
    SmallVector<kiln::CastOp> casts;
    body.walk([&](kiln::CastOp c) { casts.push_back(c); });
    for (kiln::CastOp c : casts) {
      Value input = c.getInput();
      Type to = getElementTypeOrSelf(c.getType());
      if (input.getType() == c.getType()) {
        c.replaceAllUsesWith(input);
        bypassed.insert(c);
        continue;
      }
      auto inner = input.getDefiningOp<kiln::CastOp>();
      if (!inner || to != half)
        continue;
      Type mid = getElementTypeOrSelf(inner.getType());
      if (getElementTypeOrSelf(inner.getInput().getType()) == half &&
          (mid.isF32() || mid.isF64())) {
        c.replaceAllUsesWith(inner.getInput());
        bypassed.insert(c);
        bypassed.insert(inner);
        ++numPairs;
      }
    }
    // Dead ops this pass made or orphaned (its casts and constants, the
    // float32 constants it converted, casts it bypassed), last first.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (op.use_empty() && (created.contains(&op) ||
                             replacedConstants.contains(&op) ||
                             bypassed.contains(&op)))
        op.erase();
    body.walk([&](kiln::CastOp c) {
      if (created.contains(c.getOperation()))
        ++numCasts;
    });
  }

  FloatType half;
  llvm::StringSet<> classes;
  llvm::StringSet<> keptOpNames;
  llvm::StringSet<> keepNodeSet;
  llvm::StringSet<> onlyNodeSet;
  llvm::DenseMap<Value, Value> halfOfValue;
  llvm::DenseMap<Value, Value> f32OfValue;
  llvm::DenseSet<Value> converted;
  llvm::SmallPtrSet<Operation *, 16> created;
  llvm::SmallPtrSet<Operation *, 16> replacedConstants;
  llvm::SmallPtrSet<Operation *, 16> bypassed;
};

} // namespace
