//===- RuntimeCalls.cpp - Calls into Kiln's CUDA runtime ------------------===//

#include "RuntimeCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace kiln::cuda {

int32_t dtypeOf(Type type) {
  return type.isF32() ? kFloat : type.isF16() ? kFloat16 : kBFloat16;
}

Value skipCasts(Value v) {
  while (true) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      v = ext.getIn();
    else if (auto trunc = v.getDefiningOp<arith::TruncFOp>())
      v = trunc.getIn();
    else
      return v;
  }
}

bool isZeroConstant(Value v) {
  auto constant = skipCasts(v).getDefiningOp<arith::ConstantOp>();
  auto attr = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  return attr && attr.getValue().isZero();
}

bool isHostConstant(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<memref::GetGlobalOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    v = view.getViewSource();
  }
  return false;
}

func::FuncOp declareCall(ModuleOp module, StringRef name,
                         ArrayRef<Type> params) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder b(module.getBodyRegion());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 b.getFunctionType(params, {}));
  fn.setPrivate();
  return fn;
}

LLVM::LLVMFuncOp declareRuntime(ModuleOp module, StringRef name, Type result,
                                ArrayRef<Type> params) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return fn;
  OpBuilder b(module.getBodyRegion());
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                                  LLVM::LLVMFunctionType::get(result, params));
}

Value pointerOf(OpBuilder &b, Location loc, Value memref) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

Value createStream(OpBuilder &b, Location loc, ModuleOp module) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  return LLVM::CallOp::create(
             b, loc, declareRuntime(module, "mgpuStreamCreate", ptr, {}),
             ValueRange{})
      .getResult();
}

void synchronizeAndDestroyStream(OpBuilder &b, Location loc, ModuleOp module,
                                 Value stream) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  for (StringRef fn : {"mgpuStreamSynchronize", "mgpuStreamDestroy"})
    LLVM::CallOp::create(
        b, loc,
        declareRuntime(module, fn, LLVM::LLVMVoidType::get(b.getContext()),
                       {ptr}),
        ValueRange{stream});
}

} // namespace kiln::cuda
