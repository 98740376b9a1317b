//===- Int8Calls.cpp - kiln.quantized_matmul's GEMM through Kiln's kernel -===//
//
// On bufferized IR, replaces each linalg.generic marked `kiln.int8_matmul`
// (the i32 contraction of kiln.quantized_matmul, A [M, K] x W [N, K]^T, A
// read as u8, after a xor 0x80 when `a_shifted`) by an scf.parallel over
// blocks of columns whose body calls kiln_abi_qgemm_s32
// (runtime/abi/kiln_abi_qgemm.c: AMX or AVX-512 VNNI when the CPU has
// them, else a portable loop). The blocks become
// OpenMP work like every other parallel loop. Operands whose innermost
// dimension is not contiguous keep the generic, which lowers to plain
// loops.
//
//===----------------------------------------------------------------------===//

#include "KernelCalls.h"
#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Columns per parallel block: enough blocks for a few threads on the
/// models' layers (N >= 256), and wide enough that the per-call copy of A
/// (shifted, padded; M x K bytes) stays small next to the block's
/// M x 128 x K multiply-adds: with the AMX kernel, 64-column blocks spent
/// a quarter of the GEMM copying A (M 512, K 256, N 688: 0.145 ms at 64,
/// 0.121 ms at 128, 0.103 ms as one block).
constexpr int64_t kColumnBlock = 128;

struct Int8CallsPass : PassWrapper<Int8CallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Int8CallsPass)
  StringRef getArgument() const override { return "kiln-cpu-int8-calls"; }
  StringRef getDescription() const override {
    return "Call Kiln's int8 GEMM kernel for kiln.quantized_matmul's "
           "contraction (bufferized IR)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, memref::MemRefDialect,
                    scf::SCFDialect, arith::ArithDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::GenericOp> candidates;
    module.walk([&](linalg::GenericOp op) {
      if (op->hasAttr("kiln.int8_matmul") && op.hasPureBufferSemantics() &&
          op->getNumOperands() == 3 &&
          llvm::all_of(op->getOperands(), hasContiguousRows))
        candidates.push_back(op);
    });
    for (linalg::GenericOp op : candidates) {
      auto attr = op->getAttrOfType<DictionaryAttr>("kiln.int8_matmul");
      int64_t flags = 0;
      if (auto u = attr.getAs<BoolAttr>("a_shifted"); !u || !u.getValue())
        flags |= 1;
      if (auto u = attr.getAs<BoolAttr>("w_unsigned"); u && u.getValue())
        flags |= 2;
      OpBuilder b(op);
      Location loc = op.getLoc();
      StridedOperand a = decompose(b, loc, op->getOperand(0));
      StridedOperand w = decompose(b, loc, op->getOperand(1));
      StridedOperand c = decompose(b, loc, op->getOperand(2));
      auto index = [&](int64_t v) {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      Value n = w.sizes[0], m = a.sizes[0], k = a.sizes[1];
      Value block = index(kColumnBlock);
      Value blocks = arith::CeilDivUIOp::create(b, loc, n, block);
      func::FuncOp fn = declareKernel(module, "kiln_abi_qgemm_s32", 14);
      Value flagsV = index(flags);
      scf::ParallelOp::create(
          b, loc, ValueRange{index(0)}, ValueRange{blocks},
          ValueRange{index(1)},
          [&](OpBuilder &nb, Location l, ValueRange ivs) {
            Value n0 = arith::MulIOp::create(nb, l, ivs[0], block);
            Value n1 = arith::MinUIOp::create(
                nb, l, arith::AddIOp::create(nb, l, n0, block), n);
            func::CallOp::create(
                nb, l, fn,
                ValueRange{a.pointer, a.offset, a.strides[0], w.pointer,
                           w.offset, w.strides[0], c.pointer, c.offset,
                           c.strides[0], m, k, n0, n1, flagsV});
          });
      op->erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> createInt8CallsPass() {
  return std::make_unique<Int8CallsPass>();
}

} // namespace kiln::cpu
