// The registry and the parser of TensorFlow's registration language ("x: Ref(T)",
// "N: int >= 1", "Tidx: {int32, int64} = DT_INT32"). Specs are parsed once, at static
// initialisation, so a typo in any registration file stops every binary at startup.
#include "lib/ops/op_registry.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <utility>

namespace parallax {
namespace {

using tensorflow::AttrValue;
using tensorflow::DataType;

using Registry = std::map<std::string, OpSchema, std::less<>>;

// Never destroyed: lookups may still run from other static destructors.
Registry& GlobalRegistry() {
  static auto* registry = new Registry();
  return *registry;
}

// Type names as TensorFlow's registration language writes them (with its aliases).
struct TypeName {
  std::string_view name;
  DataType type;
};
constexpr TypeName kTypeNames[] = {
    {"float", tensorflow::DT_FLOAT},         {"float32", tensorflow::DT_FLOAT},
    {"double", tensorflow::DT_DOUBLE},       {"float64", tensorflow::DT_DOUBLE},
    {"half", tensorflow::DT_HALF},           {"float16", tensorflow::DT_HALF},
    {"bfloat16", tensorflow::DT_BFLOAT16},   {"int8", tensorflow::DT_INT8},
    {"int16", tensorflow::DT_INT16},         {"int32", tensorflow::DT_INT32},
    {"int64", tensorflow::DT_INT64},         {"uint8", tensorflow::DT_UINT8},
    {"uint16", tensorflow::DT_UINT16},       {"uint32", tensorflow::DT_UINT32},
    {"uint64", tensorflow::DT_UINT64},       {"bool", tensorflow::DT_BOOL},
    {"string", tensorflow::DT_STRING},       {"complex64", tensorflow::DT_COMPLEX64},
    {"complex128", tensorflow::DT_COMPLEX128}, {"qint8", tensorflow::DT_QINT8},
    {"quint8", tensorflow::DT_QUINT8},       {"qint16", tensorflow::DT_QINT16},
    {"quint16", tensorflow::DT_QUINT16},     {"qint32", tensorflow::DT_QINT32},
    {"resource", tensorflow::DT_RESOURCE},   {"variant", tensorflow::DT_VARIANT},
    {"float8_e5m2", tensorflow::DT_FLOAT8_E5M2},
    {"float8_e4m3fn", tensorflow::DT_FLOAT8_E4M3FN},
    {"int4", tensorflow::DT_INT4},           {"uint4", tensorflow::DT_UINT4},
};

// Named groups of types usable where a type or a set of types is expected.
constexpr std::string_view kTypeGroups[] = {"numbertype", "numerictype", "realnumbertype",
                                            "quantizedtype"};

// Attr types whose values the language can name.
constexpr std::string_view kScalarAttrTypes[] = {"string", "int",   "float",  "bool",
                                                 "type",   "shape", "tensor", "func"};

std::optional<DataType> DataTypeFromName(std::string_view name) {
  for (const TypeName& t : kTypeNames) {
    if (t.name == name) return t.type;
  }
  return std::nullopt;
}

bool IsTypeGroup(std::string_view name) {
  for (std::string_view g : kTypeGroups) {
    if (g == name) return true;
  }
  return false;
}

bool IsScalarAttrType(std::string_view name) {
  for (std::string_view t : kScalarAttrTypes) {
    if (t == name) return true;
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) {
    return false;
  }
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

bool ConsumePrefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Splits "a, b, c" (no nesting inside the elements).
std::vector<std::string_view> SplitList(std::string_view s) {
  std::vector<std::string_view> parts;
  s = Trim(s);
  if (s.empty()) return parts;
  size_t start = 0;
  char quote = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && quote != 0) {
      if (s[i] == '\\') ++i;
      else if (s[i] == quote) quote = 0;
      continue;
    }
    if (i < s.size() && (s[i] == '\'' || s[i] == '"')) {
      quote = s[i];
    } else if (i == s.size() || s[i] == ',') {
      parts.push_back(Trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return parts;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<float> ParseFloat(std::string_view s) {
  if (s == "inf") return std::numeric_limits<float>::infinity();
  if (s == "-inf") return -std::numeric_limits<float>::infinity();
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return static_cast<float>(value);
}

std::optional<bool> ParseBool(std::string_view s) {
  if (s == "true") return true;
  if (s == "false") return false;
  return std::nullopt;
}

// 'text' or "text" with C escapes.
std::optional<std::string> ParseQuoted(std::string_view s) {
  if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front()) {
    return std::nullopt;
  }
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    char c = s[i];
    if (c == s.front()) return std::nullopt;  // an unescaped quote inside
    if (c == '\\') {
      if (i + 2 >= s.size()) return std::nullopt;
      switch (s[++i]) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case '0': c = '\0'; break;
        default: c = s[i]; break;  // \\ \' \"
      }
    }
    out.push_back(c);
  }
  return out;
}

// "DT_INT32" as defaults are written, or "int32" as in type sets.
std::optional<DataType> ParseTypeValue(std::string_view s) {
  if (auto t = DataTypeFromName(s)) return t;
  DataType type;
  if (s.substr(0, 3) == "DT_" && s.substr(s.size() >= 4 ? s.size() - 4 : 0) != "_REF" &&
      tensorflow::DataType_Parse(std::string(s), &type) && type != tensorflow::DT_INVALID) {
    return type;
  }
  return std::nullopt;
}

// Fills `value` with one scalar of attr type `type`; false when the text does not parse.
bool ParseScalarValue(std::string_view type, std::string_view text, AttrValue& value) {
  if (type == "bool") {
    auto b = ParseBool(text);
    if (b) value.set_b(*b);
    return b.has_value();
  }
  if (type == "int") {
    auto i = ParseInt(text);
    if (i) value.set_i(*i);
    return i.has_value();
  }
  if (type == "float") {
    auto f = ParseFloat(text);
    if (f) value.set_f(*f);
    return f.has_value();
  }
  if (type == "string") {
    auto s = ParseQuoted(text);
    if (s) value.set_s(*s);
    return s.has_value();
  }
  if (type == "type") {
    auto t = ParseTypeValue(text);
    if (t) value.set_type(*t);
    return t.has_value();
  }
  return false;
}

bool AppendListValue(std::string_view element_type, std::string_view text,
                     AttrValue::ListValue& list) {
  AttrValue scalar;
  if (!ParseScalarValue(element_type, text, scalar)) return false;
  switch (scalar.value_case()) {
    case AttrValue::kB: list.add_b(scalar.b()); break;
    case AttrValue::kI: list.add_i(scalar.i()); break;
    case AttrValue::kF: list.add_f(scalar.f()); break;
    case AttrValue::kS: list.add_s(scalar.s()); break;
    case AttrValue::kType: list.add_type(scalar.type()); break;
    default: return false;
  }
  return true;
}

// The parsed default, std::nullopt when the language form is one Parallax does not read
// (tensor and func values, non-trivial shapes), or an error when a readable type has an
// unreadable value.
StatusOr<std::optional<AttrValue>> ParseDefault(std::string_view op, std::string_view attr,
                                                std::string_view type,
                                                std::string_view text) {
  const std::string full_type(type);
  auto bad = [&] {
    return InvalidArgumentError("op '{}': attr '{}' has default '{}', which is not a valid {}",
                                op, attr, text, full_type);
  };
  AttrValue value;
  if (type == "shape") {
    std::string compact;
    for (char c : text) {
      if (c != ' ') compact.push_back(c);
    }
    if (compact == "{unknown_rank:true}") {
      value.mutable_shape()->set_unknown_rank(true);
    } else if (compact == "{}") {
      value.mutable_shape();  // a scalar
    } else {
      return std::optional<AttrValue>();
    }
    return std::optional<AttrValue>(std::move(value));
  }
  if (type == "tensor" || type == "func") return std::optional<AttrValue>();
  if (ConsumePrefix(type, "list(")) {
    type.remove_suffix(1);
    if (text.size() < 2 || text.front() != '[' || text.back() != ']') return bad();
    std::vector<std::string_view> elements = SplitList(text.substr(1, text.size() - 2));
    AttrValue::ListValue* list = value.mutable_list();
    if (!elements.empty()) {
      if (type == "shape" || type == "tensor" || type == "func") {
        return std::optional<AttrValue>();
      }
      for (std::string_view e : elements) {
        if (!AppendListValue(type, e, *list)) return bad();
      }
    }
    return std::optional<AttrValue>(std::move(value));
  }
  if (!ParseScalarValue(type, text, value)) return bad();
  return std::optional<AttrValue>(std::move(value));
}

// Finds the " = default" separator: the first '=' that is not part of ">=" and not
// inside quotes or braces.
size_t FindDefaultSeparator(std::string_view s) {
  char quote = 0;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote != 0) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '{' || c == '(' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ')' || c == ']') {
      --depth;
    } else if (c == '=' && depth == 0 && (i == 0 || s[i - 1] != '>')) {
      return i;
    }
  }
  return std::string_view::npos;
}

// Checks every element of "{float, double}" or "{'SAME', 'VALID'}"; returns "type" or
// "string", the attr type such a set constrains.
StatusOr<std::string> ParseAllowedSet(std::string_view op, std::string_view attr,
                                      std::string_view set) {
  std::vector<std::string_view> elements = SplitList(set.substr(1, set.size() - 2));
  if (elements.empty()) {
    return InvalidArgumentError("op '{}': attr '{}' allows no values", op, attr);
  }
  bool strings = !elements[0].empty() && (elements[0][0] == '\'' || elements[0][0] == '"');
  for (std::string_view e : elements) {
    if (strings) {
      if (!ParseQuoted(e)) {
        return InvalidArgumentError("op '{}': attr '{}' allows a malformed string {}", op,
                                    attr, e);
      }
    } else if (!DataTypeFromName(e) && !IsTypeGroup(e)) {
      return InvalidArgumentError("op '{}': attr '{}' allows unknown type '{}'", op, attr, e);
    }
  }
  return std::string(strings ? "string" : "type");
}

// "int", "{float, double}", "numbertype", "list(type)", "list({int32, int64})" -> the
// attr's type as TensorFlow records it ("int", "type", "list(type)").
StatusOr<std::string> ParseAttrType(std::string_view op, std::string_view attr,
                                    std::string_view text) {
  std::string_view inner = text;
  bool is_list = ConsumePrefix(inner, "list(");
  if (is_list) {
    if (inner.empty() || inner.back() != ')') {
      return InvalidArgumentError("op '{}': attr '{}' has unknown type '{}'", op, attr, text);
    }
    inner = Trim(inner.substr(0, inner.size() - 1));
  }
  std::string element;
  if (!inner.empty() && inner.front() == '{' && inner.back() == '}') {
    PX_ASSIGN_OR_RETURN(element, ParseAllowedSet(op, attr, inner));
  } else if (IsTypeGroup(inner)) {
    element = "type";
  } else if (IsScalarAttrType(inner)) {
    element = std::string(inner);
  } else {
    return InvalidArgumentError("op '{}': attr '{}' has unknown type '{}'", op, attr, text);
  }
  return is_list ? "list(" + element + ")" : element;
}

// "name: TYPE [>= MIN] [= DEFAULT]".
StatusOr<AttrSchema> ParseAttr(std::string_view op, std::string_view spec) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError("op '{}': attr spec '{}' is not 'name: type'", op, spec);
  }
  AttrSchema attr;
  std::string_view name = Trim(spec.substr(0, colon));
  if (!IsIdentifier(name)) {
    return InvalidArgumentError("op '{}': attr spec '{}' has a bad name '{}'", op, spec, name);
  }
  attr.name = std::string(name);
  std::string_view rest = spec.substr(colon + 1);
  std::optional<std::string_view> default_text;
  if (size_t eq = FindDefaultSeparator(rest); eq != std::string_view::npos) {
    default_text = Trim(rest.substr(eq + 1));
    rest = rest.substr(0, eq);
  }
  rest = Trim(rest);
  if (size_t ge = rest.find(">="); ge != std::string_view::npos) {
    std::string_view minimum = Trim(rest.substr(ge + 2));
    if (!ParseInt(minimum)) {
      return InvalidArgumentError("op '{}': attr '{}' has a bad minimum '{}'", op, name,
                                  minimum);
    }
    rest = Trim(rest.substr(0, ge));
  }
  PX_ASSIGN_OR_RETURN(attr.type, ParseAttrType(op, name, rest));
  if (default_text) {
    PX_ASSIGN_OR_RETURN(attr.default_value, ParseDefault(op, name, attr.type, *default_text));
  }
  return attr;
}

const AttrSchema* FindIn(const std::vector<AttrSchema>& attrs, std::string_view name) {
  for (const AttrSchema& a : attrs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// "name: T", "name: Ref(T)", "name: N * T", "name: float", "name: Tlist".
StatusOr<ArgSchema> ParseArg(std::string_view op, std::string_view kind,
                             std::string_view spec, const std::vector<AttrSchema>& attrs) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError("op '{}': {} spec '{}' is not 'name: type'", op, kind, spec);
  }
  ArgSchema arg;
  std::string_view name = Trim(spec.substr(0, colon));
  if (!IsIdentifier(name)) {
    return InvalidArgumentError("op '{}': {} spec '{}' has a bad name '{}'", op, kind, spec,
                                name);
  }
  arg.name = std::string(name);
  std::string_view type = Trim(spec.substr(colon + 1));
  auto malformed = [&] {
    return InvalidArgumentError("op '{}': {} '{}' has a malformed type '{}'", op, kind, name,
                                type);
  };
  std::string_view body = type;
  if (ConsumePrefix(body, "Ref(")) {
    if (body.empty() || body.back() != ')') return malformed();
    body = Trim(body.substr(0, body.size() - 1));
    arg.is_ref = true;
  }
  if (size_t star = body.find('*'); star != std::string_view::npos) {
    std::string_view number = Trim(body.substr(0, star));
    if (!IsIdentifier(number)) return malformed();
    const AttrSchema* attr = FindIn(attrs, number);
    if (attr == nullptr) {
      return InvalidArgumentError("op '{}': {} '{}' names '{}', which is not a declared attr",
                                  op, kind, name, number);
    }
    if (attr->type != "int") {
      return InvalidArgumentError(
          "op '{}': {} '{}' uses attr '{}' as a number, but it is declared as '{}'", op, kind,
          name, number, attr->type);
    }
    arg.number_attr = std::string(number);
    body = Trim(body.substr(star + 1));
  }
  if (!IsIdentifier(body)) return malformed();
  if (auto fixed = DataTypeFromName(body)) {
    arg.fixed_type = *fixed;
    return arg;
  }
  const AttrSchema* attr = FindIn(attrs, body);
  if (attr == nullptr) {
    return InvalidArgumentError("op '{}': {} '{}' names '{}', which is neither a type nor an attr",
                                op, kind, name, body);
  }
  if (attr->type == "type") {
    arg.type_attr = std::string(body);
  } else if (attr->type == "list(type)" && arg.number_attr.empty()) {
    arg.type_list_attr = std::string(body);
  } else {
    return InvalidArgumentError(
        "op '{}': {} '{}' uses attr '{}' as a type, but it is declared as '{}'", op, kind, name,
        body, attr->type);
  }
  return arg;
}

StatusOr<const AttrValue*> ResolveAttr(const OpSchema& op, const AttrLookup& attrs,
                                       const std::string& name) {
  const AttrValue* value = attrs ? attrs(name) : nullptr;
  if (value == nullptr) {
    const AttrSchema* schema = op.FindAttr(name);
    if (schema != nullptr && schema->default_value) value = &*schema->default_value;
  }
  if (value == nullptr) return InvalidArgumentError("attr '{}' is missing", name);
  return value;
}

bool IsTypeList(const AttrValue& value) {
  if (value.value_case() != AttrValue::kList) return false;
  const AttrValue::ListValue& l = value.list();
  // An empty list is a list of zero types; any other kind of element is not.
  return l.s_size() == 0 && l.i_size() == 0 && l.f_size() == 0 && l.b_size() == 0 &&
         l.shape_size() == 0 && l.tensor_size() == 0 && l.func_size() == 0;
}

StatusOr<int> CountArgs(const OpSchema& op, const std::vector<ArgSchema>& args,
                        const AttrLookup& attrs) {
  int64_t total = 0;
  for (const ArgSchema& arg : args) {
    int64_t count = 1;
    if (!arg.number_attr.empty()) {
      PX_ASSIGN_OR_RETURN(const AttrValue* value, ResolveAttr(op, attrs, arg.number_attr));
      if (value->value_case() != AttrValue::kI) {
        return InvalidArgumentError("attr '{}' is not an int", arg.number_attr);
      }
      if (value->i() < 0) {
        return InvalidArgumentError("attr '{}' is negative ({})", arg.number_attr, value->i());
      }
      count = value->i();
    } else if (!arg.type_list_attr.empty()) {
      PX_ASSIGN_OR_RETURN(const AttrValue* value, ResolveAttr(op, attrs, arg.type_list_attr));
      if (!IsTypeList(*value)) {
        return InvalidArgumentError("attr '{}' is not a list of types", arg.type_list_attr);
      }
      count = value->list().type_size();
    }
    total += count;
    if (total > std::numeric_limits<int>::max()) {
      return InvalidArgumentError("{} arg '{}' makes the count too large ({})", op.name,
                                  arg.name, total);
    }
  }
  return static_cast<int>(total);
}

}  // namespace

const AttrSchema* OpSchema::FindAttr(std::string_view attr_name) const {
  return FindIn(attrs, attr_name);
}

StatusOr<int> NumOutputs(const OpSchema& op, const AttrLookup& attrs) {
  return CountArgs(op, op.outputs, attrs);
}

StatusOr<int> NumInputs(const OpSchema& op, const AttrLookup& attrs) {
  return CountArgs(op, op.inputs, attrs);
}

StatusOr<int> OutputArgPort(const OpSchema& op, const AttrLookup& attrs,
                            std::string_view arg_name) {
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    if (op.outputs[i].name == arg_name) {
      return CountArgs(op, std::vector<ArgSchema>(op.outputs.begin(), op.outputs.begin() +
                                                                         static_cast<long>(i)),
                       attrs);
    }
  }
  return InvalidArgumentError("{} has no output '{}'", op.name, arg_name);
}

AttrLookup NodeAttrLookup(const tensorflow::NodeDef& node) {
  return [&node](std::string_view name) -> const AttrValue* {
    auto it = node.attr().find(std::string(name));
    return it == node.attr().end() ? nullptr : &it->second;
  };
}

const OpSchema* FindOpSchema(std::string_view op_name) {
  const Registry& registry = GlobalRegistry();
  auto it = registry.find(op_name);
  return it == registry.end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> AllOpSchemas() {
  std::vector<const OpSchema*> all;
  all.reserve(GlobalRegistry().size());
  for (const auto& [name, schema] : GlobalRegistry()) all.push_back(&schema);
  return all;
}

OpSchemaBuilder::OpSchemaBuilder(std::string name) { schema_.name = std::move(name); }

OpSchemaBuilder& OpSchemaBuilder::Input(std::string_view spec) {
  input_specs_.emplace_back(spec);
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::Output(std::string_view spec) {
  output_specs_.emplace_back(spec);
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::Attr(std::string_view spec) {
  attr_specs_.emplace_back(spec);
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::Stateful() {
  schema_.is_stateful = true;
  return *this;
}

// Variables hold state across steps, so they are stateful too.
OpSchemaBuilder& OpSchemaBuilder::Variable(bool resource) {
  schema_.is_variable = true;
  schema_.is_resource_variable = resource;
  schema_.is_stateful = true;
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::InputPipeline() {
  schema_.is_input_pipeline = true;
  return *this;
}

// Every rank must issue collectives in the same order: never prune or reorder them.
OpSchemaBuilder& OpSchemaBuilder::Collective() {
  schema_.is_collective = true;
  schema_.is_stateful = true;
  return *this;
}

// An update writes its variable in place.
OpSchemaBuilder& OpSchemaBuilder::Apply(ApplySchema apply) {
  schema_.apply = std::move(apply);
  schema_.is_stateful = true;
  return *this;
}

StatusOr<OpSchema> OpSchemaBuilder::Build() const {
  OpSchema schema = schema_;
  const std::string& op = schema.name;
  if (!IsIdentifier(op)) return InvalidArgumentError("bad op name '{}'", op);
  for (const std::string& spec : attr_specs_) {
    PX_ASSIGN_OR_RETURN(AttrSchema attr, ParseAttr(op, spec));
    if (schema.FindAttr(attr.name) != nullptr) {
      return InvalidArgumentError("op '{}': duplicate attr '{}'", op, attr.name);
    }
    schema.attrs.push_back(std::move(attr));
  }
  auto parse_args = [&](std::string_view kind, const std::vector<std::string>& specs,
                        std::vector<ArgSchema>& args) -> Status {
    for (const std::string& spec : specs) {
      PX_ASSIGN_OR_RETURN(ArgSchema arg, ParseArg(op, kind, spec, schema.attrs));
      for (const ArgSchema& other : args) {
        if (other.name == arg.name) {
          return InvalidArgumentError("op '{}': duplicate {} '{}'", op, kind, arg.name);
        }
      }
      args.push_back(std::move(arg));
    }
    return Status::Ok();
  };
  PX_RETURN_IF_ERROR(parse_args("input", input_specs_, schema.inputs));
  PX_RETURN_IF_ERROR(parse_args("output", output_specs_, schema.outputs));
  if (schema.apply) {
    const ApplySchema& a = *schema.apply;
    std::vector<int> indices = {a.var_input, a.grad_input, a.indices_input};
    indices.insert(indices.end(), a.slot_inputs.begin(), a.slot_inputs.end());
    const int num_inputs = static_cast<int>(schema.inputs.size());
    for (size_t i = 0; i < indices.size(); ++i) {
      // grad and indices (positions 1 and 2) may be -1: absent.
      bool optional = i == 1 || i == 2;
      if (optional && indices[i] == -1) continue;
      if (indices[i] < 0 || indices[i] >= num_inputs) {
        return InvalidArgumentError(
            "op '{}': apply input index {} is out of range (the op has {} inputs)", op,
            indices[i], num_inputs);
      }
    }
  }
  return schema;
}

namespace ops_internal {

OpRegistration::OpRegistration(const OpSchemaBuilder& builder) {
  StatusOr<OpSchema> schema = builder.Build();
  if (!schema.ok()) {
    std::fprintf(stderr, "parallax: invalid op registration: %s\n",
                 schema.status().message().c_str());
    std::abort();
  }
  std::string name = schema->name;
  if (!GlobalRegistry().emplace(name, std::move(schema).value()).second) {
    std::fprintf(stderr, "parallax: op '%s' is registered twice\n", name.c_str());
    std::abort();
  }
}

}  // namespace ops_internal
}  // namespace parallax
