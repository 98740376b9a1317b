//===- MatmulKernels.cpp - Tiled matmul kernels, tensor cores for f16 ----===//
//
// Codegen mode, sm_80+: each contraction with f32 accumulation
// (linalg.matmul, batch_matmul, or the generic contraction that reshape
// propagation leaves; GemmMatch.h) becomes one gpu.launch of its own:
//
//   - a block of 128 threads computes a 64x64 tile of C (grid: N/64 x M/64
//     x batch);
//   - per 32-wide k step, the block stages A[64x32] and B[32x64] in shared
//     memory (workgroup attributions, rows padded by one 16-byte chunk so
//     that the rows read together fall in different banks), each thread
//     copying 16-byte chunks (vector<8xf16>, vector<4xf32>) with one load
//     and one store; chunks outside the matrix (M, N, K not multiples of the
//     tile) are zeros, so no tail code;
//   - fp16/bf16: 4 warps, each a 32x32 sub-tile = 2x4 mma tiles of 16x8.
//     The warps read their fragments with ldmatrix (x4 for A, x2.trans for
//     B, which is row-major [k][n] in shared memory) and multiply with
//     mma.sync m16n8k16: nvgpu.mma.sync for f16, nvvm.mma.sync for bf16
//     (upstream's nvgpu lowering has no bf16 case); the 8 accumulators of
//     vector<2x2xf32> are loop-carried, in registers;
//   - int8 (a signed i8 x i8 -> i32 linalg.matmul with B read [n, k]:
//     kiln-cuda-int8-prepare's, Int8Calls.cpp): the fp16 kernel with its
//     transposed-B staging, in bytes (vector<16xi8> chunks), the same
//     ldmatrix addresses at k 16 instead of 8, and nvvm.mma.sync m16n8k32
//     s8 into vector<2x2xi32> accumulators;
//   - f32: each thread computes 8 rows (8 apart) x 4 adjacent columns with
//     vector<4xf32> FMAs: per k, one 16-byte B read and 8 broadcast A
//     values from shared memory (no TF32: the results stay f32-exact up to
//     the FMA contraction);
//   - the epilogue: each thread applies the elementwise consumer of C (the
//     bias add, relu, the truncation to f16...: the generic that fusion
//     left after the matmul) to its accumulators and stores them, guarded
//     by the bounds. When that consumer cannot be folded (GemmMatch), C is
//     stored and the consumer stays a kernel of its own.
//
// The 16-byte vector loads need K and N to be multiples of the chunk (8
// half, 4 f32 elements: a chunk is then inside the matrix or outside, and
// aligned; int8: K a multiple of 16); other shapes, and contractions in another layout, keep the
// scalar kernel with a remark saying why.
//
//===----------------------------------------------------------------------===//

#include "GemmMatch.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cuda {
namespace {

// The block tile, the warp grid (tensor cores) and the thread grid (f32).
constexpr int64_t kBM = 64, kBN = 64, kBK = 32;
constexpr int64_t kWarpsM = 2, kWarpsN = 2, kThreads = 32 * kWarpsM * kWarpsN;
constexpr int64_t kWM = kBM / kWarpsM, kWN = kBN / kWarpsN; // 32 x 32
constexpr int64_t kMTiles = kWM / 16, kNTiles = kWN / 8;    // 2 x 4
// f32: 8 x 16 threads, each 8 rows (8 apart) x 4 adjacent columns.
constexpr int64_t kThreadRows = 8, kThreadCols = 16;
constexpr int64_t kRowsPerThread = kBM / kThreadRows; // 8
constexpr int64_t kColsPerThread = kBN / kThreadCols; // 4
static_assert(kThreadRows * kThreadCols == kThreads, "one tile per block");

/// Index arithmetic and constants at one location.
struct Builder {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, c(y)) : x; }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, c(y));
  }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, c(y));
  }
  Value lt(Value x, int64_t bound) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x,
                                 c(bound));
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
};

/// `v` split into indices of `sizes` (row-major), the first unbounded.
SmallVector<Value> delinearize(Builder &ib, Value v, ArrayRef<int64_t> sizes) {
  SmallVector<Value> out(sizes.size());
  for (int64_t i = sizes.size() - 1; i > 0; --i) {
    out[i] = ib.rem(v, sizes[i]);
    v = ib.div(v, sizes[i]);
  }
  if (!sizes.empty())
    out[0] = v;
  return out;
}

/// One mma.sync m16n8k16 with f32 accumulation (f16, bf16) or m16n8k32
/// with i32 accumulation (s8).
Value mma(OpBuilder &b, Location loc, Value a, Value bFrag, Value acc,
          Type inType) {
  if (inType.isF16())
    return nvgpu::MmaSyncOp::create(b, loc, a, bFrag, acc,
                                    ArrayRef<int64_t>{16, 8, 16});
  // bf16, s8: the NVVM op on the packed registers (i32 = two bf16, four
  // s8). For s8, nvgpu's lowering would add .satfinite (clamping on
  // overflow); "wrapped" wraps like the CPU's i32 sums.
  bool s8 = inType.isInteger(8);
  MLIRContext *ctx = b.getContext();
  auto regs = [&](Value frag, int64_t count) {
    SmallVector<Value> out;
    for (int64_t i = 0; i < count; ++i) {
      Value pair = vector::ExtractOp::create(b, loc, frag, i);
      Value packed = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), pair);
      out.push_back(vector::ExtractOp::create(b, loc, packed, 0));
    }
    return out;
  };
  SmallVector<Value> cRegs;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      cRegs.push_back(
          vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{i, j}));
  Type accElem = s8 ? Type(b.getI32Type()) : Type(b.getF32Type());
  NVVM::MMATypes ptxType = s8 ? NVVM::MMATypes::s8 : NVVM::MMATypes::bf16;
  auto structType = LLVM::LLVMStructType::getLiteral(
      ctx, {accElem, accElem, accElem, accElem});
  Value d = NVVM::MmaOp::create(
      b, loc, structType, regs(a, 4), regs(bFrag, 2), cRegs,
      ArrayRef<int64_t>{16, 8, s8 ? 32 : 16}, std::nullopt,
      s8 ? std::optional(NVVM::MMAIntOverflow::wrapped) : std::nullopt,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> elements;
  for (int64_t i = 0; i < 4; ++i)
    elements.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
  return vector::FromElementsOp::create(
      b, loc, VectorType::get({2, 2}, accElem), elements);
}

/// Replaces the contraction of `match` (and its fill and epilogue) by the
/// tensor-core kernel; see the file comment.
void buildKernel(GemmMatch &match) {
  // f16/bf16 on tensor cores, f32 on CUDA cores (SIMT) from the same shared
  // tiles. A chunk is 16 bytes, rows are padded by one chunk.
  // int8 (signed, B as [n, k]): the same tiles in bytes, mma m16n8k32 with
  // i32 accumulators.
  bool simt = match.inType.isF32();
  bool imma = match.inType.isInteger(8);
  const int64_t kVec = simt ? 4 : imma ? 16 : 8;
  const int64_t kPad = kVec;
  Operation *op = match.op;
  Operation *anchor = match.epilogue ? match.epilogue.getOperation() : op;
  OpBuilder b(anchor);
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  Builder hb{b, loc};
  Type t = match.inType;
  // The accumulator type (i32 for int8).
  Type f32 = imma ? Type(b.getI32Type()) : Type(b.getF32Type());
  bool hasBatch = match.numBatchDims > 0;
  int64_t M = match.m, N = match.n, K = match.k;

  // The operands as [batch,] rows, cols: the views are made on the host.
  Value A = collapseGroups(
      b, loc, match.a, {match.numBatchDims, match.numMDims, match.numKDims});
  // A transposed weight (Gemm transB) is read as [n, k] in place: its tile
  // is staged like A's and ldmatrix reads its fragments without .trans
  // (tensor cores), or its chunks are transposed into the [k][n] tile on
  // the way to shared memory (f32).
  // A B indexed [n.., k] by the contraction (bNK: int8) is read so too.
  bool bT = match.bNK || foldTransposedB(match, anchor);
  Value B = match.bNK ? collapseGroups(b, loc, match.b,
                                       {match.numNDims, match.numKDims})
            : bT      ? match.bTransposed
                      : collapseGroups(b, loc, match.b,
                                       {match.numBatchDims, match.numKDims,
                                        match.numNDims});
  Value C;
  if (!match.epilogue || !match.zeroStart)
    C = collapseGroups(b, loc, match.c,
                       {match.numBatchDims, match.numMDims, match.numNDims});

  auto shared = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto aTileType = MemRefType::get({kBM, kBK + kPad}, t, AffineMap(), shared);
  auto bTileType =
      bT && !simt
         ? MemRefType::get({kBN, kBK + kPad}, t, AffineMap(), shared)
         : MemRefType::get({kBK, kBN + kPad}, t, AffineMap(), shared);
  Value one = hb.c(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, hb.c(llvm::divideCeil(N, kBN)), hb.c(llvm::divideCeil(M, kBM)),
      hb.c(match.batch), hb.c(kThreads), one, one, /*dynamicSharedMemory=*/
      nullptr, /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
      TypeRange{aTileType, bTileType});
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);

  Value blockN = launch.getBlockIds().x, blockM = launch.getBlockIds().y;
  Value batchIdx = launch.getBlockIds().z, tid = launch.getThreadIds().x;
  Value aTile = launch.getWorkgroupAttributions()[0];
  Value bTile = launch.getWorkgroupAttributions()[1];
  Value warp = hb.div(tid, 32), lane = hb.rem(tid, 32);
  Value warpRow =
      hb.add(hb.mul(blockM, kBM), hb.mul(hb.div(warp, kWarpsN), kWM));
  Value warpCol =
      hb.add(hb.mul(blockN, kBN), hb.mul(hb.rem(warp, kWarpsN), kWN));
  auto withBatch = [&](ValueRange indices) {
    SmallVector<Value> out;
    if (hasBatch)
      out.push_back(batchIdx);
    out.append(indices.begin(), indices.end());
    return out;
  };

  auto inBounds = [&](Value row, Value col) {
    return hb.both(hb.lt(row, M), hb.lt(col, N));
  };
  // The thread's accumulators and where each element goes in C:
  // tensor cores: 2 x 4 mma tiles of vector<2x2xf32>, element (h, j) of
  // tile (mt, nt) at row 16 mt + 8 h + lane / 4, column 8 nt + 2 (lane % 4)
  // + j of the warp's tile; f32: 8 vector<4xf32>, element j of vector i at
  // row ty + 8 i, column 4 tx + j of the block's tile.
  Value ty = hb.div(tid, kThreadCols), tx = hb.rem(tid, kThreadCols);
  int64_t numAccs = simt ? kRowsPerThread : kMTiles * kNTiles;
  auto accType = simt ? VectorType::get({kColsPerThread}, f32)
                      : VectorType::get({2, 2}, f32);
  struct Element {
    int64_t acc;
    SmallVector<int64_t, 2> pos;
    Value row, col;
  };
  auto elementsOf = [&](int64_t acc) {
    SmallVector<Element> out;
    if (simt) {
      Value row = hb.add(hb.add(hb.mul(blockM, kBM), ty), acc * kThreadRows);
      for (int64_t j = 0; j < kColsPerThread; ++j)
        out.push_back({acc,
                       {j},
                       row,
                       hb.add(hb.add(hb.mul(blockN, kBN), hb.mul(tx, 4)), j)});
      return out;
    }
    int64_t mt = acc / kNTiles, nt = acc % kNTiles;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < 2; ++j)
        out.push_back(
            {acc,
             {h, j},
             hb.add(hb.add(warpRow, mt * 16 + h * 8), hb.div(lane, 4)),
             hb.add(hb.add(warpCol, nt * 8 + j), hb.mul(hb.rem(lane, 4), 2))});
    return out;
  };
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));

  // Initial accumulators: zeros when C was zero-filled, else C.
  SmallVector<Value> init;
  for (int64_t acc = 0; acc < numAccs; ++acc) {
    if (match.zeroStart) {
      init.push_back(arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(accType, b.getZeroAttr(f32))));
      continue;
    }
    SmallVector<Value> elements;
    for (Element &e : elementsOf(acc)) {
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{f32},
                                    inBounds(e.row, e.col), true, true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value v = memref::LoadOp::create(b, loc, C, withBatch({e.row, e.col}));
      scf::YieldOp::create(b, loc, v);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc, zero);
      elements.push_back(ifOp.getResult(0));
    }
    init.push_back(vector::FromElementsOp::create(b, loc, accType, elements));
  }

  auto chunkType = VectorType::get({kVec}, t);
  Value zeroChunk = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(chunkType, b.getZeroAttr(t)));
  // The tiles' 16-byte chunks of this thread for the k step at `k0`:
  // loaded from global memory (zeros outside the matrix, including past K),
  // then stored to shared memory.
  struct Chunk {
    Value global, tile, row, col, valid, tileRow, tileCol;
    // Stored transposed: element e at tile[tileCol + e][tileRow].
    bool scatter = false;
  };
  const int64_t aChunksPerRow = kBK / kVec, bChunksPerRow = kBN / kVec;
  auto chunksAt = [&](Value k0) {
    SmallVector<Chunk> chunks;
    for (int64_t i = 0; i < kBM * aChunksPerRow / kThreads; ++i) {
      Value chunk = hb.add(tid, i * kThreads);
      Value r = hb.div(chunk, aChunksPerRow);
      Value kc = hb.mul(hb.rem(chunk, aChunksPerRow), kVec);
      Value row = hb.add(hb.mul(blockM, kBM), r), col = hb.add(k0, kc);
      chunks.push_back({A, aTile, row, col,
                        hb.both(hb.lt(row, M), hb.lt(col, K)), r, kc});
    }
    for (int64_t i = 0; bT && i < kBN * aChunksPerRow / kThreads; ++i) {
      Value chunk = hb.add(tid, i * kThreads);
      Value r = hb.div(chunk, aChunksPerRow);
      Value kc = hb.mul(hb.rem(chunk, aChunksPerRow), kVec);
      Value row = hb.add(hb.mul(blockN, kBN), r), col = hb.add(k0, kc);
      chunks.push_back({B, bTile, row, col,
                        hb.both(hb.lt(row, N), hb.lt(col, K)), r, kc, simt});
    }
    for (int64_t i = 0; !bT && i < kBK * bChunksPerRow / kThreads; ++i) {
      Value chunk = hb.add(tid, i * kThreads);
      Value r = hb.div(chunk, bChunksPerRow);
      Value nc = hb.mul(hb.rem(chunk, bChunksPerRow), kVec);
      Value row = hb.add(k0, r), col = hb.add(hb.mul(blockN, kBN), nc);
      chunks.push_back({B, bTile, row, col,
                        hb.both(hb.lt(row, K), hb.lt(col, N)), r, nc});
    }
    return chunks;
  };
  auto load = [&](const Chunk &c) -> Value {
    auto ifOp =
        scf::IfOp::create(b, loc, TypeRange{chunkType}, c.valid, true, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value v = vector::LoadOp::create(b, loc, chunkType, c.global,
                                     withBatch({c.row, c.col}),
                                     /*nontemporal=*/false,
                                     llvm::MaybeAlign(16));
    scf::YieldOp::create(b, loc, v);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, zeroChunk);
    return ifOp.getResult(0);
  };
  auto store = [&](const Chunk &c, Value v) {
    if (c.scatter) {
      for (int64_t e = 0; e < kVec; ++e)
        memref::StoreOp::create(b, loc, vector::ExtractOp::create(b, loc, v, e),
                                c.tile,
                                ValueRange{hb.add(c.tileCol, e), c.tileRow});
      return;
    }
    vector::StoreOp::create(b, loc, v, c.tile,
                            ValueRange{c.tileRow, c.tileCol},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  // The first tiles, before the loop.
  for (const Chunk &c : chunksAt(hb.c(0)))
    store(c, load(c));
  gpu::BarrierOp::create(b, loc);

  // Each step: the next tiles' loads are issued first and land in
  // registers while the warps compute on the tiles in shared memory; after
  // a barrier (nobody reads the tiles any more) they are stored, and a
  // second barrier publishes them to the next step.
  auto loop = scf::ForOp::create(b, loc, hb.c(0), hb.c(K), hb.c(kBK), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k0 = loop.getInductionVar();
    SmallVector<Chunk> next = chunksAt(hb.add(k0, kBK));
    SmallVector<Value> nextValues;
    for (const Chunk &c : next)
      nextValues.push_back(load(c));
    SmallVector<Value> accs(loop.getRegionIterArgs().begin(),
                            loop.getRegionIterArgs().end());
    if (simt) {
      // Per k: the thread's 8 A values (rows 8 apart: the two row groups
      // of a warp fall in different banks) against its 4 B values.
      auto vecType = VectorType::get({kColsPerThread}, f32);
      for (int64_t kk = 0; kk < kBK; ++kk) {
        Value bRow = vector::LoadOp::create(
            b, loc, vecType, bTile, ValueRange{hb.c(kk), hb.mul(tx, 4)},
            /*nontemporal=*/false, llvm::MaybeAlign(16));
        for (int64_t i = 0; i < kRowsPerThread; ++i) {
          Value a = memref::LoadOp::create(
              b, loc, aTile, ValueRange{hb.add(ty, i * kThreadRows), hb.c(kk)});
          Value splat = vector::BroadcastOp::create(b, loc, vecType, a);
          accs[i] = vector::FMAOp::create(b, loc, splat, bRow, accs[i]);
        }
      }
    } else {
      // Fragment addresses: ldmatrix.x4 takes row addresses from all 32
      // lanes (rows 0-15 at k 0, then at k 8); x2 from lanes 0-15. Its
      // 8x8 matrices are of 16-bit units, 16 bytes a row: for s8 a row is
      // 16 k, so the same addresses with k 16 for k 8 give the m16n8k32
      // fragments (a0-a3: rows 0-7/8-15 x k 0-15/16-31; b0, b1: n 0-7 x
      // k 0-15/16-31, each thread 4 consecutive k of one row).
      const int64_t kStep = imma ? 32 : 16, kHalf = kStep / 2;
      const int64_t perReg = imma ? 4 : 2; // elements per 32-bit register
      Value warpTileRow = hb.mul(hb.div(warp, kWarpsN), kWM);
      Value warpTileCol = hb.mul(hb.rem(warp, kWarpsN), kWN);
      Value laneRow = hb.rem(lane, 16),
            laneHalf = hb.mul(hb.div(lane, 16), kHalf);
      for (int64_t kk = 0; kk < kBK; kk += kStep) {
        SmallVector<Value> aFrags, bFrags;
        for (int64_t mt = 0; mt < kMTiles; ++mt)
          aFrags.push_back(nvgpu::LdMatrixOp::create(
              b, loc, VectorType::get({4, perReg}, t), aTile,
              ValueRange{hb.add(hb.add(warpTileRow, mt * 16), laneRow),
                         hb.add(laneHalf, kk)},
              b.getBoolAttr(false), b.getI32IntegerAttr(4)));
        for (int64_t nt = 0; nt < kNTiles; ++nt) {
          // [k][n]: rows k 0-15 at n, transposed; [n][k]: rows n 0-7 at
          // k 0 (lanes 0-7), then at k 8 (lanes 8-15), as they are.
          SmallVector<Value, 2> index;
          if (bT)
            index = {hb.add(hb.add(warpTileCol, nt * 8), hb.rem(lane, 8)),
                     hb.add(hb.mul(hb.rem(hb.div(lane, 8), 2), kHalf), kk)};
          else
            index = {hb.add(laneRow, kk), hb.add(warpTileCol, nt * 8)};
          bFrags.push_back(nvgpu::LdMatrixOp::create(
              b, loc, VectorType::get({2, perReg}, t), bTile, index,
              b.getBoolAttr(!bT), b.getI32IntegerAttr(2)));
        }
        for (int64_t mt = 0; mt < kMTiles; ++mt)
          for (int64_t nt = 0; nt < kNTiles; ++nt) {
            Value &acc = accs[mt * kNTiles + nt];
            acc = mma(b, loc, aFrags[mt], bFrags[nt], acc, t);
          }
      }
    }
    gpu::BarrierOp::create(b, loc);
    for (auto [c, v] : llvm::zip(next, nextValues))
      store(c, v);
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, accs);
  }

  // The epilogue, one accumulator element at a time.
  linalg::GenericOp epilogue = match.zeroStart ? match.epilogue : nullptr;
  for (int64_t accIdx = 0; accIdx < numAccs; ++accIdx)
    for (Element &e : elementsOf(accIdx)) {
      Value row = e.row, col = e.col;
      Value acc =
          vector::ExtractOp::create(b, loc, loop.getResult(accIdx), e.pos);
      auto ifOp = scf::IfOp::create(b, loc, inBounds(row, col),
                                    /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      if (!epilogue) {
        memref::StoreOp::create(b, loc, acc, C, withBatch({row, col}));
        continue;
      }
      // The epilogue's loops are C's: batch..., m..., n....
      SmallVector<Value> loops = delinearize(hb, batchIdx, match.batchSizes);
      llvm::append_range(loops, delinearize(hb, row, match.mSizes));
      llvm::append_range(loops, delinearize(hb, col, match.nSizes));
      IRMapping map;
      Block *eb = epilogue.getBlock();
      for (OpOperand *input : epilogue.getDpsInputOperands()) {
        BlockArgument arg = epilogue.getMatchingBlockArgument(input);
        if (input->getOperandNumber() == match.epilogueArg) {
          map.map(arg, acc);
          continue;
        }
        if (arg.use_empty())
          continue;
        AffineMap m = epilogue.getMatchingIndexingMap(input);
        SmallVector<Value> indices;
        for (unsigned r = 0; r < m.getNumResults(); ++r)
          indices.push_back(affine::AffineApplyOp::create(
              b, input->get().getLoc(), m.getSubMap({r}), loops));
        map.map(arg, memref::LoadOp::create(b, epilogue.getLoc(), input->get(),
                                            indices));
      }
      for (Operation &inner : eb->without_terminator()) {
        // linalg.index of the epilogue: its loop's index.
        if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
          map.map(index.getResult(), loops[index.getDim()]);
          continue;
        }
        b.clone(inner, map);
      }
      Value result = map.lookupOrDefault(
          cast<linalg::YieldOp>(eb->getTerminator()).getOperand(0));
      memref::StoreOp::create(b, epilogue.getLoc(), result,
                              epilogue.getDpsInitOperand(0)->get(), loops);
    }

  // What the kernel replaces.
  eraseFolded(match, epilogue);
}

struct MatmulKernelsPass
    : PassWrapper<MatmulKernelsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MatmulKernelsPass)
  StringRef getArgument() const override { return "kiln-cuda-matmul-kernels"; }
  StringRef getDescription() const override {
    return "Contractions with f32 accumulation -> tiled gpu.launch kernels "
           "(shared-memory tiles; fp16/bf16 on tensor cores with ldmatrix "
           "and mma.sync m16n8k16, signed int8 with m16n8k32 into i32, f32 "
           "with FMAs; fused elementwise epilogue); bufferized IR, sm_80+";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                    NVVM::NVVMDialect, nvgpu::NVGPUDialect, scf::SCFDialect,
                    vector::VectorDialect>();
  }
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() >= 1 && op.hasPureBufferSemantics())
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates) {
      std::string why;
      FailureOr<GemmMatch> match = matchGemm(op, why);
      Type inType = op.getNumDpsInputs() > 0
                        ? getElementTypeOrSelf(op.getDpsInputs()[0].getType())
                        : Type();
      bool half = inType && (inType.isF16() || inType.isBF16());
      bool i8 = inType && inType.isInteger(8);
      if (!half && !i8 && !(inType && inType.isF32()))
        continue;
      // The 16-byte chunks: 16 int8, 8 half or 4 f32 elements. int8 reads
      // B as [n, k] only (ldmatrix has no .trans for 8-bit elements), so
      // N needs no chunks.
      int64_t vec = i8 ? 16 : half ? 8 : 4;
      if (succeeded(match) && i8 && !match->accType.isInteger(32))
        why = "the accumulator is not i32";
      else if (succeeded(match) && !i8 && !match->accType.isF32())
        why = "the accumulator is not f32";
      else if (succeeded(match) && i8 && !match->bNK)
        why = "B is not read as [n, k]";
      else if (succeeded(match) && i8 && match->k % vec)
        why = "K must be a multiple of 16 (K = " + std::to_string(match->k) +
              ")";
      else if (succeeded(match) && !i8 && (match->k % vec || match->n % vec))
        why = "K and N must be multiples of " + std::to_string(vec) +
              " (K = " + std::to_string(match->k) +
              ", N = " + std::to_string(match->n) + ")";
      if (!why.empty()) {
        emitRemark(stripOrigins(op.getLoc()))
            << "CUDA: the contraction of ONNX node '" << onnxNodeOf(op)
            << "' is not " << (half || i8 ? "on tensor cores" : "tiled")
            << " ("
            << why << "); it keeps the scalar kernel";
        continue;
      }
      if (failed(match))
        continue;
      buildKernel(*match);
    }
  }
};

/// Shared-memory tiles are read and written 16 bytes at a time (vector
/// chunks, ldmatrix rows): align the workgroup buffers of the outlined
/// kernels to 16 bytes (convert-gpu-to-nvvm aligns them to the element
/// otherwise).
struct AlignWorkgroupPass
    : PassWrapper<AlignWorkgroupPass, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AlignWorkgroupPass)
  StringRef getArgument() const override { return "kiln-cuda-align-workgroup"; }
  StringRef getDescription() const override {
    return "Align the workgroup (shared-memory) buffers of kernels to 16 "
           "bytes";
  }
  void runOnOperation() override {
    getOperation().walk([&](gpu::GPUFuncOp func) {
      for (unsigned i = 0; i < func.getWorkgroupAttributions().size(); ++i)
        func.setWorkgroupAttributionAttr(
            i, LLVM::LLVMDialect::getAlignAttrName(),
            IntegerAttr::get(IntegerType::get(&getContext(), 64), 16));
    });
  }
};

} // namespace

void registerMatmulKernelsPasses() {
  PassRegistration<MatmulKernelsPass>();
  PassRegistration<AlignWorkgroupPass>();
}

} // namespace kiln::cuda
