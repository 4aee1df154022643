// voxrt's public C++ API: include this one header.
//
//   #include <voxrt/voxrt.h>
//   voxrt::Session s("unet.onnx");
//   auto outputs = s.run({{s.inputs()[0].name, input_tensor}});
#pragma once

#include "voxrt/convert.h"
#include "voxrt/dtype.h"
#include "voxrt/error.h"
#include "voxrt/session.h"
#include "voxrt/tensor.h"
