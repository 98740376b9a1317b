//===- VectorizeInnerLoops.cpp - Vector bodies for elementwise loops ------===//
//
// kiln-cpu-vectorize-inner-loops: the innermost scf.for of an elementwise
// loop nest (what linalg-to-parallel-loops and kiln-cpu-split-parallel-loops
// make of an elementwise linalg.generic) gets a vector body here instead of
// being left to LLVM's loop vectorizer. LLVM fully unrolled an innermost
// loop of up to 32 iterations (the channels of a channels-last tensor) and
// then vectorized the loop around it with gathers and scatters of stride C:
// EfficientNet-B0's squeeze-and-excitation Mul over [1, 112, 112, 32] took
// 0.5 ms where a vector loop takes 0.05 ms.
//
//   scf.for %i = %lb to %ub step 1 {          scf.for %i = %lb to %vub step VL {
//     %a = memref.load %A[%n, %h, %i]           %a = vector.load %A[%n, %h, %i]
//     %s = memref.load %S[%n, %i0]      ->      %s = memref.load %S[%n, %i0]
//     %y = arith.mulf %a, %s                    %sv = vector.broadcast %s
//     memref.store %y, %Y[%n, %h, %i]           %y = arith.mulf %a, %sv
//   }                                           vector.store %y, %Y[%n, %h, %i]
//                                             }
//                                             scf.for %i = %vub to %ub ... (the
//                                             original body: the remainder)
//
// A loop is taken when its body is straight-line code of memref.load /
// memref.store, constants and elementwise-mappable scalar ops (arith, math),
// with step 1 and no loop-carried values, and every access that depends on
// the induction variable has it, unchanged, as its last index into a memref
// whose last dimension is contiguous (the others independent of it). Any
// other use of the induction variable (index arithmetic, a transposed
// access, a store to a fixed address) leaves the loop to LLVM. VL is the
// vector register's width in the widest element type the loop computes
// (AVX-512: 16 floats), lowered to fewer lanes when the static trip count
// is not a multiple of it (24 channels: 8 lanes, no remainder); the loop is
// left alone when it has fewer iterations than lanes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Whether the last dimension of `type` has unit stride.
bool lastDimContiguous(MemRefType type) {
  if (type.getRank() == 0)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return strides.back() == 1;
}

/// A scalar type a vector lane may hold here.
bool isLaneType(Type t) {
  return isa<FloatType>(t) ||
         (isa<IntegerType>(t) && cast<IntegerType>(t).getWidth() <= 64);
}

/// A type loaded and stored as vectors: a memref of i1 holds a byte per
/// element, where a vector<Nxi1> in memory is N bits.
bool isMemoryLaneType(Type t) {
  return isLaneType(t) && t.getIntOrFloatBitWidth() >= 8;
}

/// Whether `op` (arith or math, elementwise) is one this pass may widen: a
/// math op that LLVM lowers on vectors (an intrinsic) or that
/// kiln-cpu-approximate-math expands (f32 erf, tanh, expm1). The others (acosh, atan,
/// f64 erf, ...) become libm calls per scalar, which vectors cannot reach.
bool isVectorizableOp(Operation *op) {
  if (isa<arith::ArithDialect>(op->getDialect()))
    return true;
  if (isa<math::ErfOp, math::TanhOp, math::ExpM1Op>(op))
    return op->getResult(0).getType().isF32();
  return isa<math::AbsFOp, math::AbsIOp, math::CeilOp, math::CopySignOp,
             math::CosOp, math::CountLeadingZerosOp,
             math::CountTrailingZerosOp, math::CtPopOp, math::ExpOp,
             math::Exp2Op, math::FloorOp, math::FmaOp,
             math::LogOp, math::Log10Op, math::Log1pOp, math::Log2Op,
             math::PowFOp, math::RoundEvenOp, math::RoundOp, math::RsqrtOp,
             math::SinOp, math::SqrtOp, math::TruncOp>(op);
}

struct VectorizeInnerLoopsPass
    : PassWrapper<VectorizeInnerLoopsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(VectorizeInnerLoopsPass)
  VectorizeInnerLoopsPass() = default;
  VectorizeInnerLoopsPass(const VectorizeInnerLoopsPass &other)
      : PassWrapper(other) {}
  explicit VectorizeInnerLoopsPass(int64_t bits) { vectorBits = bits; }

  StringRef getArgument() const override {
    return "kiln-cpu-vectorize-inner-loops";
  }
  StringRef getDescription() const override {
    return "Give the innermost loop of elementwise loop nests a vector body "
           "(contiguous loads/stores, broadcast invariants) and a scalar "
           "remainder";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect,
                    vector::VectorDialect>();
  }
  Option<int64_t> vectorBits{*this, "vector-bits",
                             llvm::cl::desc("Width of a vector register"),
                             llvm::cl::init(512)};

  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (isInnermost(loop))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      vectorize(loop);
  }

  static bool isInnermost(scf::ForOp loop) {
    for (Operation &op : loop.getBody()->without_terminator())
      if (op.getNumRegions() > 0)
        return false;
    return true;
  }

  /// The lanes for `loop`, or 0 when it is not taken. `varying` gets the
  /// values that depend on the induction variable.
  int64_t analyze(scf::ForOp loop, llvm::DenseSet<Value> &varying) {
    if (loop.getNumResults() != 0 || !isConstantIntValue(loop.getStep(), 1))
      return 0;
    Value iv = loop.getInductionVar();
    if (!iv.getType().isIndex())
      return 0;
    varying.insert(iv);
    unsigned widest = 0;
    bool anyAccess = false;
    // An access indexed by the iv: [..., iv] with the rest invariant.
    auto contiguousAccess = [&](MemRefType type, ValueRange indices) {
      if (indices.empty() || indices.back() != iv ||
          !lastDimContiguous(type))
        return false;
      for (Value index : indices.drop_back())
        if (varying.contains(index))
          return false;
      return true;
    };
    for (Operation &op : loop.getBody()->without_terminator()) {
      bool dependent = llvm::any_of(op.getOperands(), [&](Value v) {
        return varying.contains(v);
      });
      if (auto load = dyn_cast<memref::LoadOp>(op)) {
        if (!dependent)
          continue; // invariant: loaded once per iteration, broadcast
        if (!contiguousAccess(load.getMemRefType(), load.getIndices()) ||
            !isMemoryLaneType(load.getType()))
          return 0;
        anyAccess = true;
      } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
        if (!contiguousAccess(store.getMemRefType(), store.getIndices()) ||
            !isMemoryLaneType(store.getValueToStore().getType()))
          return 0;
        anyAccess = true;
        continue;
      } else if (op.hasTrait<OpTrait::ConstantLike>()) {
        continue;
      } else if (!OpTrait::hasElementwiseMappableTraits(&op) ||
                 !isa<arith::ArithDialect, math::MathDialect>(
                     op.getDialect()) ||
                 op.getNumResults() != 1) {
        return 0;
      } else if (dependent && !isVectorizableOp(&op)) {
        return 0;
      } else if (!dependent) {
        continue;
      } else {
        // The iv itself must not feed arithmetic (an iota, an index).
        if (llvm::is_contained(op.getOperands(), iv))
          return 0;
        for (Value v : op.getOperands())
          if (!isLaneType(v.getType()))
            return 0;
        if (!isLaneType(op.getResult(0).getType()))
          return 0;
      }
      for (Value r : op.getResults()) {
        varying.insert(r);
        unsigned bits = r.getType().getIntOrFloatBitWidth();
        if (bits >= 8)
          widest = std::max(widest, bits);
      }
    }
    if (!anyAccess)
      return 0;
    // Loads count too: a loop of f32 stores of i8 loads is as wide as f32.
    for (Value v : varying)
      if (v != iv && isLaneType(v.getType()) &&
          v.getType().getIntOrFloatBitWidth() >= 8)
        widest = std::max(widest, v.getType().getIntOrFloatBitWidth());
    if (widest == 0)
      widest = 32;
    int64_t lanes = std::max<int64_t>(1, vectorBits / widest);
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    if (lb && ub) {
      int64_t trips = *ub - *lb;
      // Fewer lanes rather than a remainder: 24 channels as 3 x 8.
      while (lanes > 4 && trips % lanes != 0 && trips < 4 * lanes)
        lanes /= 2;
      if (trips < lanes)
        return 0;
    }
    return lanes < 2 ? 0 : lanes;
  }

  void vectorize(scf::ForOp loop) {
    llvm::DenseSet<Value> varying;
    int64_t lanes = analyze(loop, varying);
    if (lanes == 0)
      return;
    Location loc = loop.getLoc();
    OpBuilder b(loop);
    Value lb = loop.getLowerBound(), ub = loop.getUpperBound();
    // The vector loop's end: lb + (ub - lb) / lanes * lanes.
    Value vf = arith::ConstantIndexOp::create(b, loc, lanes);
    std::optional<int64_t> lbc = getConstantIntValue(lb);
    std::optional<int64_t> ubc = getConstantIntValue(ub);
    Value vectorEnd;
    if (lbc && ubc) {
      vectorEnd = arith::ConstantIndexOp::create(
          b, loc, *lbc + (*ubc - *lbc) / lanes * lanes);
    } else {
      Value span = arith::SubIOp::create(b, loc, ub, lb);
      vectorEnd = arith::AddIOp::create(
          b, loc, lb,
          arith::MulIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, span, vf), vf));
    }
    auto vectorLoop = scf::ForOp::create(b, loc, lb, vectorEnd, vf);
    {
      OpBuilder vb = OpBuilder::atBlockBegin(vectorLoop.getBody());
      IRMapping scalars; // the invariant values, cloned as they are
      IRMapping vectors; // the varying ones: their vectors
      Value iv = vectorLoop.getInductionVar();
      scalars.map(loop.getInductionVar(), iv);
      auto vectorOf = [&](Value v, Type scalar) -> Value {
        if (Value vec = vectors.lookupOrNull(v))
          return vec;
        Value broadcast = vector::BroadcastOp::create(
            vb, loc, VectorType::get({lanes}, scalar),
            scalars.lookupOrDefault(v));
        vectors.map(v, broadcast); // once per invariant
        return broadcast;
      };
      for (Operation &op : loop.getBody()->without_terminator()) {
        bool dependent = llvm::any_of(op.getOperands(), [&](Value v) {
          return varying.contains(v);
        });
        if (!dependent && !isa<memref::StoreOp>(op)) {
          vb.clone(op, scalars);
          continue;
        }
        if (auto load = dyn_cast<memref::LoadOp>(op)) {
          SmallVector<Value> indices;
          for (Value index : load.getIndices())
            indices.push_back(scalars.lookupOrDefault(index));
          Value vec = vector::LoadOp::create(
              vb, loc, VectorType::get({lanes}, load.getType()),
              scalars.lookupOrDefault(load.getMemRef()), indices);
          vectors.map(load.getResult(), vec);
          continue;
        }
        if (auto store = dyn_cast<memref::StoreOp>(op)) {
          SmallVector<Value> indices;
          for (Value index : store.getIndices())
            indices.push_back(scalars.lookupOrDefault(index));
          Value value = store.getValueToStore();
          vector::StoreOp::create(vb, loc, vectorOf(value, value.getType()),
                                  scalars.lookupOrDefault(store.getMemRef()),
                                  indices);
          continue;
        }
        // An elementwise op: its vector form.
        SmallVector<Value> operands;
        for (Value v : op.getOperands())
          operands.push_back(vectorOf(v, v.getType()));
        OperationState state(loc, op.getName());
        state.addOperands(operands);
        state.addAttributes(op.getAttrs());
        state.addTypes(
            VectorType::get({lanes}, op.getResult(0).getType()));
        Operation *vop = vb.create(state);
        vectors.map(op.getResult(0), vop->getResult(0));
      }
    }
    // The remainder: the original loop from where the vector loop stopped
    // (no iterations when the lanes divide the trip count).
    if (lbc && ubc && (*ubc - *lbc) % lanes == 0) {
      loop.erase();
      return;
    }
    loop.getLowerBoundMutable().assign(vectorEnd);
  }
};

} // namespace

std::unique_ptr<Pass> createVectorizeInnerLoopsPass(int64_t vectorBits) {
  return std::make_unique<VectorizeInnerLoopsPass>(vectorBits);
}

void registerVectorizeInnerLoopsPass() {
  PassRegistration<VectorizeInnerLoopsPass>();
}

} // namespace kiln::cpu
