//===- LibraryCalls.cpp - --kernels=library: GEMM/conv through OpenBLAS ---===//
//
// On bufferized IR, replaces float32 linalg.matmul, linalg.batch_matmul and
// linalg.conv_2d_nchw_fchw by calls into runtime/abi/kiln_abi_blas.c, which
// run OpenBLAS's SGEMM (convolution through im2col). Each memref is passed
// as (aligned pointer, offset, strides) in index-typed scalars, so strided
// views need no copy; the C side falls back to loops for strides BLAS cannot
// express. The elementwise epilogues stay generated code.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

struct StridedOperand {
  Value pointer, offset;
  SmallVector<Value> sizes, strides;
};

StridedOperand decompose(OpBuilder &b, Location loc, Value memref) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  StridedOperand result;
  result.pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  result.offset = metadata.getOffset();
  result.sizes.assign(metadata.getSizes().begin(), metadata.getSizes().end());
  result.strides.assign(metadata.getStrides().begin(),
                        metadata.getStrides().end());
  return result;
}

bool isF32Memref(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.getElementType().isF32();
}

func::FuncOp declare(ModuleOp module, StringRef name, unsigned numArgs) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  SmallVector<Type> types(numArgs, b.getIndexType());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 b.getFunctionType(types, {}));
  fn.setPrivate();
  return fn;
}

struct LibraryCallsPass
    : PassWrapper<LibraryCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LibraryCallsPass)
  StringRef getArgument() const override { return "kiln-cpu-library-calls"; }
  StringRef getDescription() const override {
    return "Call OpenBLAS for float32 matmul, batch_matmul and NCHW conv "
           "(bufferized IR)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics() ||
          !llvm::all_of(op->getOperands(), isF32Memref))
        return;
      if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation())) {
        if (matmul.getIndexingMapsArray() ==
            linalg::MatmulOp::getDefaultIndexingMaps(&getContext()))
          candidates.push_back(op);
      } else if (auto batch =
                     dyn_cast<linalg::BatchMatmulOp>(op.getOperation())) {
        if (batch.getIndexingMapsArray() ==
            linalg::BatchMatmulOp::getDefaultIndexingMaps(&getContext()))
          candidates.push_back(op);
      } else if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(
                     op.getOperation())) {
        // The C kernel walks input, filter and output as dense arrays.
        if (llvm::all_of(op->getOperands(), [](Value v) {
              return cast<MemRefType>(v.getType()).getLayout().isIdentity();
            }))
          candidates.push_back(op);
      }
    });

    for (linalg::LinalgOp op : candidates) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<StridedOperand> operands;
      for (Value v : op->getOperands())
        operands.push_back(decompose(b, loc, v));
      SmallVector<Value> args;
      StringRef callee;
      if (isa<linalg::MatmulOp>(op.getOperation())) {
        callee = "kiln_abi_sgemm";
        for (StridedOperand &o : operands)
          args.append({o.pointer, o.offset, o.strides[0], o.strides[1]});
        args.append({operands[2].sizes[0], operands[2].sizes[1],
                     operands[0].sizes[1]});
      } else if (isa<linalg::BatchMatmulOp>(op.getOperation())) {
        callee = "kiln_abi_sgemm_batched";
        args.push_back(operands[2].sizes[0]);
        for (StridedOperand &o : operands)
          args.append({o.pointer, o.offset, o.strides[0], o.strides[1],
                       o.strides[2]});
        args.append({operands[2].sizes[1], operands[2].sizes[2],
                     operands[0].sizes[2]});
      } else {
        auto conv = cast<linalg::Conv2DNchwFchwOp>(op.getOperation());
        callee = "kiln_abi_conv2d_nchw_f32";
        StridedOperand &in = operands[0], &filter = operands[1],
                       &out = operands[2];
        args.append({in.pointer, in.offset, in.sizes[0], in.sizes[1],
                     in.sizes[2], in.sizes[3]});
        args.append({filter.pointer, filter.offset, filter.sizes[0],
                     filter.sizes[2], filter.sizes[3]});
        args.append({out.pointer, out.offset, out.sizes[2], out.sizes[3]});
        for (int64_t s : conv.getStrides().getValues<int64_t>())
          args.push_back(arith::ConstantIndexOp::create(b, loc, s));
        for (int64_t d : conv.getDilations().getValues<int64_t>())
          args.push_back(arith::ConstantIndexOp::create(b, loc, d));
      }
      func::FuncOp fn = declare(module, callee, args.size());
      func::CallOp::create(b, loc, fn, args);
      op->erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> createLibraryCallsPass() {
  return std::make_unique<LibraryCallsPass>();
}

} // namespace kiln::cpu
