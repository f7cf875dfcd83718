// DataType helpers shared by the analyses, the passes and the runtime: sizes, names,
// and the base type of a reference type (DT_FLOAT_REF -> DT_FLOAT).
#ifndef PARALLAX_LIB_OPS_DTYPES_H_
#define PARALLAX_LIB_OPS_DTYPES_H_

#include <string>

#include "protos/graph.pb.h"

namespace parallax {

// Bytes per element; 0 when not fixed (string, resource, variant, sub-byte types).
int DataTypeSize(tensorflow::DataType dtype);

// "float", "int64", ...: the enum name without DT_, lower case (the number when unknown).
std::string DataTypeShortName(tensorflow::DataType dtype);

// DT_FLOAT_REF -> DT_FLOAT; other types unchanged.
tensorflow::DataType BaseType(tensorflow::DataType dtype);
bool IsRefType(tensorflow::DataType dtype);

}  // namespace parallax

#endif  // PARALLAX_LIB_OPS_DTYPES_H_
