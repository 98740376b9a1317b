//===- KilnOps.h - The kiln dialect's ops ----------------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILNOPS_H
#define KILN_DIALECT_KILNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Dialect/ShapeInference.h"

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnCoreOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnElementwiseOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnReductionOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnNNOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnShapeOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnQuantOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnAttentionOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnFusedOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnLayoutOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnEmbeddingOps.h.inc"
#define GET_OP_CLASSES
#include "kiln/Dialect/KilnControlFlowOps.h.inc"

#endif // KILN_DIALECT_KILNOPS_H
