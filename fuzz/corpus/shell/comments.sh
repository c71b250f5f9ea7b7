# comment
ls # trailing && rm
echo a#b "#c"
# x \
rm y
