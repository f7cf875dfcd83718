
NoOp