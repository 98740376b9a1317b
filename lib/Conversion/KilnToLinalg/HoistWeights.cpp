//===- HoistWeights.cpp - Large constants become weight arguments ---------===//
//
// The weights leave the IR before lowering: each large kiln.constant of @main
// becomes an argument after the graph inputs. The artifact writer reads the
// elements from the argument's `kiln.weight_value` attribute, the runtime
// passes a pointer into the mapped artifact. Compile time then does not grow
// with the bytes of the model, and no weight is ever copied into the code.
//
// First, a constant weight read transposed (Gemm's transB, fused_matmul's
// trans_b: a weight stored [N, K], as PyTorch's Linear exports it) is
// transposed here, at compile time, and the op reads it as it is: lowered
// with the flag, the weight was a `linalg.transpose` of an argument, i.e.
// copied in every run (the demo MLP spent about a third of a batch-1 run
// transposing its fc1 weight). A weight that is also gathered by rows (a
// tied LM head: logits = h . E^T with E the token embedding) is stored
// transposed once, not twice: the Gather reads the columns of E^T and
// transposes the few rows it gathered back. Kept as E, a decode step of a
// 135M-parameter decoder spent 63% of its time transposing the 113 MB
// embedding. A splat weight (ConstantOfShape, Expand of one value) is the
// same splat with the dims swapped.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNHOISTWEIGHTS
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;


namespace {

int64_t byteSize(RankedTensorType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(bits / 8, 1);
}


/// `op`'s value with its last two dims swapped, as a dense_resource named
/// after the source (`<name>.T`), or a splat of the swapped shape; null
/// when its bytes cannot be read.
ElementsAttr transposeLastTwo(kiln::ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  Type element = type.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return {};
  int64_t rank = type.getRank();
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
      dense && dense.isSplat()) {
    SmallVector<int64_t> shape(type.getShape());
    std::swap(shape[rank - 2], shape[rank - 1]);
    return dense.reshape(dense.getType().clone(shape));
  }
  int64_t width = element.getIntOrFloatBitWidth() / 8;
  ArrayRef<char> data = kiln::weightBytes(op.getValue(), width);
  if (data.empty())
    return {};
  int64_t rows = type.getDimSize(rank - 2), cols = type.getDimSize(rank - 1);
  int64_t batch = type.getNumElements() / std::max<int64_t>(rows * cols, 1);
  std::vector<char> out(data.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        std::memcpy(&out[((b * cols + j) * rows + i) * width],
                    &data[((b * rows + i) * cols + j) * width], width);
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[rank - 2], shape[rank - 1]);
  auto resultType = RankedTensorType::get(shape, element);
  std::string name = "weight";
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(op.getValue()))
    name = resource.getRawHandle().getKey().str();
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(out), alignof(std::max_align_t));
  return DenseResourceElementsAttr::get(resultType, name + ".T",
                                        std::move(blob));
}

/// Whether `transpose` swaps the last two dims and nothing else.
bool swapsLastTwo(kiln::TransposeOp transpose) {
  int64_t rank = cast<RankedTensorType>(transpose.getType()).getRank();
  std::optional<ArrayRef<int64_t>> perm = transpose.getPerm();
  if (!perm)
    return rank == 2; // no perm: the dims reversed
  for (int64_t i = 0; i < rank; ++i) {
    int64_t expected = i < rank - 2 ? i : (i == rank - 2 ? rank - 1 : rank - 2);
    if ((*perm)[i] != expected)
      return false;
  }
  return rank >= 2;
}

/// Whether `use` reads its constant operand transposed: Gemm's B with
/// transB, fused_matmul's B with trans_b, a Transpose of the last two dims
/// (what kiln-decompose-fused makes of a fused_matmul with trans_b and a
/// batched A).
bool readsTransposed(OpOperand &use) {
  if (auto transpose = dyn_cast<kiln::TransposeOp>(use.getOwner()))
    return swapsLastTwo(transpose);
  if (auto gemm = dyn_cast<kiln::GemmOp>(use.getOwner()))
    return use.getOperandNumber() == 1 && gemm.getTransB() != 0 &&
           gemm.getTransA() == 0;
  if (auto fused = dyn_cast<kiln::FusedMatMulOp>(use.getOwner()))
    return use.getOperandNumber() == 1 && fused.getTransB();
  return false;
}

/// Whether `use` is a Gather of whole rows (axis 0) of a 2-D constant: it
/// can read the rows as the columns of the transpose (the indices' dims may
/// be symbolic: a decoder's [batch, seq] token ids).
bool gathersRows(OpOperand &use) {
  auto gather = dyn_cast<kiln::GatherOp>(use.getOwner());
  if (!gather || use.getOperandNumber() != 0)
    return false;
  auto type = dyn_cast<RankedTensorType>(use.get().getType());
  auto result = dyn_cast<RankedTensorType>(gather.getType());
  int64_t axis = static_cast<int64_t>(gather.getAxis());
  return type && type.getRank() == 2 && result &&
         !result.isDynamicDim(result.getRank() - 1) &&
         (axis == 0 || axis == -2);
}

/// Gather(data, indices, axis 0) -> Transpose(Gather(dataT, indices,
/// axis 1)): [D, indices...] of the transposed [D, V] data, the gathered
/// dim moved back last ([indices..., D]).
void gatherFromTranspose(OpBuilder &builder, kiln::GatherOp gather,
                         Value transposed) {
  auto resultType = cast<RankedTensorType>(gather.getType());
  int64_t rank = resultType.getRank();
  SmallVector<int64_t> shape = {resultType.getDimSize(rank - 1)};
  llvm::append_range(shape, resultType.getShape().drop_back());
  SmallVector<int64_t> perm;
  for (int64_t i = 1; i < rank; ++i)
    perm.push_back(i);
  perm.push_back(0);
  builder.setInsertionPoint(gather);
  Location loc = gather.getLoc();
  Value columns =
      kiln::GatherOp::create(builder, loc, resultType.clone(shape), transposed,
                             gather.getIndices(), builder.getI64IntegerAttr(1));
  Value rows = kiln::TransposeOp::create(builder, loc, resultType, columns,
                                         builder.getDenseI64ArrayAttr(perm));
  gather.getResult().replaceAllUsesWith(rows);
  gather->erase();
}

/// Gemm(transB), fused_matmul(trans_b) and Transpose on a constant weight
/// whose every use reads it transposed, or gathers its rows: the constant
/// is replaced by its transpose, the flags cleared, the Transposes dropped
/// and the Gathers read columns. A
/// weight also read as it is otherwise is left alone rather than stored
/// twice.
void pretransposeWeights(func::FuncOp main) {
  SmallVector<kiln::ConstantOp> weights;
  main.walk([&](kiln::ConstantOp op) {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !type.hasStaticShape() || type.getRank() < 2)
      return;
    bool transposedRead = false;
    for (OpOperand &use : op->getUses()) {
      if (readsTransposed(use))
        transposedRead = true;
      else if (!gathersRows(use))
        return;
    }
    if (transposedRead)
      weights.push_back(op);
  });
  OpBuilder builder(main.getContext());
  for (kiln::ConstantOp op : weights) {
    ElementsAttr transposed = transposeLastTwo(op);
    if (!transposed)
      continue;
    Location loc = op.getLoc();
    if (auto nameLoc = dyn_cast<NameLoc>(loc))
      loc = NameLoc::get(builder.getStringAttr(nameLoc.getName().str() + ".T"),
                         nameLoc.getChildLoc());
    builder.setInsertionPoint(op);
    auto replacement = kiln::ConstantOp::create(builder, loc, transposed);
    for (OpOperand &use : llvm::make_early_inc_range(op->getUses())) {
      Operation *user = use.getOwner();
      if (auto gather = dyn_cast<kiln::GatherOp>(user)) {
        gatherFromTranspose(builder, gather, replacement);
        continue;
      }
      if (auto transpose = dyn_cast<kiln::TransposeOp>(user)) {
        transpose.getResult().replaceAllUsesWith(replacement);
        transpose->erase();
        continue;
      }
      use.set(replacement);
      if (auto gemm = dyn_cast<kiln::GemmOp>(user))
        gemm.setTransB(0);
      else
        cast<kiln::FusedMatMulOp>(user).setTransB(false);
    }
    op->erase();
  }
}

struct HoistWeightsPass : kiln::impl::KilnHoistWeightsBase<HoistWeightsPass> {
  using KilnHoistWeightsBase::KilnHoistWeightsBase;

  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    pretransposeWeights(main);
    SmallVector<kiln::ConstantOp> hoisted;
    main.walk([&](kiln::ConstantOp op) {
      auto type = dyn_cast<RankedTensorType>(op.getType());
      if (!type || !type.hasStaticShape() || byteSize(type) <= minBytes)
        return;
      if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue()))
        if (dense.isSplat())
          return; // A splat is one value: it lowers to a fill.
      hoisted.push_back(op);
    });

    llvm::StringSet<> names;
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (auto name = main.getArgAttrOfType<StringAttr>(i, "kiln.name"))
        names.insert(name.getValue());
    OpBuilder builder(&getContext());
    unsigned counter = 0;
    for (kiln::ConstantOp op : hoisted) {
      std::string name;
      if (auto nameLoc = dyn_cast<NameLoc>(op.getLoc()))
        name = nameLoc.getName().str();
      if (name.empty() || names.contains(name)) {
        do
          name = "const_" + std::to_string(counter++);
        while (names.contains(name));
      }
      names.insert(name);
      unsigned index = main.getNumArguments();
      DictionaryAttr attrs = builder.getDictionaryAttr(
          {builder.getNamedAttr("kiln.weight", builder.getStringAttr(name)),
           builder.getNamedAttr("kiln.weight_value", op.getValue())});
      if (failed(main.insertArgument(index, op.getType(), attrs, op.getLoc())))
        return signalPassFailure();
      op.getResult().replaceAllUsesWith(main.getArgument(index));
      op->erase();
    }
  }
};

} // namespace
