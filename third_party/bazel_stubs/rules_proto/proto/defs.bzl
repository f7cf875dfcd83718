ProtoInfo = ProtoInfo
def proto_library(**kwargs):
    native.proto_library(**kwargs)
def proto_lang_toolchain(**kwargs):
    native.proto_lang_toolchain(**kwargs)
