
ÿÿÿÿ
xNoOp