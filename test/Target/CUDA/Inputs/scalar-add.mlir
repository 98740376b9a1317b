func.func @main(%x: tensor<f32>, %y: tensor<f32>) -> tensor<f32> {
  %a = kiln.add %x, %y : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("/s/Add")
  return %a : tensor<f32>
}
