//===- HoistWeights.cpp - Large constants become weight arguments ---------===//
//
// The weights leave the IR before lowering: each large kiln.constant of @main
// becomes an argument after the graph inputs. The artifact writer reads the
// elements from the argument's `kiln.weight_value` attribute, the runtime
// passes a pointer into the mapped artifact. Compile time then does not grow
// with the bytes of the model, and no weight is ever copied into the code.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSet.h"

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

struct HoistWeightsPass : kiln::impl::KilnHoistWeightsBase<HoistWeightsPass> {
  using KilnHoistWeightsBase::KilnHoistWeightsBase;

  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
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
