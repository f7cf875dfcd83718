#include "lib/ops/dtypes.h"

#include <algorithm>
#include <cctype>

namespace parallax {

int DataTypeSize(tensorflow::DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_BOOL:
    case tensorflow::DT_INT8:
    case tensorflow::DT_UINT8:
    case tensorflow::DT_QINT8:
    case tensorflow::DT_QUINT8:
    case tensorflow::DT_FLOAT8_E5M2:
    case tensorflow::DT_FLOAT8_E4M3FN:
    case tensorflow::DT_FLOAT8_E4M3FNUZ:
    case tensorflow::DT_FLOAT8_E4M3B11FNUZ:
    case tensorflow::DT_FLOAT8_E5M2FNUZ:
      return 1;
    case tensorflow::DT_INT16:
    case tensorflow::DT_UINT16:
    case tensorflow::DT_QINT16:
    case tensorflow::DT_QUINT16:
    case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16:
      return 2;
    case tensorflow::DT_FLOAT:
    case tensorflow::DT_INT32:
    case tensorflow::DT_UINT32:
    case tensorflow::DT_QINT32:
      return 4;
    case tensorflow::DT_DOUBLE:
    case tensorflow::DT_INT64:
    case tensorflow::DT_UINT64:
    case tensorflow::DT_COMPLEX64:
      return 8;
    case tensorflow::DT_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

std::string DataTypeShortName(tensorflow::DataType dtype) {
  std::string name = tensorflow::DataType_Name(dtype);
  if (name.empty()) return std::to_string(static_cast<int>(dtype));
  if (name.starts_with("DT_")) name = name.substr(3);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

tensorflow::DataType BaseType(tensorflow::DataType dtype) {
  return IsRefType(dtype) ? static_cast<tensorflow::DataType>(static_cast<int>(dtype) - 100)
                          : dtype;
}

bool IsRefType(tensorflow::DataType dtype) { return static_cast<int>(dtype) > 100; }

}  // namespace parallax
