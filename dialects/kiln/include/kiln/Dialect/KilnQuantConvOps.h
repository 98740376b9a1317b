//===- KilnQuantConvOps.h - kiln.quantized_conv ----------------*- C++ -*-===//
//
// Kept out of KilnOps.h: the op has three users (kiln-fuse-qdq, its
// lowering, the dialect), and every file that includes KilnOps.h would
// otherwise be rebuilt with each change to it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILNQUANTCONVOPS_H
#define KILN_DIALECT_KILNQUANTCONVOPS_H

#include "kiln/Dialect/KilnOps.h"

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnQuantConvOps.h.inc"

#endif // KILN_DIALECT_KILNQUANTCONVOPS_H
