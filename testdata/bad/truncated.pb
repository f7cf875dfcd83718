

xPlaceholder

yRelux

zRe