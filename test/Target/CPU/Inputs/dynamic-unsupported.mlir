func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}) -> tensor<?x4xf32> {
  %k = kiln.constant dense<1> : tensor<i64>
  %r = kiln.cum_sum %x, %k : (tensor<?x4xf32>, tensor<i64>) -> tensor<?x4xf32> loc("cumsum0")
  return %r : tensor<?x4xf32>
}
