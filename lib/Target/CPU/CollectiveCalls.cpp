//===- CollectiveCalls.cpp - kiln.all_reduce as a call to the runtime -----===//
//
// kiln-cpu-collective-calls (first in the CPU backend, on the graph; as
// kiln-cuda-collective-calls first in the CUDA one, calling the CUDA shim's
// kiln_rt_cuda_all_reduce_*, which the runtime answers with NCCL): each
// kiln.all_reduce (made by kiln-shard-tensor-parallel) becomes
//
//   %x_buf = bufferization.to_buffer %x read_only
//   %y_buf = memref.alloc(dynamic dims of %x) {alignment = 64}
//   func.call @kiln_abi_all_reduce_sum_<f32|f16|bf16>(
//       view(%x_buf), view(%y_buf), %count)
//   %y = bufferization.to_tensor %y_buf restrict writable
//
// (the views are 1-element memrefs: a pointer under the bare-pointer
// convention, as in kiln-cpu-dnnl-calls). The kernel, in
// runtime/abi/kiln_abi.c, copies x into y and hands y to the runtime's
// all-reduce (MPI_Allreduce over the ranks of the world, runtime/lib/
// Distributed.cpp). The call has unknown side effects: nothing moves it
// across another, so every rank runs its all-reduces in program order.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// The kernel for `element`: <prefix>f32 / f16 / bf16.
func::FuncOp declareAllReduce(ModuleOp module, StringRef prefix,
                              Type element, StringRef suffix) {
  std::string name = (prefix + suffix).str();
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  Type view = MemRefType::get({1}, element);
  auto fn = func::FuncOp::create(
      b, module.getLoc(), name,
      b.getFunctionType({view, view, b.getIndexType()}, {}));
  fn.setPrivate();
  return fn;
}

struct CollectiveCallsPass
    : PassWrapper<CollectiveCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CollectiveCallsPass)
  /// The CPU's kiln_abi_all_reduce_sum_* (libkiln_abi.a) or the CUDA
  /// shim's kiln_rt_cuda_all_reduce_* (kiln_abi_cuda.c: NCCL).
  explicit CollectiveCallsPass(bool cuda = false) : cuda(cuda) {}
  bool cuda;
  StringRef getArgument() const override {
    return cuda ? "kiln-cuda-collective-calls" : "kiln-cpu-collective-calls";
  }
  StringRef getDescription() const override {
    return "kiln.all_reduce as a call to kiln_abi_all_reduce_sum_*, which "
           "the runtime answers with MPI";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                    func::FuncDialect, memref::MemRefDialect,
                    tensor::TensorDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<kiln::AllReduceOp> ops;
    module.walk([&](kiln::AllReduceOp op) { ops.push_back(op); });
    for (kiln::AllReduceOp op : ops) {
      Location loc = op.getLoc();
      auto type = cast<RankedTensorType>(op.getX().getType());
      Type element = type.getElementType();
      StringRef suffix = element.isF32()    ? "f32"
                         : element.isF16()  ? "f16"
                         : element.isBF16() ? "bf16"
                                            : "";
      if (suffix.empty()) {
        op.emitError("kiln.all_reduce of ")
            << element << ": the CPU runtime sums f32, f16 and bf16";
        return signalPassFailure();
      }
      OpBuilder b(op);
      Value x = op.getX();
      SmallVector<Value> dynamic;
      Value count = arith::ConstantIndexOp::create(b, loc, 1);
      int64_t staticCount = 1;
      for (int64_t i = 0; i < type.getRank(); ++i) {
        if (type.isDynamicDim(i)) {
          Value d = tensor::DimOp::create(b, loc, x, i);
          dynamic.push_back(d);
          count = arith::MulIOp::create(b, loc, count, d);
        } else {
          staticCount *= type.getDimSize(i);
        }
      }
      count = arith::MulIOp::create(
          b, loc, count, arith::ConstantIndexOp::create(b, loc, staticCount));
      auto bufferType = MemRefType::get(type.getShape(), element);
      auto viewType = MemRefType::get({1}, element);
      Value in = bufferization::ToBufferOp::create(b, loc, bufferType, x,
                                                   /*read_only=*/true);
      Value inView = memref::ReinterpretCastOp::create(
          b, loc, viewType, in, /*offset=*/0, /*sizes=*/{1}, /*strides=*/{1});
      Value out = memref::AllocOp::create(b, loc, bufferType, dynamic,
                                          b.getI64IntegerAttr(64));
      Value outView = memref::ReinterpretCastOp::create(
          b, loc, viewType, out, /*offset=*/0, /*sizes=*/{1}, /*strides=*/{1});
      StringRef prefix =
          cuda ? "kiln_rt_cuda_all_reduce_" : "kiln_abi_all_reduce_sum_";
      func::CallOp::create(b, loc,
                           declareAllReduce(module, prefix, element, suffix),
                           ValueRange{inView, outView, count});
      Value result = bufferization::ToTensorOp::create(
          b, loc, type, out, /*restrict=*/true, /*writable=*/true);
      op.getY().replaceAllUsesWith(result);
      op.erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> kiln::cpu::createCollectiveCallsPass(bool cuda) {
  return std::make_unique<CollectiveCallsPass>(cuda);
}
