//===- WeightTransforms.cpp - The weight transforms left to run time -------===//
//
// kiln-cpu-find-weight-transforms runs on tensors, right before
// bufferization, when every compile-time rewrite of the weights has been
// made (constant folding, the transposed Linear weights, the packed
// panels, oneDNN's calls). What is left in @main that computes only from
// weights (the `kiln.weight` arguments and constants) runs on every call
// although its result never changes: a transpose of a tied embedding, a
// weight cast or materialized from a splat. Each such op whose result has
// a user is recorded in the module attribute `kiln.weight_transforms`:
//
//   [{op = "kiln.transpose", weights = ["embed.weight"],
//     onnx_nodes = ["/lm_head/MatMul"], bytes = 113246208 : i64}, ...]
//
// (`bytes`: the result's size per run; 0 when it has a run-time dim). Views
// (reshapes, slices, casts, to_buffer) are not transforms: they cost
// nothing; nor is a weight inserted into part of a tensor the inputs fill
// too (a ViT's class token concatenated with the patch embeddings), nor its
// broadcast to a run-time batch that only such inserts read. A buffer
// (memref.alloc, also of a run-time size: a oneDNN call's output) is not
// derived from weights.
// kiln-compile prints them, records their number in the artifact (option
// `runtime_weight_transforms`) and lists them in --report; the goal of the
// CPU backend is none.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln::cpu {
namespace {


/// Ops that only look at their operand's data differently (no work).
bool isView(Operation *op) {
  return isa<ViewLikeOpInterface, tensor::CollapseShapeOp,
             tensor::ExpandShapeOp, tensor::ExtractSliceOp, tensor::CastOp,
             tensor::DimOp, tensor::EmptyOp, bufferization::ToBufferOp,
             bufferization::ToTensorOp, memref::ReinterpretCastOp,
             memref::GetGlobalOp>(op);
}

/// A copy or broadcast of a weight (linalg.broadcast, linalg.copy, or a
/// generic that only yields its input) whose every user inserts it into a
/// slice of another tensor: with a dynamic batch, a ViT's class token is
/// broadcast to the batch and inserted beside the patches, which is the
/// concatenation's copy, not a transform of the weight.
bool isCopyIntoSlices(Operation *op) {
  bool copy = isa<linalg::BroadcastOp, linalg::CopyOp>(op);
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    Block &body = generic.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    copy = body.getOperations().size() == 1 && yield->getNumOperands() == 1 &&
           generic.getNumDpsInputs() == 1 &&
           yield->getOperand(0) == body.getArgument(0);
  }
  if (!copy || op->getNumResults() != 1 || op->getResult(0).use_empty())
    return false;
  return llvm::all_of(op->getResult(0).getUses(), [](OpOperand &use) {
    auto insert = dyn_cast<tensor::InsertSliceOp>(use.getOwner());
    return insert && use.get() == insert.getSource();
  });
}

struct FindWeightTransformsPass
    : PassWrapper<FindWeightTransformsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FindWeightTransformsPass)
  StringRef getArgument() const override {
    return "kiln-cpu-find-weight-transforms";
  }
  StringRef getDescription() const override {
    return "Record the ops of @main that compute only from weights (run "
           "on every call) as the module attribute kiln.weight_transforms";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    // The weights each weight-derived value comes from (empty: a constant).
    llvm::DenseMap<Value, llvm::SetVector<StringRef>> derived;
    for (BlockArgument arg : main.getArguments())
      if (auto name = main.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "kiln.weight"))
        derived[arg].insert(name.getValue());
    Builder b(&getContext());
    SmallVector<Attribute> found;
    for (Operation &op : main.getBody().front()) {
      if (op.getNumResults() == 0)
        continue;
      // A buffer (oneDNN's output, memref.alloc, also of a run-time size)
      // or anything else made from nothing is not a weight; constants and
      // empty tensors are.
      if (isa<memref::AllocOp, memref::AllocaOp>(op) ||
          (op.getNumOperands() == 0 && !op.hasTrait<OpTrait::ConstantLike>() &&
           !isa<tensor::EmptyOp>(op)))
        continue;
      // A run-time size is metadata: an Expand of a weight to the batch
      // of an input is still a weight transform.
      if (isa<tensor::DimOp>(op)) {
        derived[op.getResult(0)];
        continue;
      }
      llvm::SetVector<StringRef> weights;
      bool fromWeights = true;
      for (Value v : op.getOperands()) {
        auto it = derived.find(v);
        if (it == derived.end()) {
          fromWeights = false;
          break;
        }
        weights.insert(it->second.begin(), it->second.end());
      }
      // Values captured by a region (a generic's body reads only its
      // block arguments; anything else from outside must be derived too).
      if (fromWeights)
        op.walk([&](Operation *inner) {
          if (inner == &op)
            return;
          for (Value v : inner->getOperands())
            if (v.getParentRegion() == &main.getBody() &&
                !derived.count(v))
              fromWeights = false;
        });
      if (!fromWeights)
        continue;
      for (Value r : op.getResults())
        derived[r] = weights;
      // A weight written into part of a new tensor that the inputs fill
      // too (a ViT's class token concatenated with the patches: the
      // insert_slice into the concatenation's empty tensor) is a copy
      // into an activation, not a transform of the weight.
      if (weights.empty() || isView(&op) ||
          isa<tensor::InsertSliceOp, tensor::InsertOp>(op) ||
          isCopyIntoSlices(&op) ||
          op.hasTrait<OpTrait::ConstantLike>() ||
          llvm::all_of(op.getResults(),
                       [](Value r) { return r.use_empty(); }))
        continue;
      int64_t bytes = 0;
      for (Value r : op.getResults())
        if (auto t = dyn_cast<RankedTensorType>(r.getType()))
          if (t.hasStaticShape() && t.getElementType().isIntOrFloat())
            bytes += t.getNumElements() *
                     llvm::divideCeil(t.getElementTypeBitWidth(), 8);
      // The kiln op it was lowered from names it ("kiln.cast"), else the
      // op itself.
      SmallVector<std::string> nodes, origins;
      kiln::collectLocationInfo(op.getLoc(), nodes, origins);
      std::string what = origins.empty() ? op.getName().getStringRef().str()
                                         : origins.front();
      SmallVector<Attribute> weightNames, nodeNames;
      for (StringRef w : weights)
        weightNames.push_back(b.getStringAttr(w));
      for (const std::string &n : nodes)
        nodeNames.push_back(b.getStringAttr(n));
      found.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("op", b.getStringAttr(what)),
           b.getNamedAttr("weights", b.getArrayAttr(weightNames)),
           b.getNamedAttr("onnx_nodes", b.getArrayAttr(nodeNames)),
           b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes))}));
    }
    module->setAttr("kiln.weight_transforms", b.getArrayAttr(found));
  }
};

} // namespace

std::unique_ptr<Pass> createFindWeightTransformsPass() {
  return std::make_unique<FindWeightTransformsPass>();
}

void registerFindWeightTransformsPass() {
  PassRegistration<FindWeightTransformsPass>();
}

} // namespace kiln::cpu
