//===- ShardTensorParallel.cpp - One rank's shard of a transformer --------===//
//
// kiln-shard-tensor-parallel{ranks=N rank=R} (Passes.td; Megatron-LM's
// tensor parallelism, ../shared/CLUSTER.md). The pass propagates a sharding
// through @main: each value is replicated (every rank holds all of it) or
// sharded along one dim (rank R holds block R of N equal contiguous
// blocks).
//
//  1. Seeds: every matmul by a constant [K, N] weight (kiln.matmul, or
//     kiln.fused_matmul without trans_b) is tried as column-parallel: its
//     result sharded along the last dim. The trial follows the result
//     through the ops below; a seed is kept when it reaches a matmul by a
//     constant weight that contracts over the sharded dim (row-parallel)
//     and meets no op without a rule. The LM head (it reaches only the
//     graph's output) and the down and output projections themselves (their
//     results reach the next RMSNorm, which has no rule) are not kept.
//  2. The kept seeds are propagated together. Each rule maps the sharded
//     dim of an operand to the result's, and asks the op's other operands
//     to be sharded the same way unless they broadcast along that dim: a
//     constant is sliced, a graph input (the KV cache) becomes the rank's
//     block of it, and anything else must be reached by the propagation
//     itself (Q and K meet at the scores), or the pass fails naming the op.
//       elementwise ops (with broadcasting), cast, swiglu, rotary_embedding
//         (not along the rotated dim), softmax (not along its axis),
//         transpose, concat (not along its axis), reshape (when the sharded
//         dim maps onto one output dim: same dims before it, both divisible
//         by N: head splits and merges, GQA's grouping of query heads),
//         batched matmuls along a batch dim, attention along the heads;
//       a matmul by a constant weight along a row dim: the weight stays;
//       along the contracted dim: row-parallel (the end of the path);
//       the graph's outputs: the rank's block (a KV cache).
//  3. The rewrite, in program order: sliced weights and biases, result
//     types with the sharded dim divided, reshape targets and attention
//     head counts divided, graph inputs and outputs retyped, and each
//     row-parallel matmul followed by kiln.all_reduce, then its bias and
//     residual (added once, after the sum).
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Analysis/SymbolicShapes.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"
#include "kiln/Transforms/Origin.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <optional>
#include <string>

namespace kiln {
#define GEN_PASS_DEF_KILNSHARDTENSORPARALLEL
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

RankedTensorType rankedType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// The constant weight of a matmul-like op that Kiln can shard: B of
/// kiln.matmul or of kiln.fused_matmul without trans_b, a rank-2
/// kiln.constant. Null otherwise.
ConstantOp constantWeight(Operation *op) {
  Value b;
  if (auto mm = dyn_cast<MatMulOp>(op))
    b = mm.getB();
  else if (auto fm = dyn_cast<FusedMatMulOp>(op))
    b = fm.getB();
  else if (auto qm = dyn_cast<QuantizedMatMulOp>(op))
    b = qm.getW();
  else if (auto gemm = dyn_cast<GemmOp>(op);
           gemm && gemm.getTransA() == 0 &&
           gemm.getAlpha().convertToFloat() == 1.0f &&
           gemm.getBeta().convertToFloat() == 1.0f)
    b = gemm.getB();
  else
    return {};
  auto c = b.getDefiningOp<ConstantOp>();
  auto t = c ? rankedType(c.getResult()) : RankedTensorType();
  return t && t.getRank() == 2 && t.hasStaticShape() ? c : ConstantOp();
}

Value matmulLhs(Operation *op) {
  if (auto mm = dyn_cast<MatMulOp>(op))
    return mm.getA();
  if (auto fm = dyn_cast<FusedMatMulOp>(op))
    return fm.getA();
  if (auto qm = dyn_cast<QuantizedMatMulOp>(op))
    return qm.getA();
  if (auto gemm = dyn_cast<GemmOp>(op))
    return gemm.getA();
  return {};
}

/// The weight's dim of the output columns: 1 of a [K, N] weight, 0 of
/// kiln.quantized_matmul's [N, K] (Gemm's transB).
/// (Gemm's B with transB = 1 is [N, K] too.)
int64_t columnsDim(Operation *op) {
  if (auto gemm = dyn_cast<GemmOp>(op))
    return gemm.getTransB() ? 0 : 1;
  if (auto fm = dyn_cast<FusedMatMulOp>(op))
    return fm.getTransB() ? 0 : 1;
  return isa<QuantizedMatMulOp>(op) ? 0 : 1;
}
int64_t rowsDim(Operation *op) { return 1 - columnsDim(op); }

/// The operands of a matmul-like op that act per output column (a bias of
/// [N], a quantized matmul's per-column scales, zero points and row sums)
/// or broadcast (per-tensor ones): indexes into its operands.
SmallVector<unsigned> perColumnOperands(Operation *op) {
  if (isa<FusedMatMulOp>(op))
    return {2, 3}; // bias, residual
  if (isa<GemmOp>(op))
    return {2}; // C
  if (isa<QuantizedMatMulOp>(op))
    return {1, 3, 4, 5, 6, 7, 8};
  return {};
}

bool isBroadcastElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, WhereOp, CastOp,
             SwiGLUOp>(op) ||
         (op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() == 1);
}

std::string describe(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "'";
  std::string node = findOnnxNode(op->getLoc());
  if (!node.empty())
    s += " (ONNX node '" + node + "')";
  return s;
}

/// The [start, end) along `last` of a Slice of `y` on that axis alone,
/// with constant bounds and step 1.
std::optional<std::pair<int64_t, int64_t>>
sliceBounds(SliceOp slice, int64_t last, int64_t size) {
  std::optional<SmallVector<int64_t>> starts =
      getKnownIntValues(slice.getStarts());
  std::optional<SmallVector<int64_t>> ends =
      getKnownIntValues(slice.getEnds());
  std::optional<SmallVector<int64_t>> axes =
      isNone(slice.getAxes()) ? std::optional<SmallVector<int64_t>>(
                                    SmallVector<int64_t>{last})
                              : getKnownIntValues(slice.getAxes());
  if (!starts || !ends || !axes || starts->size() != 1 ||
      ends->size() != 1 || axes->size() != 1 ||
      ((*axes)[0] < 0 ? (*axes)[0] + last + 1 : (*axes)[0]) != last)
    return std::nullopt;
  if (!isNone(slice.getSteps())) {
    std::optional<SmallVector<int64_t>> steps =
        getKnownIntValues(slice.getSteps());
    if (!steps || steps->size() != 1 || (*steps)[0] != 1)
      return std::nullopt;
  }
  auto clamp = [&](int64_t v) {
    return std::min(std::max(v < 0 ? v + size : v, int64_t(0)), size);
  };
  return std::make_pair(clamp((*starts)[0]), clamp((*ends)[0]));
}

/// What the propagation decided for one op that a sharded value reaches.
enum class Role { Follow, ColumnParallel, RowParallel, Return };

/// The sharding of @main's values and what each op does with it.
struct Plan {
  llvm::DenseMap<Value, int64_t> dim;         ///< sharded values
  llvm::SetVector<Operation *> columnSeeds;   ///< column-parallel matmuls
  llvm::SetVector<Operation *> rowSinks;      ///< row-parallel matmuls
  /// Operands that must be sharded but are not reached by the propagation
  /// (yet): checked at the end. Constants and graph inputs are sliced.
  llvm::SmallVector<std::pair<OpOperand *, int64_t>> demands;
  llvm::DenseMap<OpOperand *, int64_t> sliceConstants;
  /// Column-parallel matmuls whose columns are packed segments (a fused
  /// QKV projection that a Split cuts into Q, K and V): each segment is
  /// split by the ranks on its own (the rank keeps its heads of each).
  llvm::DenseMap<Operation *, SmallVector<int64_t>> segments;
  llvm::DenseMap<BlockArgument, int64_t> shardedInputs;
};

class Propagation {
public:
  Propagation(func::FuncOp fn, int64_t ranks, SymbolicShapes &shapes,
              Plan &plan, bool trial)
      : fn(fn), ranks(ranks), shapes(shapes), plan(plan), trial(trial) {}

  /// Shards `v` along `d` and follows its users. False with `error` (and
  /// the op) when a user has no rule for it.
  bool shard(Value v, int64_t d) {
    auto it = plan.dim.find(v);
    if (it != plan.dim.end()) {
      if (it->second == d)
        return true;
      return fail(v.getDefiningOp() ? v.getDefiningOp() : fn,
                  "a value sharded along dims " + std::to_string(it->second) +
                      " and " + std::to_string(d));
    }
    auto type = rankedType(v);
    if (!type || d < 0 || d >= type.getRank())
      return fail(v.getDefiningOp() ? v.getDefiningOp() : fn,
                  "an unranked value or a dim out of range");
    if (!type.isDynamicDim(d) && type.getDimSize(d) % ranks != 0)
      return failSize(v.getDefiningOp() ? v.getDefiningOp() : fn,
                  "dim " + std::to_string(d) + " of size " +
                      std::to_string(type.getDimSize(d)) +
                      " is not divisible by " + std::to_string(ranks) +
                      " ranks");
    plan.dim[v] = d;
    for (OpOperand &use : v.getUses())
      if (!visit(use, d))
        return false;
    return true;
  }

  std::string error;
  Operation *errorOp = nullptr;
  bool reachedRowParallel = false;
  /// The failure was a size the ranks do not divide (heads, columns): the
  /// model has the structure, not the sizes, for this many ranks.
  bool notDivisible = false;

private:
  bool fail(Operation *op, const std::string &why) {
    if (error.empty()) {
      error = why;
      errorOp = op;
    }
    return false;
  }
  bool failSize(Operation *op, const std::string &why) {
    if (error.empty())
      notDivisible = true;
    return fail(op, why);
  }

  /// Asks operand `operand` to be sharded along `d` (its own dims): a
  /// value the propagation reaches, a constant to slice, a graph input.
  bool demand(OpOperand &operand, int64_t d) {
    Value v = operand.get();
    auto it = plan.dim.find(v);
    if (it != plan.dim.end())
      return it->second == d ||
             fail(operand.getOwner(),
                  "operand " + std::to_string(operand.getOperandNumber()) +
                      " is sharded along dim " + std::to_string(it->second) +
                      ", the op needs dim " + std::to_string(d));
    auto type = rankedType(v);
    if (!type || (!type.isDynamicDim(d) && type.getDimSize(d) % ranks != 0))
      return failSize(operand.getOwner(),
                  "operand " + std::to_string(operand.getOperandNumber()) +
                      " cannot be split in " + std::to_string(ranks) +
                      " along dim " + std::to_string(d));
    if (v.getDefiningOp<ConstantOp>()) {
      if (!type.hasStaticShape())
        return fail(operand.getOwner(), "a constant of dynamic shape");
      plan.sliceConstants[&operand] = d;
      return true;
    }
    if (auto arg = dyn_cast<BlockArgument>(v);
        arg && arg.getOwner()->getParentOp() == fn.getOperation()) {
      // A KV cache, not an activation that a matmul by a weight reads (the
      // residual stream stays whole).
      for (OpOperand &u : arg.getUses())
        if (u.getOperandNumber() == 0 && constantWeight(u.getOwner()))
          return fail(operand.getOwner(),
                      "operand " + std::to_string(operand.getOperandNumber()) +
                          " is a graph input that a matmul by a weight also "
                          "reads whole");
      auto [at, inserted] = plan.shardedInputs.try_emplace(arg, d);
      if (!inserted && at->second != d)
        return fail(operand.getOwner(), "a graph input needed along two dims");
      // Its other users must agree: follow it like a computed value.
      return trial || shard(v, d);
    }
    plan.demands.push_back({&operand, d});
    return true;
  }

  /// `result` sharded along `rd`; every other operand of `op` either
  /// broadcasts along the result's dim `rd` or is asked for its aligned dim.
  bool elementwise(Operation *op, OpOperand &from, int64_t rd,
                   unsigned numOperands) {
    auto rt = rankedType(op->getResult(0));
    if (!rt)
      return fail(op, "an unranked result");
    for (unsigned i = 0; i < numOperands; ++i) {
      OpOperand &o = op->getOpOperand(i);
      if (&o == &from || isNone(o.get()))
        continue;
      auto t = rankedType(o.get());
      if (!t)
        return fail(op, "an unranked operand");
      int64_t aligned = rd - (rt.getRank() - t.getRank());
      if (aligned < 0 || t.getDimSize(aligned) == 1)
        continue; // broadcast along the sharded dim
      if (!demand(o, aligned))
        return false;
    }
    return shard(op->getResult(0), rd);
  }

public:
  /// A column-parallel matmul: its result along the last dim, and its
  /// bias (and residual) with it.
  bool seed(Operation *op) {
    Value y = op->getResult(0);
    int64_t last = rankedType(y).getRank() - 1;
    if (std::optional<SmallVector<int64_t>> segs = packedSegments(y, last))
      plan.segments[op] = *segs;
    return epilogue(op, last);
  }

  /// `y`'s users all Slices along `last` that cut it into contiguous
  /// pieces covering it (nn.MultiheadAttention's Q, K and V of its packed
  /// projection): the pieces' sizes, when each divides by the ranks.
  std::optional<SmallVector<int64_t>> slicedSegments(Value y, int64_t last) {
    int64_t total = rankedType(y).getDimSize(last);
    if (y.use_empty() || ShapedType::isDynamic(total))
      return std::nullopt;
    std::map<int64_t, int64_t> pieces; // start -> end
    for (Operation *user : y.getUsers()) {
      auto slice = dyn_cast<SliceOp>(user);
      if (!slice || slice.getData() != y)
        return std::nullopt;
      auto b = sliceBounds(slice, last, total);
      if (!b)
        return std::nullopt;
      auto [it, inserted] = pieces.emplace(b->first, b->second);
      if (!inserted && it->second != b->second)
        return std::nullopt;
    }
    SmallVector<int64_t> sizes;
    int64_t at = 0;
    for (auto [start, end] : pieces) {
      if (start != at || end <= start || (end - start) % ranks)
        return std::nullopt;
      sizes.push_back(end - start);
      at = end;
    }
    if (at != total || sizes.size() < 2)
      return std::nullopt;
    return sizes;
  }

  /// The sizes of the packed segments `y`'s only user, a Split along
  /// `last`, cuts it into, when each divides by the ranks.
  std::optional<SmallVector<int64_t>> packedSegments(Value y, int64_t last) {
    if (std::optional<SmallVector<int64_t>> s = slicedSegments(y, last))
      return s;
    if (!y.hasOneUse())
      return std::nullopt;
    auto split = dyn_cast<SplitOp>(*y.getUsers().begin());
    if (!split)
      return std::nullopt;
    int64_t axis = int64_t(split.getAxis());
    if ((axis < 0 ? axis + last + 1 : axis) != last)
      return std::nullopt;
    int64_t total = rankedType(y).getDimSize(last);
    SmallVector<int64_t> sizes;
    if (auto attr = split.getSplitAttr())
      sizes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else if (!isNone(split.getSplitInput())) {
      std::optional<SmallVector<int64_t>> v =
          getKnownIntValues(split.getSplitInput());
      if (!v)
        return std::nullopt;
      sizes = *v;
    } else {
      int64_t n = int64_t(split.getNumResults());
      if (ShapedType::isDynamic(total) || total % n)
        return std::nullopt;
      sizes.assign(size_t(n), total / n);
    }
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s <= 0 || s % ranks)
        return std::nullopt;
      sum += s;
    }
    if (sum != total)
      return std::nullopt;
    return sizes;
  }

private:
  /// The result of matmul-like `op` sharded along `rd`: its per-column
  /// operands (a fused_matmul's bias and residual, a quantized matmul's
  /// scales, zero points, row sums and bias) broadcast along it or are
  /// asked for it.
  bool epilogue(Operation *op, int64_t rd) {
    auto rt = rankedType(op->getResult(0));
    for (unsigned i : perColumnOperands(op)) {
      OpOperand &o = op->getOpOperand(i);
      if (isNone(o.get()))
        continue;
      auto t = rankedType(o.get());
      if (!t)
        return fail(op, "an unranked bias or residual");
      int64_t aligned = rd - (rt.getRank() - t.getRank());
      if (aligned >= 0 && t.getDimSize(aligned) != 1 && !demand(o, aligned))
        return false;
    }
    return shard(op->getResult(0), rd);
  }

  bool visit(OpOperand &use, int64_t d) {
    Operation *op = use.getOwner();
    unsigned index = use.getOperandNumber();
    if (isa<func::ReturnOp>(op))
      return true;
    auto inType = rankedType(use.get());
    int64_t inRank = inType.getRank();

    // A matmul by a constant weight: along a row dim the weight stays;
    // along the contracted dim it is row-parallel.
    if (ConstantOp w = constantWeight(op); w && index == 0) {
      if (d == inRank - 1) {
        auto fm = dyn_cast<FusedMatMulOp>(op);
        auto qm = dyn_cast<QuantizedMatMulOp>(op);
        if ((fm && fm.getActivation() != "none") ||
            (qm && qm.getActivation() != "none"))
          return fail(op, "a row-parallel matmul with an activation "
                          "epilogue (the activation would apply to a "
                          "partial sum)");
        if (!trial)
          plan.rowSinks.insert(op);
        reachedRowParallel = true;
        return true;
      }
      return epilogue(op, d);
    }
    if (isa<MatMulOp, FusedMatMulOp>(op) && index < 2) {
      // Batched matmul of two activations: along a batch dim only.
      auto rt = rankedType(op->getResult(0));
      if (d >= inRank - 2)
        return fail(op, "a matmul of two activations sharded along a "
                        "matrix dim");
      int64_t rd = d + (rt.getRank() - inRank);
      OpOperand &other = op->getOpOperand(1 - index);
      auto ot = rankedType(other.get());
      int64_t od = rd - (rt.getRank() - ot.getRank());
      if (od >= 0 && ot.getDimSize(od) != 1 && !demand(other, od))
        return false;
      return epilogue(op, rd);
    }
    if (isa<FusedMatMulOp, QuantizedMatMulOp, GemmOp>(op)) // bias, ...
      return fail(op, "a matmul whose bias, residual or quantization "
                      "parameter is sharded but not its product");
    if (isa<QuantizeLinearOp, DequantizeLinearOp>(op)) {
      // Per-tensor parameters only (a per-axis scale would be sliced along
      // its axis, not broadcast).
      for (unsigned i = 1; i < op->getNumOperands(); ++i) {
        auto t = rankedType(op->getOperand(i));
        if (index != 0 || (t && t.getNumElements() != 1))
          return fail(op, "a per-axis quantization on a sharded value");
      }
      return shard(op->getResult(0), d);
    }
    if (auto attn = dyn_cast<AttentionOp>(op)) {
      int64_t heads = attn.isBSHD() ? 2 : 1;
      if (index == 3)
        return fail(op, "a sharded attention mask");
      if (d != heads)
        return fail(op, "attention sharded along dim " + std::to_string(d) +
                            ", not its heads");
      if (attn.getNumHeads() % ranks || attn.getNumKvHeads() % ranks)
        return failSize(op, "attention heads (" +
                            std::to_string(attn.getNumHeads()) + " / " +
                            std::to_string(attn.getNumKvHeads()) +
                            " KV) not divisible by " + std::to_string(ranks));
      for (unsigned i = 0; i < 3; ++i)
        if (i != index && !demand(op->getOpOperand(i), heads))
          return false;
      if (!isNone(attn.getMask())) {
        auto mt = rankedType(attn.getMask());
        int64_t md = 1 - (4 - mt.getRank());
        if (md >= 0 && mt.getDimSize(md) != 1 &&
            !demand(op->getOpOperand(3), md))
          return false;
      }
      return shard(attn.getResult(), heads);
    }
    if (isBroadcastElementwise(op)) {
      auto rt = rankedType(op->getResult(0));
      return elementwise(op, use, d + (rt.getRank() - inRank),
                         op->getNumOperands());
    }
    if (auto rope = dyn_cast<RotaryEmbeddingOp>(op)) {
      if (index != 0 || d == inRank - 1)
        return fail(op, "a rotary embedding sharded along its rotated dim "
                        "or through cos/sin");
      return elementwise(op, use, d, 3);
    }
    if (auto sm = dyn_cast<SoftmaxOp>(op)) {
      int64_t axis = int64_t(sm.getAxis()); // I64Attr: read as uint64_t
      if (axis < 0)
        axis += inRank;
      if (axis == d)
        return fail(op, "a softmax along the sharded dim");
      return shard(sm.getResult(), d);
    }
    if (auto tr = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t> perm;
      if (auto p = tr.getPermAttr())
        perm.assign(p.asArrayRef().begin(), p.asArrayRef().end());
      else
        for (int64_t i = inRank - 1; i >= 0; --i)
          perm.push_back(i);
      for (int64_t i = 0; i < int64_t(perm.size()); ++i)
        if (perm[i] == d)
          return shard(tr.getResult(), i);
      return fail(op, "a transpose without the sharded dim");
    }
    if (auto slice = dyn_cast<SliceOp>(op)) {
      if (index != 0)
        return fail(op, "sharded slice bounds");
      // Along the sharded dim: a piece of a packed projection (its bounds
      // divided in the rewrite); along another dim the block stays.
      if (d == inRank - 1 && !plan.segments.count(use.get().getDefiningOp()))
        return fail(op, "a slice along the sharded dim of a value that is "
                        "not split segment by segment");
      if (d != inRank - 1) {
        std::optional<SmallVector<int64_t>> axes =
            isNone(slice.getAxes()) ? std::nullopt
                                    : getKnownIntValues(slice.getAxes());
        if (!axes)
          return fail(op, "a slice whose axes are not known");
        for (int64_t a : *axes)
          if ((a < 0 ? a + inRank : a) == d)
            return fail(op, "a slice along the sharded dim");
      }
      return shard(slice.getResult(), d);
    }
    if (auto split = dyn_cast<SplitOp>(op)) {
      if (index != 0)
        return fail(op, "sharded split sizes");
      int64_t axis = int64_t(split.getAxis());
      if (axis < 0)
        axis += inRank;
      // Along the sharded dim only when the producer keeps every
      // segment's share (a packed QKV projection): then each piece is.
      if (axis == d && !plan.segments.count(use.get().getDefiningOp()))
        return fail(op, "a split along the sharded dim of a value that is "
                        "not split segment by segment");
      for (Value r : split.getResults())
        if (!shard(r, d))
          return false;
      return true;
    }
    if (auto cat = dyn_cast<ConcatOp>(op)) {
      int64_t axis = int64_t(cat.getAxis());
      if (axis < 0)
        axis += inRank;
      if (axis == d)
        return fail(op, "a concat along the sharded dim");
      for (OpOperand &o : op->getOpOperands())
        if (&o != &use && !demand(o, d))
          return false;
      return shard(cat.getResult(), d);
    }
    if (auto shape = dyn_cast<ShapeOp>(op)) {
      // Read for its other dims only (PyTorch's repeat_kv reads the cache
      // length of a sharded K): every use a Gather of constant indices
      // that are not the sharded dim. The shape itself is not sharded.
      int64_t start = int64_t(shape.getStart());
      if (start < 0)
        start += inRank;
      for (OpOperand &u : shape.getResult().getUses()) {
        auto g = dyn_cast<GatherOp>(u.getOwner());
        std::optional<SmallVector<int64_t>> at =
            g ? getKnownIntValues(g.getIndices()) : std::nullopt;
        if (!g || u.getOperandNumber() != 0 || !at)
          return fail(op, "the shape of a sharded value, read other than by "
                          "a Gather of constant indices");
        for (int64_t i : *at)
          if ((i < 0 ? i + inRank - start : i) + start == d)
            return fail(op, "the size of the sharded dim read from a shape");
      }
      return true;
    }
    if (auto un = dyn_cast<UnsqueezeOp>(op)) {
      std::optional<SmallVector<int64_t>> axes;
      if (auto attr = un.getAxesAttr())
        axes = SmallVector<int64_t>(attr.asArrayRef());
      else if (!isNone(un.getAxesInput()))
        axes = getKnownIntValues(un.getAxesInput());
      if (index != 0 || !axes)
        return fail(op, "an unsqueeze with axes not known at compile time");
      int64_t outRank = rankedType(un.getResult()).getRank();
      SmallVector<bool> inserted(size_t(outRank), false);
      for (int64_t a : *axes)
        inserted[size_t(a < 0 ? a + outRank : a)] = true;
      for (int64_t o = 0, i = 0; o < outRank; ++o) {
        if (inserted[size_t(o)])
          continue;
        if (i++ == d)
          return shard(un.getResult(), o);
      }
      return fail(op, "an unsqueeze that loses the sharded dim");
    }
    if (auto ex = dyn_cast<ExpandOp>(op)) {
      // The sharded dim is not broadcast (its size is the input's): the
      // target's entry there is 1 or that size, divided in the rewrite.
      if (index != 0)
        return fail(op, "a sharded expand target");
      int64_t od = d + (rankedType(ex.getResult()).getRank() - inRank);
      if (inType.getDimSize(d) == 1)
        return fail(op, "an expand that broadcasts the sharded dim");
      return shard(ex.getResult(), od);
    }
    if (auto rs = dyn_cast<ReshapeOp>(op)) {
      if (index != 0)
        return fail(op, "a sharded reshape target");
      std::optional<int64_t> od = reshapedDim(rs, d);
      if (!od)
        return failSize(op, "a reshape that does not keep the sharded dim "
                        "whole (the dims before it must match and both "
                        "sizes divide by " + std::to_string(ranks) + ")");
      return shard(rs.getResult(), *od);
    }
    return fail(op, "no tensor-parallel rule for this op");
  }

  /// The output dim of `rs` that input dim `d` maps onto, keeping its
  /// blocks: the dims before it equal on both sides (static sizes, or the
  /// same symbolic dim), and both sizes divisible by the ranks.
  std::optional<int64_t> reshapedDim(ReshapeOp rs, int64_t d) {
    auto in = rankedType(rs.getData());
    auto out = rankedType(rs.getResult());
    if (!in || !out || d >= out.getRank())
      return std::nullopt;
    for (int64_t i = 0; i < d; ++i) {
      int64_t a = in.getDimSize(i), b = out.getDimSize(i);
      if (!ShapedType::isDynamic(a) || !ShapedType::isDynamic(b)) {
        if (a != b)
          return std::nullopt;
        continue;
      }
      std::optional<SymbolicDims> sa = shapes.shapeOf(rs.getData());
      std::optional<SymbolicDims> sb = shapes.shapeOf(rs.getResult());
      if (!sa || !sb || (*sa)[i] != (*sb)[i])
        return std::nullopt;
    }
    int64_t a = in.getDimSize(d), b = out.getDimSize(d);
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a % ranks ||
        b % ranks)
      return std::nullopt;
    return d;
  }

  func::FuncOp fn;
  int64_t ranks;
  SymbolicShapes &shapes;
  Plan &plan;
  bool trial;
};

/// The bytes of block `block` of `ranks` along `dim` of constant `c`.
FailureOr<ElementsAttr> sliceConstant(ConstantOp c, int64_t dim, int64_t ranks,
                                      int64_t block,
                                      ArrayRef<int64_t> segments = {}) {
  auto type = cast<RankedTensorType>(c.getResult().getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= ranks;
  auto sliced = RankedTensorType::get(shape, type.getElementType());
  ElementsAttr value = c.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(value); dense && dense.isSplat())
    return ElementsAttr(dense.resizeSplat(sliced));
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (bits % 8)
    return failure();
  int64_t width = bits / 8;
  ArrayRef<char> bytes = weightBytes(value, width);
  if (int64_t(bytes.size()) != type.getNumElements() * width)
    return failure();
  int64_t outer = 1, inner = width;
  for (int64_t i = 0; i < dim; ++i)
    outer *= type.getDimSize(i);
  for (int64_t i = dim + 1; i < type.getRank(); ++i)
    inner *= type.getDimSize(i);
  // Block `block` of each segment along `dim` (one segment: the whole dim).
  SmallVector<int64_t> segs(segments.begin(), segments.end());
  if (segs.empty())
    segs.push_back(type.getDimSize(dim));
  int64_t full = type.getDimSize(dim) * inner, part = full / ranks;
  std::vector<char> out(size_t(outer * part));
  char *to = out.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t at = 0, s = 0; s < int64_t(segs.size()); at += segs[s++]) {
      int64_t piece = segs[s] / ranks * inner;
      std::memcpy(to, bytes.data() + o * full + at * inner + block * piece,
                  size_t(piece));
      to += piece;
    }
  // Small ones inline (readable IR), large ones as blobs like the weights.
  if (out.size() < 1024)
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(
        sliced, ArrayRef<char>(out.data(), out.size())));
  std::string name = "tp_shard";
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value))
    name = res.getRawHandle().getKey().str() + "_tp" + std::to_string(block);
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(out), alignof(std::max_align_t));
  return ElementsAttr(
      DenseResourceElementsAttr::get(sliced, name, std::move(blob)));
}

RankedTensorType dividedType(Type t, int64_t dim, int64_t ranks) {
  auto type = cast<RankedTensorType>(t);
  if (type.isDynamicDim(dim))
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= ranks;
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

/// What a model's ONNX sharding annotations (IR version 11, recorded by
/// the importer as kiln.sharding_annotations and kiln.device_configurations)
/// say of its matmuls in the configuration of `ranks` devices.
struct Annotations {
  /// The configuration followed; empty when the model has none (or they are
  /// ignored): the plan is inferred.
  std::string configuration;
  /// ONNX node -> "column", "row" or "replicated" (its weight's sharding).
  llvm::StringMap<std::string> weightRole;

  bool active() const { return !configuration.empty(); }

  /// The first ONNX node of `op`'s location that has a weight role, and
  /// the role ({"", ""} when none).
  std::pair<std::string, std::string> roleOf(Operation *op) const {
    SmallVector<std::string> nodes, origins;
    collectLocationInfo(op->getLoc(), nodes, origins);
    for (const std::string &node : nodes) {
      auto it = weightRole.find(node);
      if (it != weightRole.end())
        return {node, it->second};
    }
    return {};
  }
};

FailureOr<Annotations> readAnnotations(ModuleOp module, int64_t ranks) {
  Annotations a;
  auto configs =
      module->getAttrOfType<ArrayAttr>("kiln.device_configurations");
  auto nodes =
      module->getAttrOfType<DictionaryAttr>("kiln.sharding_annotations");
  if (!configs || !nodes)
    return a;
  auto malformed = [&](llvm::StringRef what) {
    module.emitError() << "kiln-shard-tensor-parallel: malformed " << what;
    return failure();
  };
  std::string available;
  for (Attribute c : configs) {
    auto d = dyn_cast<DictionaryAttr>(c);
    auto name = d ? d.getAs<StringAttr>("name") : StringAttr();
    auto n = d ? d.getAs<IntegerAttr>("num_devices") : IntegerAttr();
    if (!name || !n)
      return malformed("kiln.device_configurations");
    if (n.getInt() == ranks && a.configuration.empty())
      a.configuration = name.str();
    available += (available.empty() ? "'" : ", '") + name.str() + "' (" +
                 std::to_string(n.getInt()) + " devices)";
  }
  if (a.configuration.empty()) {
    module.emitError() << "kiln-shard-tensor-parallel: the model's ONNX "
                          "sharding annotations are for "
                       << available << ", not " << ranks
                       << " ranks (--tensor-parallel-plan=inferred splits "
                          "it as Kiln infers from the graph)";
    return failure();
  }
  std::optional<std::pair<std::string, int64_t>> stage;
  for (NamedAttribute node : nodes) {
    auto entries = dyn_cast<ArrayAttr>(node.getValue());
    if (!entries)
      return malformed("kiln.sharding_annotations");
    for (Attribute e : entries) {
      auto d = dyn_cast<DictionaryAttr>(e);
      auto config = d ? d.getAs<StringAttr>("configuration") : StringAttr();
      auto tensors = d ? d.getAs<ArrayAttr>("tensors") : ArrayAttr();
      if (!config || !tensors)
        return malformed("kiln.sharding_annotations");
      if (config.getValue() != a.configuration)
        continue;
      if (auto p = d.getAs<IntegerAttr>("pipeline_stage")) {
        if (stage && stage->second != p.getInt()) {
          module.emitError()
              << "kiln-shard-tensor-parallel: ONNX node '"
              << node.getName().getValue() << "' is in pipeline stage "
              << p.getInt() << ", node '" << stage->first << "' in stage "
              << stage->second
              << ": pipeline parallelism is not supported (Kiln splits "
                 "tensors over the ranks)";
          return failure();
        }
        stage = {node.getName().str(), p.getInt()};
      }
      for (Attribute t : tensors) {
        auto td = dyn_cast<DictionaryAttr>(t);
        auto shards = td ? td.getAs<IntegerAttr>("shards") : IntegerAttr();
        auto tensor = td ? td.getAs<StringAttr>("tensor") : StringAttr();
        if (!td || !tensor)
          return malformed("kiln.sharding_annotations");
        if (shards && shards.getInt() != ranks) {
          module.emitError()
              << "kiln-shard-tensor-parallel: ONNX node '"
              << node.getName().getValue() << "' splits '"
              << tensor.getValue() << "' in "
              << shards.getInt() << " shards, but configuration '"
              << a.configuration << "' has " << ranks << " devices";
          return failure();
        }
      }
      if (auto w = d.getAs<StringAttr>("weight"))
        a.weightRole[node.getName().getValue()] = w.str();
    }
  }
  return a;
}

/// "column-parallel", "row-parallel" or "whole on every rank".
const char *roleName(llvm::StringRef role) {
  return role == "column" ? "column-parallel"
         : role == "row"  ? "row-parallel"
                          : "whole on every rank";
}

struct KilnShardTensorParallelPass
    : kiln::impl::KilnShardTensorParallelBase<KilnShardTensorParallelPass> {
  using Base::Base;

  kiln::Statistic numColumn{this, "column-parallel",
                            "Matmuls split by weight columns"};
  kiln::Statistic numRow{this, "row-parallel", "Matmuls split by weight rows"};
  kiln::Statistic numAllReduce{this, "all-reduces", "kiln.all_reduce ops made"};
  kiln::Statistic numInputs{this, "sharded-inputs",
                            "Graph inputs that became the rank's block"};
  kiln::Statistic numOutputs{this, "sharded-outputs",
                             "Graph outputs that became the rank's block"};
  kiln::Statistic numAnnotated{
      this, "annotated-matmuls",
      "Matmuls split (or kept whole) as the ONNX sharding annotations say"};

  void runOnOperation() override {
    // ranks = 1: a one-rank shard, all-reduces included (the identity):
    // the path a single GPU checks (scripts/gpu-check.sh).
    ModuleOp module = getOperation();
    if (ranks < 1 || rank < 0 || rank >= ranks) {
      module.emitError() << "kiln-shard-tensor-parallel: rank " << rank
                         << " of " << ranks << " ranks";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("main");
    if (!fn || fn.getBody().getBlocks().size() != 1) {
      module.emitError("kiln-shard-tensor-parallel: no single-block @main");
      return signalPassFailure();
    }
    SymbolicShapes shapes(fn);
    Annotations annotations;
    if (annotate) {
      FailureOr<Annotations> read = readAnnotations(module, ranks);
      if (failed(read))
        return signalPassFailure();
      annotations = std::move(*read);
    }

    // 1. Seeds that reach a row-parallel matmul.
    SmallVector<Operation *> candidates;
    fn.walk([&](Operation *op) {
      ConstantOp w = constantWeight(op);
      if (w && op->getParentOp() == fn.getOperation() &&
          rankedType(w.getResult()).getDimSize(columnsDim(op)) % ranks == 0 &&
          !matmulLhs(op).getDefiningOp<ConstantOp>())
        candidates.push_back(op);
    });
    // 2. In program order, each kept seed is propagated at once with the
    // others: a matmul whose input an earlier seed already split (the down
    // and output projections) is that seed's row-parallel end, not a seed.
    Plan plan;
    Propagation prop(fn, ranks, shapes, plan, /*trial=*/false);
    // Why the first candidate that met an op without a rule was dropped:
    // the error when no candidate is kept.
    std::string firstWhy;
    SmallVector<std::pair<Operation *, std::string>> dropped;
    for (Operation *op : candidates) {
      if (plan.dim.count(matmulLhs(op)))
        continue;
      // Annotated: the seeds are the matmuls annotated column-parallel.
      auto [node, role] = annotations.roleOf(op);
      if (annotations.active() && role != "column")
        continue;
      Plan trialPlan;
      Propagation trial(fn, ranks, shapes, trialPlan, /*trial=*/true);
      if (!trial.seed(op) || !trial.reachedRowParallel) {
        if (annotations.active()) {
          InFlightDiagnostic d = op->emitError();
          d << "kiln-shard-tensor-parallel: ONNX node '" << node
            << "' is annotated column-parallel, but ";
          if (trial.errorOp)
            d << "the split of its columns stops at "
              << describe(trial.errorOp) << ": " << trial.error;
          else
            d << "the split of its columns reaches no matmul that "
                 "contracts over them";
          return signalPassFailure();
        }
        if (trial.errorOp) {
          std::string why = describe(op) + " stops at " +
                            describe(trial.errorOp) + ": " + trial.error;
          if (firstWhy.empty())
            firstWhy = "; e.g. " + why;
          // Left whole, replicated on every rank, for its sizes: say so
          // (9 heads over 2 ranks leave the attention whole and split only
          // the MLP).
          if (trial.notDivisible)
            dropped.push_back({op, why});
        }
        continue;
      }
      plan.columnSeeds.insert(op);
      if (!prop.seed(op)) {
        prop.errorOp->emitError()
            << "kiln-shard-tensor-parallel: cannot shard "
            << describe(prop.errorOp) << ": " << prop.error;
        return signalPassFailure();
      }
    }
    if (!plan.columnSeeds.empty())
      for (auto &[op, why] : dropped)
        if (!plan.dim.count(op->getResult(0)) &&
            !plan.rowSinks.contains(op))
          op->emitRemark() << "kiln-shard-tensor-parallel: left whole on "
                              "every rank: "
                           << why;
    if (annotations.active() && failed(checkAnnotated(fn, annotations, plan)))
      return signalPassFailure();
    if (plan.columnSeeds.empty()) {
      if (annotations.active()) {
        fn.emitError() << "kiln-shard-tensor-parallel: the ONNX sharding "
                          "annotations of configuration '"
                       << annotations.configuration
                       << "' split no matmul's weight by columns";
        return signalPassFailure();
      }
      fn.emitError("kiln-shard-tensor-parallel: no matmul of @main can be "
                   "split by columns up to a matmul that contracts over "
                   "them (no transformer block or MLP found)")
          << firstWhy;
      return signalPassFailure();
    }
    for (auto [operand, d] : plan.demands) {
      auto it = plan.dim.find(operand->get());
      if (it == plan.dim.end() || it->second != d) {
        Operation *op = operand->getOwner();
        op->emitError() << "kiln-shard-tensor-parallel: cannot shard "
                        << describe(op) << ": operand "
                        << operand->getOperandNumber()
                        << " is computed from replicated values but the op "
                           "needs it split along dim "
                        << d;
        return signalPassFailure();
      }
    }
    if (failed(rewrite(fn, plan)))
      return signalPassFailure();
    Builder b(module.getContext());
    SmallVector<NamedAttribute> tp{
        b.getNamedAttr("rank", b.getI64IntegerAttr(rank)),
        b.getNamedAttr("ranks", b.getI64IntegerAttr(ranks)),
        b.getNamedAttr("plan", b.getStringAttr(annotations.active()
                                                   ? "annotations"
                                                   : "inferred"))};
    if (annotations.active())
      tp.push_back(b.getNamedAttr(
          "configuration", b.getStringAttr(annotations.configuration)));
    module->setAttr("kiln.tensor_parallel", b.getDictionaryAttr(tp));
  }

  /// Every matmul an annotation names ends up as it says: column-parallel
  /// (a seed), row-parallel (reached by a seed's split along its contracted
  /// dim) or whole; every annotated node is found.
  LogicalResult checkAnnotated(func::FuncOp fn, const Annotations &annotations,
                               const Plan &plan) {
    llvm::StringSet<> found;
    int64_t matched = 0;
    WalkResult walked = fn.walk([&](Operation *op) {
      if (!matmulLhs(op))
        return WalkResult::advance();
      auto [node, role] = annotations.roleOf(op);
      if (role.empty())
        return WalkResult::advance();
      found.insert(node);
      llvm::StringRef got = plan.columnSeeds.contains(op) ? "column"
                            : plan.rowSinks.contains(op) ? "row"
                                                         : "replicated";
      if (got == role) {
        ++matched;
        return WalkResult::advance();
      }
      InFlightDiagnostic d = op->emitError();
      d << "kiln-shard-tensor-parallel: ONNX node '" << node
        << "' is annotated " << roleName(role) << ", but the annotated "
        << "column-parallel matmuls make it " << roleName(got);
      if (role == "row")
        d << ": no column-parallel matmul's split reaches its contracted dim";
      else if (got == "row")
        d << ": the split of a column-parallel matmul reaches its contracted "
             "dim";
      else if (role == "column")
        d << ": Kiln cannot split its weight (a constant [K, N] with N "
             "divisible by the ranks)";
      return WalkResult::interrupt();
    });
    if (walked.wasInterrupted())
      return failure();
    for (const auto &entry : annotations.weightRole)
      if (!found.contains(entry.getKey()))
        return fn.emitError()
               << "kiln-shard-tensor-parallel: ONNX node '" << entry.getKey()
               << "' has a sharding annotation for its weight, but no matmul "
                  "of the compiled graph comes from it";
    numAnnotated += matched;
    return success();
  }

  /// A reshape's or expand's target with output dim `d` divided by the
  /// ranks: the constant (or the constant piece of a concat of pieces)
  /// that gives it.
  LogicalResult divideShapeTarget(Operation *rs, OpOperand &targetOperand,
                                  int64_t d) {
    OpBuilder b(rs);
    // An expand's 1 broadcasts: it stays.
    bool keepOne = isa<ExpandOp>(rs);
    auto divided = [&](ConstantOp c, int64_t at) -> FailureOr<Value> {
      std::optional<SmallVector<int64_t>> v = getKnownIntValues(c.getResult());
      if (!v || at >= int64_t(v->size()))
        return failure();
      if ((*v)[at] > 1 || ((*v)[at] == 1 && !keepOne)) {
        if ((*v)[at] % ranks)
          return failure();
        (*v)[at] /= ranks;
      }
      // 0 copies the (divided) input dim; -1 is inferred from the rest.
      auto type = cast<RankedTensorType>(c.getResult().getType());
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfter(c);
      return ConstantOp::create(b, c.getLoc(),
                                DenseIntElementsAttr::get(type, *v))
          .getResult();
    };
    Value target = targetOperand.get();
    if (auto c = target.getDefiningOp<ConstantOp>()) {
      FailureOr<Value> nv = divided(c, d);
      if (failed(nv))
        return failure();
      targetOperand.set(*nv);
      return success();
    }
    if (auto cat = target.getDefiningOp<ConcatOp>()) {
      int64_t at = 0;
      for (auto [i, piece] : llvm::enumerate(cat.getInputs())) {
        auto t = rankedType(piece);
        if (!t || !t.hasStaticShape() || t.getRank() != 1)
          return failure();
        int64_t n = t.getDimSize(0);
        if (d < at + n) {
          auto c = piece.getDefiningOp<ConstantOp>();
          if (!c)
            return failure();
          FailureOr<Value> nv = divided(c, d - at);
          if (failed(nv))
            return failure();
          SmallVector<Value> pieces(cat.getInputs());
          pieces[i] = *nv;
          auto copy = ConcatOp::create(b, cat.getLoc(), cat.getType(), pieces,
                                       cat.getAxis());
          targetOperand.set(copy.getResult());
          return success();
        }
        at += n;
      }
    }
    return failure();
  }

  /// Replaces the weight operand of matmul-like `op` by the rank's block of
  /// it along `dim` (a new constant after the old one).
  LogicalResult sliceWeight(Operation *op, int64_t dim,
                            ArrayRef<int64_t> segments = {}) {
    ConstantOp w = constantWeight(op);
    FailureOr<ElementsAttr> value =
        sliceConstant(w, dim, ranks, rank, segments);
    if (failed(value))
      return op->emitError() << "kiln-shard-tensor-parallel: cannot read "
                                "the weight of "
                             << describe(op);
    OpBuilder b(w);
    b.setInsertionPointAfter(w);
    op->getOpOperand(isa<QuantizedMatMulOp>(op) ? 2 : 1).set(
        ConstantOp::create(b, w.getLoc(), *value).getResult());
    return success();
  }

  /// A row-parallel kiln.quantized_matmul: the rank's columns of W [N, K]
  /// (its share of K) with their row sums, the bias on rank 0 only, the
  /// result in f32 (a partial sum is not requantized), summed, then
  /// quantized as the op's result was.
  LogicalResult rewriteQuantizedRowParallel(QuantizedMatMulOp qm,
                                            ConstantOp w) {
    FailureOr<ElementsAttr> value = sliceConstant(w, 1, ranks, rank);
    auto wType = cast<RankedTensorType>(w.getResult().getType());
    ArrayRef<char> bytes =
        succeeded(value) ? weightBytes(*value, 1) : ArrayRef<char>();
    int64_t n = wType.getDimSize(0), k = wType.getDimSize(1) / ranks;
    if (failed(value) || int64_t(bytes.size()) != n * k)
      return qm.emitError() << "kiln-shard-tensor-parallel: cannot read the "
                               "int8 weight of "
                            << describe(qm);
    bool isUnsigned = wType.getElementType().isUnsignedInteger();
    SmallVector<int32_t> sums(size_t(n), 0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        char c = bytes[size_t(i * k + j)];
        sums[size_t(i)] += isUnsigned ? int32_t(uint8_t(c)) : int32_t(int8_t(c));
      }
    OpBuilder b(w);
    b.setInsertionPointAfter(w);
    Value newW = ConstantOp::create(b, w.getLoc(), *value).getResult();
    auto sumsType = RankedTensorType::get({n}, b.getI32Type());
    Value newSums = ConstantOp::create(
                        b, w.getLoc(),
                        DenseElementsAttr::get(sumsType, ArrayRef(sums)))
                        .getResult();
    b.setInsertionPoint(qm);
    Value none = NoneOp::create(b, qm.getLoc()).getResult();
    Value yScale = qm.getYScale(), yZero = qm.getYZeroPoint();
    bool requantized = !isNone(yScale);
    SmallVector<Value> operands(qm->getOperands());
    operands[2] = newW;
    operands[4] = newSums;
    if (rank != 0)
      operands[6] = none; // the bias, added once
    operands[7] = none;
    operands[8] = none;
    auto outType = cast<RankedTensorType>(qm.getResult().getType());
    auto f32Type =
        RankedTensorType::get(outType.getShape(), b.getF32Type());
    auto partial = QuantizedMatMulOp::create(b, qm.getLoc(), TypeRange{f32Type},
                                             operands, qm->getAttrs());
    Value result =
        AllReduceOp::create(b, qm.getLoc(), f32Type, partial.getResult())
            .getResult();
    if (requantized)
      result = QuantizeLinearOp::create(b, qm.getLoc(), TypeRange{outType},
                                        ValueRange{result, yScale, yZero},
                                        ArrayRef<NamedAttribute>{})
                   .getResult();
    qm.getResult().replaceAllUsesWith(result);
    qm.erase();
    return success();
  }

  LogicalResult rewrite(func::FuncOp fn, Plan &plan) {
    // Constants and weights, per use.
    for (auto [operand, d] : plan.sliceConstants) {
      auto c = operand->get().getDefiningOp<ConstantOp>();
      // A packed projection's bias is packed like its columns.
      ArrayRef<int64_t> segs;
      auto seg = plan.segments.find(operand->getOwner());
      if (seg != plan.segments.end() &&
          d == rankedType(operand->get()).getRank() - 1)
        segs = seg->second;
      FailureOr<ElementsAttr> value = sliceConstant(c, d, ranks, rank, segs);
      if (failed(value))
        return operand->getOwner()->emitError()
               << "kiln-shard-tensor-parallel: cannot read the constant "
                  "operand "
               << operand->getOperandNumber() << " of "
               << describe(operand->getOwner());
      OpBuilder b(c);
      b.setInsertionPointAfter(c);
      operand->set(
          ConstantOp::create(b, c.getLoc(), *value).getResult());
    }
    for (Operation *op : plan.columnSeeds) {
      auto seg = plan.segments.find(op);
      if (failed(sliceWeight(op, columnsDim(op),
                             seg == plan.segments.end()
                                 ? ArrayRef<int64_t>()
                                 : ArrayRef<int64_t>(seg->second))))
        return failure();
      ++numColumn;
    }
    // Graph inputs.
    Block &body = fn.getBody().front();
    for (auto [arg, d] : plan.shardedInputs) {
      arg.setType(dividedType(arg.getType(), d, ranks));
      ++numInputs;
    }
    // Result types, reshape targets, attention heads, in program order.
    for (Operation &op : body) {
      if (isa<ReshapeOp, ExpandOp>(&op) && plan.dim.count(op.getResult(0)) &&
          failed(divideShapeTarget(&op, op.getOpOperand(1),
                                   plan.dim[op.getResult(0)])))
        return op.emitError() << "kiln-shard-tensor-parallel: cannot divide "
                                 "the head count of the target shape of "
                              << describe(&op)
                              << " (not a constant, or a concat with a "
                                 "constant piece there)";
      if (auto slice = dyn_cast<SliceOp>(&op);
          slice && plan.dim.count(slice.getData()) &&
          plan.dim[slice.getData()] ==
              rankedType(slice.getData()).getRank() - 1 &&
          plan.segments.count(slice.getData().getDefiningOp())) {
        // A piece [start, end) of the packed columns: the rank's share of
        // it sits at [start / N, end / N) of the rank's packed columns.
        int64_t last = rankedType(slice.getData()).getRank() - 1;
        int64_t full = rankedType(slice.getData()).getDimSize(last) * ranks;
        auto b = sliceBounds(slice, last, full);
        OpBuilder builder(slice);
        auto bound = [&](int64_t v) {
          return ConstantOp::create(
                     builder, slice.getLoc(),
                     DenseIntElementsAttr::get(
                         RankedTensorType::get({1}, builder.getI64Type()),
                         ArrayRef<int64_t>{v / ranks}))
              .getResult();
        };
        slice.getStartsMutable().assign(bound(b->first));
        slice.getEndsMutable().assign(bound(b->second));
      }
      if (auto split = dyn_cast<SplitOp>(&op);
          split && plan.dim.count(split.getInput())) {
        int64_t axis = int64_t(split.getAxis());
        if (axis < 0)
          axis += rankedType(split.getInput()).getRank();
        if (axis == plan.dim[split.getInput()]) {
          if (auto attr = split.getSplitAttr()) {
            SmallVector<int64_t> sizes(attr.asArrayRef());
            for (int64_t &v : sizes)
              v /= ranks;
            split.setSplitAttr(DenseI64ArrayAttr::get(&getContext(), sizes));
          } else if (!isNone(split.getSplitInput())) {
            auto c = split.getSplitInput().getDefiningOp<ConstantOp>();
            std::optional<SmallVector<int64_t>> sizes =
                c ? getKnownIntValues(c.getResult()) : std::nullopt;
            if (!sizes)
              return split.emitError()
                     << "kiln-shard-tensor-parallel: the sizes of "
                     << describe(split) << " are not a constant";
            for (int64_t &v : *sizes)
              v /= ranks;
            OpBuilder b(c);
            b.setInsertionPointAfter(c);
            split.getSplitInputMutable().assign(
                ConstantOp::create(
                    b, c.getLoc(),
                    DenseIntElementsAttr::get(
                        cast<RankedTensorType>(c.getResult().getType()),
                        *sizes))
                    .getResult());
          }
        }
      }
      if (auto attn = dyn_cast<AttentionOp>(&op);
          attn && plan.dim.count(attn.getResult())) {
        attn.setNumHeads(attn.getNumHeads() / ranks);
        attn.setNumKvHeads(attn.getNumKvHeads() / ranks);
      }
      for (Value r : op.getResults()) {
        auto it = plan.dim.find(r);
        if (it != plan.dim.end())
          r.setType(dividedType(r.getType(), it->second, ranks));
      }
    }
    // Row-parallel matmuls: the rank's rows, the sum, then bias/residual.
    for (Operation *op : plan.rowSinks) {
      ConstantOp w = constantWeight(op);
      if (auto qm = dyn_cast<QuantizedMatMulOp>(op)) {
        if (failed(rewriteQuantizedRowParallel(qm, w)))
          return failure();
        ++numRow;
        ++numAllReduce;
        continue;
      }
      if (failed(sliceWeight(op, rowsDim(op))))
        return failure();
      OpBuilder b(op);
      Value partial = op->getResult(0);
      Value bias, residual;
      if (auto fm = dyn_cast<FusedMatMulOp>(op)) {
        bias = isNone(fm.getBias()) ? Value() : fm.getBias();
        residual = isNone(fm.getResidual()) ? Value() : fm.getResidual();
        if (bias || residual) {
          Value none = NoneOp::create(b, op->getLoc()).getResult();
          fm.getBiasMutable().assign(none);
          fm.getResidualMutable().assign(none);
        }
      }
      if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getC() &&
                                            !isNone(gemm.getC())) {
        bias = gemm.getC(); // beta = 1 (constantWeight)
        gemm.getCMutable().assign(NoneOp::create(b, op->getLoc()).getResult());
      }
      b.setInsertionPointAfter(op);
      auto sum = AllReduceOp::create(b, op->getLoc(), partial.getType(),
                                     partial);
      partial.replaceAllUsesExcept(sum.getResult(), sum);
      Value result = sum.getResult();
      for (Value extra : {bias, residual}) {
        if (!extra)
          continue;
        auto add = AddOp::create(b, op->getLoc(), result.getType(), result,
                                 extra);
        result.replaceAllUsesExcept(add.getResult(), add);
        result = add.getResult();
      }
      ++numRow;
      ++numAllReduce;
    }
    // The function's type: its (retyped) inputs and outputs.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (Value v : ret.getOperands())
      if (plan.dim.count(v))
        ++numOutputs;
    fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                                 ret.getOperandTypes()));
    return success();
  }
};

} // namespace
