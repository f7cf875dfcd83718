

xConst*
dty€€0